"""Rewrite handlers for Trino's JSON functions over varchar: json_array_length and json_extract_scalar.

json_extract_scalar reads its constant path the way Trino's ``JsonPathTokenizer`` does (``$``, ``.name``,
``[name]``, ``["quoted"]``; a number is an array index or an object key, whichever the value is) and walks a
Spark ``variant`` of the document. Trino extracts while it parses (a value found before a syntax error is
returned, duplicate keys resolve to the first) and returns a number's text as written; Spark parses the whole
document first (duplicate keys are an error) and normalizes numbers. So a document Spark cannot parse fails with
NOT_SUPPORTED instead of guessing, integers are returned as written (their text, read with Spark's
``get_json_object``, is exact), and any other number fails with NOT_SUPPORTED. Registered in ``HANDLERS``.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.spark.build import case_when, cast_to, checked, dup, lit, spark_fn
from mergekit.sql.spark.rewrite import Out, Rewriter, call_args, handler_registry
from mergekit.sql.spark.types import TrinoType, expect_args, is_string, not_supported

HANDLERS, _handles = handler_registry()


def json_path_tokens(path: str) -> list[str]:
    """Trino's JsonPathTokenizer: the keys/indexes of ``path``; INVALID_FUNCTION_ARGUMENT when it is not one."""

    def invalid() -> MergekitError:
        return MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, f"Invalid JSON path: '{path}'")

    if not path.startswith("$"):
        raise invalid()
    tokens, i, n = [], 1, len(path)
    while i < n:
        if path[i] == ".":
            m = re.compile(r"[\w:]+").match(path, i + 1)  # letters, digits, '_' and ':'
            if m is None:
                raise invalid()
            tokens.append(m.group(0))
            i = m.end()
        elif path[i] == "[":
            if path[i + 1 : i + 2] == '"':
                j, token = i + 2, ""
                while j < n and path[j] != '"':
                    if path[j] == "\\":
                        if path[j + 1 : j + 2] not in ('"', "\\"):
                            raise invalid()
                        j += 1
                    token += path[j]
                    j += 1
                if j >= n:
                    raise invalid()
                i = j + 1
            else:
                m = re.compile(r"\w+").match(path, i + 1)
                if m is None:
                    raise invalid()
                token, i = m.group(0), m.end()
            if path[i : i + 1] != "]":
                raise invalid()
            tokens.append(token)
            i += 1
        else:
            raise invalid()
    return tokens


def _index(token: str) -> int | None:
    """The array index a token also is (Integer.parseInt), or None."""
    if re.fullmatch(r"[+-]?[0-9]+", token) and -(2**31) <= int(token) < 2**31:
        return int(token)
    return None


@_handles("json_array_length")
def _json_array_length(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (j,) = call_args(node, "json_array_length", 1)
    expect_args("json_array_length", list(types["expressions"]), "json_array_length(varchar(x))", is_string)
    return cast_to(spark_fn("JSON_ARRAY_LENGTH", j), "BIGINT"), None


@_handles("json_extract_scalar")
def _json_extract_scalar(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    j, path = call_args(node, "json_extract_scalar", 2)
    expect_args(
        "json_extract_scalar",
        list(types["expressions"]),
        "json_extract_scalar(varchar(x), JsonPath)",
        is_string,
        is_string,
    )
    if isinstance(path, exp.Null):
        return cast_to(exp.Null(), "STRING"), None
    if not (isinstance(path, exp.Literal) and path.is_string):
        raise not_supported("json_extract_scalar needs a constant path on Spark")
    tokens = json_path_tokens(path.this)
    if any("'" in tok or "\\" in tok for tok in tokens):
        raise not_supported("json_extract_scalar of a key with a quote or backslash is not supported")
    doc = spark_fn("TRY_PARSE_JSON", dup(j))
    value: exp.Expr = doc
    text_path: list[exp.Expr] = [lit("$")]
    for tok in tokens:
        by_key = spark_fn("VARIANT_GET", value, lit(f"$['{tok}']"))
        index = _index(tok)
        if index is None:
            value = by_key
            text_path.append(lit(f"['{tok}']"))
            continue
        is_array = exp.Like(this=spark_fn("SCHEMA_OF_VARIANT", value.copy()), expression=lit("ARRAY%"))
        by_index = spark_fn("VARIANT_GET", value.copy(), lit(f"$[{index}]")) if index >= 0 else exp.Null()
        text_path.append(spark_fn("IF", is_array.copy(), lit(f"[{index}]"), lit(f"['{tok}']")))
        value = case_when([(is_array, by_index)], by_key)
    kind = spark_fn("SCHEMA_OF_VARIANT", value.copy())
    as_text = spark_fn("VARIANT_GET", value.copy(), lit("$"), lit("string"))
    number_text = spark_fn(
        "GET_JSON_OBJECT", dup(j), spark_fn("CONCAT", *text_path) if len(text_path) > 1 else lit("$")
    )
    integral = exp.RegexpLike(this=number_text, expression=lit("^-?[0-9]+$"))
    is_number = exp.RegexpLike(
        this=kind.copy(), expression=lit("^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL.*|DOUBLE|FLOAT)$")
    )
    result = case_when(
        [
            (exp.In(this=kind.copy(), expressions=[lit("STRING"), lit("BOOLEAN")]), as_text),
            (is_number.copy(), number_text.copy()),
        ],
        exp.Null(),
    )
    unparsed = exp.Is(this=doc.copy(), expression=exp.Null())
    not_integral = exp.and_(is_number, exp.not_(integral, copy=False), copy=False)
    # '-0' reads back as '0': refuse a zero extracted from a document with a '-0' in it
    negative_zero = exp.and_(
        exp.EQ(this=number_text.copy(), expression=lit("0")),
        exp.RegexpLike(this=dup(j), expression=lit(r"(?<![0-9.eE])-0(?![0-9.eE])")),
        copy=False,
    )
    checks = [
        (
            unparsed,
            ErrorCode.NOT_SUPPORTED,
            "json_extract_scalar of text Spark cannot parse as JSON (malformed, or with duplicate keys) is not supported",
        ),
        (
            not_integral,
            ErrorCode.NOT_SUPPORTED,
            "json_extract_scalar of a non-integer number is not supported (Spark does not keep its text)",
        ),
        (negative_zero, ErrorCode.NOT_SUPPORTED, "json_extract_scalar of -0 is not supported"),
    ]
    return checked(result, [j], checks, safe)
