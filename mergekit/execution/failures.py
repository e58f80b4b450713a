"""Turning Spark and Python worker failures into coded mergekit errors (no Java stack traces for users).

Arithmetic and cast failures get Trino's codes and wording (``tinyint addition overflow: 100 + 127``,
``Division by zero``, ``Out of range for tinyint: 300``, ``Cannot cast 'abc' to INT``), wherever Spark raised them:
on the driver, in a task, or upstream of a Python worker (a merge sink), where they arrive as text inside a
Java or Python stack. Spark's advice (``try_add``, turning ``spark.sql.ansi.enabled`` off) never reaches the user:
it does not apply to mergekit SQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mergekit.errors import ErrorCode, MergekitError, find_error

__all__ = ["translate_error", "arithmetic_error", "MULTIPLE_ROWS_MESSAGE"]

#: Trino's words for a scalar subquery that returns more than one row, in every tier: Spark's
#: SCALAR_SUBQUERY_TOO_MANY_ROWS (on the driver, in a task, upstream of a Python worker) and the Arrow evaluators.
MULTIPLE_ROWS_MESSAGE = "Scalar sub-query has returned multiple rows"

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
    ("SCALAR_SUBQUERY_TOO_MANY_ROWS", ErrorCode.SUBQUERY_MULTIPLE_ROWS),
    ("MISSING_AGGREGATION", ErrorCode.EXPRESSION_NOT_AGGREGATE),
    ("MISSING_GROUP_BY", ErrorCode.EXPRESSION_NOT_AGGREGATE),
    ("UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY", ErrorCode.NOT_SUPPORTED),
    ("INVALID_PARAMETER_VALUE.PATTERN", ErrorCode.INVALID_FUNCTION_ARGUMENT),  # a constant invalid regex
    ("ORDER_BY_POS_OUT_OF_RANGE", ErrorCode.INVALID_COLUMN_REFERENCE),
    ("GROUP_BY_POS_OUT_OF_RANGE", ErrorCode.INVALID_COLUMN_REFERENCE),
]

# An invalid regular expression that reaches a task (a pattern from a column, or one Spark does not fold): Java's
# exception, which Trino reports as INVALID_FUNCTION_ARGUMENT with the pattern's error.
_BAD_PATTERN = re.compile(r"java\.util\.regex\.PatternSyntaxException: ([^\n]*)(?:\n([^\n]*))?")


def _condition(exc: BaseException) -> str | None:
    for attr in ("getCondition", "getErrorClass"):
        fn = getattr(exc, attr, None)
        if fn is not None:
            try:
                value = fn()
            except Exception:  # older pyspark error objects
                value = None
            if value:
                return str(value)
    m = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)*)\]", str(exc))
    return m.group(1) if m else None


# Py4J's first line ("An error occurred while calling o17545.collectToPython.") names a JVM object, and the Java
# exception's class prefixes its message: neither is for users.
_PY4J_CALL = re.compile(r"^An error occurred while calling \S+\s*(?::\s*)?")
_JAVA_CLASS = re.compile(r"^(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error): ")
# Where Spark's parser or analyzer puts a position in its own SQL text (``; line 1 pos 0``, ``(line 1, pos 23)``):
# that text is mergekit's translation, not what the user wrote, so its positions mean nothing to them.
_SPARK_POSITION = re.compile(r";?\s*\(?\bline \d+,? pos(?:ition)? \d+\)?;?")


# A Java exception line that carries Spark's condition: the failure itself, wherever it sits in a wrapped stack
# ("Exception thrown in awaitResult", "Job aborted due to stage failure: ... Caused by: ...").
_CONDITION_LINE = re.compile(r"(?:^|\n|: )(\[[A-Z][A-Z_]*(?:\.[A-Z_]+)*\] [^\n]*)")


def _spark_message(exc: BaseException) -> str:
    text = _PY4J_CALL.sub("", str(exc).strip())
    if _JAVA_CLASS.match(text):  # a Py4J error: the Java stack, whose first condition is the failure
        tagged = _CONDITION_LINE.search(text)
        if tagged is not None:
            text = tagged.group(1)
    text = text.split("\n== SQL")[0].split("\nJVM stacktrace:")[0]
    text = re.sub(r"\s*SQLSTATE: \w+\.?", "", text)
    text = _JAVA_CLASS.sub("", text.strip())
    text = re.sub(r"^\[[A-Z_.]+\]\s*", "", text.strip())
    return without_spark_position(text.strip().split("\n")[0])


def without_spark_position(message: str) -> str:
    """``message`` without the positions Spark gives in the SQL it parsed (mergekit's, never the user's)."""
    return _SPARK_POSITION.sub("", message).strip()


def _column_message(exc: BaseException, condition: str) -> str | None:
    params: dict[str, str] = {}
    fn = getattr(exc, "getMessageParameters", None)
    if fn is not None:
        try:
            params = dict(fn() or {})
        except Exception:
            params = {}
    name = params.get("objectName") or params.get("name") or params.get("fieldName")
    if name:
        name = name.replace("`", "")
        if condition.startswith("AMBIGUOUS"):
            return f"Column '{name}' is ambiguous"
        return f"Column '{name}' cannot be resolved"
    return None


# ---- arithmetic and casts --------------------------------------------------------------------------------------

# Spark's type names in its messages -> Trino's (lower case as in Trino's arithmetic messages)
_TRINO_TYPE = {
    "TINYINT": "tinyint",
    "SMALLINT": "smallint",
    "INT": "integer",
    "INTEGER": "integer",
    "BIGINT": "bigint",
    "FLOAT": "real",
    "REAL": "real",
    "DOUBLE": "double",
    "STRING": "varchar",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIMESTAMP_NTZ": "timestamp",
    "TIMESTAMP": "timestamp with time zone",
    "BINARY": "varbinary",
}
_OPERATION = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division", "%": "modulus"}
_OPERATION_BY_FUNCTION = {
    "try_add": "addition",
    "try_subtract": "subtraction",
    "try_multiply": "multiplication",
    "try_divide": "division",
}
_INT_RANGE = {"tinyint": (-(2**7), 2**7 - 1), "smallint": (-(2**15), 2**15 - 1)}


def _trino_type(spark_type: str) -> str:
    name = spark_type.strip().strip('"').upper()
    if name.startswith("DECIMAL"):
        m = re.match(r"DECIMAL\((\d+),\s*(\d+)\)", name)
        return f"decimal({m.group(1)}, {m.group(2)})" if m else "decimal"
    return _TRINO_TYPE.get(name, name.lower())


def _value(literal: str) -> str:
    """A value as Spark's message prints it (``100S``, ``300L``, ``1.5D``, ``'abc'``) as Trino prints it."""
    text = literal.strip()
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?(?:E-?\d+)?)(?:Y|S|L|BD|D|F)", text)
    return m.group(1) if m else text


