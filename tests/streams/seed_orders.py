"""Seed 001's example data (Calcite's stream.md): the Orders stream, shared by the stream tests."""

from __future__ import annotations

import datetime

from mergekit import Engine
from mergekit.cli.demo_streams import ORDERS as DEMO_ORDERS
from tests.helpers import journal_engine

# (rowtime, productId, orderId, units), the seed's first listing: the demo's (make demo shows the same data)
ORDERS = DEMO_ORDERS

CREATE_ORDERS = "CREATE STREAM Orders (rowtime TIMESTAMP, productId INTEGER, orderId INTEGER, units INTEGER)"


def ts(hms: str) -> datetime.datetime:
    """A time of the seed's day, 2015-02-15."""
    return datetime.datetime.fromisoformat(f"2015-02-15 {hms}")


def insert_orders(engine: Engine, rows: list[tuple[str, int, int, int]], stream: str = "Orders") -> None:
    """One INSERT (one commit of the stream) of ``rows``."""
    values = ", ".join(f"(TIMESTAMP '2015-02-15 {t}', {p}, {o}, {u})" for t, p, o, u in rows)
    engine.execute(f"INSERT INTO {stream} VALUES {values}")


def orders_lake(spark, warehouse: str, *, products: bool = False) -> Engine:
    """A journal catalog holding the seed's Orders, in three commits; with ``products``, also the table
    ``Products`` (productId, name) of the four products the orders name."""
    engine = journal_engine(spark, warehouse)
    engine.execute(CREATE_ORDERS)
    for chunk in (ORDERS[:3], ORDERS[3:6], ORDERS[6:]):
        insert_orders(engine, chunk)
    if products:
        engine.execute("CREATE TABLE Products (productId INTEGER, name VARCHAR)")
        engine.execute("INSERT INTO Products VALUES (10, 'paint'), (20, 'paper'), (30, 'brush'), (40, 'glue')")
    return engine
