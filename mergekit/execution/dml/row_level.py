"""``DELETE`` and ``UPDATE`` through the row-level SPI (seed 003, :mod:`mergekit.spi._row_level`), for connectors
without the merge SPI; and delete pushdown (``apply_delete`` / ``execute_delete``) for every connector that offers
it.

:mod:`.statement` analyses the statement as for the merge path (the logical plan, Spark's typing of every
expression, so errors are the same) and hands it here when the connector has no merge SPI. Then:

1. driver: the row id column handle, the subqueries' results computed by Spark (uncorrelated ones as constants or
   value sets, correlated ones decorrelated into lookup tables by their correlation keys), ``begin_delete`` /
   ``begin_update``, ``get_splits`` with the handle it returned;
2. executors, one Spark task per split: ``create_page_source`` must return an ``UpdatablePageSource``; for each of
   its pages the ``WHERE`` clause (and for ``UPDATE`` the ``SET`` values, NOT NULL and CHECK) is evaluated in Arrow
   (:mod:`mergekit.execution.arrow.rows`) and the selected rows go back to the same instance (``delete_rows`` / ``update_rows``); then
   ``finish`` (``abort`` on a failure), ``close`` always; the task returns the pickled fragments and its count;
3. driver: ``finish_delete`` / ``finish_update`` with every task's fragments; ``abort_*`` on any failure.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.arrow.compiler import Lookup, Unsupported
from mergekit.execution.arrow.rows import RowProgram, compile_rows
from mergekit.execution.context import StatementContext
from mergekit.execution.failures import MULTIPLE_ROWS_MESSAGE, translate_error
from mergekit.execution.lazy_pyspark import T, cloudpickle, pandas_types
from mergekit.execution.scan import conform_page
from mergekit.planner import MergePlan, check_violation
from mergekit.result import Result
from mergekit.spi import (
    PREDICATE_OPERATORS,
    ColumnHandle,
    ConnectorPageSourceProvider,
    ConnectorSession,
    ConnectorTableHandle,
    Constraint,
    DeletePredicate,
    UpdatablePageSource,
    sql_type_name,
)

from .contract import connector_call, overrides
from .lengths import Bounded, bounded_columns, fit

__all__ = [
    "PlannedRowLevel",
    "plan_pushdown",
    "plan_row_level",
    "run_row_level",
]

# ---- delete pushdown --------------------------------------------------------------------------------------


@attrs.define(kw_only=True)
class PlannedPushdown:
    """A DELETE the connector deletes by itself (``apply_delete`` accepted ``predicate``)."""

    table: ResolvedTable
    predicate: DeletePredicate
    handle: ConnectorTableHandle
    spi: str

    def explain(self) -> str:
        return "\n".join(
            [
                f"DELETE FROM {self.table.full_name}",
                f"Delete pushdown: {_describe_predicate(self.predicate)}",
                "  (apply_delete accepted; execute_delete deletes the rows in the storage: no Spark job runs)",
            ]
        )


def _describe_predicate(predicate: DeletePredicate) -> str:
    if not predicate.terms:
        return "all rows"

    def term(column: str, op: str, value: Any) -> str:
        if op in ("IS NULL", "IS NOT NULL"):
            return f"{column} {op}"
        if op == "IN":
            return f"{column} IN ({', '.join(map(repr, value))})"
        return f"{column} {op} {value!r}"

    return " AND ".join(term(*t) for t in predicate.terms)


_PUSHED_OPS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def _exact(value: Any, kind: str, column: ColumnHandle, type_name: str) -> tuple[bool, Any]:
    """The constant converted exactly to the column's type, when it converts exactly."""
    t = column.type
    if kind == "integer" and t in _INT_BITS:
        bits = _INT_BITS[t]
        return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1), value
    if kind == "string" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return type_name.lower() in ("varchar", "string"), value
    if kind == "date" and pa.types.is_date32(t):
        return True, value
    if kind == "boolean" and pa.types.is_boolean(t):
        return True, value
    return False, None


