"""mergekit's SQL dialect: Trino SQL, the base for MonetDB merge-table DDL and Calcite's SELECT STREAM."""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.trino import Trino
from sqlglot.tokens import TokenType

# Trino functions kept as written (``exp.Anonymous``): sqlglot's own nodes for them rewrite their arguments
# (MySQL and Joda format strings into strftime, JSON paths into its own tree), which loses what Trino's semantics
# depend on. The Spark translation (``_spark_handlers_*``) reads them by name.
_AS_WRITTEN = (
    "DATE_FORMAT", "DATE_PARSE", "FORMAT_DATETIME", "PARSE_DATETIME", "JSON_EXTRACT_SCALAR", "JSON_EXTRACT",
    "JSON_ARRAY_CONTAINS", "JSON_ARRAY_GET", "JSON_ARRAY_LENGTH", "JSON_SIZE", "JSON_FORMAT", "JSON_PARSE",
)  # fmt: skip


#: ``meta`` keys of a function call: how many arguments it was written with, and that sqlglot's node for the function
#: cannot take that many (see ``Mergekit.Parser.validate_expression``).
ARGUMENT_COUNT = "argument_count"
ARGUMENT_COUNT_WRONG = "argument_count_wrong"


def call_arguments(node: exp.Expression) -> list[tuple[str, exp.Expression]]:
    """The arguments of a function call's node, each with the name of the node's argument that holds it."""
    if isinstance(node, exp.Anonymous):
        return [("expressions", e) for e in node.expressions]
    out: list[tuple[str, exp.Expression]] = []
    for key, value in node.args.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression):
                out.append((key, item))
    return out


def _as_written(name: str) -> Any:
    return lambda args: exp.Anonymous(this=name.lower(), expressions=args)


# Types whose typed literals (``DATE '2024-02-30'``) Trino validates while it analyses the statement: their casts
# carry ``meta["typed_literal"]`` for ``_literals.check_typed_literals``.
_TYPED_LITERALS = (
    exp.DType.DATE, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIME, exp.DType.TIMETZ, exp.DType.DECIMAL,
    exp.DType.TINYINT, exp.DType.SMALLINT, exp.DType.INT, exp.DType.BIGINT, exp.DType.FLOAT, exp.DType.DOUBLE,
    exp.DType.BOOLEAN,
)  # fmt: skip


def _typed_literal(self: Any, this: exp.Expr, to: exp.DataType) -> Any:
    build = Trino.Parser.TYPE_LITERAL_PARSERS.get(to.this)
    node = build(self, this, to) if build is not None else self.expression(exp.Cast(this=this, to=to))
    node.meta["typed_literal"] = True
    return node


def _written_as(word: str) -> Any:
    def parse(self: Any) -> Any:
        node = self._parse_auto_increment()
        node.meta["written"] = word
        return node

    return parse


class Mergekit(Trino):
    """Trino SQL as mergekit reads it. Extensions (merge-table DDL, STREAM) are added here.

    Every function call sqlglot models keeps the name it was written with in ``meta["trino_name"]``
    (``log10`` and ``log(10, x)`` are the same node otherwise): the function catalogue
    (``_function_catalog``) allows functions by that name."""

    ORIGINAL_NAME_META_KEY = "trino_name"

    class Parser(Trino.Parser):
        def validate_expression(self, expression: Any, args: list[Any] | None = None) -> Any:
            # A call of a known function with too few or too many arguments (``substr()``, ``mod(1, 2, 3)``): kept
            # as the call the user wrote, with every argument, for the function catalogue to refuse in Trino's words
            # once the arguments' types are known (``function_catalog.check_argument_count``), rather than sqlglot's
            # ``Required keyword: 'start' missing for Substring`` or a node that drops the arguments it has no
            # place for. Every call keeps how many arguments it was written with (its node may add defaults).
            if args is not None and (expression.error_messages(args) or len(args) > len(call_arguments(expression))):
                name = expression.sql_name() if isinstance(expression, exp.Func) else expression.key
                call = exp.Anonymous(this=name.lower(), expressions=list(args))
                call.meta[ARGUMENT_COUNT_WRONG] = True
                return call
            if args is not None:
                expression.meta[ARGUMENT_COUNT] = len(args)
            return super().validate_expression(expression, args)

        def _parse_merge_using_joins(self) -> Any:
            # ISO and Trino allow a joined table as the MERGE source (USING a JOIN b ON ... ON t.k = a.k); sqlglot
            # reads only a table there. The joins are kept on the USING table node.
            self._match(TokenType.INTO)
            target = self._parse_table()
            if target and self._match(TokenType.ALIAS, advance=False):
                target.set("alias", self._parse_table_alias())
            self._match(TokenType.USING)
            using = self._parse_table()
            joins = list(self._parse_joins())
            if joins and using is not None:
                using.set("joins", joins)
            return self.expression(
                exp.Merge(
                    this=target,
                    using=using,
                    on=self._match(TokenType.ON) and self._parse_disjunction(),
                    using_cond=self._match(TokenType.USING) and self._parse_using_identifiers(),
                    whens=self._parse_when_matched(),
                    returning=self._parse_returning(),
                )
            )

        FUNCTIONS = {**Trino.Parser.FUNCTIONS, **{name: _as_written(name) for name in _AS_WRITTEN}}

        # The word an auto-incrementing column was declared with, for its refusal (sqlglot reads all three alike).
        CONSTRAINT_PARSERS = {
            **Trino.Parser.CONSTRAINT_PARSERS,
            **{word: _written_as(word) for word in ("AUTOINCREMENT", "AUTO_INCREMENT", "IDENTITY")},
        }

        TYPE_LITERAL_PARSERS = {**Trino.Parser.TYPE_LITERAL_PARSERS, **dict.fromkeys(_TYPED_LITERALS, _typed_literal)}

        # Calcite's SESSION(t, gap) group window function and SESSION(...) window table function (seed 001):
        # ``SESSION`` is a keyword token (SET SESSION), a function name only when a parenthesis follows.
        FUNC_TOKENS = {*Trino.Parser.FUNC_TOKENS, TokenType.SESSION}

        def _parse_wrapped_properties(self) -> Any:
            # Marks the properties written as ``WITH (name = value, ...)``: the same typed nodes also come from
            # Hive's clauses (``LOCATION '...'``, ``PARTITIONED BY (...)``), which mergekit refuses by name.
            properties = super()._parse_wrapped_properties()
            for prop in properties:
                for p in prop if isinstance(prop, list) else [prop]:
                    p.meta["with_clause"] = True
            return properties

        def _parse_merge(self) -> exp.Merge:
            # ``MERGE WITH SCHEMA EVOLUTION INTO ...`` (Spark 4, Delta): kept in the node's ``schema_evolution``
            # argument, which the converter takes (an argument no converter takes is refused, never dropped).
            evolve = self._match_text_seq("WITH", "SCHEMA", "EVOLUTION")
            merge = self._parse_merge_using_joins()
            if evolve:
                merge.set("schema_evolution", True)
            return merge


DIALECT = Mergekit
