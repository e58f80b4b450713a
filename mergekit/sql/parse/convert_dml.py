"""INSERT, UPDATE, DELETE and MERGE syntax nodes -> the statement model (through :class:`~._parts.Parts`: every
argument taken or refused by name)."""

from __future__ import annotations

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import (
    Delete,
    Expression,
    Insert,
    Merge,
    MergeAction,
    MergeCase,
    MergeCaseKind,
    OnConflict,
    Query,
    Relation,
    Update,
)
from mergekit.sql.references import identifier_name, table_ref_of

from .parts import (
    Parts,
    checked_query,
    empty_clause,
    not_supported,
    set_list,
    syntax_error,
    table_name,
    text_of,
    where_clause,
    with_query,
)

__all__ = ["on_conflict_clause"]


def convert_insert(tree: exp.Insert) -> Insert:
    parts = Parts(tree, "INSERT")
    overwrite = bool(parts.take("overwrite"))
    conflict = parts.take("conflict")
    parts.refuse("returning", "RETURNING")
    default_values = bool(parts.take("default"))  # INSERT INTO t DEFAULT VALUES
    target = parts.take("this")
    columns = None
    if isinstance(target, exp.Schema):
        schema = Parts(target, "INSERT")
        target = schema.take("this")
        columns = tuple(identifier_name(c) for c in schema.take_list("expressions"))
        schema.done()
    name, alias = table_name(target, "INSERT", alias=True)
    if alias is not None and conflict is None:
        raise not_supported("an alias on the INSERT target is supported with ON CONFLICT only")
    on_conflict = on_conflict_clause(conflict) if conflict is not None else None
    if overwrite and on_conflict is not None:
        raise syntax_error("INSERT OVERWRITE cannot have ON CONFLICT")
    source = parts.take("expression")
    if default_values:
        if source is not None or columns is not None:
            raise syntax_error("INSERT ... DEFAULT VALUES takes neither a column list nor a query")
        source = exp.Values(expressions=[exp.Tuple(expressions=[exp.Null()])])  # placeholder: planned from defaults
    if not isinstance(source, exp.Expression):
        raise syntax_error("INSERT needs VALUES or a query")
    source = checked_query(with_query(parts.take("with_"), source, "INSERT"))
    parts.done()
    return Insert(
        target=name,
        columns=columns,
        source=Query(node=source),
        default_values=default_values,
        overwrite=overwrite,
        on_conflict=on_conflict,
        target_alias=alias,
    )


def on_conflict_clause(node: exp.OnConflict) -> OnConflict:
    """PostgreSQL's ``ON CONFLICT [(keys)] DO NOTHING | DO UPDATE SET ... [WHERE ...]``."""
    parts = Parts(node, "ON CONFLICT")
    parts.refuse("duplicate", "ON DUPLICATE KEY")
    parts.refuse("constraint", "ON CONSTRAINT", " (name the key columns: ON CONFLICT (k, ...))")
    keys_node = parts.take("conflict_keys")
    keys = None
    if keys_node:
        keys = []
        for key in keys_node:
            column = key.this if isinstance(key, exp.Ordered) else key
            if not isinstance(column, exp.Column) or column.table:
                raise not_supported(
                    f"ON CONFLICT ({text_of(key)}): only column names are supported as the conflict target"
                )
            keys.append(identifier_name(column.this))
    action = parts.take("action")
    word = " ".join(str(action.name if isinstance(action, exp.Var) else action or "").upper().split())
    assignments = set_list(parts.take_list("expressions"), "ON CONFLICT DO UPDATE")
    where = where_clause(parts)
    parts.done()
    if word == "DO NOTHING":
        if assignments or where is not None:
            raise syntax_error("ON CONFLICT DO NOTHING takes no SET or WHERE")
        return OnConflict(keys=tuple(keys) if keys is not None else None)
    if word != "DO UPDATE" or not assignments:
        raise syntax_error(f"ON CONFLICT needs DO NOTHING or DO UPDATE SET ..., got {word or 'nothing'}")
    if keys is None:
        raise syntax_error("ON CONFLICT DO UPDATE requires inference specification or constraint name")
    return OnConflict(keys=tuple(keys), assignments=assignments, where=where)


