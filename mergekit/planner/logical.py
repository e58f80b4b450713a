"""The MERGE plan (seed 002, DESIGN.md §3) and how MERGE, UPDATE, DELETE and INSERT map onto it.

Every DML statement becomes one :class:`MergePlan`: a target scan (with a unique id per row), an optional
join with a source, an ordered list of cases (the searched CASE of Trino's plan: the first case whose
condition holds produces the merge row), the duplicate-match check, the row change processor chosen by the
connector's paradigm, and the layouts that drive redistribution. The execution layer turns it into Spark.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorTableLayout,
    MergeOperation,
    RowChangeParadigm,
    sql_type_name,
)
from mergekit.sql import Delete, Expression, Insert, Merge, MergeAction, MergeCaseKind, Query, Relation, Update

__all__ = [
    "JoinKind",
    "MergePlan",
    "PlannedCase",
    "TargetTable",
    "plan_merge",
    "plan_update",
    "plan_delete",
    "plan_insert",
    "not_null_violation",
]


class JoinKind(enum.Enum):
    RIGHT = "RIGHT OUTER JOIN"  # target RIGHT JOIN source: every source row survives
    FULL = "FULL OUTER JOIN"  # with WHEN NOT MATCHED BY SOURCE: unmatched target rows survive too
    ANTI = "source LEFT ANTI JOIN target"  # insert-only MERGE fast path
    SCAN = "target scan"  # UPDATE and DELETE: no source
    SOURCE = "source only"  # INSERT: no target rows


@attrs.frozen(kw_only=True)
class TargetTable:
    """What planning needs to know about the target, gathered from the connector by the engine."""

    name: str  # catalog.schema.table, for messages
    columns: tuple[ColumnMetadata, ...]  # visible columns in table order
    row_id: ColumnHandle
    paradigm: RowChangeParadigm
    insert_layout: ConnectorTableLayout | None = None
    update_layout: ConnectorTableLayout | None = None

    def column(self, name: str) -> ColumnMetadata | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@attrs.frozen(kw_only=True)
class PlannedCase:
    """One WHEN clause. ``values[i]`` is the new value of column i: an expression, or None meaning the
    target's current value (UPDATE, DELETE) or NULL (INSERT, an omitted column)."""

    number: int
    kind: MergeCaseKind
    operation: MergeOperation
    condition: Expression | None
    values: tuple[Expression | None, ...]
    set_columns: tuple[str, ...] = ()

    def rows_taken(self, join: JoinKind) -> tuple[bool | None, bool | None]:
        """Which rows of the join this case can take, before its condition: (a target row is present, a source
        row is present), ``None`` meaning either. The first case, in order, whose rows and condition hold
        produces the merge row (the searched CASE of seed 002); a row no case takes produces none. Every
        evaluator of the cases (Spark SQL in :mod:`mergekit.execution.merge_rows`, Arrow in
        :mod:`mergekit.execution.arrow_eval`) asks this, so the two cannot disagree."""
        if join in (JoinKind.SCAN, JoinKind.SOURCE, JoinKind.ANTI):
            return None, None  # one side only: every row is a candidate
        if self.kind is MergeCaseKind.MATCHED:
            return True, (True if join is JoinKind.FULL else None)
        if self.kind is MergeCaseKind.NOT_MATCHED:
            return False, None
        return None, False  # NOT MATCHED BY SOURCE

    @property
    def keeps_unassigned(self) -> bool:
        """A column the case does not assign keeps the target's current value (UPDATE, DELETE: the row id and
        redistribution columns must reach the sink), or is NULL (INSERT)."""
        return self.operation is not MergeOperation.INSERT

    def describe(self) -> str:
        head = f"{self.kind.value}{' AND ' + self.condition.sql if self.condition else ''}"
        if self.operation is MergeOperation.DELETE:
            return f"case {self.number}: {head} -> DELETE (op {self.operation.value})"
        return f"case {self.number}: {head} -> {self.operation.name} (op {self.operation.value})"