def _predicate(where: msql.Expression | None, plan: MergePlan, table: ResolvedTable) -> DeletePredicate | None:
    if where is None:
        return DeletePredicate(terms=())
    lowered = msql.lower_for_rows(where, outer_names={plan.target_alias}, columns_of=lambda ref: ())
    if lowered is None:
        return None
    conjuncts: list[Any] = []

    def flatten(node: Any) -> None:
        if isinstance(node, msql.Apply) and node.op == "and":
            for a in node.args:
                flatten(a)
        else:
            conjuncts.append(node)

    flatten(lowered)
    columns = {c.name.lower(): c for c in table.metadata.visible_columns}
    terms: list[tuple[str, str, Any]] = []
    for node in conjuncts:
        if not isinstance(node, msql.Apply):
            return None
        args = list(node.args)
        op = node.op
        if op in _PUSHED_OPS and isinstance(args[0], msql.Const) and isinstance(args[1], msql.Ref):
            args, op = [args[1], args[0]], _FLIPPED[op]
        if not args or not isinstance(args[0], msql.Ref):
            return None
        ref = args[0]
        if ref.qualifier is not None and ref.qualifier.lower() != plan.target_alias.lower():
            return None
        meta = columns.get(ref.name.lower())
        if meta is None:
            return None
        handle = ColumnHandle(name=meta.name, type=meta.type)
        type_name = meta.type_name or sql_type_name(meta.type)
        if op in ("is_null", "is_not_null"):
            terms.append((meta.name, "IS NULL" if op == "is_null" else "IS NOT NULL", None))
            continue
        values = []
        for const in args[1:]:
            if not isinstance(const, msql.Const) or const.value is None:
                return None
            ok, value = _exact(const.value, const.kind, handle, type_name)
            if not ok:
                return None
            values.append(value)
        if op == "in" and values:
            terms.append((meta.name, "IN", tuple(values)))
        elif op in _PUSHED_OPS and len(values) == 1:
            terms.append((meta.name, _PUSHED_OPS[op], values[0]))
        else:
            return None
    assert all(t[1] in PREDICATE_OPERATORS for t in terms)
    return DeletePredicate(terms=tuple(terms))


def plan_pushdown(
    ctx: StatementContext, st: msql.Statement, plan: MergePlan, table: ResolvedTable, spi: str
) -> PlannedPushdown | None:
    """Offer a DELETE to the connector's ``apply_delete`` (only when it overrides it), before anything begins."""
    if not isinstance(st, msql.Delete) or st.using is not None:
        return None
    meta = table.connector.get_metadata()
    if not overrides(meta, "apply_delete"):
        return None
    predicate = _predicate(st.where, plan, table)
    if predicate is None:
        return None
    handle = meta.apply_delete(session=ctx.session(table.catalog), table_handle=table.handle, predicate=predicate)
    if handle is None:
        return None
    return PlannedPushdown(table=table, predicate=predicate, handle=handle, spi=spi)


# ---- planning ---------------------------------------------------------------------------------------------


@attrs.define(kw_only=True)
class _Subquery:
    node: msql.SubqueryRef
    sql: str  # Spark SQL of the subquery (decorrelated when correlated)
    lookup: Lookup  # typed; rows filled at run time


