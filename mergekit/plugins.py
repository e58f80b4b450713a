"""Connector discovery: the ``mergekit.connectors`` entry-point group, loaded lazily (ibis-style), plus
:func:`register` for tests and embedders."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import Connector, ConnectorContext, ConnectorFactory
from mergekit.spi import create_connector as _create_with_context

__all__ = [
    "GROUP",
    "register",
    "unregister",
    "get_factory",
    "available",
    "connector_context",
    "create_connector",
]

GROUP = "mergekit.connectors"
_lock = threading.Lock()
_registered: dict[str, ConnectorFactory] = {}


def register(factory: ConnectorFactory, *, name: str | None = None, replace: bool = False) -> None:
    """Register a factory under ``name`` (default: ``factory.name``), as an entry point would. Its connectors'
    classes reach Spark's workers by value when no installed distribution provides their package
    (``mergekit.execution.session.ship_by_value``, called for every catalog's connector)."""
    if not isinstance(factory, ConnectorFactory):
        raise MergekitError(ErrorCode.PLUGIN_LOAD_ERROR, f"{factory!r} is not a mergekit.spi.ConnectorFactory instance")
    key = name or factory.name
    with _lock:
        if key in _registered and not replace:
            raise MergekitError(ErrorCode.PLUGIN_LOAD_ERROR, f"Connector '{key}' is already registered")
        _registered[key] = factory


def unregister(name: str) -> None:
    with _lock:
        _registered.pop(name, None)


def _entry_points() -> dict[str, list[EntryPoint]]:
    found: dict[str, list[EntryPoint]] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, []).append(ep)
    return found


def available() -> dict[str, str]:
    """Connector name -> where it comes from (distribution or 'registered')."""
    out = {
        name: ", ".join(sorted({(ep.dist.name if ep.dist else ep.value) for ep in eps}))
        for name, eps in _entry_points().items()
    }
    with _lock:
        out.update({name: "registered" for name in _registered})
    return dict(sorted(out.items()))


def get_factory(name: str) -> ConnectorFactory:
    with _lock:
        if name in _registered:
            return _registered[name]
    eps = _entry_points().get(name, [])
    if not eps:
        raise MergekitError(
            ErrorCode.CONNECTOR_NOT_FOUND,
            f"Connector '{name}' is not installed (entry-point group '{GROUP}'); installed: "
            f"{', '.join(available()) or 'none'}",
        )
    values = {ep.value for ep in eps}
    if len(values) > 1:
        dists = ", ".join(sorted(ep.dist.name if ep.dist else ep.value for ep in eps))
        raise MergekitError(
            ErrorCode.PLUGIN_LOAD_ERROR, f"Connector '{name}' is provided by several distributions: {dists}"
        )
    ep = eps[0]
    dist = ep.dist.name if ep.dist else "?"
    try:
        obj = ep.load()
    except Exception as exc:
        raise MergekitError(
            ErrorCode.PLUGIN_LOAD_ERROR, f"Connector '{name}' from distribution '{dist}' failed to load: {exc}"
        ) from exc
    factory = obj() if isinstance(obj, type) else obj
    if not isinstance(factory, ConnectorFactory):
        raise MergekitError(
            ErrorCode.PLUGIN_LOAD_ERROR,
            f"Entry point '{name}' of distribution '{dist}' is not a ConnectorFactory: {ep.value}",
        )
    return factory


def connector_context() -> ConnectorContext:
    """The engine services every connector factory receives (``ConnectorFactory.create(context=...)``): connector
    factories are looked up exactly as catalogs look them up (:func:`get_factory`: registered ones, then entry
    points), so a connector built over another one never loads plugins itself."""
    return ConnectorContext(connector_factories=get_factory)


def create_connector(name: str, *, catalog_name: str, config: Mapping[str, Any]) -> Connector:
    """The connector of a catalog: the factory called ``name``, created with :func:`connector_context` (a factory
    written before ``ConnectorContext`` existed is called without it). What ``Engine.add_catalog`` does for a
    catalog given as a configuration, for tools that need a connector without an engine."""
    return _create_with_context(
        get_factory(name), catalog_name=catalog_name, config=config, context=connector_context()
    )
