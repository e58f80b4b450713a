"""The kit's tests of column types, predicates, DDL and abort cleanup (mixed into ``BaseConnectorTest``).

Each test runs against the connector's catalog in a fresh engine (the ``engine`` fixture) and adapts to the
behaviours the connector opted out of: an opted-out behaviour is exercised once and must fail with the exact
``NOT_SUPPORTED`` message. Statements are few and tables tiny, so the whole mixin costs a connector well under
a minute on a small machine.
"""

from __future__ import annotations

import datetime as dt
import decimal
import fnmatch
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from ._behavior import DEFAULT_MESSAGES, TYPE_BEHAVIORS, Behavior
from ._report import EXERCISED, NOT_APPLICABLE, REFUSED, record

__all__ = ["DataBehaviorTests", "KitColumn", "KIT_COLUMNS"]


@attrs.frozen
class KitColumn:
    """A column of the kit's tables: SQL literals of rows 1-3 (row 4 is all NULL) and their Python values."""

    name: str
    type: str
    literals: tuple[str, str, str]
    values: tuple[Any, Any, Any]
    behavior: Behavior | None = None  # None: every connector must store the type


KIT_COLUMNS: tuple[KitColumn, ...] = (
    KitColumn("i", "INTEGER", ("-7", "0", "42"), (-7, 0, 42)),
    KitColumn("b", "BIGINT", ("9007199254740993", "-1", "5"), (9007199254740993, -1, 5)),
    KitColumn("s", "VARCHAR", ("'alpha'", "'Beta'", "'z z'"), ("alpha", "Beta", "z z")),
    KitColumn("f", "BOOLEAN", ("TRUE", "FALSE", "TRUE"), (True, False, True)),
    KitColumn(
        "d",
        "DECIMAL(12,2)",
        ("CAST('1.50' AS DECIMAL(12,2))", "CAST('-20.25' AS DECIMAL(12,2))", "CAST('9999999999.99' AS DECIMAL(12,2))"),
        (decimal.Decimal("1.50"), decimal.Decimal("-20.25"), decimal.Decimal("9999999999.99")),
        Behavior.TYPE_DECIMAL,
    ),
    KitColumn(
        "dt",
        "DATE",
        ("DATE '2024-02-29'", "DATE '1970-01-01'", "DATE '1969-12-31'"),
        (dt.date(2024, 2, 29), dt.date(1970, 1, 1), dt.date(1969, 12, 31)),
        Behavior.TYPE_DATE,
    ),
    KitColumn(
        "ts",
        "TIMESTAMP",
        (
            "TIMESTAMP '2024-02-29 12:34:56.123456'",
            "TIMESTAMP '1970-01-01 00:00:00'",
            "TIMESTAMP '2038-01-19 03:14:08'",
        ),
        (dt.datetime(2024, 2, 29, 12, 34, 56, 123456), dt.datetime(1970, 1, 1), dt.datetime(2038, 1, 19, 3, 14, 8)),
        Behavior.TYPE_TIMESTAMP,
    ),
    KitColumn(
        "bin",
        "VARBINARY",
        ("X'00FF10'", "X'7F'", "X'FF'"),
        (b"\x00\xff\x10", b"\x7f", b"\xff"),
        Behavior.TYPE_VARBINARY,
    ),
)

# Predicates of the read test: label, SQL over the column and the literal of row 1 or 2, and the same in
# Python over a value read back (None for NULL) and the reference value read back for that row. The two kinds
# a connector receives as a Constraint (equalities and ranges), where pruning mistakes lose or add rows.
_PREDICATES: tuple[tuple[str, Callable[[str, str], str], int, Callable[[Any, Any], bool]], ...] = (
    ("eq", lambda c, lit: f"{c} = {lit}", 0, lambda v, ref: v is not None and v == ref),
    ("ge", lambda c, lit: f"{c} >= {lit}", 1, lambda v, ref: v is not None and v >= ref),
)


