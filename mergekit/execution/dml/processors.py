"""Row change processors (Trino's ``MergeRowChangeProcessor``): pure pyarrow, no Spark.

Input page (what the merge-row projection produces): the data columns (new values for INSERT/UPDATE, the
current row for DELETE), ``$operation`` (1, 2 or 3), ``$case_number``, ``$row_id``, then engine-internal
columns (``$uid``, ``$seq``, ``$old_<col>``) that pass through untouched.

Output page: the data columns, ``$operation``, ``$case_number``, ``$row_id``, ``$insert_from_update`` (int8,
1 on the insert half of an update), ``$merge_case`` (the WHEN clause, kept for per-clause metrics), then the
internal columns. Both processors keep the input's internal columns so redistribution can read them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.spi import MergeOperation

from .layout import CASE, INSERT_FROM_UPDATE, MERGE_CASE, OLD_PREFIX, OP, ROW_ID, UID

__all__ = [
    "RowChangeProcessor",
    "ChangeOnlyUpdatedColumnsMergeProcessor",
    "DeleteAndInsertMergeProcessor",
]


class RowChangeProcessor:
    def __init__(self, data_columns: Sequence[str], redistribution_columns: Sequence[str] = ()) -> None:
        self.data_columns = tuple(data_columns)
        self.redistribution_columns = tuple(redistribution_columns)

    def _internal(self, page: pa.RecordBatch) -> list[str]:
        fixed = {*self.data_columns, OP, CASE, ROW_ID}
        return [n for n in page.schema.names if n not in fixed]

    def transform_page(self, page: pa.RecordBatch) -> pa.RecordBatch:
        raise NotImplementedError


class ChangeOnlyUpdatedColumnsMergeProcessor(RowChangeProcessor):
    """UPDATE rows pass as they are, with their row id: the connector changes columns in place."""

    def transform_page(self, page: pa.RecordBatch) -> pa.RecordBatch:
        n = page.num_rows
        arrays = [page.column(c) for c in self.data_columns]
        names = list(self.data_columns)
        arrays += [page.column(OP), page.column(CASE), page.column(ROW_ID)]
        names += [OP, CASE, ROW_ID]
        arrays += [pa.nulls(n, pa.int8()).fill_null(0), page.column(CASE)]
        names += [INSERT_FROM_UPDATE, MERGE_CASE]
        for name in self._internal(page):
            arrays.append(page.column(name))
            names.append(name)
        return pa.RecordBatch.from_arrays(arrays, names=names)


class DeleteAndInsertMergeProcessor(RowChangeProcessor):
    """Every UPDATE becomes an UPDATE_DELETE of the old row and an UPDATE_INSERT of the new one.

    Delete rows carry nulls in the data columns except the redistribution columns, which hold the *old*
    values (from ``$old_<col>``), case number -1, and the row id. Insert rows carry the new data, case
    number 0 (Trino's dummy), no row id, and ``$insert_from_update`` = 1 when they come from an UPDATE.
    """

    def transform_page(self, page: pa.RecordBatch) -> pa.RecordBatch:
        ops = page.column(OP)
        internal = self._internal(page)
        is_delete = pc.or_(pc.equal(ops, MergeOperation.DELETE.value), pc.equal(ops, MergeOperation.UPDATE.value))
        is_insert = pc.or_(pc.equal(ops, MergeOperation.INSERT.value), pc.equal(ops, MergeOperation.UPDATE.value))
        deletes = page.filter(is_delete)
        inserts = page.filter(is_insert)
        names = [*self.data_columns, OP, CASE, ROW_ID, INSERT_FROM_UPDATE, MERGE_CASE, *internal]

        d = deletes.num_rows
        d_ops = deletes.column(OP)
        d_arrays: list[pa.Array] = []
        for c in self.data_columns:
            field_type = page.schema.field(c).type
            if c in self.redistribution_columns:
                d_arrays.append(deletes.column(OLD_PREFIX + c).cast(field_type))
            else:
                d_arrays.append(pa.nulls(d, field_type))
        d_arrays += [
            pc.if_else(
                pc.equal(d_ops, MergeOperation.UPDATE.value), pa.scalar(MergeOperation.UPDATE_DELETE, pa.int8()), d_ops
            ).cast(pa.int8()),
            pa.array([-1] * d, pa.int32()),
            deletes.column(ROW_ID),
            pa.array([0] * d, pa.int8()),
            deletes.column(CASE),
        ]
        d_arrays += [deletes.column(n) for n in internal]

        i = inserts.num_rows
        i_ops = inserts.column(OP)
        from_update = pc.equal(i_ops, MergeOperation.UPDATE.value)
        i_arrays: list[pa.Array] = [inserts.column(c) for c in self.data_columns]
        i_arrays += [
            pc.if_else(from_update, pa.scalar(MergeOperation.UPDATE_INSERT, pa.int8()), i_ops).cast(pa.int8()),
            pa.array([0] * i, pa.int32()),
            pa.nulls(i, page.schema.field(ROW_ID).type),
            pc.if_else(from_update, pa.scalar(1, pa.int8()), pa.scalar(0, pa.int8())),
            inserts.column(CASE),
        ]
        for n in internal:
            col = inserts.column(n)
            i_arrays.append(pa.nulls(i, col.type) if n == UID else col)
        out_d = pa.RecordBatch.from_arrays(d_arrays, names=names)
        out_i = pa.RecordBatch.from_arrays(i_arrays, schema=out_d.schema)
        return pa.Table.from_batches([out_d, out_i]).combine_chunks().to_batches()[0] if (d + i) else out_d
