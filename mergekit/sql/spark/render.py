"""From parsed trees to Spark SQL: table references swapped for Spark views, Trino semantics preserved."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sqlglot import exp

from mergekit.sql.names import TableRef
from mergekit.sql.references import substitute_tables, table_ref_of
from mergekit.sql.streaming.forms import rewrite_stream_forms

if TYPE_CHECKING:
    from mergekit.sql.model import Relation


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


def trino_type_text(type_text: str) -> str:
    """A declared type as Trino spells it in messages (``TIMESTAMP`` -> ``timestamp(3)``, ``VARCHAR(5)`` ->
    ``varchar(5)``); the text itself when it is no type mergekit knows."""
    from mergekit.errors import MergekitError

    from .types import parse_type

    try:
        return str(parse_type(type_text))
    except MergekitError:
        return type_text


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
