"""The columns merge rows carry between the steps of a MERGE (DESIGN.md §3), in one place.

A merge row, as either evaluator of the WHEN clauses produces it (Spark SQL: :mod:`.merge_rows`; Arrow:
:mod:`mergekit.execution.arrow.cases`): the target's data columns (new values for INSERT and UPDATE, the current row for DELETE),
then :data:`OP` (1 INSERT, 2 DELETE, 3 UPDATE), :data:`CASE` (the WHEN clause's number) and :data:`ROW_ID`,
which are the merge page layout of the SPI (``MERGE_PAGE_LAYOUT``). The engine's own columns follow and never
reach a sink:

- :data:`UID`: a number unique to each target row in this statement (the duplicate-match check counts it);
- :data:`SEQ`: a number unique to each merge row (routes inserts when the table has no insert layout);
- ``OLD_PREFIX + column``: the target row's old value of a redistribution column (deletes go where the old
  row lives);
- :data:`UNCHANGED`: TRUE on an UPDATE whose new values equal the old ones; the writer counts it and does not
  hand it to the sink (no-op update elimination).

The row change processor (:mod:`.processors`) adds :data:`INSERT_FROM_UPDATE` and :data:`MERGE_CASE` (the WHEN
clause, kept for per-clause counts after the processor renumbers :data:`CASE`).
"""

from __future__ import annotations

from mergekit.spi import MERGE_PAGE_LAYOUT, MergeOperation

__all__ = [
    "OP",
    "CASE",
    "ROW_ID",
    "UID",
    "SEQ",
    "OLD_PREFIX",
    "INSERT_FROM_UPDATE",
    "MERGE_CASE",
    "UNCHANGED",
    "CHANGES",
]

OP = MERGE_PAGE_LAYOUT.operation
CASE = MERGE_PAGE_LAYOUT.case_number
ROW_ID = MERGE_PAGE_LAYOUT.row_id
UID = "$uid"
SEQ = "$seq"
OLD_PREFIX = "$old_"
INSERT_FROM_UPDATE = "$insert_from_update"
MERGE_CASE = "$merge_case"
UNCHANGED = "$unchanged"

# Operations that change an existing target row, before or after the processor: DELETE, UPDATE, UPDATE_DELETE.
# Two of them for one target row is what the duplicate-match check refuses.
CHANGES = (MergeOperation.DELETE.value, MergeOperation.UPDATE.value, MergeOperation.UPDATE_DELETE.value)
