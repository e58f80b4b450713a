"""Session properties (Trino's ``SET SESSION``): what a user may set for the statements after it, with defaults.

A property is named, documented and validated here; the engine keeps the values (``Engine`` per instance, set by
``SET SESSION name = 'value'``, cleared by ``RESET SESSION name``, listed by ``SHOW SESSION``). An unknown name or
an invalid value is ``INVALID_SESSION_PROPERTY``, and nothing is set.

``merge_duplicate_source``: what a MERGE does when several source rows match one target row. ``none`` (the
default, Trino's and PostgreSQL's rule): the statement fails with ``MERGE_TARGET_ROW_MULTIPLE_MATCHES``. ``first by
<order>`` / ``last by <order>``: of the source rows matching one target row, only the first (last) in that order
(an ORDER BY list over the source's columns, e.g. ``last by s.updated_at``) meets the WHEN clauses; the others
are dropped before them (rows that match no target row are not affected). Ties are broken by the source's row
order as Spark reads it, so give a total order when it matters.

``driver_tier``: ``auto`` (the default) lets a statement the driver evaluates exactly as Spark would (an INSERT of
VALUES rows of constants, a MERGE of such VALUES into a table with an index, a small MERGE by index lookups:
docs/architecture.md "The driver tier") run in the engine's own process without a Spark job; ``off`` runs every
statement on Spark (to compare the two, or to rule the driver tier out). The environment variable
``MERGEKIT_DRIVER_TIER`` (``auto`` or ``off``) sets its default for every engine of a process (``make conformance
TIER=off`` runs the conformance cases so); ``SET SESSION`` still overrides it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql import Expression, parse_order_by

__all__ = [
    "SESSION_PROPERTIES",
    "SessionProperty",
    "SourceDedup",
    "source_dedup",
    "check_session_property",
    "driver_tier_enabled",
]


@attrs.frozen(kw_only=True)
class SourceDedup:
    """Keep one source row per matched target row: the first by ``order_by`` ((expression, descending, nulls first)
    triples; Trino sorts NULLs last, so ``last by x`` is the first by ``x DESC NULLS FIRST``)."""

    order_by: tuple[tuple[Expression, bool, bool], ...]

    def describe(self) -> str:
        return ", ".join(
            f"{e.sql}{' DESC' if desc else ''}{' NULLS FIRST' if nulls_first else ''}"
            for e, desc, nulls_first in self.order_by
        )


def _parse_dedup(value: str) -> SourceDedup | None:
    text = value.strip()
    if text.lower() == "none":
        return None
    words = text.split(None, 2)
    if len(words) < 3 or words[0].lower() not in ("first", "last") or words[1].lower() != "by":
        raise MergekitError(
            ErrorCode.INVALID_SESSION_PROPERTY,
            f"merge_duplicate_source must be 'none', 'first by <order>' or 'last by <order>', got '{value}'",
        )
    last = words[0].lower() == "last"
    return SourceDedup(order_by=tuple((e, desc != last, last) for e, desc in parse_order_by(words[2])))


def _parse_driver_tier(value: str) -> bool:
    text = value.strip().lower()
    if text not in ("auto", "off"):
        raise MergekitError(ErrorCode.INVALID_SESSION_PROPERTY, f"driver_tier must be 'auto' or 'off', got '{value}'")
    return text == "auto"


@attrs.frozen(kw_only=True)
class SessionProperty:
    name: str
    default: str
    description: str
    parse: Callable[[str], Any]
    env: str | None = None  # an environment variable that, when set, replaces ``default`` for the whole process

    def default_value(self) -> str:
        """The value a session that did not set the property has: ``env``'s when set (validated), else ``default``."""
        value = os.environ.get(self.env) if self.env else None
        if value is None or not value.strip():
            return self.default
        try:
            self.parse(value)
        except MergekitError as err:
            raise MergekitError(err.code, f"{err.message} (from the environment variable {self.env})") from None
        return value.strip()


SESSION_PROPERTIES: Mapping[str, SessionProperty] = {
    p.name: p
    for p in (
        SessionProperty(
            name="merge_duplicate_source",
            default="none",
            description="several source rows matching one target row: 'none' (fail), 'first by <order>' or "
            "'last by <order>' (keep that one source row)",
            parse=_parse_dedup,
        ),
        SessionProperty(
            name="driver_tier",
            default="auto",
            description="'auto': small statements the driver evaluates exactly as Spark would run on the driver, "
            "without a Spark job; 'off': every statement runs on Spark",
            parse=_parse_driver_tier,
            env="MERGEKIT_DRIVER_TIER",
        ),
    )
}


def driver_tier_enabled(properties: Mapping[str, str]) -> bool:
    """Whether the session lets the driver tier run statements (``SET SESSION driver_tier``)."""
    prop = SESSION_PROPERTIES["driver_tier"]
    value = properties.get(prop.name)
    return bool(prop.parse(value if value is not None else prop.default_value()))


def check_session_property(name: str, value: str | None = None) -> None:
    """Raises INVALID_SESSION_PROPERTY for an unknown property or an invalid value."""
    prop = SESSION_PROPERTIES.get(name)
    if prop is None:
        raise MergekitError(
            ErrorCode.INVALID_SESSION_PROPERTY,
            f"Session property '{name}' does not exist. Valid properties: {', '.join(sorted(SESSION_PROPERTIES))}",
        )
    if value is not None:
        prop.parse(value)


def source_dedup(properties: Mapping[str, str]) -> SourceDedup | None:
    """The duplicate-source policy of a statement run with ``properties``."""
    value = properties.get("merge_duplicate_source")
    return _parse_dedup(value) if value is not None else None
