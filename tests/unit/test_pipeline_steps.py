"""The named steps of the MERGE pipeline that need no Spark: which rows each WHEN clause takes (shared by the Spark
and the Arrow evaluator) and the duplicate-match check."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.dml.layout import OP, ROW_ID, UID
from mergekit.execution.dml.pipeline import DuplicateCheck
from mergekit.planner import JoinKind, PlannedCase
from mergekit.spi import MergeOperation
from mergekit.sql import MergeCaseKind


def _case(kind: MergeCaseKind, operation: MergeOperation) -> PlannedCase:
    return PlannedCase(number=0, kind=kind, operation=operation, condition=None, values=())


@pytest.mark.parametrize(
    ("kind", "join", "taken"),
    [
        (MergeCaseKind.MATCHED, JoinKind.RIGHT, (True, None)),
        (MergeCaseKind.MATCHED, JoinKind.FULL, (True, True)),
        (MergeCaseKind.NOT_MATCHED, JoinKind.RIGHT, (False, None)),
        (MergeCaseKind.NOT_MATCHED, JoinKind.FULL, (False, None)),
        (MergeCaseKind.NOT_MATCHED_BY_SOURCE, JoinKind.FULL, (None, False)),
        (MergeCaseKind.MATCHED, JoinKind.SCAN, (None, None)),
        (MergeCaseKind.NOT_MATCHED, JoinKind.ANTI, (None, None)),
    ],
)
def test_rows_each_case_takes(kind: MergeCaseKind, join: JoinKind, taken: tuple[bool | None, bool | None]) -> None:
    assert _case(kind, MergeOperation.UPDATE).rows_taken(join) == taken


def test_unassigned_columns_keep_the_target_value_except_on_insert() -> None:
    assert _case(MergeCaseKind.MATCHED, MergeOperation.UPDATE).keeps_unassigned
    assert _case(MergeCaseKind.MATCHED, MergeOperation.DELETE).keeps_unassigned
    assert not _case(MergeCaseKind.NOT_MATCHED, MergeOperation.INSERT).keeps_unassigned


def _page(ops: list[int], uids: list[int | None]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            OP: pa.array(ops, pa.int8()),
            UID: pa.array(uids, pa.int64()),
            ROW_ID: pa.array([f"row-{u}" for u in uids], pa.string()),
        }
    )


def test_duplicate_check_refuses_two_changes_of_one_target_row_across_pages() -> None:
    check = DuplicateCheck()
    check.add(_page([3, 1], [7, None]))  # an update of row 7, an insert
    check.add(_page([2], [7]))  # a delete of row 7 in a later page
    with pytest.raises(MergekitError) as caught:
        check.verify()
    assert caught.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
    assert "row-7" in str(caught.value)


def test_duplicate_check_ignores_inserts_and_distinct_rows() -> None:
    check = DuplicateCheck()
    check.add(_page([1, 1, 4], [None, None, None]))  # inserts (and an update's insert half) have no target row
    check.add(_page([3, 5], [1, 2]))
    check.verify()  # no error
