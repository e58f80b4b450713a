"""Commands that answer without starting Spark: ``connectors``, syntax errors, bad catalog configurations."""

from __future__ import annotations

from .clirun import SCRIPT, mergekit, no_traceback, table_rows

#: No Java here: a command that tried to start Spark would fail with the launcher's error, not the one asserted.
NO_JAVA = {"JAVA_HOME": "/nonexistent/mergekit-tests-no-java"}


def _spark_not_tried(stderr: str) -> None:
    assert "JAVA_HOME" not in stderr and "JAVA_GATEWAY_EXITED" not in stderr and "java" not in stderr.lower(), stderr


def test_connectors_lists_installed_plugins_with_their_behaviours():
    assert SCRIPT.exists(), f"{SCRIPT} is missing: pip install -e . installs it"
    proc = mergekit("connectors", script=True)
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r for r in table_rows(proc.stdout)}
    header = rows.pop("Connector")
    assert header[:4] == ["Connector", "Distribution", "Version", "Paradigm"]
    assert rows["memory"][1:4] == ["mergekit-memory", "0.1.0", "DELETE_ROW_AND_INSERT_ROW"]
    assert rows["journal"][1] == "mergekit-journal"
    assert rows["journal"][3] == "CHANGE_ONLY_UPDATED_COLUMNS"
    assert "time travel" in rows["journal"][4] and "change feed" in rows["journal"][4]
    assert rows["journal"][5] == "compact, vacuum"
    assert rows["partitioned"][1] == "mergekit-partitioned"
    # a connector that needs a database: probed in a SQLite file; both of its SPIs listed (issue 26, row 20)
    assert rows["sqldb"][1:4] == ["mergekit-sqldb", "0.1.0", "CHANGE_ONLY_UPDATED_COLUMNS"]
    assert rows["sqldb"][4] == "MERGE/UPDATE/DELETE, row-level DELETE/UPDATE"
    assert "?" not in [r[3] for r in rows.values()]
    # the out-of-tree example, installed with `pip install ./examples/csvdir`, found through its entry point
    assert rows["csvdir"][1:3] == ["mergekit-csvdir", "0.1.0"]


def test_connectors_piped_shows_every_line_whole():
    """Issue 26, R6: ``mergekit connectors | cat`` wrapped its table at 80 columns and cut descriptions with '...'."""
    proc = mergekit("connectors", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len({len(line) for line in lines}) == 1 and len(lines[0]) > 200  # one row per line, none cut at 80
    rows = {r[0]: r for r in table_rows(proc.stdout)}
    assert len(lines) == len(rows) + 3  # borders and the header's rule: no row continues on a second line
    assert rows["sqldb"][6] == (
        "mergekit's sqldb connector: tables of a PostgreSQL or SQLite database, with MERGE, UPDATE and DELETE."
    )
    assert rows["journal"][4] == "MERGE/UPDATE/DELETE, time travel, change feed"
    assert "..." not in proc.stdout and "…" not in proc.stdout


def test_syntax_error_exits_1_before_spark_starts():
    proc = mergekit("sql", "SELECT * FROM accounts; SELEC 1", env=NO_JAVA)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("[SYNTAX_ERROR] line 1:"), proc.stderr
    _spark_not_tried(proc.stderr)
    no_traceback(proc)


def test_bad_catalog_configurations_are_reported_before_spark_starts(tmp_path):
    config = tmp_path / "catalogs.toml"
    config.write_text('[catalogs.lake]\nconnector = "no-such-connector"\n')
    proc = mergekit("--catalog-config", str(config), "sql", "SELECT 1", env=NO_JAVA)
    assert proc.returncode == 1
    assert proc.stderr.startswith("[CONNECTOR_NOT_FOUND] Connector 'no-such-connector' is not installed"), proc.stderr
    config.write_text("[catalogs.lake\n")
    proc = mergekit("sql", "--catalog-config", str(config), "SELECT 1", env=NO_JAVA)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"[INVALID_ARGUMENTS] Catalog configuration {config} is not valid TOML"), proc.stderr
    proc = mergekit("--catalog-config", str(tmp_path / "missing.toml"), "sql", "SELECT 1", env=NO_JAVA)
    assert proc.returncode == 1
    assert "[INVALID_ARGUMENTS] Invalid value for '--catalog-config'" in proc.stderr
    assert "missing.toml' does not exist" in proc.stderr
    _spark_not_tried(proc.stderr)
    no_traceback(proc)


