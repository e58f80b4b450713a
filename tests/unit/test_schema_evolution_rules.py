"""The schema evolution rules, without Spark: which SET DATA TYPE changes are widenings
(``mergekit.planner.evolution``), which columns MERGE WITH SCHEMA EVOLUTION adds, and how the statements parse."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.planner.evolution import added_merge_columns, type_change_needed
from mergekit.spi import ColumnMetadata, parse_sql_type
from mergekit.sql import AlterTableRenameColumn, AlterTableSetColumnType, Merge, parse_statement


def _column(type_name: str) -> ColumnMetadata:
    return ColumnMetadata(name="c", type=parse_sql_type(type_name), type_name=type_name)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tinyint", "smallint"),
        ("tinyint", "bigint"),
        ("smallint", "integer"),
        ("integer", "bigint"),
        ("real", "double"),
        ("decimal(5,2)", "decimal(12,2)"),
        ("decimal(5, 2)", "decimal(38,2)"),
        ("varchar(3)", "varchar(10)"),
        ("varchar(3)", "varchar"),
    ],
)
def test_widenings_are_accepted(old: str, new: str) -> None:
    assert type_change_needed(_column(old), parse_sql_type(new), new) is True


@pytest.mark.parametrize(
    ("old", "new"),
    [("integer", "int"), ("varchar", "varchar"), ("varchar(4)", "varchar(4)"), ("decimal(5,2)", "decimal(5, 2)")],
)
def test_the_same_type_changes_nothing(old: str, new: str) -> None:
    assert type_change_needed(_column(old), parse_sql_type(new), new) is False


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("bigint", "integer"),
        ("integer", "tinyint"),
        ("double", "real"),
        ("integer", "double"),
        ("integer", "decimal(20,0)"),
        ("decimal(10,2)", "decimal(10,3)"),
        ("decimal(10,2)", "decimal(12,3)"),
        ("decimal(10,2)", "decimal(9,2)"),
        ("varchar(10)", "varchar(9)"),
        ("varchar", "varchar(100)"),
        ("varchar(3)", "char(3)"),
        ("char(3)", "char(5)"),
        ("integer", "varchar"),
        ("date", "timestamp"),
        ("timestamp", "timestamp with time zone"),
        ("boolean", "integer"),
    ],
)
def test_narrowing_and_other_families_are_refused(old: str, new: str) -> None:
    with pytest.raises(MergekitError) as err:
        type_change_needed(_column(old), parse_sql_type(new), new)
    assert err.value.code is ErrorCode.NOT_SUPPORTED
    assert err.value.message.startswith(f"Cannot change type from {old} to {new} for column 'c'")


def test_added_merge_columns_follow_deltas_rules() -> None:
    target = [ColumnMetadata(name="id", type=pa.int32()), ColumnMetadata(name="v", type=pa.string())]
    source = [
        ColumnMetadata(name="ID", type=pa.int64()),  # a target column, whatever its case or type
        ColumnMetadata(name="Qty", type=pa.int32(), type_name="integer"),
        ColumnMetadata(name="note", type=pa.string(), type_name="varchar"),
    ]
    # UPDATE SET * / INSERT *: every source column the target lacks, in the source's order, lower-cased, nullable
    added = added_merge_columns(target, source, star=True, assigned=())
    assert [(c.name, c.type, c.type_name, c.nullable) for c in added] == [
        ("qty", pa.int32(), "integer", True),
        ("note", pa.string(), "varchar", True),
    ]
    # explicit assignments: only the source columns they name
    assert [c.name for c in added_merge_columns(target, source, star=False, assigned=("NOTE", "v"))] == ["note"]
    assert added_merge_columns(target, source, star=False, assigned=("missing",)) == ()
    with pytest.raises(MergekitError) as err:
        added_merge_columns(target, [ColumnMetadata(name="n", type=pa.null())], star=True, assigned=())
    assert err.value.code is ErrorCode.TYPE_MISMATCH
    nested = ColumnMetadata(name="m", type=pa.map_(pa.string(), pa.int32()), type_name="map<string,int>")
    with pytest.raises(MergekitError) as err:
        added_merge_columns(target, [nested], star=True, assigned=())
    assert err.value.code is ErrorCode.NOT_SUPPORTED and "of type map<string,int>" in err.value.message
    assert added_merge_columns(target, [nested], star=False, assigned=()) == ()  # not added: not looked at


def test_the_statements_parse_into_the_model() -> None:
    assert parse_statement("ALTER TABLE s.t RENAME COLUMN IF EXISTS A TO b") == AlterTableRenameColumn(
        name=parse_statement("DROP TABLE s.t").name,  # type: ignore[attr-defined]
        source="a",
        target="b",
        if_exists=True,
    )
    st = parse_statement("ALTER TABLE t ALTER COLUMN c SET DATA TYPE decimal(12, 2)")
    assert isinstance(st, AlterTableSetColumnType) and (st.column, st.type_text) == ("c", "decimal(12, 2)")
    merge = parse_statement(
        "WITH q AS (SELECT 1 AS id) MERGE WITH SCHEMA EVOLUTION INTO t USING q ON t.id = q.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert isinstance(merge, Merge) and merge.schema_evolution and all(c.star for c in merge.cases)
    plain = parse_statement("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert isinstance(plain, Merge) and not plain.schema_evolution


@pytest.mark.parametrize(
    ("statement", "code", "text"),
    [
        ("ALTER TABLE t ALTER COLUMN c SET DATA TYPE bigint USING c + 1", ErrorCode.NOT_SUPPORTED, "USING"),
        ("ALTER TABLE t RENAME COLUMN x.a TO b", ErrorCode.SYNTAX_ERROR, "expected a column name"),
        ("ALTER TABLE t RENAME COLUMN a TO x.b", ErrorCode.SYNTAX_ERROR, "expected a column name"),
        ("ALTER TABLE IF EXISTS t RENAME COLUMN a TO b", ErrorCode.NOT_SUPPORTED, "IF EXISTS"),
        ("ALTER TABLE t RENAME TO u", ErrorCode.NOT_SUPPORTED, "RENAME COLUMN"),
    ],
)
def test_what_the_statements_refuse(statement: str, code: ErrorCode, text: str) -> None:
    with pytest.raises(MergekitError) as err:
        parse_statement(statement)
    assert err.value.code is code and text in err.value.message
