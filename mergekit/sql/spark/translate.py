"""Trino SQL -> Spark SQL, with Trino's semantics.

mergekit accepts Trino SQL but runs it on Spark (ANSI mode, UTC session time zone). sqlglot's own
``trino -> spark`` transpilation is syntactic: it keeps ``7/2`` as ``7 / 2`` (3.5 on Spark, 3 on Trino),
turns ``date_trunc`` on a DATE into a TIMESTAMP, drops ``TRY``, and so on. This module closes those gaps:

1. a small **type inference** over the Trino tree (``Typer``): literals, columns (through ``schema``,
   subqueries, CTEs, VALUES and outer scopes) and the operators/functions whose Spark translation depends
   on types, using Trino's typing rules (integer division, decimal precision/scale, ...);
2. a bottom-up **rewrite** (``Rewriter``) that replaces each construct whose Spark meaning differs by an
   equivalent Spark expression, and evaluates ``TRY(...)`` with Spark's ``try_*`` functions plus an
   explicit "an error was caught" flag (so ``TRY(coalesce(1/0, 5))`` is NULL, as on Trino);
3. **generation** with the Spark dialect, every identifier back-quoted and every ``ORDER BY`` item
   carrying an explicit ``NULLS FIRST/LAST`` (Trino sorts NULLs last in both directions).

Constructs that cannot be translated faithfully raise ``MergekitError(NOT_SUPPORTED)``. Functions are
allow-listed by the function catalogue (``_function_catalog``, which docs/sql.md's table is generated from):
every function call is checked against it before any handler runs, so a Trino function that is not listed
is refused by name (``FUNCTION_NOT_FOUND`` for a name Trino does not have). An argument Trino rejects at run
time (``split_part(s, ',', 0)``) raises Trino's coded error through Spark's ``raise_error``, NULL inside TRY.

Known deviations, kept because the alternative is refusing common SQL:

- ``timestamp with time zone`` values are UTC instants on Spark; a value's original zone is not kept
  (``CAST(tz AS varchar)`` prints ``... UTC``). ``CHAR(n)`` values are padded strings (STRING); comparisons with
  one ignore trailing spaces (``_spark_handlers_query``), but COALESCE, CASE results and UNION do not pad a VARCHAR
  to CHAR as Trino does.
- ``DECIMAL '1.5'`` and ``CAST('1.5' AS DECIMAL)`` parse to the same sqlglot tree; both are read as the
  typed literal (Trino would give 2 for the cast, whose type is decimal(38,0)).
- decimal division and ``avg(decimal)`` round Spark's wider quotient to Trino's scale; when Spark had
  to cut its own scale to stay within 38 digits this double rounding can differ in the last digit
  (and a division for which Spark keeps fewer digits than Trino returns raises NOT_SUPPORTED).
- ``approx_distinct`` is Spark's HyperLogLog++; regular expressions are Java's (Trino uses joni), and an
  invalid pattern fails with Spark's error (``EXECUTION_ERROR``) rather than ``INVALID_FUNCTION_ARGUMENT``;
  sequence() of dates has no 10,000-element limit; ``random(n)`` draws ``floor(rand() * n)``.
- Spark accepts some inputs Trino rejects at analysis time (implicit varchar coercions the operand checks of
  ``_spark_types`` do not cover, more boolean spellings in CAST); those produce a value instead of an error.
  Comparisons, arithmetic, typed literals (``_literals``) and aggregate queries (``_aggregation``) are checked
  with Trino's rules before Spark sees them. Spark's JSON parser accepts
  unescaped control characters in strings (``json_array_length``), which Trino's rejects.
- Where a Trino function accepts more than Spark can be made to match exactly, the translation fails
  (never computes something else): ``from_base`` of non-ASCII digits, ``date_parse`` of names in mixed
  case, JSON that Spark's variant parser refuses (duplicate keys); each is named in the catalogue's notes.

Layout (one module per step, each importing only the ones before it):

- ``_spark_types``: Trino types, Spark's type for each, Trino's typing rules (``spark_type_sql``);
- ``_spark_infer``: type inference over the tree (``Typer``);
- ``_function_catalog``: the supported functions (the allow-list);
- ``_spark_build``: builders of Spark expressions, and of Trino's argument errors (``_checked``);
- ``_spark_rewrite``: the bottom-up rewrite and TRY bookkeeping (``Rewriter``), the handler registry
  (keyed by node class, or by name for the functions sqlglot parses as anonymous calls);
- ``_spark_handlers_numeric``, ``_spark_handlers_casts``, ``_spark_handlers_functions``,
  ``_spark_handlers_query``: the per-construct rewrites; functions by Trino's chapters in
  ``_spark_handlers_strings``, ``_regexp``, ``_binary`` (and bitwise), ``_math``, ``_datetime``, ``_json``;
- this module: pre-passes (Trino's output column names, ``typeof``), the handler table, generation,
  ``to_spark_sql``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel, UnsupportedError
from sqlglot.generators.spark import SparkGenerator
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from mergekit.sql.analysis.aggregation import check_aggregations
from mergekit.sql.spark.handlers.strings import cast_concat_operands, typeof_literal

from .function_catalog import check_listed
from .handlers import binary as _spark_handlers_binary
from .handlers import casts as _spark_handlers_casts
from .handlers import datetime as _spark_handlers_datetime
from .handlers import functions as _spark_handlers_functions
from .handlers import json as _spark_handlers_json
from .handlers import math as _spark_handlers_math
from .handlers import numeric as _spark_handlers_numeric
from .handlers import query as _spark_handlers_query
from .handlers import regexp as _spark_handlers_regexp
from .handlers import strings as _spark_handlers_strings
from .infer import Typer
from .rewrite import STATEMENTS, Handler, Rewriter
from .types import not_supported

__all__ = ["to_spark_sql"]


def _handler_table(*tables: dict[Any, Handler]) -> dict[Any, Handler]:
    """Every handler module's handlers in one table (a node class is handled in one place only)."""
    merged: dict[Any, Handler] = {}
    for table in tables:
        twice = merged.keys() & table.keys()
        assert not twice, f"handled twice: {twice}"
        merged.update(table)
    return merged


