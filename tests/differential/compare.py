"""How the differential test judges one statement run on PostgreSQL 15 and on mergekit.

An :class:`Outcome` is a row count or an error: PostgreSQL's SQLSTATE, or mergekit's ``ErrorCode`` name. They
agree when both succeed with the same count (and, checked by the runner, the same table afterwards), or both fail
with errors of the same class: :data:`SQLSTATE_CODES` maps each PostgreSQL SQLSTATE the generator can provoke to
the mergekit codes of that class. Everything else is a disagreement unless exactly one entry of
:data:`DELIBERATE` (the differences docs/sql.md lists under "Differences from PostgreSQL") explains it.

A PostgreSQL error whose class is not among the statement's hazards (generator.HAZARDS) is the generator's fault:
it wrote a statement that fails for a reason it did not mean to provoke.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

from tests.differential.generator import Statement

# PostgreSQL SQLSTATE -> the mergekit error codes of the same class. 21000 (cardinality_violation) is two classes,
# told apart by the message (see pg_codes).
SQLSTATE_CODES: dict[str, frozenset[str]] = {
    "21000/merge": frozenset({"MERGE_TARGET_ROW_MULTIPLE_MATCHES"}),  # MERGE command cannot affect row a second time
    "21000/subquery": frozenset({"SUBQUERY_MULTIPLE_ROWS"}),  # more than one row returned by a subquery
    "23502": frozenset({"CONSTRAINT_VIOLATION"}),  # not_null_violation
    "23505": frozenset({"CONSTRAINT_VIOLATION"}),  # unique_violation (the PRIMARY KEY)
    "23514": frozenset({"CONSTRAINT_VIOLATION"}),  # check_violation
    "22003": frozenset({"NUMERIC_VALUE_OUT_OF_RANGE"}),  # numeric_value_out_of_range
    "22008": frozenset({"NUMERIC_VALUE_OUT_OF_RANGE"}),  # datetime_field_overflow: date + integer out of range
    "22012": frozenset({"DIVISION_BY_ZERO"}),  # division_by_zero
    "22P02": frozenset({"INVALID_CAST_ARGUMENT"}),  # invalid_text_representation: CAST('x' AS INTEGER)
    "42804": frozenset({"TYPE_MISMATCH"}),  # datatype_mismatch: text assigned to a number column
    "42883": frozenset({"TYPE_MISMATCH", "FUNCTION_NOT_FOUND"}),  # undefined_function: integer = text
    "42601": frozenset({"SYNTAX_ERROR"}),  # syntax_error: an unreachable WHEN clause
    "42P01": frozenset({"COLUMN_NOT_FOUND"}),  # undefined_table: the target in a NOT MATCHED clause
}

# The hazard (generator.HAZARDS) each SQLSTATE class belongs to: a PostgreSQL error outside the statement's
# hazards is a generator bug.
SQLSTATE_HAZARDS: dict[str, frozenset[str]] = {
    "21000/merge": frozenset({"dup_match"}),
    "21000/subquery": frozenset({"subquery_rows"}),
    "23502": frozenset({"not_null"}),
    "23505": frozenset({"unique"}),
    "23514": frozenset({"check"}),
    "22003": frozenset({"overflow", "cast"}),
    "22008": frozenset({"overflow"}),
    "22012": frozenset({"div0"}),
    "22P02": frozenset({"cast"}),
    "42804": frozenset({"type_error"}),
    "42883": frozenset({"type_error"}),
    "42601": frozenset({"unreachable"}),
    "42P01": frozenset({"target_ref"}),
}

# mergekit code -> the hazards it may stand for (the error-precedence rule below)
CODE_HAZARDS: dict[str, frozenset[str]] = {
    "MERGE_TARGET_ROW_MULTIPLE_MATCHES": frozenset({"dup_match"}),
    "SUBQUERY_MULTIPLE_ROWS": frozenset({"subquery_rows"}),
    "CONSTRAINT_VIOLATION": frozenset({"not_null", "unique", "check"}),
    "NUMERIC_VALUE_OUT_OF_RANGE": frozenset({"overflow", "cast"}),
    "DIVISION_BY_ZERO": frozenset({"div0"}),
    "INVALID_CAST_ARGUMENT": frozenset({"cast"}),
    "TYPE_MISMATCH": frozenset({"type_error"}),
    "FUNCTION_NOT_FOUND": frozenset({"type_error"}),
    "SYNTAX_ERROR": frozenset({"unreachable"}),
    "COLUMN_NOT_FOUND": frozenset({"target_ref"}),
}


@dataclass(frozen=True)
class Outcome:
    """``count`` when the statement succeeded, else ``error`` (SQLSTATE class key or ErrorCode name) and
    ``message``. ``internal``: a mergekit error of type INTERNAL_ERROR or an exception that is no MergekitError."""

    count: int | None = None
    error: str | None = None
    message: str = ""
    internal: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def __str__(self) -> str:
        if self.ok:
            return f"{self.count} rows"
        return f"{self.error}: {self.message}"


def pg_error_key(sqlstate: str, message: str) -> str:
    """The SQLSTATE as a key of SQLSTATE_CODES (21000 split by its message)."""
    if sqlstate == "21000":
        return "21000/merge" if "MERGE" in message else "21000/subquery"
    return sqlstate


def pg_codes(pg: Outcome) -> frozenset[str]:
    assert pg.error is not None
    return SQLSTATE_CODES.get(pg.error, frozenset())


def explained_by_hazards(statement: Statement, pg: Outcome) -> bool:
    """Whether a PostgreSQL error is one the generator meant the statement to be able to raise."""
    assert pg.error is not None
    return bool(SQLSTATE_HAZARDS.get(pg.error, frozenset()) & statement.hazards)


# ---- deliberate differences (docs/sql.md, "Differences from PostgreSQL") -------------------------------------------


@dataclass(frozen=True)
class Deliberate:
    """A documented difference: ``applies(statement, pg, mk)`` is true exactly for the outcomes it explains. When
    one side succeeded and the other failed, the tables differ afterwards and the runner ends the scenario there."""

    name: str
    explanation: str
    applies: Callable[[Statement, Outcome, Outcome], bool]


def _refused_assignment(tag: str) -> Callable[[Statement, Outcome, Outcome], bool]:
    """mergekit refuses the statement while analysing it; PostgreSQL runs it, and succeeds or fails for one of the
    reasons the statement was built to be able to fail for."""

    def applies(st: Statement, pg: Outcome, mk: Outcome) -> bool:
        return tag in st.tags and mk.error == "TYPE_MISMATCH" and (pg.ok or explained_by_hazards(st, pg))

    return applies


def _error_precedence(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    if pg.ok or mk.ok or mk.internal:
        return False
    pg_hazards = SQLSTATE_HAZARDS.get(pg.error or "", frozenset()) & st.hazards
    mk_hazards = CODE_HAZARDS.get(mk.error or "", frozenset()) & st.hazards
    return bool(pg_hazards) and bool(mk_hazards)


def _constant_folding(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    if "constant_error" in st.tags:  # either side may fail
        arithmetic = {"22003", "22012", "NUMERIC_VALUE_OUT_OF_RANGE", "DIVISION_BY_ZERO"}
        return pg.ok != mk.ok and (pg.error or mk.error) in arithmetic
    # a one-row VALUES source: its values are constants to PostgreSQL's planner
    return "single_row_values" in st.tags and mk.ok and pg.error in ("22003", "22012", "22P02")


def _subquery_rows_first(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    return "subquery_rows" in st.hazards and pg.ok and mk.error == "SUBQUERY_MULTIPLE_ROWS"


def _not_matched_do_nothing_skipped(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    runtime = {"INVALID_CAST_ARGUMENT", "NUMERIC_VALUE_OUT_OF_RANGE", "DIVISION_BY_ZERO", "SUBQUERY_MULTIPLE_ROWS"}
    return "not_matched_only_do_nothing" in st.tags and pg.ok and mk.error in runtime


def _nothing_to_change(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    runtime = ("22003", "22012", "22P02", "21000/subquery")
    return "all_do_nothing" in st.tags and mk.ok and mk.count == 0 and pg.error in runtime


def _null_left_operand(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    return "null_left_operand" in st.tags and mk.ok and pg.error in ("22003", "22012", "22P02", "21000/subquery")


_DATE_OVERFLOW = re.compile(r"Date out of range: (\d{4})-(\d\d)-(\d\d) ([+-]) (-?\d+)$")
# PostgreSQL's DATE range in days since 1970-01-01: 4714-11-24 BC (Julian day 0) to 5874897-12-31
_PG_DATE_DAYS = (-2440588, 2147483494 - 2440588 - 1)


def _date_range(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    """mergekit's date out of range (its message names the date and the day count) is a date PostgreSQL has."""
    if "date_arith" not in st.tags or not pg.ok or mk.error != "NUMERIC_VALUE_OUT_OF_RANGE":
        return False
    found = _DATE_OVERFLOW.search(mk.message)
    if found is None:
        return False
    year, month, day, op, n = found.groups()
    days = (dt.date(int(year), int(month), int(day)) - dt.date(1970, 1, 1)).days + int(n) * (1 if op == "+" else -1)
    return not (dt.date.min.toordinal() - 719163 <= days <= dt.date.max.toordinal() - 719163) and (
        _PG_DATE_DAYS[0] <= days <= _PG_DATE_DAYS[1]
    )


