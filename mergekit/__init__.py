"""mergekit: SQL MERGE, UPDATE and DELETE for storage that cannot change rows in place.

``from mergekit import Engine`` imports pyspark; the SPI (``mergekit.spi``) does not, so connectors and
executors stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mergekit.errors import ErrorCode, MergekitError

if TYPE_CHECKING:
    from mergekit.engine import Engine, MergeBuilder
    from mergekit.result import Result

__all__ = ["Engine", "ErrorCode", "MergeBuilder", "MergekitError", "Result", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("Engine", "MergeBuilder"):
        from mergekit import engine

        return getattr(engine, name)
    if name == "Result":
        from mergekit.result import Result

        return Result
    raise AttributeError(name)