@attrs.define(kw_only=True)
class PlannedRowLevel:
    """A DELETE or UPDATE planned for the row-level SPI: what EXPLAIN prints and :func:`run_row_level` runs."""

    statement: str  # DELETE | UPDATE
    plan: MergePlan
    table: ResolvedTable
    columns: list[ColumnHandle]  # the visible columns the tasks read (the row id column is added at run time)
    updated: list[ColumnHandle]  # UPDATE: the assigned columns, in table column order
    where: Any  # lowered WHERE or None
    values: list[Any]  # lowered SET values, by updated column
    checks: list[tuple[str, str, Any]]  # (name, text, lowered) of the CHECK constraints (UPDATE)
    subqueries: list[_Subquery]
    outer: frozenset[str]

    def explain(self) -> str:
        t = self.plan.target
        verb = "delete" if self.statement == "DELETE" else "update"
        lines = [f"{'DELETE FROM' if self.statement == 'DELETE' else 'UPDATE'} {t.name} AS {self.plan.target_alias}"]
        lines.append(f"SPI: row-level (begin_{verb} / UpdatablePageSource / finish_{verb})")
        lines.append("  scan: one Spark task per split (get_splits with the handle begin_" + verb + " returns)")
        where = self.plan.where.sql if self.plan.where is not None else "TRUE (every row)"
        lines.append(f"  WHERE {where}: evaluated in Arrow in the task that read the page")
        if self.statement == "UPDATE":
            sets = ", ".join(f"{c.name} = {e.sql}" for c, e in zip(self.updated, self._set_exprs(), strict=True))
            lines.append(f"  SET {sets}: evaluated in Arrow; update_rows(new values + row id)")
        else:
            lines.append("  delete_rows(row ids) on the page source that produced them")
        for s in self.subqueries:
            how = "decorrelated lookup by " + ", ".join(r.name for r in s.node.outer) if s.node.outer else "constant"
            lines.append(f"  subquery ({s.node.kind}, {how}): computed by Spark on the driver before begin_{verb}")
        not_null = {c.name for c in t.columns if not c.nullable}
        checks = [f"NOT NULL {c.name}" for c in self.updated if c.name in not_null]
        checks += [f"CHECK {name} ({text})" for name, text, _ in self.checks]
        lines.append(f"  checks: {'; '.join(checks) if checks else 'none'}")
        lines.append(f"  commit: finish_{verb} with every task's fragments on the driver; abort_{verb} on failure")
        return "\n".join(lines)

    def _set_exprs(self) -> list[msql.Expression]:
        by_name = dict(zip(self.plan.target.column_names, self.plan.cases[0].values, strict=True))
        return [by_name[c.name] for c in self.updated]  # type: ignore[misc]


def _refuse(statement: str, what: str) -> MergekitError:
    return MergekitError(
        ErrorCode.NOT_SUPPORTED, f"{statement} through the row-level SPI cannot evaluate {what} (evaluated in Arrow)"
    )


def plan_row_level(ctx: StatementContext, st: msql.Statement, plan: MergePlan, table: ResolvedTable) -> PlannedRowLevel:
    """Lower the statement's expressions for the Arrow evaluator and type its subqueries (Spark analyses them;
    nothing runs). NOT_SUPPORTED names what the evaluator cannot compute exactly as Spark would."""
    kind = plan.statement
    outer = frozenset({plan.target_alias.lower(), table.name.table.lower()})

    def columns_of(ref: msql.TableRef) -> Sequence[str]:
        ctx.bind([ref])
        return ctx.spark.table(ctx.views[ref]).columns

    def lower(expr: msql.Expression, what: str) -> Any:
        lowered = msql.lower_for_rows(expr, outer_names=outer, columns_of=columns_of)
        if lowered is None:
            raise _refuse(kind, f"{what} {expr.sql}")
        return lowered

    where = lower(plan.where, "the WHERE clause") if plan.where is not None else None
    columns = [ColumnHandle(name=c.name, type=c.type) for c in plan.target.columns]
    handles = table.connector.get_metadata().get_column_handles(
        session=ctx.session(table.catalog), table_handle=table.handle
    )
    columns = [handles.get(c.name) or c for c in columns]
    updated: list[ColumnHandle] = []
    values: list[Any] = []
    checks: list[tuple[str, str, Any]] = []
    if kind == "UPDATE":
        for column, handle, expr in zip(plan.target.columns, columns, plan.cases[0].values, strict=True):
            if expr is None:
                continue
            name = (column.type_name or "").lower()
            if name.startswith("char"):  # VARCHAR(n) values are fitted in the task (.lengths)
                raise _refuse(kind, f"an assignment to the {column.type_name} column {column.name}")
            updated.append(handle)
            values.append(lower(expr, f"SET {column.name} ="))
        for name, expr in plan.check_constraints:
            low = msql.lower_for_rows(expr, outer_names=outer, columns_of=lambda ref: ())
            if low is None:
                raise _refuse(kind, f"the CHECK constraint {name} ({expr.sql})")
            checks.append((name, expr.sql, low))
    subqueries: list[_Subquery] = []
    for tree in [where, *values]:
        for node in _subquery_nodes(tree):
            subqueries.append(_type_subquery(ctx, kind, node))
    # the tasks read only what the statement needs: the columns WHERE, SET and CHECK name and the assigned ones
    # (the row id column is added at run time)
    needed = {c.name.lower() for c in updated}
    for tree in [where, *values, *(low for _, _, low in checks)]:
        needed.update(_column_names(tree))
    planned = PlannedRowLevel(
        statement=kind,
        plan=plan,
        table=table,
        columns=[c for c in columns if c.name.lower() in needed],
        updated=updated,
        where=where,
        values=values,
        checks=checks,
        subqueries=subqueries,
        outer=outer,
    )
    _compile(planned)  # refuse now (EXPLAIN too) what the evaluator cannot compute
    return planned


