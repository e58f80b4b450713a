"""Seed 001's example data (Calcite's stream.md): the Orders stream, shared by the stream tests."""

from __future__ import annotations

import datetime

from mergekit import Engine

# (rowtime, productId, orderId, units), the seed's first listing
ORDERS = [
    ("10:17:00", 30, 5, 4),
    ("10:17:05", 10, 6, 1),
    ("10:18:05", 20, 7, 2),
    ("10:18:07", 30, 8, 20),
    ("11:02:00", 10, 9, 6),
    ("11:04:00", 10, 10, 1),
    ("11:09:30", 40, 11, 12),
    ("11:24:11", 10, 12, 4),
]

CREATE_ORDERS = "CREATE STREAM Orders (rowtime TIMESTAMP, productId INTEGER, orderId INTEGER, units INTEGER)"


def ts(hms: str) -> datetime.datetime:
    """A time of the seed's day, 2015-02-15."""
    return datetime.datetime.fromisoformat(f"2015-02-15 {hms}")


def insert_orders(engine: Engine, rows: list[tuple[str, int, int, int]], stream: str = "Orders") -> None:
    """One INSERT (one commit of the stream) of ``rows``."""
    values = ", ".join(f"(TIMESTAMP '2015-02-15 {t}', {p}, {o}, {u})" for t, p, o, u in rows)
    engine.execute(f"INSERT INTO {stream} VALUES {values}")


def orders_lake(spark, warehouse: str) -> Engine:
    """A journal catalog holding the seed's Orders, in three commits."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": warehouse}})
    engine.execute(CREATE_ORDERS)
    for chunk in (ORDERS[:3], ORDERS[3:6], ORDERS[6:]):
        insert_orders(engine, chunk)
    return engine
