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
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorTableLayout,
    MergeOperation,
    RowChangeParadigm,
    sql_type_name,
)
from mergekit.sql import (
    Delete,
    Expression,
    Insert,
    Merge,
    MergeAction,
    MergeCase,
    MergeCaseKind,
    Query,
    Relation,
    Update,
    parse_expression,
)

from .session import SourceDedup

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
    "check_violation",
    "apply_defaults",
    "insert_storage_defaults",
    "insert_with_defaults",
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
    # CHECK constraints (name, expression over the column names): every INSERT and UPDATE row must pass them
    check_constraints: tuple[tuple[str, Expression], ...] = ()
    primary_key: tuple[str, ...] = ()

    @property
    def row_key(self) -> tuple[str, ...]:
        """The key columns that name a target row in messages: the primary key, when the row id is a struct with a
        field for every key column (a connector whose row id is the key and more, as sqldb's key and row version)
        or holds one (:attr:`row_key_path`); else () and messages show the row id as it is."""
        return self.primary_key if self.row_key_path is not None else ()

    @property
    def row_key_path(self) -> tuple[str, ...] | None:
        """The struct fields that lead from the row id to the struct holding a field for every primary key column:
        () when the row id is that struct, ``("row",)`` for a merge table's ``{leaf, row}`` (a connector that wraps
        the row ids of the tables it is made of); None when there is none."""
        if not self.primary_key:
            return None
        path: tuple[str, ...] = ()
        kind = self.row_id.type
        while pa.types.is_struct(kind):
            fields = {f.name: f.type for f in kind}
            if set(self.primary_key) <= set(fields):
                return path
            inner = [(name, t) for name, t in fields.items() if pa.types.is_struct(t)]
            if len(inner) != 1:
                return None
            path, kind = (*path, inner[0][0]), inner[0][1]
        return None

    def default(self, name: str) -> Expression | None:
        """The column's DEFAULT expression (``ColumnMetadata.default``), or None when it has none."""
        column = self.column(name)
        return parse_expression(column.default) if column is not None and column.default is not None else None

    def column(self, name: str) -> ColumnMetadata | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    def storage_fills(self, name: str) -> bool:
        """Whether the storage fills column ``name`` when an INSERT leaves it out (``storage_default``, and no
        default expression for the engine to evaluate)."""
        column = self.column(name)
        return column is not None and column.storage_default and column.default is None

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@attrs.frozen(kw_only=True)
class PlannedCase:
    """One WHEN clause. ``values[i]`` is the new value of column i: an expression, or None meaning the
    target's current value (UPDATE, DELETE) or NULL (INSERT, an omitted column)."""

    number: int
    kind: MergeCaseKind
    operation: MergeOperation | None  # None: DO NOTHING (the clause takes the row and produces no merge row)
    condition: Expression | None
    values: tuple[Expression | None, ...]
    set_columns: tuple[str, ...] = ()
    # INSERT: the columns the storage fills (TargetTable.storage_fills, omitted or written DEFAULT): NULL in the
    # page, no NOT NULL check, named to the connector (begin_merge's insert_case_defaults)
    storage_defaults: tuple[str, ...] = ()

    def rows_taken(self, join: JoinKind) -> tuple[bool | None, bool | None]:
        """Which rows of the join this case can take, before its condition: (a target row is present, a source
        row is present), ``None`` meaning either. The first case, in order, whose rows and condition hold
        produces the merge row (the searched CASE of seed 002); a row no case takes produces none. Every
        evaluator of the cases (Spark SQL in :mod:`mergekit.execution.dml.merge_rows`, Arrow in
        :mod:`mergekit.execution.arrow.cases`) asks this, so the two cannot disagree."""
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
        if self.operation is None:
            return f"case {self.number}: {head} -> DO NOTHING (no merge row)"
        if self.operation is MergeOperation.DELETE:
            return f"case {self.number}: {head} -> DELETE (op {self.operation.value})"
        filled = f"; the storage fills {', '.join(self.storage_defaults)}" if self.storage_defaults else ""
        return f"case {self.number}: {head} -> {self.operation.name} (op {self.operation.value}){filled}"


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
    # merge_duplicate_source: of the source rows matching one target row only the first by this order meets the
    # cases (mergekit.planner.session); None: several is MERGE_TARGET_ROW_MULTIPLE_MATCHES
    dedup: SourceDedup | None = None

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
    def insert_case_defaults(self) -> Mapping[int, tuple[str, ...]]:
        """The columns each INSERT case leaves to the storage (only cases that leave some)."""
        return {c.number: c.storage_defaults for c in self.cases if c.storage_defaults}

    @property
    def not_null_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.target.columns if not c.nullable)

    @property
    def check_constraints(self) -> tuple[tuple[str, Expression], ...]:
        """The CHECK constraints the statement's rows must pass: the target's, when a case inserts or updates."""
        writes = any(c.operation in (MergeOperation.INSERT, MergeOperation.UPDATE) for c in self.cases)
        return self.target.check_constraints if writes else ()

    def explain(self) -> str:
        t = self.target
        verb = {"UPDATE": "UPDATE", "DELETE": "DELETE FROM"}.get(self.statement, f"{self.statement} INTO")
        lines = [f"{verb} {t.name} AS {self.target_alias}"]
        insert = self.statement == "INSERT"  # reads no target row: no target scan, row id, paradigm or processor
        if not insert:
            lines.append(
                f"  target scan: {t.name} + unique id + present, row id {t.row_id.name} "
                f"({sql_type_name(t.row_id.type)})"
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
        if self.dedup is not None:
            lines.append(f"  source rows per matched target row: the first by {self.dedup.describe()}")
        if self.duplicate_check:
            checks.append("duplicate match (MERGE_TARGET_ROW_MULTIPLE_MATCHES) per target row")
        if self.not_null_columns:
            checks.append("NOT NULL " + ", ".join(self.not_null_columns))
        checks.extend(f"CHECK {name} ({expr.sql})" for name, expr in self.check_constraints)
        lines.append(f"  checks: {'; '.join(checks) if checks else 'none'}")
        il = t.insert_layout.partition_columns if t.insert_layout else None
        ul = t.update_layout.partition_columns if t.update_layout else None
        layout = "  layout: insert " + (f"hash({', '.join(il)})" if il else "any writer")
        if not insert:
            lines.append(f"  processor: {self.processor} (paradigm {self.paradigm.name})")
            layout += "; update/delete " + (f"hash({', '.join(ul)}) of the old row" if ul else "hash(row id)")
        lines.append(layout)
        lines.append(
            "  sinks: one ConnectorMergeSink per writer (a Spark task on an executor; on the driver tier, one in the "
            "engine's process); finish_merge on the driver"
        )
        return "\n".join(lines)


def not_null_violation(column: str) -> str:
    """The message of a NULL assigned to a NOT NULL column (Trino's wording), whichever evaluator finds it."""
    return f"NULL value not allowed for NOT NULL column: {column}"


def check_violation(name: str, expression: str) -> str:
    """The message of a row that fails a CHECK constraint: Trino's wording, plus the constraint's name."""
    return f"Check constraint violation: ({expression}) (constraint {name})"


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


def plan_merge(stmt: Merge, target: TargetTable, source_columns: tuple[str, ...] | None = None) -> MergePlan:
    """``source_columns``: the source's column names when known (the engine analyses the source first); they
    expand ``UPDATE SET *`` / ``INSERT *`` and tell an unqualified target column from a source column."""
    alias = stmt.target_alias or stmt.target.name
    source_alias = stmt.source.alias or "source"
    if source_alias == alias:
        raise MergekitError(ErrorCode.AMBIGUOUS_NAME, f"Target and source have the same name: {alias}")
    known = source_columns if source_columns is not None else stmt.source.column_aliases
    cases: list[PlannedCase] = []
    for number, case in enumerate(stmt.cases):
        if case.kind is MergeCaseKind.NOT_MATCHED:
            _check_no_target_reference(case, alias, target, known)
        if case.star and stmt.source.joined:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, "UPDATE SET * and INSERT * with a joined MERGE source are not supported"
            )
        if case.star:
            case = _expand_star(case, target, source_alias, source_columns, evolving=stmt.schema_evolution)
        operation: MergeOperation | None
        set_columns: tuple[str, ...] = ()
        if case.action in (MergeAction.NOTHING, MergeAction.DELETE):
            operation = None if case.action is MergeAction.NOTHING else MergeOperation.DELETE
            values: tuple[Expression | None, ...] = (None,) * len(target.columns)
        elif case.action is MergeAction.UPDATE:
            names = [name for name, _ in case.assignments]
            _check_assignments(target, names, merge=True)
            by_name = dict(case.assignments)
            operation = MergeOperation.UPDATE
            values = tuple(by_name.get(c) for c in target.column_names)
            set_columns = tuple(names)
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
            operation = MergeOperation.INSERT
            values = tuple(by_name.get(c) for c in target.column_names)
        cases.append(
            PlannedCase(
                number=number,
                kind=case.kind,
                operation=operation,
                condition=case.condition,
                values=values,
                set_columns=set_columns,
            )
        )
    kinds = {c.kind for c in cases}
    if MergeCaseKind.NOT_MATCHED_BY_SOURCE in kinds:
        join = JoinKind.FULL
    elif kinds == {MergeCaseKind.NOT_MATCHED}:
        join = JoinKind.ANTI  # NOT MATCHED clauses never read the target (checked above)
    else:
        join = JoinKind.RIGHT
    changes_matched = any(
        c.kind is MergeCaseKind.MATCHED and c.operation in (MergeOperation.UPDATE, MergeOperation.DELETE) for c in cases
    )
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


