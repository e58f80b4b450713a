"""Stable error codes and the exception hierarchy of mergekit.

Every failure a user can see is a :class:`MergekitError` whose ``code`` is an :class:`ErrorCode` and whose
``str()`` begins with ``[CODE]``. The enum is append-only: a code's name and number never change, so tests and
users may rely on them (Trino's ``StandardErrorCode`` works the same way). Numbers from ``0x0100_0000`` up are
reserved for connectors that need codes of their own.

Errors raised inside Spark tasks (a merge sink, a page source, a ``raise_error`` in generated SQL) reach the
driver wrapped in Java and Python exceptions; :func:`find_error` recovers the original code and message from
that text, so the user sees the same error wherever it was raised.
"""

from __future__ import annotations

import enum
import re
from typing import Any

__all__ = [
    "ErrorCode",
    "ErrorType",
    "MergekitError",
    "NotSupportedError",
    "TableNotFoundError",
    "ColumnNotFoundError",
    "SqlSyntaxError",
    "TypeMismatchError",
    "ConstraintViolationError",
    "TransactionConflictError",
    "CONNECTOR_ERROR_CODE_BASE",
    "find_error",
]

CONNECTOR_ERROR_CODE_BASE = 0x0100_0000


class ErrorType(enum.Enum):
    USER_ERROR = "USER_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    INSUFFICIENT_RESOURCES = "INSUFFICIENT_RESOURCES"
    EXTERNAL = "EXTERNAL"


class ErrorCode(enum.Enum):
    """Append-only catalogue of error codes: ``(number, type)``. Never renumber or remove a member."""

    GENERIC_USER_ERROR = (0, ErrorType.USER_ERROR)
    SYNTAX_ERROR = (1, ErrorType.USER_ERROR)
    NOT_SUPPORTED = (13, ErrorType.USER_ERROR)
    INVALID_SESSION_PROPERTY = (14, ErrorType.USER_ERROR)
    CONSTRAINT_VIOLATION = (16, ErrorType.USER_ERROR)
    DIVISION_BY_ZERO = (8, ErrorType.USER_ERROR)
    INVALID_CAST_ARGUMENT = (9, ErrorType.USER_ERROR)
    NUMERIC_VALUE_OUT_OF_RANGE = (19, ErrorType.USER_ERROR)
    CATALOG_NOT_FOUND = (44, ErrorType.USER_ERROR)
    SCHEMA_NOT_FOUND = (45, ErrorType.USER_ERROR)
    TABLE_NOT_FOUND = (46, ErrorType.USER_ERROR)
    COLUMN_NOT_FOUND = (47, ErrorType.USER_ERROR)
    AMBIGUOUS_NAME = (50, ErrorType.USER_ERROR)
    DUPLICATE_COLUMN_NAME = (54, ErrorType.USER_ERROR)
    SCHEMA_ALREADY_EXISTS = (56, ErrorType.USER_ERROR)
    TABLE_ALREADY_EXISTS = (57, ErrorType.USER_ERROR)
    TYPE_MISMATCH = (58, ErrorType.USER_ERROR)
    INVALID_ARGUMENTS = (76, ErrorType.USER_ERROR)
    INVALID_TABLE_PROPERTY = (77, ErrorType.USER_ERROR)
    MERGE_TARGET_ROW_MULTIPLE_MATCHES = (119, ErrorType.USER_ERROR)
    PARTITION_NOT_FOUND = (200, ErrorType.USER_ERROR)
    PARTITION_OVERLAP = (201, ErrorType.USER_ERROR)
    STREAM_NOT_ALLOWED = (202, ErrorType.USER_ERROR)
    TRANSACTION_CONFLICT = (203, ErrorType.USER_ERROR)
    CONNECTOR_NOT_FOUND = (204, ErrorType.USER_ERROR)
    INVALID_PARTITION = (205, ErrorType.USER_ERROR)
    FUNCTION_NOT_FOUND = (206, ErrorType.USER_ERROR)
    INVALID_FUNCTION_ARGUMENT = (207, ErrorType.USER_ERROR)
    SUBQUERY_MULTIPLE_ROWS = (208, ErrorType.USER_ERROR)
    QUERY_TEXT_TOO_LARGE = (209, ErrorType.USER_ERROR)
    STATEMENT_TOO_DEEP = (210, ErrorType.USER_ERROR)
    INVALID_VIEW = (211, ErrorType.USER_ERROR)  # a stored view no longer analyses (Trino's INVALID_VIEW)
    VIEW_IS_RECURSIVE = (212, ErrorType.USER_ERROR)  # a view that reads itself, directly or through others
    STREAMING_JOB_NOT_FOUND = (220, ErrorType.USER_ERROR)  # RUN/START/STOP/DROP STREAMING JOB of an unknown job
    STREAMING_JOB_ALREADY_EXISTS = (221, ErrorType.USER_ERROR)  # CREATE STREAMING JOB of an existing name
    EXPRESSION_NOT_AGGREGATE = (73, ErrorType.USER_ERROR)  # a column outside aggregates and GROUP BY (Trino's 73)
    INVALID_LITERAL = (59, ErrorType.USER_ERROR)  # DATE '2024-02-30', TIMESTAMP '2024-13-45' (Trino's 59)
    INVALID_COLUMN_REFERENCE = (63, ErrorType.USER_ERROR)  # ORDER BY 5 of a one-column select list (Trino's 63)
    GENERIC_INTERNAL_ERROR = (65536, ErrorType.INTERNAL_ERROR)
    PLUGIN_LOAD_ERROR = (65537, ErrorType.INTERNAL_ERROR)
    WRITER_ERROR = (65538, ErrorType.INTERNAL_ERROR)
    EXECUTION_ERROR = (65539, ErrorType.INTERNAL_ERROR)
    CONFIGURATION_INVALID = (65540, ErrorType.INTERNAL_ERROR)  # the Spark session cannot run mergekit's tasks
    FUNCTION_IMPLEMENTATION_ERROR = (65549, ErrorType.INTERNAL_ERROR)  # a Python function of a user's DataFrame raised
    CONNECTOR_CONTRACT_ERROR = (65550, ErrorType.INTERNAL_ERROR)  # a connector broke the SPI's contract
    CONNECTOR_ERROR = (65551, ErrorType.INTERNAL_ERROR)  # a connector's method raised an exception of its own
    STORAGE_ERROR = (131072, ErrorType.EXTERNAL)

    @property
    def number(self) -> int:
        return int(self.value[0])

    @property
    def type(self) -> ErrorType:
        return ErrorType(self.value[1])