def _source_computed_first(st: Statement, pg: Outcome, mk: Outcome) -> bool:
    return "computed_source" in st.tags and pg.ok and mk.error == "NUMERIC_VALUE_OUT_OF_RANGE"


DELIBERATE: list[Deliberate] = [
    Deliberate(
        "assignment_number_to_text",
        "PostgreSQL assigns a number to a VARCHAR column (an assignment cast); mergekit, as Trino "
        "(typesMatchForInsert), fails with TYPE_MISMATCH.",
        _refused_assignment("assign_number_to_text"),
    ),
    Deliberate(
        "assignment_text_literal_to_number",
        "PostgreSQL reads a quoted literal assigned to a number column as a number ('12' is 12; 'ab' fails with "
        "22P02); mergekit, as Trino, types it VARCHAR and fails with TYPE_MISMATCH.",
        _refused_assignment("assign_literal_to_number"),
    ),
    Deliberate(
        "constant_folding",
        "An expression of constants that fails (2147483647 + 1, 1 / 0) where no row evaluates it, say in a WHEN "
        "clause no row takes: PostgreSQL folds constants while planning and fails the statement; mergekit (as "
        "Trino) fails only when a row evaluates it, though Spark's optimizer folds some constants too (a WHERE "
        "of 1 = 0 AND a = 1 / 0 fails in mergekit, not in PostgreSQL). Either side may be the one that fails. "
        "PostgreSQL also pulls a one-row VALUES source up as constants: s.x / 0 fails there while planning.",
        _constant_folding,
    ),
    Deliberate(
        "subquery_rows_first",
        "A correlated scalar subquery that returns more than one row for some row: mergekit (as Trino plans it) "
        "joins the subquery to every row and fails with SUBQUERY_MULTIPLE_ROWS even where that row never reads "
        "the value (a WHEN clause it does not take, a CASE branch); PostgreSQL evaluates the subquery only where a "
        "row needs it.",
        _subquery_rows_first,
    ),
    Deliberate(
        "not_matched_do_nothing_skipped",
        "A MERGE whose WHEN NOT MATCHED clauses all say DO NOTHING: PostgreSQL joins with an inner join then, so "
        "the conditions of those clauses are never evaluated and an error in them (CAST(s.w AS INTEGER) of 'a b') "
        "is never raised; mergekit evaluates them for the source rows no target row matches, as written.",
        _not_matched_do_nothing_skipped,
    ),
    Deliberate(
        "nothing_to_change",
        "A MERGE whose WHEN clauses all say DO NOTHING (or can never be taken: AND FALSE) can change no row: "
        "mergekit (Spark's optimizer) computes neither its source, the join nor the WHEN conditions, so an error "
        "there (an overflow in a computed source column, t.b % 0 in a condition) is not raised; PostgreSQL runs "
        "the join and fails.",
        _nothing_to_change,
    ),
    Deliberate(
        "null_left_operand",
        "An operator whose left operand is NULL: mergekit (Spark) is NULL without evaluating the right operand, so "
        "an error there (NULL + (x - 9223372036854775807), NULL * (10 / 0)) is never raised; PostgreSQL evaluates "
        "both operands and fails. The runner confirms each case: PostgreSQL, running the statement with every "
        "operator written CASE WHEN a IS NULL THEN NULL ELSE a + b END, must give mergekit's count and table.",
        _null_left_operand,
    ),
    Deliberate(
        "source_computed_first",
        "A MERGE source that is a subquery computing a column (q.x * 2 AS x): PostgreSQL pulls the expression up "
        "into the WHEN clauses that read s.x, so a row no clause reads it for never computes it and its overflow "
        "is never raised; mergekit, as Trino, computes the source's rows first and fails.",
        _source_computed_first,
    ),
    Deliberate(
        "date_range",
        "Date arithmetic whose result is past 9999-12-31 or before 0001-01-01: mergekit's DATE ends there and the "
        "statement fails with NUMERIC_VALUE_OUT_OF_RANGE; PostgreSQL's DATE reaches from 4714 BC to 5874897 AD, so "
        "it computes (and stores) the date. The judge checks that mergekit's message names a date and day count "
        "whose result lies outside mergekit's range and inside PostgreSQL's.",
        _date_range,
    ),
    Deliberate(
        "error_precedence",
        "A statement with more than one error (say a NULL for a NOT NULL column in one row and an overflow in "
        "another) fails on both sides, but which error is reported depends on the order rows are processed in: "
        "both errors must be ones the statement can raise, and neither engine changes anything.",
        _error_precedence,
    ),
]


def judge(statement: Statement, pg: Outcome, mk: Outcome) -> tuple[str, str]:
    """``("agree", "")``, ``("deliberate", name)``, ``("generator", why)`` or ``("disagree", why)``. Counts are
    compared here; tables by the runner."""
    if mk.internal:
        return "disagree", "mergekit failed with an internal error"
    if pg.error is not None and not explained_by_hazards(statement, pg):
        return "generator", f"PostgreSQL failed with {pg.error}, which the statement was not built to raise"
    if pg.ok and mk.ok:
        if pg.count == mk.count:
            return "agree", ""
        return "disagree", f"row count: PostgreSQL {pg.count}, mergekit {mk.count}"
    if not pg.ok and not mk.ok and mk.error in pg_codes(pg):
        return "agree", ""
    for difference in DELIBERATE:  # (two can apply to one statement: either explains it)
        if difference.applies(statement, pg, mk):
            return "deliberate", difference.name
    if pg.ok:
        return "disagree", "PostgreSQL succeeded, mergekit failed"
    if mk.ok:
        return "disagree", "mergekit succeeded, PostgreSQL failed"
    return "disagree", f"different errors: PostgreSQL {pg.error}, mergekit {mk.error}"