def _unquote(literal: str) -> str:
    text = literal.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("\\'", "'")
    return text


def _binary_overflow(m: re.Match[str]) -> tuple[ErrorCode, str]:
    left, symbol, right = m.group(1), m.group(2), m.group(3)
    a, b = _value(left), _value(right)
    # Spark prints both TINYINT and SMALLINT operands as shorts (100S): a TINYINT operation cannot leave the SMALLINT
    # range (127 * 127 < 32767), so a result that fits a smallint comes from tinyint operands.
    kind = {"L": "bigint", "Y": "tinyint"}.get(left[-1:], "smallint" if left.endswith("S") else "integer")
    if kind == "smallint":
        try:
            x, y = int(a), int(b)
            result = {"+": x + y, "-": x - y, "*": x * y}.get(symbol)
        except ValueError:
            result = None
        low, high = _INT_RANGE["smallint"]
        if result is not None and low <= result <= high:
            kind = "tinyint"
    operation = _OPERATION.get(symbol, "arithmetic")
    return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"{kind} {operation} overflow: {a} {symbol} {b}"


def _overflow(m: re.Match[str]) -> tuple[ErrorCode, str]:
    message, function = m.group(1).strip(), m.group(2)
    operation = _OPERATION_BY_FUNCTION.get(function or "")
    kind = {"integer overflow": "integer", "long overflow": "bigint"}.get(message.lower())
    if operation and kind:
        return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"{kind} {operation} overflow"
    if operation:
        return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Numeric overflow in {operation}"
    if message.lower() in ("overflow", "integer overflow", "long overflow"):
        return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"{kind or 'Numeric'} value out of range".capitalize()
    return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message[:1].upper() + message[1:]


