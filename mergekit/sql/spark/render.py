"""From parsed trees to Spark SQL: table references swapped for Spark views, Trino semantics preserved."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from sqlglot import exp

from mergekit.sql.names import QualifiedName, TableRef
from mergekit.sql.streaming.forms import rewrite_stream_forms

if TYPE_CHECKING:
    from mergekit.sql.model import Relation


def identifier_name(ident: exp.Expression | str | None) -> str:
    """Trino folds identifiers to lower case, quoted or not."""
    if ident is None:
        return ""
    if isinstance(ident, str):
        return ident.lower()
    return str(ident.name).lower()


CHANGE_FEED_FUNCTION = "table_changes"


def _change_feed_call(table: exp.Table) -> exp.Anonymous | None:
    """``table_changes('t', 1)`` or ``TABLE(table_changes('t', 1))`` in a FROM clause."""
    node = table.this
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "TABLE" and node.expressions:
        node = node.expressions[0]
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == CHANGE_FEED_FUNCTION:
        return node
    return None


def _change_feed_ref(call: exp.Anonymous) -> TableRef:
    args = call.expressions
    if not 2 <= len(args) <= 3 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
        from mergekit.errors import ErrorCode, MergekitError

        raise MergekitError(
            ErrorCode.INVALID_FUNCTION_ARGUMENT,
            "table_changes takes a table name and a first version, and optionally a last version: "
            "table_changes('t', 1[, 5])",
        )
    numbers = []
    for a in args[1:]:
        if not (isinstance(a, exp.Literal) and not a.is_string):
            from mergekit.errors import ErrorCode, MergekitError

            raise MergekitError(
                ErrorCode.INVALID_FUNCTION_ARGUMENT, f"table_changes: version must be an integer literal, got {a.sql()}"
            )
        numbers.append(int(a.this))
    parts = tuple(p.strip('"').lower() for p in str(args[0].this).split("."))
    return TableRef(
        name=QualifiedName(parts), changes_from=numbers[0], changes_to=numbers[1] if len(numbers) > 1 else None
    )


def qualified_name_of(identifiers: Iterable[exp.Expression]) -> QualifiedName:
    """The :class:`QualifiedName` of a table's parts: folded to lower case, with the spelling of quoted parts."""
    return QualifiedName.of(
        (str(p.name), bool(isinstance(p, exp.Identifier) and p.args.get("quoted"))) for p in identifiers
    )


def table_ref_of(table: exp.Table) -> TableRef:
    call = _change_feed_call(table)
    if call is not None:
        return _change_feed_ref(call)
    name = qualified_name_of(table.parts)
    version = table.args.get("version")
    ref_version: int | None = None
    ref_timestamp: str | None = None
    if isinstance(version, exp.Version):
        kind = str(version.this).upper()
        value = version.args.get("expression")
        if kind == "VERSION" and isinstance(value, exp.Literal) and not value.is_string:
            ref_version = int(value.this)
        elif kind == "VERSION":
            ref_version = int(value.name) if value is not None else None
        else:
            ref_timestamp = value.sql(dialect="trino") if value is not None else None
    return TableRef(name=name, version=ref_version, timestamp=ref_timestamp)


def _cte_names(node: exp.Expression) -> set[str]:
    return {identifier_name(cte.alias) for cte in node.find_all(exp.CTE)}


def real_tables(node: exp.Expression) -> list[exp.Table]:
    ctes = _cte_names(node)
    out = []
    for table in node.find_all(exp.Table):
        if not table.name and _change_feed_call(table) is None:
            continue  # another table function (UNNEST, ...)
        if table.name and len(table.parts) == 1 and identifier_name(table.this) in ctes:
            continue
        out.append(table)
    return out


def table_refs(node: exp.Expression) -> tuple[TableRef, ...]:
    seen: dict[TableRef, None] = {}
    for table in real_tables(node):
        seen.setdefault(table_ref_of(table), None)
    return tuple(seen)


def column_refs(node: exp.Expression) -> frozenset[tuple[str | None, str]]:
    refs = set()
    for col in node.find_all(exp.Column):
        if col.find_ancestor(exp.Select) is not None:
            continue  # inside a subquery: resolved there
        qualifier = identifier_name(col.args.get("table")) or None
        refs.add((qualifier, identifier_name(col.this)))
    return frozenset(refs)


def is_null_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Null)