def _column_names(tree: Any) -> Iterator[str]:
    """The (lower-cased) names of the target columns a lowered expression reads, its subqueries' correlations
    among them."""
    if isinstance(tree, msql.Ref):
        yield tree.name.lower()
    elif isinstance(tree, msql.SubqueryRef):
        for ref in tree.outer:
            yield ref.name.lower()
        yield from _column_names(tree.operand)
    elif isinstance(tree, msql.Apply):
        for arg in tree.args:
            yield from _column_names(arg)
    elif isinstance(tree, tuple | list):
        for item in tree:
            yield from _column_names(item)


def _subquery_nodes(tree: Any) -> Iterator[msql.SubqueryRef]:
    if isinstance(tree, msql.SubqueryRef):
        yield tree
        if tree.operand is not None:
            yield from _subquery_nodes(tree.operand)
    elif isinstance(tree, msql.Apply):
        for a in tree.args:
            yield from _subquery_nodes(a)


def _arrow(field: T.StructField, kind: str) -> pa.DataType:
    try:
        return pandas_types.to_arrow_type(field.dataType)
    except Exception as exc:
        raise _refuse(kind, f"a subquery of type {field.dataType.simpleString()}") from exc


def _type_subquery(ctx: StatementContext, kind: str, node: msql.SubqueryRef) -> _Subquery:
    sql = ctx.render(node.query)
    try:
        fields = list(ctx.spark.sql(sql).schema.fields)
    except Exception as exc:  # the statement analysed as a whole: the subquery reads the target's row
        raise _refuse(kind, f"the correlated subquery ({node.query.sql})") from exc
    n_keys = len(node.outer)
    keys = tuple(_arrow(f, kind) for f in fields[:n_keys])
    value_type = _arrow(fields[n_keys], kind) if node.kind != "exists" and len(fields) > n_keys else None
    lookup = Lookup(kind=node.kind, keys=keys, rows={}, value_type=value_type)
    return _Subquery(node=node, sql=sql, lookup=lookup)


def _compile(planned: PlannedRowLevel) -> RowProgram:
    """The statement's Arrow program (:mod:`mergekit.execution.arrow.rows`); CHAR columns are left to Spark."""
    types = {c.name: c.type for c in planned.columns}
    type_names = {c.name: (c.type_name or "").lower() for c in planned.plan.target.columns}
    try:
        return compile_rows(
            where=planned.where,
            updated=planned.updated,
            values=planned.values,
            checks=[(check_violation(name, text), tree) for name, text, tree in planned.checks],
            columns={n: t for n, t in types.items() if not type_names[n].startswith("char")},
            outer=planned.outer,
            not_null=frozenset(c.name for c in planned.plan.target.columns if not c.nullable),
            subqueries={id(s.node): s.lookup for s in planned.subqueries},
        )
    except Unsupported as exc:
        raise _refuse(planned.statement, str(exc)) from None


