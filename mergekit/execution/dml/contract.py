"""What a connector implements of the write SPIs, checked before a statement begins, and its failures named as an
author can act on them.

A connector writes through the merge SPI (``begin_merge``, merge sinks, ``finish_merge``; a row change paradigm and
merge row id for MERGE, UPDATE and DELETE), through the row-level SPI (seed 003: ``get_*_row_id_column_handle``,
``begin_*``, ``finish_*`` and an ``UpdatablePageSource``), or both. A statement the connector cannot run fails here,
at planning (``EXPLAIN`` too), with ``NOT_SUPPORTED`` saying what the statement needs; a connector that implements
part of one path (``begin_delete`` without ``finish_delete``) fails with ``CONNECTOR_CONTRACT_ERROR`` naming the
missing method, before anything begins. While the statement runs, :func:`connector_call` turns a connector method's
own exception (not a :class:`~mergekit.errors.MergekitError`) into ``CONNECTOR_ERROR`` naming the method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    INSERT_NEEDS_MERGE_SINK,
    MERGE_NEEDS_MERGE_SPI,
    UPDATE_NEEDS_ROW_LEVEL_UPDATE,
    ConnectorMetadata,
    ConnectorSession,
    ConnectorTableHandle,
)

__all__ = [
    "ROW_LEVEL_METHODS",
    "check_row_level_methods",
    "connector_call",
    "merge_spi_supported",
    "overrides",
    "refuse_insert",
    "refuse_without_spi",
    "row_level_supported",
]

T = TypeVar("T")

#: The methods a row-level DELETE / UPDATE needs, in the order the engine calls them (``abort_*`` has a default).
ROW_LEVEL_METHODS: dict[str, tuple[str, ...]] = {
    "DELETE": ("get_delete_row_id_column_handle", "begin_delete", "finish_delete"),
    "UPDATE": ("get_update_row_id_column_handle", "begin_update", "finish_update"),
}


def overrides(meta: Any, method: str) -> bool:
    """Whether the connector's metadata class overrides ``method`` of :class:`~mergekit.spi.ConnectorMetadata`."""
    return getattr(type(meta), method, None) is not getattr(ConnectorMetadata, method)


def _not_supported(call: Any) -> bool:
    try:
        call()
    except MergekitError as exc:
        if exc.code is ErrorCode.NOT_SUPPORTED:
            return True
        raise
    return False


def merge_spi_supported(meta: Any, session: ConnectorSession, handle: ConnectorTableHandle) -> bool:
    """Whether the connector changes rows through the merge SPI (row id handle and paradigm)."""
    return not (
        _not_supported(lambda: meta.get_merge_row_id_column_handle(session=session, table_handle=handle))
        or _not_supported(lambda: meta.get_row_change_paradigm(session=session, table_handle=handle))
    )


def row_level_supported(meta: Any, session: ConnectorSession, handle: ConnectorTableHandle, kind: str) -> bool:
    """Whether the connector implements the row-level ``DELETE`` (``kind`` "DELETE") or ``UPDATE`` SPI: its row id
    handle method does not raise NOT_SUPPORTED (asked with no updated columns for UPDATE: only the override
    matters; the real handle is asked for with the statement's columns)."""
    if kind == "DELETE":
        return not _not_supported(lambda: meta.get_delete_row_id_column_handle(session=session, table_handle=handle))
    return overrides(meta, "get_update_row_id_column_handle")


def check_row_level_methods(meta: Any, kind: str) -> None:
    """``CONNECTOR_CONTRACT_ERROR`` when the connector implements some of the row-level ``kind`` methods but not
    all of them (``begin_delete`` without ``finish_delete``): the statement would begin and could never commit."""
    methods = ROW_LEVEL_METHODS[kind]
    missing = [m for m in methods if not overrides(meta, m)]
    if missing and len(missing) < len(methods):
        have = [m for m in methods if m not in missing]
        raise MergekitError(
            ErrorCode.CONNECTOR_CONTRACT_ERROR,
            f"The connector implements {_and(have)} but not {_and(missing)}: a row-level {kind} needs "
            f"{_and(list(methods))} (docs/develop/row-level-spi.md)",
        )


def refuse_without_spi(statement: str, row_level: dict[str, bool]) -> MergekitError:
    """The ``NOT_SUPPORTED`` error of ``statement`` (MERGE, UPDATE) on a connector that offers the row-level
    DELETE (``row_level``: which of DELETE and UPDATE it offers) but not the merge SPI's row id and paradigm, when
    the row-level SPI cannot run it: what the statement needs."""
    if statement == "UPDATE" and row_level.get("DELETE"):
        return MergekitError(ErrorCode.NOT_SUPPORTED, UPDATE_NEEDS_ROW_LEVEL_UPDATE)
    return MergekitError(ErrorCode.NOT_SUPPORTED, MERGE_NEEDS_MERGE_SPI)


def refuse_insert(row_level: dict[str, bool]) -> None:
    """``NOT_SUPPORTED`` for an INSERT into a connector without ``begin_merge`` that offers the row-level SPI
    (``row_level``: which of DELETE and UPDATE): an author who expected it to insert. A connector with no write SPI
    at all keeps its own error (``begin_merge``'s default)."""
    if any(row_level.values()):
        raise MergekitError(ErrorCode.NOT_SUPPORTED, INSERT_NEEDS_MERGE_SINK)


def connector_call(method: str, call: Callable[[], T]) -> T:
    """``call()``, a call of the connector's ``method``; an exception of the connector's own (not a coded error)
    becomes ``CONNECTOR_ERROR`` naming the method and the exception."""
    try:
        return call()
    except MergekitError:
        raise
    except Exception as exc:
        raise MergekitError(ErrorCode.CONNECTOR_ERROR, connector_failure(method, exc)) from exc


def connector_failure(method: str, exc: BaseException) -> str:
    """The words of :func:`connector_call`'s error: the method, the exception and where the connector raised it."""
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        where = f" (in {code.co_name}, {code.co_filename} line {tb.tb_lineno})"
    text = str(exc)
    return f"The connector's {method} failed: {type(exc).__name__}{': ' + text if text else ''}{where}"


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