def _cast_overflow(m: re.Match[str]) -> tuple[ErrorCode, str]:
    value, source, target = _value(m.group(1)), _trino_type(m.group(2)), _trino_type(m.group(3))
    if value == "NaN":
        return ErrorCode.INVALID_CAST_ARGUMENT, f"Cannot cast {source} NaN to {target}"
    if target == "bigint" and source in ("double", "real"):
        return ErrorCode.INVALID_CAST_ARGUMENT, f"Unable to cast {value} to bigint"
    return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Out of range for {target}: {value}"


def _cast_insert_overflow(m: re.Match[str]) -> tuple[ErrorCode, str]:
    target, column = _trino_type(m.group(2)), m.group(3).strip("`")
    return ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Out of range for {target}: a value for column '{column}'"


def _cast_invalid(m: re.Match[str]) -> tuple[ErrorCode, str]:
    literal, source, target = m.group(1), _trino_type(m.group(2)), m.group(3).strip('"').upper()
    text = _unquote(literal)
    kind = _trino_type(target)
    if source != "varchar":
        return ErrorCode.INVALID_CAST_ARGUMENT, f"Cannot cast {source} {_value(literal)} to {kind}"
    if kind == "date":
        return ErrorCode.INVALID_CAST_ARGUMENT, f"Value cannot be cast to date: {text}"
    if kind.startswith("timestamp"):
        return ErrorCode.INVALID_CAST_ARGUMENT, f"Value cannot be cast to {kind}: {text}"
    if kind.startswith("decimal"):
        return (
            ErrorCode.INVALID_CAST_ARGUMENT,
            f"Cannot cast VARCHAR '{text}' to {kind.upper()}. Value is not a number.",
        )
    return ErrorCode.INVALID_CAST_ARGUMENT, f"Cannot cast '{text}' to {target}"


def _decimal_out_of_range(m: re.Match[str]) -> tuple[ErrorCode, str]:
    value = m.group(1) or m.group(2)
    return (
        ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE,
        f"Decimal overflow: {value} does not fit in DECIMAL({m.group(3)}, {m.group(4)})",
    )


def _fixed(code: ErrorCode, message: str) -> Callable[[re.Match[str]], tuple[ErrorCode, str]]:
    return lambda m: (code, message)


def _first_sentence(code: ErrorCode) -> Callable[[re.Match[str]], tuple[ErrorCode, str]]:
    return lambda m: (code, _without_advice(m.group(1)) or "Arithmetic error")