# ---- running ----------------------------------------------------------------------------------------------


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _fill_lookup(ctx: StatementContext, s: _Subquery) -> Lookup:
    """The subquery's result, by Spark on the driver (before the statement begins)."""
    node, lookup = s.node, s.lookup
    keys = [_q(f"{msql.KEY_PREFIX}{i}") for i in range(len(node.outer))]
    not_null = " AND ".join(f"{k} IS NOT NULL" for k in keys) or "TRUE"
    value = _q(msql.VALUE_COLUMN)
    rows: dict[tuple[Any, ...], Any] = {}
    if node.kind == "scalar" and not keys:
        table = ctx.spark.sql(s.sql).limit(2).toArrow()
        if table.num_rows > 1:
            raise MergekitError(ErrorCode.SUBQUERY_MULTIPLE_ROWS, MULTIPLE_ROWS_MESSAGE)
        rows[()] = (table.column(0)[0].as_py() if table.num_rows else None, 1)
    elif node.kind == "scalar":
        table = ctx.spark.sql(
            f"SELECT {', '.join(keys)}, count(*) AS `n`, first({value}) AS `v` FROM ({s.sql}) "
            f"WHERE {not_null} GROUP BY {', '.join(keys)}"
        ).toArrow()
        for row in table.to_pylist():
            rows[tuple(row[f"{msql.KEY_PREFIX}{i}"] for i in range(len(keys)))] = (row["v"], row["n"])
    elif node.kind == "exists":
        sql = f"SELECT DISTINCT {', '.join(keys) or '1 AS `one`'} FROM ({s.sql}) WHERE {not_null}"
        table = ctx.spark.sql(sql if keys else sql + " LIMIT 1").toArrow()
        for row in table.to_pylist():
            rows[tuple(row[f"{msql.KEY_PREFIX}{i}"] for i in range(len(keys)))] = True
    else:
        inner = s.sql
        if not keys:  # an uncorrelated IN: its first column is the value
            first = ctx.spark.sql(inner).columns[0]
            inner = f"SELECT {_q(first)} AS {value} FROM ({s.sql})"
        table = ctx.spark.sql(f"SELECT DISTINCT {', '.join([*keys, value])} FROM ({inner}) WHERE {not_null}").toArrow()
        groups: dict[tuple[Any, ...], tuple[set[Any], bool]] = {}
        for row in table.to_pylist():
            key = tuple(row[f"{msql.KEY_PREFIX}{i}"] for i in range(len(keys)))
            found, has_null = groups.get(key, (set(), False))
            v = row[msql.VALUE_COLUMN]
            if v is None:
                has_null = True
            else:
                found.add(v)
            groups[key] = (found, has_null)
        rows = {k: (frozenset(v), n) for k, (v, n) in groups.items()}
    return attrs.evolve(lookup, rows=rows)


