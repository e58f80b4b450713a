"""Steps 1-3 of a MERGE on the Spark plan (DESIGN.md §3): the merge rows as one Spark SQL query.

The target scan gets ``$present`` (TRUE on every target row) and a unique :data:`~.layout.UID`; it is RIGHT
(FULL, with WHEN NOT MATCHED BY SOURCE) joined to the source, which gets ``$spresent``; a searched CASE over
the joined row yields the merge row (a struct of the new column values, the operation and the case number) or
NULL when no WHEN clause takes the row, and NULL rows are dropped. This module is the Spark evaluator of the
WHEN clauses; :mod:`mergekit.execution.arrow.cases` is the Arrow one (MERGE by index lookups). Both take the rows each case may
take from :meth:`~mergekit.planner.PlannedCase.rows_taken` and what an unassigned column holds from
:attr:`~mergekit.planner.PlannedCase.keeps_unassigned`.

:func:`check_types` runs on the driver before anything begins: Trino's typesMatchForInsert over every
assigned value, from the output types of :meth:`MergeQueryBuilder.probe_sql`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.lazy_pyspark import T
from mergekit.execution.types import coercible, spark_sql_type, trino_name
from mergekit.planner import JoinKind, MergePlan, PlannedCase, not_null_violation
from mergekit.spi import MergeOperation
from mergekit.sql import Expression, trino_type_text

from .layout import CASE, OLD_PREFIX, OP, ROW_ID, SEQ, UID, UNCHANGED

__all__ = ["MergeQueryBuilder", "SRC", "check_types", "q"]

MR = "$mr"
PRESENT = "$present"
SPRESENT = "$spresent"
SRC = "$src"
NEVER = "$never"
SID = "$sid"  # a source row's number, with merge_duplicate_source


# The Trino type a value for a column of each temporal Spark type (by its class's name: pyspark is imported when
# a statement first needs it) is cast to (microseconds, as Spark keeps them).
_TEMPORAL: dict[str, str] = {
    "DateType": "date",
    "TimestampNTZType": "timestamp(6)",
    "TimestampType": "timestamp(6) with time zone",
}


def q(name: str) -> str:
    """Backtick-quote a Spark identifier."""
    return "`" + name.replace("`", "``") + "`"


def _lit(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@attrs.frozen(kw_only=True)
class MergeQueryBuilder:
    """Builds the Spark SQL of the merge rows for one plan.

    ``render`` turns a statement expression into Spark SQL (tables in subqueries already bound);
    ``column_types`` are the Spark types of the target's visible columns; ``row_id_type`` the Spark type of
    the row id column; ``target_view``/``source_from`` the FROM items.
    """

    plan: MergePlan
    render: Callable[[Expression], str]
    column_types: Mapping[str, T.DataType]
    row_id_type: T.DataType
    target_view: str | None
    source_from: str | None = None  # Spark SQL FROM item for the source (no alias)
    source_columns: tuple[str, ...] = ()  # INSERT: names given to source columns by position
    # INSERT: per source column, the zone of its timestamp values when not UTC (a user's DataFrame's session zone)
    source_zones: tuple[str | None, ...] = ()
    computed: tuple[tuple[str, str], ...] = ()  # (name, Spark SQL over the new column values): ComputedColumn
    # CHECK constraints: (message, Spark SQL over the new column values), guarded on INSERT and UPDATE rows
    checks: tuple[tuple[str, str], ...] = ()
    # Equality conjuncts of ON as Spark SQL (target side, source side). With any, the join is a shuffle join
    # partitioned on them, so every merge row of one target row comes out of one task (see ``colocated``).
    join_keys: tuple[tuple[str, str], ...] = ()
    # Pre-filter the target to rows whose join keys occur in the source (a broadcast semi join): a RIGHT
    # join then shuffles the rows that can match, not the whole target. Only when the source is small.
    reduce_target: bool = False
    # How the source's key values are collected for dynamic pruning (see :func:`.estimates.source_key_values`):
    # None (not worth it), "distinct" (a DISTINCT ... LIMIT into Python values) or "arrow" (every key value
    # through Arrow, deduplicated on the driver: sources of up to millions of keys).
    collect_key_values: str | None = None
    # Target columns whose value sets the connector puts to use ("arrow" collects only for these).
    value_set_columns: frozenset[str] = frozenset()
    # Per join key: the target column when the target side is a bare column (``t.id``), else None.
    key_columns: tuple[str | None, ...] = ()
    # A large source joined on one equality: worth a MERGE by index lookups (:mod:`.lookup`).
    lookup: bool = False

    @property
    def colocated(self) -> bool:
        """Whether all merge rows of a target row are produced by one task of the join stage, so the
        duplicate-match check can run there without another shuffle."""
        return bool(self.join_keys) and self.plan.join in (JoinKind.RIGHT, JoinKind.FULL)

    # ---- FROM clause -------------------------------------------------------------------------------

    def _target_sub(self) -> str:
        alias = q(self.plan.target_alias)
        source = f"{q(self.target_view or '')} AS {alias}"
        if self.reduce_target and self.join_keys:
            keys = ", ".join(f"{s} AS `$k{i}`" for i, (_, s) in enumerate(self.join_keys))
            on = " AND ".join(f"{t} = `$keys`.`$k{i}`" for i, (t, _) in enumerate(self.join_keys))
            source = (
                f"(SELECT /*+ BROADCAST(`$keys`) */ {alias}.* FROM {source} LEFT SEMI JOIN "
                f"(SELECT {keys} FROM {self.source_sub()}) AS `$keys` ON {on}) AS {alias}"
            )
        return f"(SELECT *, TRUE AS {q(PRESENT)}, monotonically_increasing_id() AS {q(UID)} FROM {source}) AS {alias}"

    def join_keys_sql(self) -> str:
        """The source side's join keys over the source (to estimate their size)."""
        keys = ", ".join(f"{s} AS `$k{i}`" for i, (_, s) in enumerate(self.join_keys))
        return f"SELECT {keys} FROM {self.source_sub()}"

    def key_values_sql(self, index: int, limit: int | None = None) -> str:
        """The non-null values of the source side of join key ``index``: up to ``limit`` distinct ones, or
        (no limit) every row's."""
        key = self.join_keys[index][1]
        if limit is None:
            return f"SELECT {key} AS `$k` FROM {self.source_sub()} WHERE {key} IS NOT NULL"
        return f"SELECT DISTINCT {key} AS `$k` FROM {self.source_sub()} WHERE {key} IS NOT NULL LIMIT {limit}"

    def source_sub(self) -> str:
        """The source as a FROM item under its alias, with a `$spresent` column (TRUE on every row)."""
        plan = self.plan
        relation = plan.source
        aliases = getattr(relation, "column_aliases", ())
        inner = f"{self.source_from} AS {q(SRC)}"
        if aliases:
            inner += "(" + ", ".join(q(a) for a in aliases) + ")"
        never = f", -1 - monotonically_increasing_id() AS {q(NEVER)}" if self.never_matches else ""
        if plan.dedup is not None:
            never += f", monotonically_increasing_id() AS {q(SID)}"
        return f"(SELECT *, TRUE AS {q(SPRESENT)}{never} FROM {inner}) AS {q(plan.source_alias or SRC)}"

    @property
    def never_matches(self) -> bool:
        """``ON FALSE`` (INSERT OVERWRITE): Spark would run a nested-loop join comparing every pair of rows. The join
        is then on the target's ``$uid`` (never negative) and a source column that is always negative, which
        Spark runs as a shuffle join, and no row matches."""
        on = self.plan.on
        return (
            on is not None and on.sql.strip().upper() == "FALSE" and self.plan.join in (JoinKind.RIGHT, JoinKind.FULL)
        )

    def from_clause(self) -> str:
        plan = self.plan
        if plan.join is JoinKind.SCAN:
            where = f" WHERE {self.render(plan.where)}" if plan.where is not None else ""
            return f"FROM {self._target_sub()}{where}"
        if plan.join is JoinKind.SOURCE:
            cols = ", ".join(q(c) for c in self.source_columns)
            return f"FROM ({self.source_from}) AS {q(SRC)}({cols})"
        on = self.render(plan.on) if plan.on is not None else "TRUE"
        if self.never_matches:
            on = f"{q(plan.target_alias)}.{q(UID)} = {q(plan.source_alias or SRC)}.{q(NEVER)}"
        if plan.join is JoinKind.ANTI:
            return f"FROM {self.source_sub()} LEFT ANTI JOIN {self._target_sub()} ON {on}"
        join = "FULL OUTER JOIN" if plan.join is JoinKind.FULL else "RIGHT OUTER JOIN"
        return f"FROM {self._target_sub()} {join} {self.source_sub()} ON {on}"

    # ---- CASE -------------------------------------------------------------------------------------

    def _has_target(self) -> bool:
        return self.plan.join in (JoinKind.RIGHT, JoinKind.FULL, JoinKind.SCAN)

    def _target_ref(self, column: str) -> str:
        return f"{q(self.plan.target_alias)}.{q(column)}"

    def case_guard(self, case: PlannedCase) -> str:
        """Spark SQL that holds on the joined rows ``case`` takes (its rows, then its condition)."""
        target, source = case.rows_taken(self.plan.join)
        parts = []
        if target is not None:
            parts.append(f"{q(self.plan.target_alias)}.{q(PRESENT)} IS {'NOT NULL' if target else 'NULL'}")
        if source is not None:
            parts.append(f"{q(self.plan.source_alias or SRC)}.{q(SPRESENT)} IS {'NOT NULL' if source else 'NULL'}")
        guard = " AND ".join(parts) or "TRUE"
        if case.condition is not None:
            guard = f"({guard}) AND ({self.render(case.condition)})"
        return guard

    def raw_value(self, case: PlannedCase, index: int) -> str | None:
        """The case's own expression for column ``index`` (before coercion), or None."""
        if self.plan.join is JoinKind.SOURCE:
            column = self.plan.target.columns[index].name
            if column in case.set_columns:
                return f"{q(SRC)}.{q(self.source_columns[case.set_columns.index(column)])}"
            # a column the INSERT omits: its default expression (planner.apply_defaults), or None (NULL)
        expr = case.values[index]
        return self.render(expr) if expr is not None else None

    def _temporal_value(self, case: PlannedCase, index: int, target_type: T.DataType) -> str | None:
        """The case's value for a DATE / TIMESTAMP / TIMESTAMP WITH TIME ZONE column through Trino's CAST, which
        reads a value's time zone (``CAST(TIMESTAMP '... +02:00' AS TIMESTAMP)`` keeps 12:00, a user's DataFrame
        timestamp its session's wall clock); None when the plain CAST below is the same."""
        trino = _TEMPORAL.get(type(target_type).__name__)
        if trino is None:
            return None
        if self.plan.join is JoinKind.SOURCE:
            column = self.plan.target.columns[index].name
            if column not in case.set_columns:
                return None
            position = case.set_columns.index(column)
            if position >= len(self.source_zones) or self.source_zones[position] is None:
                return None
            return self.render(Expression.column(SRC, self.source_columns[position]).cast_to(trino))
        expr = case.values[index]
        return self.render(expr.cast_to(trino)) if expr is not None and not expr.is_null_literal else None

    def value(self, case: PlannedCase, index: int, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        column = self.plan.target.columns[index]
        target_type = self.column_types[column.name]
        type_sql = spark_sql_type(target_type)
        if column.name in case.storage_defaults:  # the storage fills it: NULL here, and no NOT NULL check
            return f"CAST(NULL AS {type_sql})"
        raw = self._temporal_value(case, index, target_type) or self.raw_value(case, index)
        if raw is None:
            if case.keeps_unassigned and self._has_target():
                return self._target_ref(column.name)
            if case.operation is MergeOperation.DELETE:
                return f"CAST(NULL AS {type_sql})"
            raw = "NULL"  # an INSERT's omitted column: NULL, which a NOT NULL column refuses below
        value_type = value_types.get((case.number, index))
        if (
            value_type is not None
            and isinstance(value_type, T.FractionalType)
            and isinstance(target_type, T.IntegralType)
        ):
            raw = f"ROUND({raw})"  # Trino rounds when casting a fraction to an integer; Spark truncates
        value = f"CAST(({raw}) AS {type_sql})"
        if not column.nullable:
            message = _lit(f"[CONSTRAINT_VIOLATION] {not_null_violation(column.name)}")
            value = f"COALESCE({value}, raise_error({message}))"
        return value

    def merge_row(self, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        whens = [self._dedup_when()] if self.plan.dedup is not None and self._has_target() else []
        for case in self.plan.cases:
            if case.operation is None:  # DO NOTHING: the row is taken, and dropped as a row no clause takes
                whens.append(f"WHEN {self.case_guard(case)} THEN NULL")
                continue
            fields = []
            for i, column in enumerate(self.plan.target.columns):
                fields.append(f"{_lit(column.name)}, {self.value(case, i, value_types)}")
            fields.append(f"{_lit(OP)}, CAST({case.operation.value} AS TINYINT)")
            fields.append(f"{_lit(CASE)}, {case.number}")
            fields.append(f"{_lit(UNCHANGED)}, {self.unchanged(case, value_types)}")
            whens.append(f"WHEN {self.case_guard(case)} THEN named_struct({', '.join(fields)})")
        if all(case.operation is None for case in self.plan.cases):
            # every clause is DO NOTHING: a branch never taken gives the CASE its struct type
            fields = [
                f"{_lit(c.name)}, CAST(NULL AS {spark_sql_type(self.column_types[c.name])})"
                for c in self.plan.target.columns
            ]
            fields += [f"{_lit(OP)}, CAST(NULL AS TINYINT)", f"{_lit(CASE)}, CAST(NULL AS INT)"]
            fields += [f"{_lit(UNCHANGED)}, FALSE"]
            whens.append(f"WHEN FALSE THEN named_struct({', '.join(fields)})")
        return "CASE " + " ".join(whens) + " END"

    def _dedup_when(self) -> str:
        """merge_duplicate_source: a matched row whose source row is not the first, by the policy's order, of the
        source rows matching its target row takes no clause. Every unmatched row is a partition of its own."""
        assert self.plan.dedup is not None
        target = f"{q(self.plan.target_alias)}"
        source = f"{q(self.plan.source_alias or SRC)}"
        order = [
            f"{self.render(e)} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if nulls_first else 'LAST'}"
            for e, desc, nulls_first in self.plan.dedup.order_by
        ]
        order.append(f"{source}.{q(SID)}")
        partition = f"coalesce({target}.{q(UID)}, -1 - {source}.{q(SID)})"
        rank = f"row_number() OVER (PARTITION BY {partition} ORDER BY {', '.join(order)})"
        return f"WHEN {target}.{q(PRESENT)} IS NOT NULL AND {rank} > 1 THEN NULL"

    def unchanged(self, case: PlannedCase, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        """Spark SQL that is TRUE when an UPDATE case's new values equal the target row's (NULL equal to NULL): the
        row is counted but not written (no-op update elimination, :data:`~.layout.UNCHANGED`)."""
        if case.operation is not MergeOperation.UPDATE or not self._has_target():
            return "FALSE"
        same = [
            f"({self.value(case, i, value_types)} <=> {self._target_ref(column.name)})"
            for i, column in enumerate(self.plan.target.columns)
            if self.raw_value(case, i) is not None
        ]
        return " AND ".join(same) or "TRUE"

    def _internal_columns(self) -> list[str]:
        plan = self.plan
        row_id_sql = spark_sql_type(self.row_id_type)
        if self._has_target():
            cols = [
                f"{self._target_ref(UID)} AS {q(UID)}",
                f"{self._target_ref(plan.target.row_id.name)} AS {q(ROW_ID)}",
            ]
            cols += [f"{self._target_ref(c)} AS {q(OLD_PREFIX + c)}" for c in plan.redistribution_columns]
        else:
            cols = [f"CAST(NULL AS BIGINT) AS {q(UID)}", f"CAST(NULL AS {row_id_sql}) AS {q(ROW_ID)}"]
            cols += [
                f"CAST(NULL AS {spark_sql_type(self.column_types[c])}) AS {q(OLD_PREFIX + c)}"
                for c in plan.redistribution_columns
            ]
        cols.append(f"monotonically_increasing_id() AS {q(SEQ)}")
        return cols

    def merge_rows_sql(self, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        # A shuffle (sort-merge) join on the equality keys, never a broadcast of the target: see ``colocated``.
        hint = f"/*+ MERGE({q(self.plan.target_alias)}) */ " if self.colocated else ""
        inner = (
            f"SELECT {hint}{self.merge_row(value_types)} AS {q(MR)}, {', '.join(self._internal_columns())} "
            f"{self.from_clause()}"
        )
        outer = [f"{q(MR)}.{q(c.name)} AS {q(c.name)}" for c in self.plan.target.columns]
        outer += [f"{q(MR)}.{q(OP)} AS {q(OP)}", f"{q(MR)}.{q(CASE)} AS {q(CASE)}", q(ROW_ID), q(UID), q(SEQ)]
        outer += [q(OLD_PREFIX + c) for c in self.plan.redistribution_columns]
        outer += [f"{q(MR)}.{q(UNCHANGED)} AS {q(UNCHANGED)}"]
        rows = f"SELECT {', '.join(outer)} FROM ({inner}) AS `$rows` WHERE {q(MR)} IS NOT NULL"
        if self.checks:
            names = [q(c.name) for c in self.plan.target.columns] + [q(OP), q(CASE), q(ROW_ID), q(UID), q(SEQ)]
            names += [q(OLD_PREFIX + c) for c in self.plan.redistribution_columns] + [q(UNCHANGED)]
            rows = self._checked(rows, names)
        if not self.computed:
            return rows
        # the insert layout's computed columns, over each merge row's new values (appended to merge pages)
        extra = ", ".join(f"{sql} AS {q(name)}" for name, sql in self.computed)
        return f"SELECT *, {extra} FROM ({rows}) AS `$computed`"

    def _checked(self, rows: str, columns: list[str]) -> str:
        """``rows`` with every CHECK constraint evaluated on its INSERT and UPDATE rows (over their new values):
        a FALSE result raises ``CONSTRAINT_VIOLATION`` (a NULL one passes, as in SQL). The guard is the value of
        the operation column, which every later step reads, so Spark can neither prune it nor skip a row."""
        whens = " ".join(
            f"WHEN NOT ({sql}) THEN raise_error({_lit('[CONSTRAINT_VIOLATION] ' + message)})"
            for message, sql in self.checks
        )
        op = q(OP)
        guarded = (
            f"CASE WHEN {op} IN ({MergeOperation.INSERT.value}, {MergeOperation.UPDATE.value}) "
            f"THEN CASE {whens} ELSE {op} END ELSE {op} END AS {op}"
        )
        items = [guarded if c == op else c for c in columns]
        return f"SELECT {', '.join(items)} FROM ({rows}) AS `$checked`"

    def probe_sql(self) -> tuple[str, list[tuple[int, int]]]:
        """A query whose output types are the raw values of every case (and whose analysis checks the ON
        clause and case conditions), for type checking before anything runs."""
        items: list[str] = []
        keys: list[tuple[int, int]] = []
        for case in self.plan.cases:
            for i in range(len(self.plan.target.columns)):
                raw = self.raw_value(case, i)
                if raw is not None:
                    items.append(f"({raw}) AS `$v{case.number}_{i}`")
                    keys.append((case.number, i))
            items.append(f"({self.case_guard(case)}) AS `$c{case.number}`")
        return f"SELECT {', '.join(items) or '1'} {self.from_clause()}", keys


def check_types(
    plan: MergePlan, builder: MergeQueryBuilder, probe_schema: T.StructType, keys: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], T.DataType]:
    """Trino's typesMatchForInsert over every assigned value; raises TYPE_MISMATCH with Trino's message."""
    by_name = {f.name: f.dataType for f in probe_schema.fields}
    value_types = {(n, i): by_name[f"$v{n}_{i}"] for (n, i) in keys}
    for field in probe_schema.fields:
        if field.name.startswith("$c") and not isinstance(field.dataType, T.BooleanType | T.NullType):
            what = "The MERGE predicate" if plan.statement == "MERGE" else "WHERE clause predicate"
            raise MergekitError(
                ErrorCode.TYPE_MISMATCH, f"{what} must evaluate to a boolean: actual type {trino_name(field.dataType)}"
            )
    for case in plan.cases:
        idx = [i for (n, i) in keys if n == case.number]
        bad = [
            i
            for i in idx
            if not coercible(value_types[(case.number, i)], builder.column_types[plan.target.columns[i].name])
        ]
        if not bad:
            continue
        # the table's types as it declares them (``timestamp(3)``), not as Spark holds them (``timestamp(6)``)
        columns = [plan.target.columns[i] for i in idx]
        table = ", ".join(
            trino_type_text(c.type_name) if c.type_name else trino_name(builder.column_types[c.name]) for c in columns
        )
        exprs = ", ".join(trino_name(value_types[(case.number, i)]) for i in idx)
        if plan.statement == "UPDATE":
            message = f"UPDATE table column types don't match SET expressions: Table: [{table}], Expressions: [{exprs}]"
        elif plan.statement == "INSERT":
            message = f"Insert query has mismatched column types: Table: [{table}], Query: [{exprs}]"
        else:
            message = (
                f"MERGE table column types don't match for MERGE case {case.number}, SET expressions: "
                f"Table: [{table}], Expressions: [{exprs}]"
            )
        raise MergekitError(ErrorCode.TYPE_MISMATCH, message)
    return value_types
