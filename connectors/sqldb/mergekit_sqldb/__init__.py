"""mergekit's sqldb connector: tables of a PostgreSQL or SQLite database, with MERGE, UPDATE and DELETE.

Spark's JDBC writer only appends or overwrites (SPARK-19335); this connector applies every statement in one
database transaction from rows the executors staged, so MERGE into PostgreSQL from any Spark data is atomic and
retry-safe. See docs/connectors/sqldb.md.

Catalog options: ``uri`` (``postgresql://user@host:port/db`` or ``sqlite:///path/to/file.db``), ``merge``
(default true; false switches the merge SPI off, so DELETE and UPDATE use the row-level SPI), ``default_schema``
(what the engine's ``default`` schema means: ``public`` / ``main``), ``split_rows``, ``batch_rows`` and
``busy_timeout`` (SQLite, seconds).
"""

from __future__ import annotations

from ._connector import SqlDbConnector, SqlDbConnectorFactory, SqlPageSourceProvider
from ._write import SqlFragment

__all__ = ["SqlDbConnector", "SqlDbConnectorFactory", "SqlFragment", "SqlPageSourceProvider"]
