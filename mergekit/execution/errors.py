"""Turning Spark and Python worker failures into coded mergekit errors (no Java stack traces for users)."""

from __future__ import annotations

import re

from mergekit.errors import ErrorCode, MergekitError, find_error

__all__ = ["translate_error"]

_BY_CONDITION: list[tuple[str, ErrorCode]] = [
    ("UNRESOLVED_COLUMN", ErrorCode.COLUMN_NOT_FOUND),
    ("UNRESOLVED_FIELD", ErrorCode.COLUMN_NOT_FOUND),
    ("TABLE_OR_VIEW_NOT_FOUND", ErrorCode.TABLE_NOT_FOUND),
    ("AMBIGUOUS_REFERENCE", ErrorCode.AMBIGUOUS_NAME),
    ("AMBIGUOUS_COLUMN_OR_FIELD", ErrorCode.AMBIGUOUS_NAME),
    ("DATATYPE_MISMATCH", ErrorCode.TYPE_MISMATCH),
    ("JOIN_CONDITION_IS_NOT_BOOLEAN_TYPE", ErrorCode.TYPE_MISMATCH),
    ("INCOMPATIBLE_COLUMN_TYPE", ErrorCode.TYPE_MISMATCH),
    ("UNRESOLVED_ROUTINE", ErrorCode.FUNCTION_NOT_FOUND),
    ("WRONG_NUM_ARGS", ErrorCode.INVALID_FUNCTION_ARGUMENT),
    ("PARSE_SYNTAX_ERROR", ErrorCode.SYNTAX_ERROR),
    ("DIVIDE_BY_ZERO", ErrorCode.DIVISION_BY_ZERO),
    ("INTERVAL_DIVIDED_BY_ZERO", ErrorCode.DIVISION_BY_ZERO),
    ("ARITHMETIC_OVERFLOW", ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE),
    ("NUMERIC_VALUE_OUT_OF_RANGE", ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE),
    ("CAST_OVERFLOW", ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE),
    ("CAST_INVALID_INPUT", ErrorCode.INVALID_CAST_ARGUMENT),
    ("SCALAR_SUBQUERY_TOO_MANY_ROWS", ErrorCode.SUBQUERY_MULTIPLE_ROWS),
    ("MISSING_AGGREGATION", ErrorCode.TYPE_MISMATCH),
    ("UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY", ErrorCode.NOT_SUPPORTED),
]


def _condition(exc: BaseException) -> str | None:
    for attr in ("getCondition", "getErrorClass"):
        fn = getattr(exc, attr, None)
        if fn is not None:
            try:
                value = fn()
            except Exception:  # noqa: BLE001 - older pyspark error objects
                value = None
            if value:
                return str(value)
    m = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)*)\]", str(exc))
    return m.group(1) if m else None


def _spark_message(exc: BaseException) -> str:
    text = str(exc)
    text = text.split("\n== SQL")[0].split("\nJVM stacktrace:")[0]
    text = re.sub(r"\s*SQLSTATE: \w+\.?", "", text)
    text = re.sub(r"^\[[A-Z_.]+\]\s*", "", text.strip())
    return text.strip().split("\n")[0]


def _column_message(exc: BaseException, condition: str) -> str | None:
    params: dict[str, str] = {}
    fn = getattr(exc, "getMessageParameters", None)
    if fn is not None:
        try:
            params = dict(fn() or {})
        except Exception:  # noqa: BLE001
            params = {}
    name = params.get("objectName") or params.get("name") or params.get("fieldName")
    if name:
        name = name.replace("`", "")
        if condition.startswith("AMBIGUOUS"):
            return f"Column '{name}' is ambiguous"
        return f"Column '{name}' cannot be resolved"
    return None


def translate_error(exc: BaseException) -> MergekitError:
    """The coded error behind ``exc``: ours when one was raised anywhere (a sink, raise_error in SQL)."""
    if isinstance(exc, MergekitError):
        return exc
    text = str(exc)
    ours = find_error(text)
    if ours is not None:
        return ours
    condition = _condition(exc) or ""
    for prefix, code in _BY_CONDITION:
        if condition.startswith(prefix):
            message = None
            if code in (ErrorCode.COLUMN_NOT_FOUND, ErrorCode.AMBIGUOUS_NAME):
                message = _column_message(exc, condition)
            if code is ErrorCode.DIVISION_BY_ZERO:
                message = "Division by zero"
            return MergekitError(code, message or _spark_message(exc))
    if "PythonException" in type(exc).__name__ or "Traceback" in text:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]
        last = next(
            (ln for ln in reversed(lines) if re.match(r"^\w[\w.]*(Error|Exception)\b", ln)),
            lines[-1] if lines else text,
        )
        return MergekitError(ErrorCode.WRITER_ERROR, f"Task failed: {last.strip()}")
    return MergekitError(ErrorCode.EXECUTION_ERROR, _spark_message(exc) or type(exc).__name__)