class DataBehaviorTests:
    """Types, predicates, DDL and abort cleanup. Mixed into ``BaseConnectorTest``, which provides the
    ``engine`` fixture and the opt-outs."""

    unsupported: ClassVar[set[Behavior]]
    not_supported_message: ClassVar[str]
    #: exact messages (after ``[NOT_SUPPORTED] ``) of opted-out behaviours whose message is not the SPI's
    #: default (:data:`mergekit.testing.DEFAULT_MESSAGES`); required for an opted-out type, whose test creates
    #: ``kit_type (id INTEGER, v <TYPE>)``
    not_supported_messages: ClassVar[Mapping[Behavior, str]] = {}
    #: file names (``fnmatch`` patterns) the abort test ignores when it compares the warehouse's files before
    #: and after a failed statement: catalog databases' side files, which come and go with their connections
    ignored_files: ClassVar[tuple[str, ...]] = ("*-wal", "*-shm", "*-journal", "*.lock")

    # ---- helpers -----------------------------------------------------------------------------------------

    def supports(self, behavior: Behavior) -> bool:
        return behavior not in self.unsupported

    def _message(self, behavior: Behavior) -> str:
        if behavior in self.not_supported_messages:
            return self.not_supported_messages[behavior]
        if behavior in DEFAULT_MESSAGES:
            return DEFAULT_MESSAGES[behavior]
        if behavior in TYPE_BEHAVIORS:
            pytest.fail(f"{behavior} is unsupported: state its exact message in not_supported_messages")
        return self.not_supported_message

    def assert_not_supported(self, engine: Any, statement: str, behavior: Behavior) -> None:
        """``statement`` fails with exactly ``[NOT_SUPPORTED] <the behaviour's message>``."""
        from mergekit.errors import ErrorCode, MergekitError

        with pytest.raises(MergekitError) as info:
            engine.execute(statement)
        assert info.value.code is ErrorCode.NOT_SUPPORTED, str(info.value)
        assert str(info.value) == f"[NOT_SUPPORTED] {self._message(behavior)}"
        record(REFUSED, behavior.value)

    def _columns(self) -> list[KitColumn]:
        return [c for c in KIT_COLUMNS if c.behavior is None or self.supports(c.behavior)]

    def _create_and_fill(self, engine: Any, table: str, columns: list[KitColumn]) -> None:
        engine.execute(f"CREATE TABLE {table} (id INTEGER, {', '.join(f'{c.name} {c.type}' for c in columns)})")
        rows = [f"({n + 1}, {', '.join(c.literals[n] for c in columns)})" for n in range(3)]
        rows.append(f"(4, {', '.join('NULL' for _ in columns)})")
        engine.execute(f"INSERT INTO {table} VALUES {', '.join(rows)}")

    def staged_files(self, tmp_path: Path) -> set[str]:
        """Where the connector stages and stores data: every file under ``tmp_path`` (the directory given to
        ``catalog``) except :attr:`ignored_files`. Override when the connector stages elsewhere."""
        return {
            str(p.relative_to(tmp_path))
            for p in tmp_path.rglob("*")
            if p.is_file() and not any(fnmatch.fnmatch(p.name, pattern) for pattern in self.ignored_files)
        }

    # ---- types ---------------------------------------------------------------------------------------------

    @pytest.mark.parametrize("behavior", list(TYPE_BEHAVIORS), ids=[b.value for b in TYPE_BEHAVIORS])
    def test_unsupported_type_is_refused(self, engine: Any, behavior: Behavior) -> None:
        """An opted-out type fails ``CREATE TABLE`` with the exact NOT_SUPPORTED message; nothing is created."""
        if self.supports(behavior) or not self.supports(Behavior.CREATE_TABLE):
            return record(NOT_APPLICABLE)
        self.assert_not_supported(engine, f"CREATE TABLE kit_type (id INTEGER, v {TYPE_BEHAVIORS[behavior]})", behavior)
        assert "kit_type" not in [row[0] for row in engine.execute("SHOW TABLES").rows()]

    def test_types_round_trip(self, engine: Any) -> None:
        """DECIMAL, DATE, TIMESTAMP and VARBINARY (those supported) next to the basic types: INSERT, read back,
        UPDATE and MERGE, each value exactly as written."""
        if not self.supports(Behavior.CREATE_TABLE) or not self.supports(Behavior.INSERT):
            return record(NOT_APPLICABLE)
        columns = self._columns()
        names = ", ".join(c.name for c in columns)
        self._create_and_fill(engine, "kit_types", columns)
        expected = {n + 1: [c.values[n] for c in columns] for n in range(3)}
        expected[4] = [None] * len(columns)
        actual = {row[0]: list(row[1:]) for row in engine.execute(f"SELECT id, {names} FROM kit_types").rows()}
        assert actual == expected
        typed = [c for c in columns if c.behavior is not None]
        if not typed:
            return
        pos = {c.name: i for i, c in enumerate(columns)}
        update = f"UPDATE kit_types SET {', '.join(f'{c.name} = {c.literals[2]}' for c in typed)} WHERE id = 1"
        if self.supports(Behavior.UPDATE):
            assert engine.execute(update).row_count == 1
            for c in typed:
                expected[1][pos[c.name]] = c.values[2]
        else:
            self.assert_not_supported(engine, update, Behavior.UPDATE)
        source = ", ".join(f"({key}, {', '.join(c.literals[row] for c in typed)})" for key, row in ((2, 0), (5, 1)))
        merge = (
            f"MERGE INTO kit_types t USING (VALUES {source}) AS s(id, {', '.join(c.name for c in typed)}) "
            f"ON t.id = s.id WHEN MATCHED THEN UPDATE SET {', '.join(f'{c.name} = s.{c.name}' for c in typed)} "
            f"WHEN NOT MATCHED THEN INSERT (id, {', '.join(c.name for c in typed)}) "
            f"VALUES (s.id, {', '.join(f's.{c.name}' for c in typed)})"
        )
        if self.supports(Behavior.MERGE):
            assert engine.execute(merge).row_count == 2
            expected[5] = [None] * len(columns)
            for c in typed:
                expected[2][pos[c.name]] = c.values[0]
                expected[5][pos[c.name]] = c.values[1]
        else:
            self.assert_not_supported(engine, merge, Behavior.MERGE)
        actual = {row[0]: list(row[1:]) for row in engine.execute(f"SELECT id, {names} FROM kit_types").rows()}
        assert actual == expected
        record(EXERCISED)  # the typed INSERT and reads ran, whatever it checked the refusal of

    def test_predicates_on_every_type(self, engine: Any) -> None:
        """``WHERE`` on each column (= and >=; NULLs never match) returns what an unfiltered read filtered in Python
        returns: a connector that prunes by the constraint it receives must not lose or add rows."""
        if not self.supports(Behavior.CREATE_TABLE) or not self.supports(Behavior.INSERT):
            return record(NOT_APPLICABLE)
        columns = self._columns()
        self._create_and_fill(engine, "kit_predicates", columns)
        names = [c.name for c in columns]
        read = engine.execute(f"SELECT id, {', '.join(names)} FROM kit_predicates").rows()
        values = {row[0]: dict(zip(names, row[1:], strict=True)) for row in read}
        branches, expected = [], []
        for c in columns:
            for label, sql, ref_row, test in _PREDICATES:
                tag = f"{c.name}_{label}"
                branches.append(f"SELECT '{tag}' AS p, id FROM kit_predicates WHERE {sql(c.name, c.literals[ref_row])}")
                ref = values[ref_row + 1][c.name]
                expected += [(tag, key) for key, row in values.items() if test(row[c.name], ref)]
        actual = engine.execute(" UNION ALL ".join(branches)).rows()
        assert sorted(actual) == sorted(expected)

    # ---- DDL -----------------------------------------------------------------------------------------------

    def _tables(self, engine: Any) -> list[str]:
        return [row[0] for row in engine.execute("SHOW TABLES").rows()]

    def test_create_and_drop_table(self, engine: Any) -> None:
        """CREATE TABLE, DROP TABLE and CREATE TABLE again under the same name: a new, empty table."""
        if not self.supports(Behavior.CREATE_TABLE):
            self.assert_not_supported(engine, "CREATE TABLE kit_ddl (id INTEGER, v VARCHAR)", Behavior.CREATE_TABLE)
            assert "kit_ddl" not in self._tables(engine)
            return
        engine.execute("CREATE TABLE kit_ddl (id INTEGER, v VARCHAR)")
        assert "kit_ddl" in self._tables(engine)
        if self.supports(Behavior.INSERT):
            engine.execute("INSERT INTO kit_ddl VALUES (1, 'a')")
        if not self.supports(Behavior.DROP_TABLE):
            self.assert_not_supported(engine, "DROP TABLE kit_ddl", Behavior.DROP_TABLE)
            assert "kit_ddl" in self._tables(engine)
            return
        engine.execute("DROP TABLE kit_ddl")
        assert "kit_ddl" not in self._tables(engine)
        engine.execute("CREATE TABLE kit_ddl (id INTEGER, w BIGINT)")
        assert engine.execute("SELECT id, w FROM kit_ddl").rows() == []

    def test_add_column(self, engine: Any) -> None:
        """ALTER TABLE ... ADD COLUMN: existing rows read NULL in it, new rows store it."""
        if not self.supports(Behavior.CREATE_TABLE):
            return record(NOT_APPLICABLE)
        engine.execute("CREATE TABLE kit_add (id INTEGER)")
        if not self.supports(Behavior.ADD_COLUMN):
            self.assert_not_supported(engine, "ALTER TABLE kit_add ADD COLUMN v VARCHAR", Behavior.ADD_COLUMN)
            return
        inserts = self.supports(Behavior.INSERT)
        if inserts:
            engine.execute("INSERT INTO kit_add VALUES (1)")
        engine.execute("ALTER TABLE kit_add ADD COLUMN v VARCHAR")
        if inserts:
            engine.execute("INSERT INTO kit_add VALUES (2, 'b')")
        assert sorted(engine.execute("SELECT id, v FROM kit_add").rows()) == ([(1, None), (2, "b")] if inserts else [])

    # ---- abort cleanup -------------------------------------------------------------------------------------

    def test_failed_statements_leave_nothing_behind(self, engine: Any, tmp_path: Path, monkeypatch: Any) -> None:
        """A statement that fails after its sinks staged data (in the writer task, or in ``finish_merge``)
        changes no row and leaves no staged file behind (:meth:`staged_files`, compared before and after)."""
        from mergekit.errors import ErrorCode, MergekitError

        if not self.supports(Behavior.CREATE_TABLE) or not self.supports(Behavior.INSERT):
            return record(NOT_APPLICABLE)
        engine.execute("CREATE TABLE kit_abort (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO kit_abort VALUES (1, 'a'), (2, 'b')")
        rows = sorted(engine.execute("SELECT id, v FROM kit_abort").rows())
        files = self.staged_files(tmp_path)
        if self.supports(Behavior.MERGE):
            # Two source rows match target row 1: the writer task fails after the sink stored its pages.
            with pytest.raises(MergekitError) as info:
                engine.execute(
                    "MERGE INTO kit_abort t USING (VALUES (1, 'x'), (1, 'y'), (3, 'z')) AS s(id, v) ON t.id = s.id "
                    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
                )
            assert info.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
            assert self.staged_files(tmp_path) == files, "a failed MERGE left files behind"
        metadata = engine.catalog("lake").get_metadata()

        def failing_finish_merge(**kwargs: Any) -> None:
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "kit: finish_merge fails on purpose")

        monkeypatch.setattr(metadata, "finish_merge", failing_finish_merge)
        with pytest.raises(MergekitError, match="kit: finish_merge fails on purpose"):
            engine.execute("INSERT INTO kit_abort VALUES (3, 'c'), (4, 'd')")
        monkeypatch.undo()
        assert self.staged_files(tmp_path) == files, "an INSERT whose finish_merge failed left files behind"
        assert sorted(engine.execute("SELECT id, v FROM kit_abort").rows()) == rows