def _expand_star(
    case: MergeCase,
    target: TargetTable,
    source_alias: str,
    source_columns: tuple[str, ...] | None,
    *,
    evolving: bool = False,
) -> MergeCase:
    """``UPDATE SET *`` / ``INSERT *`` (Spark, Delta): every target column from the source column of the same name
    (names compare case-insensitively); a target column the source lacks is an error, source columns the target
    lacks are not used. ``MERGE WITH SCHEMA EVOLUTION`` (``evolving``; the target already has the source's new
    columns): a target column the source lacks is left out, so UPDATE keeps it and INSERT writes NULL (Delta)."""
    if source_columns is None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "UPDATE SET * and INSERT * need the source's columns")
    by_lower = {c.lower(): c for c in source_columns}
    what = "UPDATE SET *" if case.action is MergeAction.UPDATE else "INSERT *"
    pairs = []
    for column in target.column_names:
        found = by_lower.get(column.lower())
        if found is None and evolving:
            continue
        if found is None:
            raise _column_not_found(
                f"{what}: the MERGE source has no column named {column} (the source's columns: "
                f"{', '.join(source_columns)})"
            )
        pairs.append((column, Expression.column(source_alias, found)))
    if case.action is MergeAction.UPDATE:
        return attrs.evolve(case, star=False, assignments=tuple(pairs))
    return attrs.evolve(
        case, star=False, insert_columns=tuple(c for c, _ in pairs), insert_values=tuple(v for _, v in pairs)
    )


