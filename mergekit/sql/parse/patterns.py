"""SQL ``LIKE`` patterns outside a query (``SHOW TABLES LIKE 'pattern' [ESCAPE 'c']``)."""

from __future__ import annotations

import re

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["like_matches"]


def like_matches(value: str, pattern: str, escape: str | None = None) -> bool:
    """Whether ``value`` matches the LIKE ``pattern``: ``%`` any run of characters, ``_`` one character,
    ``escape`` (one character) makes the next character literal; case-sensitive, as in Trino."""
    if escape is not None and len(escape) != 1:
        raise MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, "Escape string must be a single character")
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= len(pattern) or pattern[i + 1] not in ("%", "_", escape):
                raise MergekitError(
                    ErrorCode.INVALID_FUNCTION_ARGUMENT, "Escape character must be followed by '%', '_' or itself"
                )
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(out), value, flags=re.S) is not None