HANDLERS = _handler_table(
    _spark_handlers_binary.HANDLERS,
    _spark_handlers_numeric.HANDLERS,
    _spark_handlers_casts.HANDLERS,
    _spark_handlers_datetime.HANDLERS,
    _spark_handlers_functions.HANDLERS,
    _spark_handlers_json.HANDLERS,
    _spark_handlers_math.HANDLERS,
    _spark_handlers_query.HANDLERS,
    _spark_handlers_regexp.HANDLERS,
    _spark_handlers_strings.HANDLERS,
)


# --------------------------------------------------------------------------------------------------
# pre-passes


def _name_projections(root: exp.Expr) -> None:
    """Give unnamed select items Trino's output names (``_col0``, ``_col1``, ...), and point ORDER BY
    items that repeat such an item at its name (Spark cannot resolve ``ORDER BY a + 1`` against
    ``SELECT DISTINCT a + 1 AS _col0``)."""
    for select in list(root.find_all(exp.Select)):
        renamed: list[tuple[exp.Expr, str]] = []
        for i, proj in enumerate(list(select.expressions)):
            inner = proj
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(proj, (exp.Alias, exp.Star)) or isinstance(inner, exp.Column):
                continue
            name = f"_col{i}"
            proj.replace(exp.Alias(this=proj.copy(), alias=exp.to_identifier(name)))
            renamed.append((proj, name))
        order = select.args.get("order")
        if order is not None and renamed:
            for ordered in order.expressions:
                for original, name in renamed:
                    if ordered.this == original:
                        ordered.set("this", exp.column(name))
                        break


def _wrap_top_values(root: exp.Expr) -> exp.Expr:
    """A top-level ``VALUES`` gets Trino's column names (``_col0``, ...) instead of Spark's ``col1``."""
    if isinstance(root, exp.Values) and root.args.get("alias") is None and root.expressions:
        first = root.expressions[0]
        width = len(first.expressions) if isinstance(first, exp.Tuple) else 1
        root.set(
            "alias",
            exp.TableAlias(
                this=exp.to_identifier("_values"),
                columns=[exp.to_identifier(f"_col{i}") for i in range(width)],
            ),
        )
        return exp.select("*").from_(root, copy=False)
    return root


# --------------------------------------------------------------------------------------------------
# generation


class _Generator(SparkGenerator):
    """Spark generator that always spells out the NULL ordering (Trino sorts NULLs last both ways)."""

    def ordered_sql(self, expression: exp.Ordered) -> str:
        this = self.sql(expression, "this")
        desc = bool(expression.args.get("desc"))
        nulls_first = bool(expression.args.get("nulls_first"))
        return f"{this} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if nulls_first else 'LAST'}"


_SPARK = Spark()


def _generate(tree: exp.Expr) -> str:
    generator = _Generator(dialect=_SPARK, identify=True, unsupported_level=ErrorLevel.RAISE)
    try:
        return generator.generate(tree)
    except UnsupportedError as e:
        raise not_supported(f"cannot render for Spark: {e}") from e


def to_spark_sql(node: exp.Expression, *, schema: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """Render a Trino-dialect sqlglot tree (a whole query, or a lone expression) as Spark SQL.
    `schema` maps a table (view) name, as it appears in the tree, to {column name: Trino SQL type text
    such as 'integer', 'varchar', 'decimal(10,2)', 'timestamp(3) with time zone'}; it is used to infer
    expression types (Trino's typing rules, see ``Typer``) where semantics depend on them: a division
    whose operand types cannot be inferred raises NOT_SUPPORTED rather than guess.
    Must not mutate `node` (copy it)."""
    if isinstance(node, STATEMENTS):
        raise not_supported(f"{node.key.upper()} statements are translated by the planner, not as Spark SQL")
    # Trino folds every identifier to lower case (quoted ones too): output column names follow.
    tree: exp.Expr = normalize_identifiers(node.copy(), dialect="trino")
    _name_projections(tree)
    tree = _wrap_top_values(tree)
    typer = Typer(schema)
    for sub in list(tree.walk()):
        typer.type_of(sub)
    check_aggregations(tree, typer)
    for call in list(tree.find_all(exp.Typeof)):  # a constant of the original tree's types
        check_listed(call, "typeof")
        call.replace(typeof_literal(call, typer.type_of(call.this)))
    cast_concat_operands(tree, typer.type_of)
    result = Rewriter(typer, HANDLERS).walk(tree)
    return _generate(result.v)