def _check_no_target_reference(
    case: MergeCase, alias: str, target: TargetTable, source_columns: tuple[str, ...]
) -> None:
    """A WHEN NOT MATCHED clause has no target row: reading one of its columns is an error (PostgreSQL, Spark,
    DuckDB), not a silent NULL."""
    exprs = list(case.insert_values) + ([case.condition] if case.condition else [])
    sources = {c.lower() for c in source_columns}
    for e in exprs:
        for qualifier, name in e.column_refs():
            unqualified_target = qualifier is None and target.column(name) is not None and name.lower() not in sources
            if qualifier == alias or unqualified_target:
                raise MergekitError(
                    ErrorCode.COLUMN_NOT_FOUND,
                    f'invalid reference to FROM-clause entry for table "{alias}": column {name} of the target '
                    "cannot be referenced in a WHEN NOT MATCHED clause (there is no target row)",
                )


def plan_update(stmt: Update, target: TargetTable) -> MergePlan:
    names = [name for name, _ in stmt.assignments]
    _check_assignments(target, names, merge=False)
    by_name = dict(stmt.assignments)
    values = tuple(by_name.get(c) for c in target.column_names)
    return _scan_plan("UPDATE", stmt, target, MergeOperation.UPDATE, values, set_columns=tuple(names))


def plan_delete(stmt: Delete, target: TargetTable) -> MergePlan:
    return _scan_plan("DELETE", stmt, target, MergeOperation.DELETE, (None,) * len(target.columns))


