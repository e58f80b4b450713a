"""pyspark's modules, imported when a statement first uses one (issue 29, item 2; docs/architecture.md, "The
driver tier").

``import mergekit`` and the statements the driver tier runs import no pyspark: it and py4j are about 0.15 s of a
new process's start, which a command-line ``SELECT`` or one small MERGE from a script would otherwise pay for
nothing. The Spark tier's modules therefore name pyspark's modules through the stand-ins here
(``from mergekit.execution.lazy_pyspark import F, T``, then ``T.StringType()`` and ``F.col("x")`` as with the
modules themselves); the first attribute read imports the module. A class a module needs when it is defined
(a subclass of pyspark's ``DataSource``) stays a top-level import of a module only the Spark tier imports.
Annotations name pyspark's classes under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["F", "T", "cloudpickle", "is_dataframe", "pandas_types", "sql"]


class LazyModule:
    """A module imported when one of its attributes is first read."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute in LazyModule.__slots__:
            raise AttributeError(attribute)  # (pickle's and copy's probes, and slots not set yet, import nothing)
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __reduce__(self) -> tuple[Any, ...]:
        # a function shipped to Spark's workers by value takes the stand-in along: it arrives as a new one
        return (LazyModule, (self._name,))

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (imported)' if self._module is not None else ''}>"


def is_dataframe(value: object) -> bool:
    """Whether ``value`` is a Spark DataFrame, without importing pyspark (none exists before it is imported)."""
    module = sys.modules.get("pyspark.sql")
    return module is not None and isinstance(value, module.DataFrame)


if TYPE_CHECKING:
    from pyspark import cloudpickle, sql
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.pandas import types as pandas_types
else:
    T = LazyModule("pyspark.sql.types")
    F = LazyModule("pyspark.sql.functions")
    sql = LazyModule("pyspark.sql")  # DataFrame, SparkSession, Window for isinstance and calls
    cloudpickle = LazyModule("pyspark.cloudpickle")
    pandas_types = LazyModule("pyspark.sql.pandas.types")  # to_arrow_type, from_arrow_type, to_arrow_schema
