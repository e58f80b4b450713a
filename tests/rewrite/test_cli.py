"""``mergekit rewrite`` through the real entry points: ``python -m mergekit.cli`` and the installed script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

SCRIPT = Path(sys.executable).parent / "mergekit"


def run(*args: str, script: bool = False) -> subprocess.CompletedProcess:
    cmd = [str(SCRIPT)] if script else [sys.executable, "-m", "mergekit.cli"]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, env=env)


SEED_UPDATE = "UPDATE depts SET department_name = 'New Name' WHERE deptno = 666"


@pytest.mark.parametrize("script", [False, True], ids=["python-m", "console-script"])
def test_rewrite_prints_sql(script):
    if script:
        assert SCRIPT.exists(), f"{SCRIPT} is missing: pip install -e . installs it"
    proc = run(
        "rewrite",
        "--dialect",
        "postgres",
        "--key",
        "depts=deptno",
        "--schema",
        "depts=deptno,department_name",
        SEED_UPDATE,
        script=script,
    )
    assert proc.returncode == 0, proc.stderr
    tree = sqlglot.parse_one(proc.stdout, read="postgres")
    assert isinstance(tree, exp.Insert)
    assert tree.this.this.name == "depts_journal"
    assert 'MAX("version_number") OVER (PARTITION BY "deptno")' in proc.stdout


@pytest.mark.parametrize("dialect", ["postgres", "hive", "spark", "trino"])
def test_each_dialect_and_bigint(dialect):
    proc = run(
        "rewrite",
        "-d",
        dialect,
        "--no-pretty",
        "--key",
        "items=region,id",
        "--schema",
        "items=region,id,qty",
        "--version-type",
        "bigint",
        "DELETE FROM items WHERE qty = 0",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1  # one line
    tree = sqlglot.parse_one(proc.stdout, read=dialect)
    assert [c.name for c in tree.this.expressions] == [
        "region",
        "id",
        "qty",
        "version_number",
        "subsequent_version_number",
    ]
    assert "COALESCE(MAX(" in proc.stdout


def test_default_key_and_custom_fields():
    proc = run(
        "rewrite",
        "-d",
        "trino",
        "--no-pretty",
        "--default-key",
        "id",
        "--journal-suffix",
        "_log",
        "--version-field",
        "v",
        "--subsequent-version-field",
        "sv",
        "DELETE FROM t WHERE id = 1",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith('INSERT INTO "t_log" ("id", "v", "sv")')


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        (
            ["rewrite", "-d", "postgres", "UPDATE depts SET a = 1"],
            "INVALID_ARGUMENTS",
            "No primary key given for table: depts",
        ),
        (["rewrite", "-d", "postgres", "--key", "depts=deptno", SEED_UPDATE], "INVALID_ARGUMENTS", "--schema"),
        (["rewrite", "-d", "postgres", "--default-key", "id", "SELEC 1"], "SYNTAX_ERROR", "line 1"),
        (["rewrite", "-d", "oracle", "SELECT 1"], "INVALID_ARGUMENTS", "oracle"),
        (["rewrite", "-d", "postgres", "--key", "broken", "SELECT 1"], "INVALID_ARGUMENTS", "TABLE=COL1"),
        (["rewrite", "-d", "postgres"], "INVALID_ARGUMENTS", "STATEMENT"),
        (["nope"], "INVALID_ARGUMENTS", "nope"),
        (["rewrite", "-d", "postgres", "--default-key", "id", "DROP TABLE t"], "NOT_SUPPORTED", "DDL"),
    ],
)
def test_errors_are_code_and_message_with_exit_1(args, code, text):
    proc = run(*args)
    assert proc.returncode == 1, proc
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"[{code}] "), proc.stderr
    assert text in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_help_lists_rewrite():
    proc = run("--help")
    assert proc.returncode == 0
    assert "rewrite" in proc.stdout


def test_schemas_and_keys_from_a_journal_catalog(tmp_path):
    import pyarrow as pa

    from tests.journal.journal_harness import JournalHarness

    lake = JournalHarness(str(tmp_path / "wh"), version_type="bigint")
    try:
        lake.create("items", [("region", pa.string()), ("id", pa.int32()), ("qty", pa.int32())], key=["region", "id"])
    finally:
        lake.connector.shutdown()
    proc = run(
        "rewrite",
        "-d",
        "postgres",
        "--no-pretty",
        "--warehouse",
        str(tmp_path / "wh"),
        "UPDATE items SET qty = 0 WHERE id = 1",
    )
    assert proc.returncode == 0, proc.stderr
    tree = sqlglot.parse_one(proc.stdout, read="postgres")
    assert [c.name for c in tree.this.expressions] == ["region", "id", "qty", "version_number"]
    assert 'PARTITION BY "region", "id"' in proc.stdout
    assert "COALESCE(MAX(" in proc.stdout  # the catalog's version type
    config = tmp_path / "catalog.json"
    config.write_text(json.dumps({"connector": "journal", "warehouse": str(tmp_path / "wh")}))
    proc = run(
        "rewrite",
        "-d",
        "hive",
        "--no-pretty",
        "--catalog",
        str(config),
        "--version-type",
        "timestamp",
        "SELECT * FROM items",
    )
    assert proc.returncode == 0, proc.stderr
    assert "CURRENT_TIMESTAMP" not in proc.stdout
    assert "`items_journal`" in proc.stdout