@attrs.frozen(kw_only=True)
class MergePlan:
    statement: str  # MERGE, UPDATE, DELETE, INSERT
    target: TargetTable
    target_alias: str
    join: JoinKind
    source: Relation | Query | None = None
    source_alias: str | None = None
    on: Expression | None = None
    where: Expression | None = None
    cases: tuple[PlannedCase, ...]
    duplicate_check: bool = False

    @property
    def paradigm(self) -> RowChangeParadigm:
        return self.target.paradigm

    @property
    def processor(self) -> str:
        if self.paradigm is RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW:
            return "DeleteAndInsertMergeProcessor"
        return "ChangeOnlyUpdatedColumnsMergeProcessor"

    @property
    def redistribution_columns(self) -> tuple[str, ...]:
        """Columns whose *old* values the target scan must carry (both layouts' columns)."""
        cols: list[str] = []
        for layout in (self.target.insert_layout, self.target.update_layout):
            for c in layout.partition_columns if layout else ():
                if c not in cols and self.target.column(c) is not None:  # not a computed column
                    cols.append(c)
        return tuple(cols)

    @property
    def update_case_columns(self) -> Mapping[int, tuple[str, ...]]:
        return {c.number: c.set_columns for c in self.cases if c.operation is MergeOperation.UPDATE}

    @property
    def not_null_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.target.columns if not c.nullable)

    def explain(self) -> str:
        t = self.target
        lines = [f"{self.statement} INTO {t.name} AS {self.target_alias}"]
        lines.append(
            f"  target scan: {t.name} + unique id + present, row id {t.row_id.name} ({sql_type_name(t.row_id.type)})"
        )
        if self.join in (JoinKind.RIGHT, JoinKind.FULL, JoinKind.ANTI):
            src = self.source.sql if self.source is not None else "?"
            lines.append(f"  join: {self.join.value} ON {self.on.sql if self.on else 'TRUE'}")
            lines.append(f"  source: {src}")
        elif self.join is JoinKind.SCAN:
            lines.append(f"  join: none (target scan){' WHERE ' + self.where.sql if self.where else ''}")
        else:
            lines.append(f"  join: none (source rows only): {self.source.sql if self.source else ''}")
        lines.append("  cases (first match wins; no match -> operation -1, dropped):")
        lines.extend(f"    {c.describe()}" for c in self.cases)
        checks = []
        if self.duplicate_check:
            checks.append("duplicate match (MERGE_TARGET_ROW_MULTIPLE_MATCHES) per target row")
        if self.not_null_columns:
            checks.append("NOT NULL " + ", ".join(self.not_null_columns))
        lines.append(f"  checks: {'; '.join(checks) if checks else 'none'}")
        lines.append(f"  processor: {self.processor} (paradigm {self.paradigm.name})")
        il = t.insert_layout.partition_columns if t.insert_layout else None
        ul = t.update_layout.partition_columns if t.update_layout else None
        lines.append(
            "  layout: insert "
            + (f"hash({', '.join(il)})" if il else "any writer")
            + "; update/delete "
            + (f"hash({', '.join(ul)}) of the old row" if ul else "hash(row id)")
        )
        lines.append("  sinks: one ConnectorMergeSink per writer task on executors; finish_merge on the driver")
        return "\n".join(lines)


def not_null_violation(column: str) -> str:
    """The message of a NULL assigned to a NOT NULL column (Trino's wording), whichever evaluator finds it."""
    return f"NULL value not allowed for NOT NULL column: {column}"


def _column_not_found(message: str) -> MergekitError:
    return MergekitError(ErrorCode.COLUMN_NOT_FOUND, message)


def _check_assignments(target: TargetTable, names: list[str], *, merge: bool) -> None:
    seen: set[str] = set()
    for name in names:
        if target.column(name) is None:
            raise _column_not_found(
                f"Merge column name does not exist in target table: {name}"
                if merge
                else f"The UPDATE SET target column {name} doesn't exist"
            )
        if name in seen:
            raise MergekitError(
                ErrorCode.DUPLICATE_COLUMN_NAME,
                f"Merge column name is specified more than once: {name}"
                if merge
                else f"Multiple assignments to the same column: {name}",
            )
        seen.add(name)