def substitute_tables(node: exp.Expression, tables: Mapping[TableRef, str]) -> exp.Expression:
    """A copy of ``node`` whose table references read Spark views; the original name stays as the alias
    so that qualified column references (``nation.regionkey``) keep resolving."""
    node = node.copy()
    for table in real_tables(node):
        ref = table_ref_of(table)
        view = tables.get(ref)
        if view is None:
            continue
        alias = table.args.get("alias")
        new = exp.Table(this=exp.to_identifier(view))
        if alias is not None:
            new.set("alias", alias.copy())
        else:
            new.set("alias", exp.TableAlias(this=exp.to_identifier(ref.name.name)))
        table.replace(new)
    return node


def to_spark(node: exp.Expression, schema: Mapping[str, Mapping[str, str]] | None) -> str:
    from mergekit.sql.parse.functions import inline_functions

    node = inline_functions(node.copy())
    from .translate import to_spark_sql

    return to_spark_sql(node, schema=schema)


def trino_type(node: exp.Expression, schema: Mapping[str, Mapping[str, str]] | None) -> str:
    """The Trino type text of an expression (``char(5)``, ``varchar``, ``?`` when it cannot be inferred), its
    columns' types read from ``schema`` as :func:`to_spark` reads them."""
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    from .infer import Typer

    return str(Typer(schema).type_of(normalize_identifiers(node.copy(), dialect="trino")))


def render(
    node: exp.Expression, *, tables: Mapping[TableRef, str], schema: Mapping[str, Mapping[str, str]] | None
) -> str:
    return to_spark(substitute_tables(rewrite_stream_forms(node), tables), schema)


def render_relation(
    relation: Relation, *, tables: Mapping[TableRef, str], schema: Mapping[str, Mapping[str, str]] | None
) -> str:
    node = relation.node.copy()
    if relation.joined:
        return _render_joined(relation, node, tables=tables, schema=schema)
    node.set("alias", None)
    if isinstance(node, exp.Table):
        view = tables.get(table_ref_of(node))
        if view is None:
            return to_spark(node, schema)
        return "`" + view.replace("`", "``") + "`"
    if isinstance(node, exp.Subquery):
        inner = substitute_tables(rewrite_stream_forms(node.this), tables)
        return f"({to_spark(inner, schema)})"
    if isinstance(node, exp.Values):
        return f"({to_spark(exp.select('*').from_(node.copy()), schema)})"
    return f"({to_spark(substitute_tables(node, tables), schema)})"


def _render_joined(
    relation: Relation,
    node: exp.Expression,
    *,
    tables: Mapping[TableRef, str],
    schema: Mapping[str, Mapping[str, str]] | None,
) -> str:
    """A joined MERGE source: ``(SELECT struct(a.*) AS a, struct(b.*) AS b, * FROM a JOIN b ON ...)``. Outside it,
    ``a.x`` reads field x of column a (no relation a is in scope there), an unqualified column its unique name in
    the join, and a name two tables have is ambiguous, as in the join itself."""
    joins = node.args.pop("joins")
    select = exp.select("*").from_(node)
    for join in joins:
        select = select.join(join)
    sql = to_spark(substitute_tables(select, tables), schema)
    if not sql.startswith("SELECT * FROM "):
        raise AssertionError(f"unexpected rendering of a joined source: {sql[:80]}")
    structs = ", ".join(f"struct({_quote(name)}.*) AS {_quote(name)}" for name in relation.joined)
    return f"(SELECT {structs}, *{sql[len('SELECT *') :]})"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_type_sql(trino_type: str) -> str:
    """Spark SQL type for a Trino type text (``varchar(16)`` -> ``STRING``)."""
    from .types import spark_type_sql as translated

    return translated(trino_type)


def zoned_type_text(trino_type: str, zone: str | None) -> str:
    """Type text for a ``schema`` column whose timestamp values are in ``zone`` (None: UTC), e.g. a column of a user's
    DataFrame, which the user's Spark session shows in its own zone (``_spark_zones``)."""
    from .types import zoned_type_text as zoned

    return zoned(trino_type, zone)


def output_zones(
    node: exp.Expression, *, tables: Mapping[TableRef, str], schema: Mapping[str, Mapping[str, str]] | None
) -> tuple[str | None, ...] | None:
    """For each output column of a query (or FROM item), the zone of its timestamp values (None: UTC or not a
    timestamp), as the translation types them; None when the columns cannot be typed."""
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    from .infer import Typer

    inner = node.this if isinstance(node, exp.Subquery) else node
    if isinstance(inner, exp.Values | exp.Table):
        inner = exp.select("*").from_(inner.copy())
    tree = normalize_identifiers(substitute_tables(rewrite_stream_forms(inner), tables), dialect="trino")
    cols = Typer(schema).query_columns(tree)
    if cols is None:
        return None
    return tuple(t.zone if t.name.startswith("timestamp") else None for _, t in cols)
