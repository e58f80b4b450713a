"""``sql``, ``run``, ``shell`` and ``--catalog-config`` through the real entry point. Each subprocess starts its
own local Spark, so each test combines several checks."""

from __future__ import annotations

import os
import pty
import re
import select
import sqlite3
import subprocess
import time

import pytest

from .clirun import SCRIPT, mergekit, no_traceback, table_rows

pytestmark = pytest.mark.spark


def test_sql_then_run_file_on_the_same_warehouse(tmp_path):
    warehouse = tmp_path / "wh"
    proc = mergekit(
        "--warehouse",
        str(warehouse),
        "sql",
        "CREATE TABLE accounts (customer VARCHAR, purchases DECIMAL(10,2), address VARCHAR); "
        "INSERT INTO accounts VALUES ('Aaron', 5, 'Antioch'), ('Bill', 7, 'Buena'), ('Carol', NULL, 'Cambridge'); "
        "MERGE INTO accounts t USING (VALUES ('Aaron', 6, 'Arches'), ('Ed', 7, 'Etherville')) "
        "  AS s(customer, purchases, address) ON t.customer = s.customer "
        "WHEN MATCHED THEN UPDATE SET purchases = t.purchases + s.purchases, address = s.address "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.customer, s.purchases, s.address); "
        "SELECT * FROM accounts ORDER BY customer",
    )
    assert proc.returncode == 0, proc.stderr
    no_traceback(proc)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("CREATE TABLE")
    assert lines[1].startswith("INSERT 3")
    assert "MERGE 2 " in proc.stdout
    assert "inserted 1, updated 1, deleted 0 · per WHEN clause: #1 updated 1; #2 inserted 1" in proc.stdout
    assert table_rows(proc.stdout) == [
        ["customer", "purchases", "address"],
        ["Aaron", "11.00", "Arches"],
        ["Bill", "7.00", "Buena"],
        ["Carol", "NULL", "Cambridge"],
        ["Ed", "7.00", "Etherville"],
    ]
    assert "(4 rows, " in proc.stdout
    assert proc.stderr == ""  # not even the JVM's start-up warning (issue 26, row 20)

    # The installed script, a file, options after the command; the table is still there; stops at the error.
    script = tmp_path / "month.sql"
    script.write_text(
        "-- a monthly job\n"
        "UPDATE accounts SET purchases = 0\n  WHERE purchases IS NULL;\n"
        "SELECT customer, purchases FROM accounts WHERE purchases < 10 ORDER BY customer;\n"
        "SELECT * FROM no_such_table;\n"
        "DELETE FROM accounts;\n"
    )
    # what the JVM prints on standard error still shows: here the note of a JDK_JAVA_OPTIONS it picked up
    options = {"JDK_JAVA_OPTIONS": "-Dmergekit.test=1"}
    proc = mergekit("run", str(script), "--warehouse", str(warehouse), "--echo", script=True, env=options)
    assert proc.returncode == 1
    no_traceback(proc)
    assert "NOTE: Picked up JDK_JAVA_OPTIONS: -Dmergekit.test=1" in proc.stderr
    assert "incubator" not in proc.stderr
    assert "mergekit> -- a monthly job\n       -> UPDATE accounts SET purchases = 0" in proc.stdout
    assert "UPDATE 1 " in proc.stdout
    assert table_rows(proc.stdout) == [["customer", "purchases"], ["Bill", "7.00"], ["Carol", "0.00"], ["Ed", "7.00"]]
    assert "[TABLE_NOT_FOUND] Table 'lake.default.no_such_table' does not exist" in proc.stderr
    assert "DELETE" not in proc.stdout.split("no_such_table")[-1], "statements after the error must not run"