def plan_merge(stmt: Merge, target: TargetTable) -> MergePlan:
    alias = stmt.target_alias or stmt.target.name
    source_alias = stmt.source.alias or "source"
    if source_alias == alias:
        raise MergekitError(ErrorCode.AMBIGUOUS_NAME, f"Target and source have the same name: {alias}")
    cases: list[PlannedCase] = []
    for number, case in enumerate(stmt.cases):
        if case.action is MergeAction.DELETE:
            cases.append(
                PlannedCase(
                    number=number,
                    kind=case.kind,
                    operation=MergeOperation.DELETE,
                    condition=case.condition,
                    values=(None,) * len(target.columns),
                )
            )
        elif case.action is MergeAction.UPDATE:
            names = [name for name, _ in case.assignments]
            _check_assignments(target, names, merge=True)
            by_name = dict(case.assignments)
            cases.append(
                PlannedCase(
                    number=number,
                    kind=case.kind,
                    operation=MergeOperation.UPDATE,
                    condition=case.condition,
                    values=tuple(by_name.get(c) for c in target.column_names),
                    set_columns=tuple(names),
                )
            )
        else:
            columns = list(case.insert_columns) if case.insert_columns is not None else list(target.column_names)
            _check_assignments(target, columns, merge=True)
            if len(columns) != len(case.insert_values):
                raise MergekitError(
                    ErrorCode.GENERIC_USER_ERROR,
                    f"MERGE INSERT: the number of columns ({len(columns)}) and values "
                    f"({len(case.insert_values)}) differ",
                )
            by_name = dict(zip(columns, case.insert_values, strict=True))
            cases.append(
                PlannedCase(
                    number=number,
                    kind=case.kind,
                    operation=MergeOperation.INSERT,
                    condition=case.condition,
                    values=tuple(by_name.get(c) for c in target.column_names),
                )
            )
    kinds = {c.kind for c in cases}
    if MergeCaseKind.NOT_MATCHED_BY_SOURCE in kinds:
        join = JoinKind.FULL
    elif kinds == {MergeCaseKind.NOT_MATCHED} and not _references_target(stmt, alias, target):
        join = JoinKind.ANTI
    else:
        join = JoinKind.RIGHT
    changes_matched = any(c.kind is MergeCaseKind.MATCHED and c.operation is not MergeOperation.INSERT for c in cases)
    return MergePlan(
        statement="MERGE",
        target=target,
        target_alias=alias,
        join=join,
        source=stmt.source,
        source_alias=source_alias,
        on=stmt.on,
        cases=tuple(cases),
        duplicate_check=changes_matched,
    )


def _references_target(stmt: Merge, alias: str, target: TargetTable) -> bool:
    """Whether any INSERT case reads target columns (NULL under the right join; absent under an anti join)."""
    source_columns = set(stmt.source.column_aliases)
    for case in stmt.cases:
        exprs = list(case.insert_values) + ([case.condition] if case.condition else [])
        for e in exprs:
            for qualifier, name in e.column_refs():
                if qualifier == alias:
                    return True
                if qualifier is None and target.column(name) is not None and name not in source_columns:
                    return True
    return False


def plan_update(stmt: Update, target: TargetTable) -> MergePlan:
    names = [name for name, _ in stmt.assignments]
    _check_assignments(target, names, merge=False)
    by_name = dict(stmt.assignments)
    case = PlannedCase(
        number=0,
        kind=MergeCaseKind.MATCHED,
        operation=MergeOperation.UPDATE,
        condition=None,
        values=tuple(by_name.get(c) for c in target.column_names),
        set_columns=tuple(names),
    )
    return MergePlan(
        statement="UPDATE",
        target=target,
        target_alias=stmt.target_alias or stmt.target.name,
        join=JoinKind.SCAN,
        where=stmt.where,
        cases=(case,),
    )


def plan_delete(stmt: Delete, target: TargetTable) -> MergePlan:
    case = PlannedCase(
        number=0,
        kind=MergeCaseKind.MATCHED,
        operation=MergeOperation.DELETE,
        condition=None,
        values=(None,) * len(target.columns),
    )
    return MergePlan(
        statement="DELETE",
        target=target,
        target_alias=stmt.target_alias or stmt.target.name,
        join=JoinKind.SCAN,
        where=stmt.where,
        cases=(case,),
    )


def plan_insert(stmt: Insert, target: TargetTable) -> MergePlan:
    """INSERT plans as a MERGE of source rows that all take one INSERT case. ``values`` are filled by
    position at execution time (the source is a query); here they are all None."""
    columns = list(stmt.columns) if stmt.columns is not None else list(target.column_names)
    seen: set[str] = set()
    for name in columns:
        if target.column(name) is None:
            raise _column_not_found(f"Insert column name does not exist in target table: {name}")
        if name in seen:
            raise MergekitError(
                ErrorCode.DUPLICATE_COLUMN_NAME, f"Insert column name is specified more than once: {name}"
            )
        seen.add(name)
    case = PlannedCase(
        number=0,
        kind=MergeCaseKind.NOT_MATCHED,
        operation=MergeOperation.INSERT,
        condition=None,
        values=(None,) * len(target.columns),
        set_columns=tuple(columns),
    )
    return MergePlan(
        statement="INSERT",
        target=target,
        target_alias=stmt.target.name,
        join=JoinKind.SOURCE,
        source=stmt.source,
        source_alias="$source",
        cases=(case,),
    )