def _scan_plan(
    statement: str,
    stmt: Update | Delete,
    target: TargetTable,
    operation: MergeOperation,
    values: tuple[Expression | None, ...],
    set_columns: tuple[str, ...] = (),
) -> MergePlan:
    """UPDATE and DELETE: a scan of the target whose rows the WHERE clause keeps all take one matched case."""
    case = PlannedCase(
        number=0,
        kind=MergeCaseKind.MATCHED,
        operation=operation,
        condition=None,
        values=values,
        set_columns=set_columns,
    )
    return MergePlan(
        statement=statement,
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


# ---- column defaults -------------------------------------------------------------------------------------


def insert_with_defaults(stmt: Insert, target: TargetTable) -> Insert:
    """An INSERT with its defaults in its source: ``DEFAULT VALUES`` becomes one row of every column's default
    (NULL where there is none) and ``DEFAULT`` in a VALUES row the default of the column at its position. Columns
    the INSERT omits are filled by :func:`apply_defaults`."""
    if stmt.default_values:
        columns = target.column_names
        return attrs.evolve(
            stmt,
            columns=columns,
            source=Query.values_row(tuple(target.default(c) for c in columns)),
            default_values=False,
        )
    columns = stmt.columns if stmt.columns is not None else target.column_names
    defaults = tuple(target.default(c) if target.column(c) is not None else None for c in columns)
    return attrs.evolve(stmt, source=stmt.source.with_defaults(defaults))


def insert_storage_defaults(stmt: Insert, target: TargetTable) -> tuple[str, ...]:
    """The columns of an INSERT statement's column list that the storage fills because the statement writes
    ``DEFAULT`` for them in every VALUES row (every such column for ``DEFAULT VALUES``). ``DEFAULT`` in some rows
    only is ``NOT_SUPPORTED``: the rows of one INSERT leave the same columns to the storage."""
    filled = [c.name for c in target.columns if target.storage_fills(c.name)]
    if not filled:
        return ()
    if stmt.default_values:
        return tuple(filled)
    rows = stmt.source.default_positions()
    if not rows:
        return ()
    columns = stmt.columns if stmt.columns is not None else target.column_names
    out = []
    for i, column in enumerate(columns):
        marked = [i in row for row in rows]
        if column in filled and all(marked):
            out.append(column)
        elif column in filled and any(marked):
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                f"Column {column} takes the database's own default: write DEFAULT for it in every VALUES row of "
                "the INSERT, or leave the column out",
            )
    return tuple(out)


def apply_defaults(plan: MergePlan, defaulted: tuple[str, ...] = ()) -> MergePlan:
    """Column defaults in the cases: a value written ``DEFAULT`` (UPDATE SET, MERGE UPDATE SET / INSERT VALUES)
    becomes the column's default expression (NULL where it has none), and a column an INSERT case omits takes
    its default instead of NULL (for an INSERT statement, the columns its source does not provide).

    A column the storage fills (:meth:`TargetTable.storage_fills`) that an INSERT case omits or writes as
    ``DEFAULT`` (for an INSERT statement: ``defaulted``, :func:`insert_storage_defaults`) is left to the storage
    (``PlannedCase.storage_defaults``); ``UPDATE SET`` of such a column to ``DEFAULT`` is ``NOT_SUPPORTED``."""
    null = parse_expression("NULL")
    cases = []
    for case in plan.cases:
        if case.operation not in (MergeOperation.INSERT, MergeOperation.UPDATE):
            cases.append(case)
            continue
        insert = case.operation is MergeOperation.INSERT
        values: list[Expression | None] = []
        storage: list[str] = []
        for column, value in zip(plan.target.column_names, case.values, strict=True):
            fills = plan.target.storage_fills(column)
            if value is not None:
                value.refuse_nested_default()  # DEFAULT || 'x': a SYNTAX_ERROR, not a column named default
            if value is not None and value.is_default:
                if fills and not insert:
                    raise MergekitError(
                        ErrorCode.NOT_SUPPORTED,
                        f"SET {column} = DEFAULT: the database computes this column's default, which mergekit "
                        "can only leave to it when a row is inserted",
                    )
                default = plan.target.default(column)
                # NULL: an UPDATE's None would keep the old value; an INSERT's None is NULL
                value = default if default is not None else (None if insert else null)
                storage += [column] if fills else []
            elif value is None and insert and column not in case.set_columns:
                value = plan.target.default(column)
                storage += [column] if fills else []
            elif insert and column in defaulted and fills:
                storage.append(column)
            values.append(value)
        cases.append(attrs.evolve(case, values=tuple(values), storage_defaults=tuple(storage)))
    return attrs.evolve(plan, cases=tuple(cases))