def test_shell_driven_through_standard_input(tmp_path):
    session = (
        "\n".join(
            [
                "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id));",
                "INSERT INTO t",
                "  VALUES (1, 'one'),",
                "         (2, 'two; not the end');",
                "SELECT * FROM t",
                "  ORDER BY id;",
                "SELECT * FROM missing;",
                "UPDATE t SET name = 'uno' WHERE id = 1; SELECT name FROM t WHERE id = 1;",
                "SELECT DATE '9999-12-31' + INTERVAL '1' DAY AS beyond;",  # shown, though Python cannot hold it
                "\\d",
                "\\d t",
                "\\q",
                "SELECT 'after quit';",
            ]
        )
        + "\n"
    )
    proc = mergekit("--warehouse", str(tmp_path / "wh"), "shell", stdin=session)
    no_traceback(proc)
    assert proc.returncode == 1, "a failed statement makes a piped shell exit 1"
    assert "[TABLE_NOT_FOUND] Table 'lake.default.missing' does not exist" in proc.stderr
    rows = table_rows(proc.stdout)
    assert rows[0:3] == [["id", "name"], ["1", "one"], ["2", "two; not the end"]]
    assert ["name"] in rows and ["uno"] in rows  # statements after an error still run
    assert "INSERT 2" in proc.stdout and "UPDATE 1" in proc.stdout
    assert ["beyond"] in rows and ["10000-01-01"] in rows
    assert ["Catalog", "Schema", "Table", "Companion tables"] in rows
    assert ["lake", "default", "t", "t_journal"] in rows  # \d: each table once, its journal beside it
    assert not [r for r in rows if r[:3] == ["lake", "default", "t_journal"]]
    assert ["Column", "Type", "Extra", "Comment"] in rows
    assert ["id", "bigint", "not null", ""] in rows
    assert "after quit" not in proc.stdout
    assert "mergekit>" not in proc.stdout  # no prompts when reading a pipe


def test_backslash_d_lists_your_tables_once_whole_when_piped(tmp_path):
    """Issue 26: \\d listed the partitioned connector's system tables among the user's (R4), a SQLite catalog's
    tables twice, under ``default`` and ``main`` (R5), and cut long names at 80 columns when piped (R6)."""
    config = tmp_path / "catalogs.toml"
    config.write_text(
        "[catalogs.lake]\n"
        'connector = "partitioned"\n'
        'warehouse = "lake"\n\n'
        "[catalogs.shop]\n"
        'connector = "sqldb"\n'
        f'uri = "sqlite:///{tmp_path / "shop.db"}"\n'
    )
    long_name = "customer_purchases_by_region_and_month_since_the_first_order_" + "x" * 40
    # a table made outside mergekit, large enough that a LIMIT stops its Python workers while they still write:
    # PySpark's worker daemon then prints a traceback of the broken pipe, which the CLI leaves out
    with sqlite3.connect(tmp_path / "shop.db") as db:
        db.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT)")
        db.executemany("INSERT INTO big VALUES (?, ?)", ((i, "x" * 50) for i in range(300_000)))
    session = "\n".join(
        [
            "SELECT * FROM shop.main.big LIMIT 3;",
            "CREATE TABLE accounts (customer VARCHAR NOT NULL, purchases INTEGER, PRIMARY KEY (customer));",
            f"CREATE TABLE {long_name} (id BIGINT);",
            "CREATE TABLE shop.default.orders (id BIGINT NOT NULL, item VARCHAR, PRIMARY KEY (id));",
            "\\d",
            "\\dS",
            "SHOW TABLES FROM sys;",
        ]
    )
    narrow = {"COLUMNS": "80"}
    proc = mergekit("--catalog-config", str(config), "shell", stdin=session + "\n", env=narrow)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "(3 rows" in proc.stdout
    found = table_rows(proc.stdout)
    header = ["Catalog", "Schema", "Table", "Companion tables"]
    first, second = (i for i, row in enumerate(found) if row == header)
    show = found.index(["Table"])
    rows, system = found[first:second], found[second:show]
    assert rows == [
        header,
        ["lake", "default", "accounts", "accounts_journal"],
        ["lake", "default", long_name, f"{long_name}_journal"],  # whole, on one line, however narrow the terminal
        ["shop", "main", "big", ""],
        ["shop", "main", "orders", ""],  # once, under the SQLite database's schema (its 'default' stands for main)
    ]
    assert [r for r in system if r[1] == "sys"] == [
        ["lake", "sys", "range_partitions", ""],
        ["lake", "sys", "table_partitions", ""],
        ["lake", "sys", "value_partitions", ""],
    ]
    assert [r for r in system if r[1] != "sys"] == rows  # \dS: the same, with the system tables
    assert found[show + 1 :] == [["range_partitions"], ["table_partitions"], ["value_partitions"]]
    assert "..." not in proc.stdout and "…" not in proc.stdout

    # the same listing from mergekit sql, as psql -c '\d' gives it
    proc = mergekit("--catalog-config", str(config), "sql", "\\d", env=narrow)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert table_rows(proc.stdout) == rows
    assert proc.stderr == ""