class MergekitError(Exception):
    """Base of every mergekit error. ``str(err)`` is ``"[CODE] message"``.

    ``MergekitError(code, message)`` returns the matching subclass when there is one, so
    ``except TableNotFoundError`` and ``except LookupError`` both catch a ``TABLE_NOT_FOUND``.
    """

    code: ErrorCode
    message: str

    def __new__(cls, code: ErrorCode, message: str, **details: Any) -> MergekitError:
        if cls is MergekitError:
            cls = _SUBCLASS_BY_CODE.get(code, MergekitError)
        return super().__new__(cls)

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return f"[{self.code.name}] {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.code.name, self.message, self.details))


def _rebuild(code_name: str, message: str, details: dict[str, Any]) -> MergekitError:
    return MergekitError(ErrorCode[code_name], message, **details)


class NotSupportedError(MergekitError, NotImplementedError):
    pass


class TableNotFoundError(MergekitError, LookupError):
    pass


class ColumnNotFoundError(MergekitError, LookupError):
    pass


class SqlSyntaxError(MergekitError, ValueError):
    """A statement that does not parse. ``line`` and ``column`` are 1-based (0 when unknown)."""

    @property
    def line(self) -> int:
        return int(self.details.get("line", 0))

    @property
    def column(self) -> int:
        return int(self.details.get("column", 0))


class TypeMismatchError(MergekitError, TypeError):
    pass


class ConstraintViolationError(MergekitError, ValueError):
    pass


class TransactionConflictError(MergekitError, RuntimeError):
    pass