def test_run_names_the_file_line_and_statement_of_a_syntax_error_before_spark_starts(tmp_path):
    script = tmp_path / "monthly.sql"
    script.write_text(
        "CREATE TABLE t (id BIGINT);\n"
        "INSERT INTO t VALUES (1);\n"
        "-- the third statement\n"
        "SELECT id\n"
        "  FROM t\n"
        " WHERE id = = 1;\n"
    )
    proc = mergekit("run", str(script), env=NO_JAVA)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{script}:6:"), proc.stderr
    assert " (statement 3): [SYNTAX_ERROR] " in proc.stderr
    assert "line 1:" not in proc.stderr and "line 3:" not in proc.stderr  # the file's line, not the statement's
    _spark_not_tried(proc.stderr)
    no_traceback(proc)


def test_run_names_the_file_line_and_column_of_an_invalid_literal_before_spark_starts(tmp_path):
    script = tmp_path / "load.sql"
    script.write_text(
        "CREATE TABLE t (id BIGINT, ts TIMESTAMP);\n-- a new row\nINSERT INTO t\nVALUES (40, TIMESTAMP '2024-13-45 00:00:00');\n"
    )
    proc = mergekit("run", str(script), env=NO_JAVA)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"{script}:4:23 (statement 2): [INVALID_LITERAL] '2024-13-45 00:00:00' is not a valid timestamp literal"
    ), proc.stderr
    _spark_not_tried(proc.stderr)
    no_traceback(proc)


def test_an_unknown_first_word_is_named():
    proc = mergekit("sql", "SELEC * FROM t", env=NO_JAVA)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        "[SYNTAX_ERROR] line 1:1: mismatched input 'SELEC'. Expected a statement (did you mean SELECT?)"
    ), proc.stderr
    _spark_not_tried(proc.stderr)
    no_traceback(proc)


def test_statements_the_driver_tier_runs_start_no_spark(tmp_path):
    """Issue 29: a command made of statements the driver tier runs (DDL, INSERT of constants, MERGE of VALUES,
    UPDATE and DELETE by key, a scan of a small table) never starts a JVM: here there is no Java to start, and every
    statement answers, on the CLI's default catalog (the partitioned connector over the journal)."""
    warehouse = str(tmp_path / "wh")
    script = (
        "CREATE TABLE t (id integer, v varchar, PRIMARY KEY (id)); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'); "
        "MERGE INTO t USING (VALUES (2, 'B'), (4, 'd')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v); UPDATE t SET v = 'A' WHERE id = 1; "
        "DELETE FROM t WHERE id IN (3, 5); SELECT * FROM t ORDER BY id"
    )
    proc = mergekit("--warehouse", warehouse, "sql", script, env=NO_JAVA)
    assert proc.returncode == 0, proc.stderr
    _spark_not_tried(proc.stderr)
    assert table_rows(proc.stdout)[-3:] == [["1", "A"], ["2", "B"], ["4", "d"]]
    assert [line.split(" (")[0] for line in proc.stdout.splitlines() if line[:1].isupper()][:5] == [
        "CREATE TABLE",
        "INSERT 3",
        "MERGE 2",
        "UPDATE 1",
        "DELETE 1",
    ]
    proc = mergekit("sql", "SELECT 1", env=NO_JAVA, cwd=tmp_path)
    assert (proc.returncode, table_rows(proc.stdout)) == (0, [["_col0"], ["1"]]), proc.stderr
    # a statement that needs Spark then tries to start it (and here cannot)
    proc = mergekit("--warehouse", warehouse, "sql", "SELECT upper(v) FROM t", env=NO_JAVA)
    assert proc.returncode == 1 and "JAVA" in proc.stderr.upper(), proc.stderr