def _read_pty(master: int, proc: subprocess.Popen, timeout: float) -> str:
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    return b"".join(chunks).decode("utf-8", "replace")


def test_interactive_shell_on_a_terminal_with_catalog_config_and_progress(tmp_path):
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "catalogs.toml"
    config.write_text(
        'default_catalog = "lake"\n\n'
        "[catalogs.lake]\n"
        'connector = "journal"\n'
        'warehouse = "../lake-warehouse"   # relative to this file\n'
        'version_type = "bigint"\n\n'
        "[catalogs.scratch]\n"
        'connector = "memory"\n'
    )
    typed = [
        "CREATE TABLE depts (deptno INTEGER NOT NULL, name VARCHAR, PRIMARY KEY (deptno));",
        "INSERT INTO depts VALUES (10, 'Sales'), (20, 'Research');",
        "CREATE TABLE scratch.default.moves (deptno INTEGER, name VARCHAR);",
        "INSERT INTO scratch.default.moves VALUES (10, 'Field Sales'), (30, 'Ops');",
        "MERGE INTO depts d USING scratch.default.moves m ON d.deptno = m.deptno",
        "  WHEN MATCHED THEN UPDATE SET name = m.name",
        "  WHEN NOT MATCHED THEN INSERT VALUES (m.deptno, m.name);",
        "SELECT deptno, name, version_number FROM depts_journal ORDER BY version_number, deptno;",
        # long enough (about 5 s on 2 cores) for the progress bar to see a running Spark stage
        # (sequence() holds at most 10,000 entries, as in Trino)
        "SELECT count(*) AS n FROM UNNEST(sequence(1, 10000)) a(x) CROSS JOIN UNNEST(sequence(1, 10000)) b(y)"
        " CROSS JOIN UNNEST(sequence(1, 16)) c(z) WHERE (x * 7 + y) % 13 = 0;",
        "\\d",
        "\\q",
    ]
    # A pseudo-terminal, as a user's: prompts, readline history, styled tables and the progress bar (shown at
    # once with delay 0). The lines are typed ahead; the terminal buffers them until the shell reads them.
    history = tmp_path / "history"
    master, slave = pty.openpty()
    env = {
        **os.environ,
        "MERGEKIT_PROGRESS_DELAY": "0",
        "MERGEKIT_HISTORY": str(history),
        "COLUMNS": "160",
        "LINES": "50",
        "TERM": "xterm",
    }
    proc = subprocess.Popen(
        [str(SCRIPT), "--catalog-config", str(config), "shell"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=tmp_path,
        close_fds=True,
    )
    os.close(slave)
    try:
        os.write(master, ("\n".join(typed) + "\n").encode())
        text = _read_pty(master, proc, timeout=240)
        proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")
    assert proc.returncode == 0, plain
    assert "Traceback" not in plain
    assert "mergekit 0.1.0 shell." in plain
    assert "mergekit> " in plain and "      -> " in plain  # the prompt and the continuation prompt
    assert (tmp_path / "lake-warehouse").is_dir(), "a relative warehouse is relative to the TOML file"
    assert "MERGE 2" in plain
    assert "╭" in plain and "│" in plain  # rich's rounded table on a terminal
    rows = table_rows(plain)
    journal = rows.index(["deptno", "name", "version_number"])
    assert rows[journal + 1 : journal + 5] == [
        ["10", "Sales", "1"],
        ["20", "Research", "1"],
        ["10", "Field Sales", "2"],
        ["30", "Ops", "2"],
    ]
    assert ["lake", "default", "depts", "depts_journal"] in rows and ["scratch", "default", "moves", ""] in rows
    # The progress bar: a statement's label with the Spark stage it ran, and the stage's task counts.
    assert "123076912" in plain  # the long SELECT's count
    assert re.search(r"(CREATE|INSERT|MERGE|SELECT): stage \d+", plain), plain
    assert re.search(r"\d+/\d+ tasks", plain), plain
    # readline history, saved on exit
    assert "MERGE INTO depts d USING scratch.default.moves m ON d.deptno = m.deptno" in history.read_text()