_SUBCLASS_BY_CODE: dict[ErrorCode, type[MergekitError]] = {
    ErrorCode.NOT_SUPPORTED: NotSupportedError,
    ErrorCode.TABLE_NOT_FOUND: TableNotFoundError,
    ErrorCode.COLUMN_NOT_FOUND: ColumnNotFoundError,
    ErrorCode.SYNTAX_ERROR: SqlSyntaxError,
    ErrorCode.TYPE_MISMATCH: TypeMismatchError,
    ErrorCode.CONSTRAINT_VIOLATION: ConstraintViolationError,
    ErrorCode.TRANSACTION_CONFLICT: TransactionConflictError,
}

# Where a coded message begins: the text itself, a line, Spark's raise_error condition, a Python exception line
# (``mergekit.errors.MergekitError: [CODE] ...``). Not inside quoted SQL or a plan, which can hold the literal
# of a raise_error call that never ran (the SQL context of a cast error, an analysis error's plan).
_CODED = re.compile(
    r"(?:^|\n|USER_RAISED_EXCEPTION\] |\w(?:Error|Exception): )\[("
    + "|".join(c.name for c in ErrorCode)
    + r")\] ([^\n]*)"
)


def find_error(text: str) -> MergekitError | None:
    """The first ``[CODE] message`` in ``text`` (a Spark or Python traceback), rebuilt as an error."""
    match = _CODED.search(text)
    if match is None:
        return None
    message = match.group(2).rstrip()
    # Spark appends its own context after a raise_error message; keep only ours.
    message = re.split(r"\s+SQLSTATE: |\. SQLSTATE|\s+== SQL", message)[0]
    return MergekitError(ErrorCode[match.group(1)], message)


def errors_markdown() -> str:
    """docs/errors.md, generated from :class:`ErrorCode` (``python -m mergekit.errors > docs/errors.md``)."""
    lines = [
        "# Error codes",
        "",
        "Generated from `mergekit.errors.ErrorCode` by `python -m mergekit.errors`; a test keeps it in step.",
        "Every error is a `MergekitError` whose `str()` begins with `[CODE]`. Codes are append-only.",
        "",
        "| code | number | type |",
        "|---|---|---|",
    ]
    lines += [f"| `{c.name}` | {c.number} | {c.type.value} |" for c in ErrorCode]
    return "\n".join(lines) + "\n" + _ARITHMETIC_DOC