def convert_update(tree: exp.Update) -> Update | Merge:
    parts = Parts(tree, "UPDATE")
    from_ = parts.take("from_")
    parts.refuse("limit", "LIMIT")
    parts.refuse("order", "ORDER BY")
    parts.refuse("returning", "RETURNING")
    name, alias = table_name(parts.take("this"), "UPDATE", alias=True)
    assignments = set_list(parts.take_list("expressions"), "UPDATE")
    if not assignments:
        raise syntax_error("UPDATE needs SET")
    where = where_clause(parts)
    parts.done()
    if from_ is None:
        return Update(target=name, target_alias=alias, assignments=assignments, where=where)
    # UPDATE t SET ... FROM s WHERE cond (PostgreSQL) is MERGE INTO t USING s ON cond WHEN MATCHED THEN UPDATE;
    # a target row that joins several rows of s is an error (MERGE's duplicate-match check), where PostgreSQL
    # takes one of them unpredictably (docs/sql.md, differences from PostgreSQL)
    items = Parts(from_, "UPDATE ... FROM")
    source = items.take("this")
    items.done()
    if source.args.get("joins"):
        raise not_supported("UPDATE ... FROM with more than one table is not supported (join them in a subquery)")
    case = MergeCase(kind=MergeCaseKind.MATCHED, action=MergeAction.UPDATE, assignments=assignments)
    on = where if where is not None else Expression(exp.true())
    return Merge(target=name, target_alias=alias, source=_relation(source, "UPDATE ... FROM"), on=on, cases=(case,))


def convert_delete(tree: exp.Delete) -> Delete:
    parts = Parts(tree, "DELETE")
    target = parts.take("this")
    if empty_clause(target) and tree.args.get("tables"):
        wrote = text_of(tree.args["tables"][0])
        raise syntax_error(f"mismatched input '{wrote}'. Expecting: 'FROM' (write DELETE FROM {wrote})", 1, 8)
    using = parts.take_list("using")
    parts.refuse("limit", "LIMIT")
    parts.refuse("order", "ORDER BY")
    parts.refuse("returning", "RETURNING")
    name, alias = table_name(target, "DELETE", alias=True)
    where = where_clause(parts)
    parts.done()
    if not using:
        return Delete(target=name, target_alias=alias, where=where)
    # DELETE FROM t USING s WHERE cond (PostgreSQL): the rows of t for which some row of s satisfies cond
    select = exp.select("*")
    for i, item in enumerate(using):
        item = item.copy()
        joins = item.args.pop("joins", None) or []  # USING a, b parses as a with a comma join to b
        select = select.from_(item) if i == 0 else select.join(item)  # a comma: CROSS JOIN
        for join in joins:
            select = select.join(join)
    items = [t for item in using for t in [item, *(j.this for j in item.args.get("joins") or [])]]
    for node in items:
        if isinstance(node, exp.Table) and node.name.lower() == (alias or name.name).lower() and not node.alias:
            raise not_supported("DELETE ... USING the target table again needs an alias on it")
    condition = where.node.copy() if where is not None else exp.true()
    exists = exp.Exists(this=select.copy().select(exp.Literal.number(1), append=False).where(condition))
    unqualified = frozenset(
        identifier_name(c.this)
        for c in condition.find_all(exp.Column)
        if not c.table and isinstance(c.this, exp.Identifier)
    )
    return Delete(
        target=name,
        target_alias=alias,
        where=Expression(exists),
        using=Query(node=checked_query(select)),
        unqualified=unqualified,
    )


def _relation(node: exp.Expression, where: str) -> Relation:
    alias_node = node.args.get("alias")
    alias = identifier_name(alias_node.this) if alias_node is not None and alias_node.this else None
    columns: tuple[str, ...] = ()
    if isinstance(alias_node, exp.TableAlias):
        columns = tuple(identifier_name(c) for c in alias_node.columns)
    if isinstance(node, exp.Table) and node.args.get("joins"):
        if where != "MERGE":
            raise not_supported(f"a joined table as the source of {where} is not supported")
        if alias_node is not None and alias_node.columns:
            raise not_supported("column aliases on a table of a joined MERGE source are not supported")
        names = []
        for table in [node, *(j.this for j in node.args["joins"])]:
            if not isinstance(table, exp.Table):  # (SELECT ...) AS x JOIN ...: a subquery in the join
                name = table.alias_or_name
            else:
                name = table.alias_or_name or table.name
            if not name:
                raise not_supported(f"every table of a joined MERGE source needs a name or alias: {text_of(table)}")
            names.append(identifier_name(exp.to_identifier(name)))
        if len(set(names)) != len(names):
            raise MergekitError(
                ErrorCode.AMBIGUOUS_NAME, f"a name occurs twice in the MERGE source: {', '.join(names)}"
            )
        return Relation(node, alias=None, joined=tuple(names))
    if isinstance(node, exp.Table):
        ref = table_ref_of(node)
        return Relation(node, alias=alias or ref.name.name, column_aliases=columns, table=ref)
    if isinstance(node, (exp.Subquery, exp.Values)):
        return Relation(node, alias=alias, column_aliases=columns)
    raise not_supported(f"{text_of(node)} as the source of {where} is not supported")