# Every arithmetic, cast and range condition of Spark 4's error-conditions.json that a statement's data can raise:
# condition -> (pattern of its rendered message after "[CONDITION] ", Trino code and message from the match).
_REST = r"([^\n]*)"
_ARITHMETIC: dict[str, tuple[str, Callable[[re.Match[str]], tuple[ErrorCode, str]]]] = {
    "DIVIDE_BY_ZERO": (_REST, _fixed(ErrorCode.DIVISION_BY_ZERO, "Division by zero")),
    "REMAINDER_BY_ZERO": (_REST, _fixed(ErrorCode.DIVISION_BY_ZERO, "Division by zero")),
    "INTERVAL_DIVIDED_BY_ZERO": (_REST, _fixed(ErrorCode.DIVISION_BY_ZERO, "Division by zero")),
    "BINARY_ARITHMETIC_OVERFLOW": (r"(\S+) ([-+*/%]) (\S+) caused overflow", _binary_overflow),
    "ARITHMETIC_OVERFLOW": (r"(.*?)\.(?: Use [`']?(\w+)[`']?)?", _overflow),
    "CAST_OVERFLOW": (
        r'The value (.+?) of the type "([^"]+)" cannot be cast to "([^"]+)" due to an overflow',
        _cast_overflow,
    ),
    "CAST_OVERFLOW_IN_TABLE_INSERT": (
        r'Fail to assign a value of "?([^"]+?)"? type to the "?([^"]+?)"? type column or variable (\S+) due to',
        _cast_insert_overflow,
    ),
    "CAST_INVALID_INPUT": (
        r'The value (.+?) of the type "([^"]+)" cannot be cast to "([^"]+)" because it is malformed',
        _cast_invalid,
    ),
    "NUMERIC_VALUE_OUT_OF_RANGE": (
        r"(?:The (\S+) rounded half up from \S+|(\S+)) cannot be represented as "
        r"Decimal\((\d+), (\d+)\)",
        _decimal_out_of_range,
    ),
    "NUMERIC_OUT_OF_SUPPORTED_RANGE": (
        r"The value (\S+) cannot be interpreted as a numeric since it has more than 38 digits",
        lambda m: (ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Decimal overflow: {m.group(1)} has more than 38 digits"),
    ),
    "INVALID_NUMERIC_LITERAL_RANGE": (_REST, _first_sentence(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE)),
    "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION": (_REST, _first_sentence(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE)),
    "DATETIME_OVERFLOW": (
        r"Datetime operation overflow: (.*?)\.?\s*(?:SQLSTATE|$)",
        lambda m: (ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Datetime overflow: {m.group(1).replace('L DAY', ' DAY')}"),
    ),
    "INTERVAL_ARITHMETIC_OVERFLOW": (
        _REST,
        _fixed(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "Interval arithmetic overflow"),
    ),
    "DATETIME_FIELD_OUT_OF_BOUNDS": (_REST, _first_sentence(ErrorCode.INVALID_FUNCTION_ARGUMENT)),
    "INVALID_FRACTION_OF_SECOND": (_REST, _first_sentence(ErrorCode.INVALID_FUNCTION_ARGUMENT)),
    "INVALID_ARRAY_INDEX": (
        r"The index (-?\d+) is out of bounds. The array has (\d+) elements",
        lambda m: (
            ErrorCode.INVALID_FUNCTION_ARGUMENT,
            f"Array subscript must be less than or equal to array length: {m.group(1)} > {m.group(2)}",
        ),
    ),
    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT": (
        r"The index (-?\d+) is out of bounds. The array has (\d+) elements",
        lambda m: (
            ErrorCode.INVALID_FUNCTION_ARGUMENT,
            f"Array subscript must be less than or equal to array length: {m.group(1)} > {m.group(2)}",
        ),
    ),
    "INVALID_INDEX_OF_ZERO": (_REST, _fixed(ErrorCode.INVALID_FUNCTION_ARGUMENT, "SQL array indices start at 1")),
    "CANNOT_PARSE_DECIMAL": (_REST, _fixed(ErrorCode.INVALID_CAST_ARGUMENT, "Cannot parse the value as a decimal")),
    "CANNOT_PARSE_TIMESTAMP": (_REST, _first_sentence(ErrorCode.INVALID_FUNCTION_ARGUMENT)),
    "CONVERSION_INVALID_INPUT": (_REST, _first_sentence(ErrorCode.INVALID_FUNCTION_ARGUMENT)),
}
_ARITHMETIC_TAG = re.compile(r"\[(" + "|".join(sorted(_ARITHMETIC, key=len, reverse=True)) + r")(?:\.[A-Z_]+)?\]")

# Spark's advice that does not apply to mergekit SQL (its try_* functions, turning ANSI mode off)
_ADVICE = [
    re.compile(r"\s*If necessary set .*?to bypass this error[^.]*\.?"),
    re.compile(r"\s*Use (?:the SQL function )?[`']?(?:try_\w+|get\(\))[`']?.*?(?:\.|$)"),
    re.compile(r"\s*To avoid this error, use .*?(?:\.|$)"),
    re.compile(r"\s*Correct the value as per the syntax, or change its target type\."),
    re.compile(r"\s*SQLSTATE: \w+\.?"),
]


_ADVICE_TEXT = re.compile(r"try_\w+|spark\.sql\.ansi|to bypass this error")


def _without_advice(text: str) -> str:
    for pattern in _ADVICE:
        text = pattern.sub("", text)
    return text.strip().rstrip(".").strip()


def arithmetic_error(text: str) -> MergekitError | None:
    """The Trino-coded error for the first Spark arithmetic, cast or range failure named in ``text``."""
    tag = _ARITHMETIC_TAG.search(text)
    if tag is None:
        return None
    condition = tag.group(1)
    pattern, build = _ARITHMETIC[condition]
    rest = text[tag.end() :]
    m = re.match(r"\s*" + pattern, rest)
    if m is None:  # a wording this version does not know: the code still holds, Spark's sentence without advice
        if condition.endswith("_ZERO"):
            return MergekitError(ErrorCode.DIVISION_BY_ZERO, "Division by zero")
        code = _DEFAULT_CODE.get(condition, ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE)
        return MergekitError(code, _without_advice(rest.strip().split("\n")[0]) or condition)
    code, message = build(m)
    return MergekitError(code, message)


_DEFAULT_CODE = {
    "CAST_INVALID_INPUT": ErrorCode.INVALID_CAST_ARGUMENT,
    "CANNOT_PARSE_DECIMAL": ErrorCode.INVALID_CAST_ARGUMENT,
    "DATETIME_FIELD_OUT_OF_BOUNDS": ErrorCode.INVALID_FUNCTION_ARGUMENT,
    "INVALID_FRACTION_OF_SECOND": ErrorCode.INVALID_FUNCTION_ARGUMENT,
    "INVALID_ARRAY_INDEX": ErrorCode.INVALID_FUNCTION_ARGUMENT,
    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT": ErrorCode.INVALID_FUNCTION_ARGUMENT,
    "INVALID_INDEX_OF_ZERO": ErrorCode.INVALID_FUNCTION_ARGUMENT,
    "CANNOT_PARSE_TIMESTAMP": ErrorCode.INVALID_FUNCTION_ARGUMENT,
    "CONVERSION_INVALID_INPUT": ErrorCode.INVALID_FUNCTION_ARGUMENT,
}


def translate_error(exc: BaseException) -> MergekitError:
    """The coded error behind ``exc``: ours when one was raised anywhere (a sink, raise_error in SQL)."""
    if isinstance(exc, MergekitError):
        return exc
    if isinstance(exc, RecursionError):  # a statement deeper than the analysis can follow (the parser's limits
        return MergekitError(  # catch most; an expression built by the planner can still get here)
            ErrorCode.STATEMENT_TOO_DEEP, "Statement is too deeply nested (expression depth exceeds the limit)"
        )
    text = str(exc)
    # An analysis error quotes the plan, and with it the messages of raise_error calls that never ran.
    ours = None if "AnalysisException" in type(exc).__name__ else find_error(text)
    if ours is not None and not _ADVICE_TEXT.search(ours.message):  # not Spark's [NUMERIC_VALUE_OUT_OF_RANGE]
        return ours
    arithmetic = arithmetic_error(text)  # also when it reached the driver inside a task's or worker's stack
    if arithmetic is not None:
        return arithmetic
    if "[SCALAR_SUBQUERY_TOO_MANY_ROWS]" in text:
        return MergekitError(ErrorCode.SUBQUERY_MULTIPLE_ROWS, MULTIPLE_ROWS_MESSAGE)
    if "No module named 'mergekit" in text:  # the session's Python workers run an interpreter without mergekit
        from mergekit.execution.session import worker_python_message

        missing = re.search(r"ModuleNotFoundError: No module named '[\w.]+'", text)
        return MergekitError(
            ErrorCode.CONFIGURATION_INVALID,
            worker_python_message(None, missing.group(0) if missing else "ModuleNotFoundError"),
        )
    missing_module = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", text)
    if missing_module is not None and "PythonException" in text + type(exc).__name__:
        return MergekitError(
            ErrorCode.CONFIGURATION_INVALID,
            f"Spark's Python workers cannot import module '{missing_module.group(1)}', which a task needs (a "
            "connector's classes, or a function of a DataFrame): install it where the workers run, or have its "
            "classes pickled by value (pyspark.cloudpickle.register_pickle_by_value(module)), as mergekit does "
            "for the package of a catalog's connector class",
        )
    bad_pattern = _BAD_PATTERN.search(text)
    if bad_pattern is not None:
        pattern = (bad_pattern.group(2) or "").strip()
        detail = bad_pattern.group(1).strip() + (f": {pattern}" if pattern and not pattern.startswith("at ") else "")
        return MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, f"Invalid regular expression: {detail}")
    condition = _condition(exc) or ""
    if condition.startswith("PARSE_SYNTAX_ERROR"):  # Spark parses only SQL that mergekit generated: our fault
        return MergekitError(
            ErrorCode.GENERIC_INTERNAL_ERROR,
            f"Spark could not parse the SQL mergekit generated for this statement: {_spark_message(exc)}",
        )
    if condition.startswith("INVALID_INLINE_TABLE"):
        return _inline_table_error(exc, condition)
    for prefix, code in _BY_CONDITION:
        if condition.startswith(prefix):
            message = None
            if code in (ErrorCode.COLUMN_NOT_FOUND, ErrorCode.AMBIGUOUS_NAME):
                message = _column_message(exc, condition)
            elif code is ErrorCode.EXPRESSION_NOT_AGGREGATE:
                message = _not_aggregate_message(_spark_message(exc))
            elif code is ErrorCode.INVALID_COLUMN_REFERENCE:  # Trino's words, without Spark's "(valid range ...)"
                message = re.sub(r"\s*\(valid range is [^)]*\)", "", _spark_message(exc)).rstrip(".")
            elif condition.startswith("INVALID_PARAMETER_VALUE.PATTERN"):
                invalid = re.search(r"is invalid: (.*)", _spark_message(exc))
                message = f"Invalid regular expression: {invalid.group(1).rstrip('.') if invalid else ''}".rstrip(": ")
            return MergekitError(code, message or _without_advice(_spark_message(exc)))
    read_failure = _read_failure(text)
    if read_failure is not None:
        return read_failure
    if "PythonException" in type(exc).__name__ or "Traceback" in text:
        return _python_failure(text)
    return MergekitError(ErrorCode.EXECUTION_ERROR, _without_advice(_spark_message(exc)) or type(exc).__name__)