@attrs.frozen
class _RowLevelTask:
    """Runs on executors: one pickled split in, the page source's fragments and count out."""

    provider: ConnectorPageSourceProvider
    session: ConnectorSession
    table_handle: ConnectorTableHandle
    columns: tuple[ColumnHandle, ...]
    schema: pa.Schema
    row_id: str
    updated: tuple[str, ...]  # empty: a DELETE
    program: RowProgram
    bounds: tuple[Bounded, ...] = ()  # the updated VARCHAR(n) / CHAR(n) columns (:mod:`.lengths`)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                split = cloudpickle.loads(payload)
                fragments, count = self._split(split)
                yield pa.RecordBatch.from_pydict(
                    {"fragments": [cloudpickle.dumps(list(fragments))], "rows": [count]},
                    schema=pa.schema([("fragments", pa.binary()), ("rows", pa.int64())]),
                )

    def _split(self, split: Any) -> tuple[Sequence[Any], int]:
        source = connector_call(
            "create_page_source",
            lambda: self.provider.create_page_source(
                session=self.session, split=split, table_handle=self.table_handle, columns=self.columns
            ),
        )
        try:
            if not isinstance(source, UpdatablePageSource):
                raise MergekitError(
                    ErrorCode.CONNECTOR_CONTRACT_ERROR,
                    f"create_page_source returned a {type(source).__name__}, not an UpdatablePageSource, for a "
                    "table handle of begin_delete / begin_update",
                )
            try:
                count = 0
                while (page := connector_call("get_next_page", source.get_next_page)) is not None:
                    if page.num_rows:
                        count += self._page(source, self._conform(page))
                fragments = connector_call("finish", source.finish)
            except BaseException:
                try:
                    source.abort()
                except Exception:  # report the original failure
                    pass
                raise
            return fragments, count
        finally:
            source.close()

    def _conform(self, page: pa.RecordBatch) -> pa.RecordBatch:
        """The page with the columns the task asked for; CONNECTOR_CONTRACT_ERROR naming any it lacks."""
        missing = [name for name in self.schema.names if name not in page.schema.names]
        if missing:
            what = [f"the row id column '{n}'" if n == self.row_id else f"column '{n}'" for n in missing]
            asked = "get_delete_row_id_column_handle" if not self.updated else "get_update_row_id_column_handle"
            raise MergekitError(
                ErrorCode.CONNECTOR_CONTRACT_ERROR,
                f"A page of the UpdatablePageSource lacks {', '.join(what)}: create_page_source must produce every "
                f"column it is given, the row id column ({asked}) among them; the page has "
                f"{', '.join(page.schema.names) or 'no columns'}",
            )
        return conform_page(page, self.schema)

    def _page(self, source: UpdatablePageSource, page: pa.RecordBatch) -> int:
        program = self.program
        indices = program.selected(page)
        if not len(indices):
            return 0
        if len(indices) < page.num_rows:
            page = page.take(pa.array(indices))
        row_ids = page.column(self.row_id)
        if not self.updated:
            connector_call("delete_rows", lambda: source.delete_rows(row_ids))
            return page.num_rows
        arrays = []
        for name, value in zip(self.updated, program.new_values(page), strict=True):
            bound = next((b for b in self.bounds if b.column == name), None)
            arrays.append(value if bound is None else fit(value, bound, "UPDATE"))
        if program.checks:
            new_rows = page
            for name, value in zip(self.updated, arrays, strict=True):
                new_rows = new_rows.set_column(new_rows.schema.get_field_index(name), name, value)
            program.check(new_rows)
        arrays.append(row_ids)
        names = [*self.updated, self.row_id]
        new_page = pa.RecordBatch.from_arrays(arrays, names=names)
        connector_call("update_rows", lambda: source.update_rows(new_page, list(range(len(names)))))
        return page.num_rows