def _merge_source(tree: exp.Merge, parts: Parts) -> Relation:
    """The USING relation, with a ``WITH`` before MERGE folded into it (its CTEs are visible to the source)."""
    source = parts.take("using")
    with_ = parts.take("with_")
    if with_ is None:
        return _relation(source, "MERGE")
    names = {identifier_name(cte.args["alias"].this) for cte in with_.expressions}
    for node in (tree.args.get("on"), tree.args.get("whens")):
        for table in node.find_all(exp.Table) if node is not None else ():
            if not table.args.get("db") and identifier_name(table.this) in names:
                raise not_supported(
                    f"the WITH query '{identifier_name(table.this)}' is used outside the MERGE source; "
                    "only the USING source can read it"
                )
    if isinstance(source, exp.Table) and not source.args.get("db") and identifier_name(source.this) in names:
        alias_node = source.args.get("alias")
        alias = identifier_name(alias_node.this) if alias_node is not None else identifier_name(source.this)
        select = exp.select("*").from_(exp.Table(this=source.this.copy()))
        sub = exp.Subquery(this=with_query(with_, select, "MERGE"), alias=exp.TableAlias(this=exp.to_identifier(alias)))
        if isinstance(alias_node, exp.TableAlias) and alias_node.columns:
            sub.args["alias"].set("columns", [c.copy() for c in alias_node.columns])
    elif isinstance(source, exp.Subquery):
        sub = source.copy()
        sub.set("this", with_query(with_, sub.this, "MERGE"))
    else:
        raise not_supported(
            f"WITH queries ({', '.join(sorted(names))}) before MERGE must be read by the USING source; "
            f"it reads {text_of(source)}"
        )
    return _relation(sub, "MERGE")


