"""Planner unit tests: statement model -> MergePlan, without Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.planner import JoinKind, TargetTable, plan_delete, plan_insert, plan_merge, plan_update
from mergekit.spi import ColumnHandle, ColumnMetadata, ConnectorTableLayout, MergeOperation, RowChangeParadigm
from mergekit.sql import MergeCaseKind, parse_statement


def _target(paradigm: RowChangeParadigm = RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW, **kw) -> TargetTable:
    return TargetTable(
        name="lake.default.t",
        columns=(
            ColumnMetadata(name="id", type=pa.int32(), nullable=False),
            ColumnMetadata(name="name", type=pa.string()),
            ColumnMetadata(name="region", type=pa.string()),
        ),
        row_id=ColumnHandle(name="$row_id", type=pa.int64()),
        paradigm=paradigm,
        **kw,
    )


def test_merge_cases_are_numbered_in_order_over_all_kinds() -> None:
    plan = plan_merge(
        parse_statement(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.x THEN DELETE "
            "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id) WHEN MATCHED THEN UPDATE SET name = s.name"
        ),
        _target(),
    )
    assert [(c.number, c.kind, c.operation) for c in plan.cases] == [
        (0, MergeCaseKind.MATCHED, MergeOperation.DELETE),
        (1, MergeCaseKind.NOT_MATCHED, MergeOperation.INSERT),
        (2, MergeCaseKind.MATCHED, MergeOperation.UPDATE),
    ]
    assert plan.join is JoinKind.RIGHT
    assert plan.duplicate_check
    assert plan.target_alias == "t" and plan.source_alias == "s"
    insert = plan.cases[1]
    assert [v.sql if v else None for v in insert.values] == ["s.id", None, None]
    update = plan.cases[2]
    assert update.set_columns == ("name",)
    assert plan.update_case_columns == {2: ("name",)}


def test_not_matched_by_source_uses_full_outer_join() -> None:
    plan = plan_merge(
        parse_statement("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE"), _target()
    )
    assert plan.join is JoinKind.FULL
    assert plan.duplicate_check is False


def test_insert_only_merge_takes_the_anti_join_unless_it_reads_the_target() -> None:
    plain = plan_merge(
        parse_statement("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"),
        _target(),
    )
    assert plain.join is JoinKind.ANTI and not plain.duplicate_check
    # reading the target in a NOT MATCHED clause is an error (there is no target row), not a silent NULL
    with pytest.raises(MergekitError) as caught:
        plan_merge(
            parse_statement(
                "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, t.name)"
            ),
            _target(),
        )
    assert caught.value.code is ErrorCode.COLUMN_NOT_FOUND


def test_processor_follows_the_paradigm() -> None:
    stmt = parse_statement("UPDATE t SET name = 'x'")
    assert plan_update(stmt, _target()).processor == "DeleteAndInsertMergeProcessor"
    assert plan_update(stmt, _target(RowChangeParadigm.CHANGE_ONLY_UPDATED_COLUMNS)).processor == (
        "ChangeOnlyUpdatedColumnsMergeProcessor"
    )


def test_layout_columns_are_carried_for_redistribution() -> None:
    plan = plan_update(
        parse_statement("UPDATE t SET region = 'x'"),
        _target(insert_layout=ConnectorTableLayout(partition_columns=("region",))),
    )
    assert plan.redistribution_columns == ("region",)
    text = plan.explain()
    assert "hash(region)" in text and "DeleteAndInsertMergeProcessor" in text and "NOT NULL id" in text


def test_update_delete_insert_shapes() -> None:
    update = plan_update(parse_statement("UPDATE t SET name = upper(name) WHERE id > 1"), _target())
    assert update.join is JoinKind.SCAN and update.where.sql == "id > 1" and not update.duplicate_check
    delete = plan_delete(parse_statement("DELETE FROM t"), _target())
    assert delete.cases[0].operation is MergeOperation.DELETE and delete.where is None
    insert = plan_insert(parse_statement("INSERT INTO t (name, id) VALUES ('a', 1)"), _target())
    assert insert.join is JoinKind.SOURCE and insert.cases[0].set_columns == ("name", "id")


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1",
            ErrorCode.COLUMN_NOT_FOUND,
            "Merge column name does not exist in target table: nope",
        ),
        (
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = 1, name = 2",
            ErrorCode.DUPLICATE_COLUMN_NAME,
            "Merge column name is specified more than once: name",
        ),
        ("UPDATE t SET nope = 1", ErrorCode.COLUMN_NOT_FOUND, "The UPDATE SET target column nope doesn't exist"),
        (
            "INSERT INTO t (nope) VALUES (1)",
            ErrorCode.COLUMN_NOT_FOUND,
            "Insert column name does not exist in target table: nope",
        ),
    ],
)
def test_analysis_errors(sql: str, code: ErrorCode, message: str) -> None:
    stmt = parse_statement(sql)
    fn = {"Merge": plan_merge, "Update": plan_update, "Insert": plan_insert}[type(stmt).__name__]
    with pytest.raises(MergekitError) as info:
        fn(stmt, _target())
    assert info.value.code is code
    assert str(info.value) == f"[{code.name}] {message}"