def run_row_level(ctx: StatementContext, planned: PlannedRowLevel | PlannedPushdown) -> Result:
    """Run a planned row-level DELETE / UPDATE (or a pushed-down DELETE); returns its row count and metrics."""
    table = planned.table
    session = ctx.session(table.catalog)
    meta = table.connector.get_metadata()
    if isinstance(planned, PlannedPushdown):
        count = meta.execute_delete(session=session, table_handle=planned.handle)
        pushed = {"spi": planned.spi, "pushdown": True, "inserted": 0, "updated": 0, "deleted": count}
        return Result(statement="DELETE", row_count=count, metrics=pushed)
    subqueries = [attrs.evolve(s, lookup=_fill_lookup(ctx, s)) for s in planned.subqueries]
    program = _compile(attrs.evolve(planned, subqueries=subqueries))
    delete = planned.statement == "DELETE"
    verb = "delete" if delete else "update"
    if delete:
        row_id = connector_call(
            "get_delete_row_id_column_handle",
            lambda: meta.get_delete_row_id_column_handle(session=session, table_handle=table.handle),
        )
        handle = connector_call("begin_delete", lambda: meta.begin_delete(session=session, table_handle=table.handle))
    else:
        row_id = connector_call(
            "get_update_row_id_column_handle",
            lambda: meta.get_update_row_id_column_handle(
                session=session, table_handle=table.handle, updated_columns=planned.updated
            ),
        )
        handle = connector_call(
            "begin_update",
            lambda: meta.begin_update(session=session, table_handle=table.handle, updated_columns=planned.updated),
        )
    try:
        columns = [c for c in planned.columns if c.name != row_id.name] + [row_id]
        splits = connector_call(
            "get_splits",
            lambda: table.connector.get_split_manager().get_splits(
                session=session, table_handle=handle, columns=columns, constraint=_constraint(planned)
            ),
        )
        fragments, count = _run_tasks(ctx, planned, handle, columns, row_id, splits, program)
        finish = meta.finish_delete if delete else meta.finish_update
        connector_call(f"finish_{verb}", lambda: finish(session=session, table_handle=handle, fragments=fragments))
    except BaseException as exc:
        try:
            if delete:
                meta.abort_delete(session=session, table_handle=handle)
            else:
                meta.abort_update(session=session, table_handle=handle)
        except Exception:  # report the original failure
            pass
        if isinstance(exc, Exception):
            raise translate_error(exc) from exc
        raise
    metrics: dict[str, Any] = {
        "spi": "row_level",
        "pushdown": False,
        "inserted": 0,
        "updated": 0 if delete else count,
        "deleted": count if delete else 0,
        "splits": len(splits),
        "scans": list(ctx.scans),
    }
    return Result(statement=planned.statement, row_count=count, metrics=metrics)


def _constraint(planned: PlannedRowLevel) -> Constraint:
    """What every changed row satisfies (the WHERE's simple predicates), for the connector's split pruning."""
    if planned.plan.where is None:
        return Constraint()
    found = msql.predicate_constraints(planned.plan.where, {None, planned.plan.target_alias})
    return Constraint(
        equalities={c: v[1] for c, v in found.items() if v[0] == "values"},
        ranges={c: (v[1], v[2]) for c, v in found.items() if v[0] == "range"},
    )


def _run_tasks(
    ctx: StatementContext,
    planned: PlannedRowLevel,
    handle: ConnectorTableHandle,
    columns: Sequence[ColumnHandle],
    row_id: ColumnHandle,
    splits: Sequence[Any],
    program: RowProgram,
) -> tuple[list[Any], int]:
    if not splits:
        return [], 0
    table = planned.table
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])
    task = _RowLevelTask(
        provider=table.connector.get_page_source_provider(),
        session=ctx.session(table.catalog),
        table_handle=handle,
        columns=tuple(columns),
        schema=schema,
        row_id=row_id.name,
        updated=tuple(c.name for c in planned.updated),
        program=program,
        bounds=bounded_columns(c for c in planned.plan.target.columns if c.name in {u.name for u in planned.updated}),
    )
    payloads = [(cloudpickle.dumps(s),) for s in splits]
    rdd = ctx.spark.sparkContext.parallelize(payloads, numSlices=len(payloads))  # one task per split
    out_schema = T.StructType([T.StructField("fragments", T.BinaryType()), T.StructField("rows", T.LongType())])
    rows = ctx.spark.createDataFrame(rdd, "split binary").mapInArrow(task, out_schema).toArrow()
    fragments: list[Any] = []
    for payload in rows.column("fragments").to_pylist():
        fragments.extend(pickle.loads(payload))
    return fragments, int(sum(rows.column("rows").to_pylist()))