def _when(when: exp.When) -> MergeCase:
    parts = Parts(when, "MERGE")
    matched = bool(parts.take("matched"))
    by_source = bool(parts.take("source"))
    if matched and by_source:
        raise syntax_error("WHEN MATCHED cannot be BY SOURCE")
    kind = (
        MergeCaseKind.MATCHED
        if matched
        else (MergeCaseKind.NOT_MATCHED_BY_SOURCE if by_source else MergeCaseKind.NOT_MATCHED)
    )
    cond = parts.take("condition")
    condition = Expression(cond) if cond is not None else None
    then = parts.take("then")
    parts.done()
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        if kind is MergeCaseKind.NOT_MATCHED:
            raise syntax_error("WHEN NOT MATCHED supports only INSERT")
        return MergeCase(kind=kind, action=MergeAction.DELETE, condition=condition)
    if isinstance(then, exp.Var) and " ".join(then.name.upper().split()) == "DO NOTHING":
        return MergeCase(kind=kind, action=MergeAction.NOTHING, condition=condition)
    if isinstance(then, exp.Var):
        raise not_supported(f"{then.name.upper()} in a MERGE WHEN clause is not supported")
    if isinstance(then, exp.Update):
        if kind is MergeCaseKind.NOT_MATCHED:
            raise syntax_error("WHEN NOT MATCHED supports only INSERT")
        update = Parts(then, "MERGE")
        expressions = update.take_list("expressions")
        update.done()
        if len(expressions) == 1 and isinstance(expressions[0], exp.Star):
            star = Parts(expressions[0], "MERGE UPDATE SET *")
            star.done()  # refuses * EXCEPT (...), * REPLACE (...)
            if kind is not MergeCaseKind.MATCHED:
                raise syntax_error("UPDATE SET * needs a source row: it is allowed in WHEN MATCHED only")
            return MergeCase(kind=kind, action=MergeAction.UPDATE, condition=condition, star=True)
        if any(isinstance(e, exp.Star) for e in expressions):
            raise syntax_error("UPDATE SET * cannot be combined with other assignments")
        assignments = set_list(expressions, "MERGE")
        return MergeCase(kind=kind, action=MergeAction.UPDATE, condition=condition, assignments=assignments)
    if isinstance(then, exp.Insert):
        if kind is not MergeCaseKind.NOT_MATCHED:
            raise syntax_error(f"{kind.value} supports only UPDATE and DELETE")
        insert = Parts(then, "MERGE")
        cols_node = insert.take("this")
        values_node = insert.take("expression")
        insert.done()
        if isinstance(cols_node, exp.Star):
            star = Parts(cols_node, "MERGE INSERT *")
            star.done()  # refuses * EXCEPT (...), * REPLACE (...)
            if values_node is not None:
                raise syntax_error("INSERT * takes no VALUES")
            return MergeCase(kind=kind, action=MergeAction.INSERT, condition=condition, star=True)
        if values_node is None and _is_default_keyword(cols_node):
            # INSERT DEFAULT VALUES (PostgreSQL): every column takes its default (NULL without one); the parser
            # reads the keyword as a one-column list and finds nothing after VALUES
            return MergeCase(
                kind=kind, action=MergeAction.INSERT, condition=condition, insert_columns=(), insert_values=()
            )
        if not isinstance(values_node, exp.Expression):
            raise syntax_error("WHEN NOT MATCHED THEN INSERT needs VALUES (...)")
        columns = None
        if cols_node is not None:
            cols = Parts(cols_node, "MERGE")
            columns = tuple(
                identifier_name(c.this if isinstance(c, exp.Column) else c) for c in cols.take_list("expressions")
            )
            cols.done()
        values = values_node.expressions if isinstance(values_node, exp.Tuple) else [values_node]
        return MergeCase(
            kind=kind,
            action=MergeAction.INSERT,
            condition=condition,
            insert_columns=columns,
            insert_values=tuple(Expression(v) for v in values),
        )
    raise syntax_error(f"unsupported MERGE action: {text_of(then)}")


def _is_default_keyword(node: exp.Expression | None) -> bool:
    """Whether ``node`` is the keyword DEFAULT as the parser leaves it in ``INSERT DEFAULT VALUES``."""
    if isinstance(node, exp.Tuple) and len(node.expressions) == 1:
        (only,) = node.expressions
        return (
            isinstance(only, exp.Column) and not only.table and not only.this.quoted and only.name.upper() == "DEFAULT"
        )
    return False


def convert_merge(tree: exp.Merge) -> Merge:
    parts = Parts(tree, "MERGE")
    parts.refuse("returning", "RETURNING")
    schema_evolution = bool(parts.take("schema_evolution"))  # MERGE WITH SCHEMA EVOLUTION INTO (the dialect's)
    target, target_alias = table_name(parts.take("this"), "MERGE", alias=True)
    source = _merge_source(tree, parts)
    on = parts.take("on")
    whens = parts.take("whens")
    cases: list[MergeCase] = []
    if whens is not None:
        when_parts = Parts(whens, "MERGE")
        cases = [_when(w) for w in when_parts.take_list("expressions")]
        when_parts.done()
    parts.done()
    if not cases:
        raise syntax_error("MERGE needs at least one WHEN clause")
    _check_reachable(cases)
    if on is None:
        raise syntax_error("MERGE needs an ON condition")
    return Merge(
        target=target,
        target_alias=target_alias,
        source=source,
        on=Expression(on),
        cases=tuple(cases),
        schema_evolution=schema_evolution,
    )


def _check_reachable(cases: list[MergeCase]) -> None:
    """A WHEN clause after an unconditional clause of the same kind can never run: PostgreSQL, Spark and DuckDB
    reject the statement (a clause written and silently never taken would be a dropped clause)."""
    unconditional: set[MergeCaseKind] = set()
    for case in cases:
        if case.kind in unconditional:
            raise syntax_error(
                f"unreachable WHEN clause specified after unconditional WHEN clause: a {case.kind.value} clause "
                f"follows a {case.kind.value} clause without AND condition"
            )
        if case.condition is None:
            unconditional.add(case.kind)