# A frame of mergekit's task code (merge sinks, page sources, streaming sources) in a Python worker's traceback: the
# failure is in what mergekit runs (a connector's sink); without one, it is in a function of the user's own DataFrame.
_MERGEKIT_FRAME = re.compile(r'File "[^"\n]*[/\\]mergekit[/\\]execution[/\\]')
_FRAME = re.compile(r'File "([^"\n]+)", line (\d+), in (\S+)')


def _python_failure(text: str) -> MergekitError:
    """A Python worker's failure: a merge sink's (WRITER_ERROR), or a Python function of the user's DataFrame
    (Trino's FUNCTION_IMPLEMENTATION_ERROR), with the exception's own text and where the function raised it."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]
    last = next(
        (ln for ln in reversed(lines) if re.match(r"^\w[\w.]*(Error|Exception)\b", ln)),
        lines[-1] if lines else text,
    ).strip()
    if _MERGEKIT_FRAME.search(text) or "Traceback" not in text:
        return MergekitError(ErrorCode.WRITER_ERROR, f"Task failed: {last}")
    frames = _FRAME.findall(text)
    where = f" (in {frames[-1][2]}, {frames[-1][0]} line {frames[-1][1]})" if frames else ""
    return MergekitError(ErrorCode.FUNCTION_IMPLEMENTATION_ERROR, f"A Python function failed: {last}{where}")


# Spark's reader of a user's file: the file (FAILED_READ_FILE), the record it could not parse in FAILFAST mode
# (MALFORMED_RECORD_IN_PARSING), and the Java exception that says why (the last "Caused by").
_READ_FILE = re.compile(r"\[FAILED_READ_FILE[.\w]*\] Encountered error while reading file (\S+?)\.?(?:\s|$)")
_MALFORMED = re.compile(
    r"\[MALFORMED_RECORD_IN_PARSING[.\w]*\] Malformed records are detected in record parsing: (.*?)\.?\n"
)
_CAUSE = re.compile(r"Caused by: (?:[a-z_$][\w$]*\.)+([A-Z][\w$]*): ([^\n]*)")


def _read_failure(text: str) -> MergekitError | None:
    """A file that a user's DataFrame reads could not be read: INVALID_CAST_ARGUMENT for a malformed record (with
    the record and what in it could not be parsed), STORAGE_ERROR otherwise; None for any other failure."""
    read = _READ_FILE.search(text)
    malformed = _MALFORMED.search(text + "\n")
    if read is None and malformed is None:
        return None
    causes = [c for c in _CAUSE.findall(text) if c[0] not in ("SparkException", "BadRecordException")]
    cause = ""
    if causes:
        kind, detail = causes[-1]
        number = re.fullmatch(r'For input string: "(.*)"', detail.strip())
        cause = f'"{number.group(1)}" is not a number' if kind == "NumberFormatException" and number else detail.strip()
    where = f" in file {read.group(1)}" if read is not None else ""
    if malformed is not None:
        detail = f": {cause}" if cause else ""
        return MergekitError(ErrorCode.INVALID_CAST_ARGUMENT, f"Malformed record {malformed.group(1)}{where}{detail}")
    if read is None:
        return None
    return MergekitError(
        ErrorCode.STORAGE_ERROR, f"Error reading file {read.group(1)}" + (f": {cause}" if cause else "")
    )


def _not_aggregate_message(spark_message: str) -> str:
    """Trino's words for Spark's MISSING_AGGREGATION (which names the expression) and MISSING_GROUP_BY (which does
    not; the SQL layer finds most of these first, naming the expression: ``mergekit.sql.analysis.aggregation``)."""
    named = re.search(r'non-aggregating expression "(.+?)" is based on', spark_message)
    if named is not None:
        return f"'{named.group(1).replace('`', '')}' must be an aggregate expression or appear in GROUP BY clause"
    return "Every expression of the select list must be an aggregate expression or appear in GROUP BY clause"


# What evaluating one VALUES expression can raise: the data errors Trino reports for the row itself.
_ROW_ERRORS = {
    ErrorCode.DIVISION_BY_ZERO,
    ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE,
    ErrorCode.INVALID_CAST_ARGUMENT,
    ErrorCode.INVALID_FUNCTION_ARGUMENT,
}


def _inline_table_error(exc: BaseException, condition: str) -> MergekitError:
    """Spark evaluates the rows of VALUES while it analyses them and wraps what failed; Trino reports the failure
    itself (division by zero, overflow, a bad cast) or that the rows' types do not match."""
    if "INCOMPATIBLE_TYPES" in condition:
        return MergekitError(ErrorCode.TYPE_MISMATCH, "VALUES rows have mismatched types")
    m = re.search(r'Failed to evaluate the SQL expression "(.*?)"', str(exc))
    if m:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        # Spark prints the expression without the quotes of its string literals (``CAST(abc AS INT)``): the
        # expression as printed, then with the operand of a CAST quoted again.
        expression = m.group(1)
        probes = [expression]
        cast = re.fullmatch(r"CAST\((.*) AS (\w+(?:\(\d+(?:,\s*\d+)?\))?)\)", expression)
        if cast is not None:
            probes.append(f"CAST('{cast.group(1).replace(chr(39), chr(39) * 2)}' AS {cast.group(2)})")
        for probe in probes:
            if spark is None:
                break
            try:  # the expression alone, outside an inline table: Spark raises its own error
                spark.sql(f"SELECT {probe}").collect()
            except Exception as inner:  # that is what we look for
                found = translate_error(inner)
                if found.code in _ROW_ERRORS:
                    return found
    return MergekitError(ErrorCode.INVALID_ARGUMENTS, f"A VALUES row cannot be evaluated: {_spark_message(exc)}")
