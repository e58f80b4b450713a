"""One test body for both databases of the sqldb connector: a :class:`Db` is an engine with one sqldb catalog over a
fresh PostgreSQL database or SQLite file, and a way to run SQL in that database directly (as psql or the sqlite3
shell would), to set up tables mergekit did not create and to check what a statement left behind."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from mergekit import Engine
from mergekit.execution.session import local_session
from tests.pg_server import fresh_database

BACKENDS = ("postgresql", "sqlite")


@attrs.define
class Db:
    kind: str
    uri: str  # the catalog's uri option
    catalog: str
    schema: str  # the database's default schema
    engines: list[Engine] = attrs.field(factory=list)

    @property
    def engine(self) -> Engine:
        if not self.engines:
            self.engines.append(self.new_engine())
        return self.engines[0]

    def new_engine(self, **options: Any) -> Engine:
        """An engine with a new connector for the database (as a new driver process would create)."""
        catalogs = {self.catalog: {"connector": "sqldb", "uri": self.uri, **options}}
        engine = Engine(spark=local_session(), catalogs=catalogs, default_catalog=self.catalog)
        self.engines.append(engine)
        return engine

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Run ``statement`` in the database itself (no parameters: write values as literals)."""
        if self.kind == "postgresql":
            import psycopg

            with psycopg.connect(self.uri, autocommit=True) as conn:
                cur = conn.execute(statement)  # type: ignore[arg-type]
                return list(cur.fetchall()) if cur.description else []
        with sqlite3.connect(self.uri[len("sqlite:///") :]) as conn:
            return conn.execute(statement).fetchall()

    def staging_tables(self) -> list[str]:
        if self.kind == "postgresql":
            query = "SELECT tablename FROM pg_tables WHERE tablename LIKE '\\_mk\\_stage\\_%'"
        else:
            query = "SELECT name FROM sqlite_master WHERE name LIKE '\\_mk\\_stage\\_%' ESCAPE '\\'"
        return sorted(r[0] for r in self.sql(query))

    def close(self) -> None:
        for engine in self.engines:
            engine.close()
        self.engines.clear()


@pytest.fixture(
    params=[pytest.param(kind, marks=[pytest.mark.pg] if kind == "postgresql" else []) for kind in BACKENDS]
)
def database(request: pytest.FixtureRequest, tmp_path: Path, spark: Any) -> Iterator[Db]:
    """A fresh database of each kind (PostgreSQL: on the test run's server), with engines on the shared session."""
    if request.param == "postgresql":
        server = request.getfixturevalue("pg_server")
        db = Db(kind="postgresql", uri=fresh_database(server), catalog="pg", schema="public")
    else:
        db = Db(kind="sqlite", uri=f"sqlite:///{tmp_path / 'shop.db'}", catalog="db", schema="main")
    yield db
    db.close()