_ARITHMETIC_DOC = """
## Arithmetic and casts

Spark evaluates mergekit's SQL with ANSI semantics; its arithmetic, cast and range failures (on the driver, in a task,
or upstream of a merge sink) are reported with Trino's codes and words, without Spark's advice about `try_*`
functions or `spark.sql.ansi.enabled`, which does not apply to mergekit SQL:

| failure (Spark condition) | code | message |
|---|---|---|
| `x / 0`, `x % 0` (`DIVIDE_BY_ZERO`, `REMAINDER_BY_ZERO`, `INTERVAL_DIVIDED_BY_ZERO`) | `DIVISION_BY_ZERO` | `Division by zero` |
| TINYINT, SMALLINT overflow (`BINARY_ARITHMETIC_OVERFLOW`) | `NUMERIC_VALUE_OUT_OF_RANGE` | `tinyint addition overflow: 100 + 127` |
| INTEGER, BIGINT overflow (`ARITHMETIC_OVERFLOW`: Spark does not say the operands) | `NUMERIC_VALUE_OUT_OF_RANGE` | `Numeric overflow in addition` (`bigint multiplication overflow` when Spark names the type) |
| negation, `abs` overflow (`ARITHMETIC_OVERFLOW`) | `NUMERIC_VALUE_OUT_OF_RANGE` | `Numeric value out of range` |
| integer cast or assignment out of range (`CAST_OVERFLOW`, `CAST_OVERFLOW_IN_TABLE_INSERT`) | `NUMERIC_VALUE_OUT_OF_RANGE` | `Out of range for tinyint: 300` |
| DOUBLE NaN or infinity to an integer (`CAST_OVERFLOW`) | `INVALID_CAST_ARGUMENT` | `Cannot cast double NaN to integer`, `Unable to cast Infinity to bigint` |
| malformed text (`CAST_INVALID_INPUT`) | `INVALID_CAST_ARGUMENT` | `Cannot cast 'abc' to INT`, `Value cannot be cast to date: abc`, `Cannot cast VARCHAR 'abc' to DECIMAL(10, 2). Value is not a number.` |
| DECIMAL result or cast too wide (`NUMERIC_VALUE_OUT_OF_RANGE`, `NUMERIC_OUT_OF_SUPPORTED_RANGE`) | `NUMERIC_VALUE_OUT_OF_RANGE` | `Decimal overflow: 500000000.00 does not fit in DECIMAL(10, 2)` |
| date/time arithmetic out of range (`DATETIME_OVERFLOW`, `INTERVAL_ARITHMETIC_OVERFLOW`) | `NUMERIC_VALUE_OUT_OF_RANGE` | `Datetime overflow: ...` |
| invalid date/time fields, array index out of bounds (`DATETIME_FIELD_OUT_OF_BOUNDS`, `INVALID_ARRAY_INDEX`, ...) | `INVALID_FUNCTION_ARGUMENT` | Spark's sentence without its advice |
| a malformed record in a file that a user's DataFrame reads in `FAILFAST` mode (`MALFORMED_RECORD_IN_PARSING` inside `FAILED_READ_FILE`) | `INVALID_CAST_ARGUMENT` | `Malformed record [2,null] in file file:///data/in.csv: "abc" is not a number` (any other failure to read the file: `STORAGE_ERROR`, `Error reading file ...: ` and its cause) |

`CONFIGURATION_INVALID`: the Spark session cannot run mergekit's Python tasks (its Python workers' interpreter cannot
import mergekit); the message says what to set. See docs/quickstart.md, "Embedding into your own SparkSession". A
task that needs a module the workers cannot import (a connector's, registered from a script) fails with it too,
naming the module (docs/develop/spi-overview.md: the engine ships a catalog connector's own package by value).

## A user's DataFrame and its Python functions

`FUNCTION_IMPLEMENTATION_ERROR` (Trino's number): a Python function (a UDF) of a DataFrame you registered raised while
a statement read it; the message keeps the exception and where the function raised it: `A Python function failed:
ValueError: bad value 0 (in boom, /app/job.py line 21)`. `WRITER_ERROR` is a connector's merge sink failing in its
task (`Task failed: ...`), and `INVALID_COLUMN_REFERENCE` an `ORDER BY` or `GROUP BY` position outside the select list
(`ORDER BY position 5 is not in select list`).

## A connector's own failures

`CONNECTOR_ERROR`: a connector's method raised an exception of its own (not a mergekit error) while a statement
ran it, on the driver or in a task; the message names the method, the exception and where it was raised: `The
connector's delete_rows failed: ValueError: no such id 7 (in delete_rows, /app/store.py line 40)`.
`CONNECTOR_CONTRACT_ERROR`: the connector broke the SPI's contract, and the message says which part: it implements
`begin_delete` but not `finish_delete`, a page of its `UpdatablePageSource` lacks the row id column the engine asked
for, `create_page_source` returned a plain page source for a row-level statement. Both are for the connector's
author; a statement that fails with either changed nothing.

## Values Python cannot hold

Spark and Arrow hold dates and timestamps beyond years 1 to 9999 (`date_add('day', 1, DATE '9999-12-31')`); Python's
`datetime` does not. `Result.rows()` and iterating a result refuse such a value, as Trino's and PostgreSQL's Python
clients do, rather than return something else: `NUMERIC_VALUE_OUT_OF_RANGE`, `Column d holds DATE 10000-01-01,
beyond what Python's datetime holds (years 1 to 9999): Result.to_arrow() holds it, or CAST(d AS VARCHAR) in the
query`. `Result.to_arrow()` (and so `to_pandas()` with pandas' own limits) returns every value, and the command line
shows them as text.
"""


if __name__ == "__main__":
    print(errors_markdown(), end="")
