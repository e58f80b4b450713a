"""Row change processors and the SPI page helpers: pure pyarrow, no Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.execution.dml.processors import ChangeOnlyUpdatedColumnsMergeProcessor, DeleteAndInsertMergeProcessor
from mergekit.spi import MERGE_PAGE_LAYOUT, MergeOperation, create_delete_and_insert_pages


def _merge_rows() -> pa.RecordBatch:
    return pa.record_batch(
        {
            "id": pa.array([10, 20, 30], pa.int32()),
            "region": ["new-a", "b", "new-c"],
            "$operation": pa.array([1, 2, 3], pa.int8()),
            "$case_number": pa.array([2, 0, 1], pa.int32()),
            "$row_id": pa.array([None, 7, 8], pa.int64()),
            "$uid": pa.array([None, 100, 101], pa.int64()),
            "$old_region": [None, "b", "old-c"],
        }
    )


def test_delete_and_insert_processor_splits_updates() -> None:
    out = DeleteAndInsertMergeProcessor(["id", "region"], ["region"]).transform_page(_merge_rows()).to_pydict()
    rows = sorted(
        zip(
            out["$operation"],
            out["id"],
            out["region"],
            out["$case_number"],
            out["$row_id"],
            out["$insert_from_update"],
            out["$merge_case"],
            strict=True,
        )
    )
    assert rows == [
        (1, 10, "new-a", 0, None, 0, 2),  # INSERT: new data, dummy case 0, no row id
        (2, None, "b", -1, 7, 0, 0),  # DELETE: data nulled but the partition column keeps the old value
        (4, 30, "new-c", 0, None, 1, 1),  # UPDATE_INSERT: flagged insert-from-update
        (5, None, "old-c", -1, 8, 0, 1),  # UPDATE_DELETE: routed by the OLD partition value
    ]


def test_change_only_updated_columns_processor_passes_rows_through() -> None:
    out = ChangeOnlyUpdatedColumnsMergeProcessor(["id", "region"]).transform_page(_merge_rows()).to_pydict()
    assert out["$operation"] == [1, 2, 3]
    assert out["$row_id"] == [None, 7, 8]
    assert out["region"] == ["new-a", "b", "new-c"]
    assert out["$insert_from_update"] == [0, 0, 0]
    assert out["$case_number"] == [2, 0, 1]


def test_merge_page_layout_is_a_tested_constant() -> None:
    assert MERGE_PAGE_LAYOUT.trailing_channels == ("$operation", "$case_number", "$row_id")
    schema = MERGE_PAGE_LAYOUT.schema(pa.schema([("a", pa.int32())]), pa.int64())
    assert schema.names == ["a", "$operation", "$case_number", "$row_id"]
    assert schema.field("$operation").type == pa.int8()
    assert schema.field("$case_number").type == pa.int32()
    assert [op.value for op in MergeOperation] == [1, 2, 3, 4, 5]
    assert [op.name for op in MergeOperation] == ["INSERT", "DELETE", "UPDATE", "UPDATE_INSERT", "UPDATE_DELETE"]


def test_create_delete_and_insert_pages() -> None:
    page = pa.record_batch(
        {
            "a": [1, 2, 3, 4],
            "$operation": pa.array([1, 2, 4, 5], pa.int8()),
            "$case_number": pa.array([0, 0, 0, -1], pa.int32()),
            "$row_id": pa.array([None, 11, None, 12], pa.int64()),
        }
    )
    split = create_delete_and_insert_pages(page, 1)
    assert split.deletions.to_pydict() == {"a": [2, 4], "$row_id": [11, 12]}
    assert split.insertions.to_pydict() == {"a": [1, 3]}


def test_create_delete_and_insert_pages_rejects_update_operation() -> None:
    page = pa.record_batch(
        {"a": [1], "$operation": pa.array([3], pa.int8()), "$case_number": pa.array([0], pa.int32()), "$row_id": [5]}
    )
    with pytest.raises(ValueError, match="Invalid merge operation: 3"):
        create_delete_and_insert_pages(page, 1)
