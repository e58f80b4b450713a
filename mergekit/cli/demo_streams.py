"""The demo's seed 001 section (Calcite's streaming SQL): the seed's Orders stream and its queries, with the
seed's results, then a streaming job (a MERGE per micro-batch, exactly once)."""

from __future__ import annotations

from typing import Any

__all__ = ["streams"]

# The seed's Orders (stream.md), one INSERT (one commit of the stream) per line of the seed's first listing.
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


def _t(hms: str) -> str:
    return f"2015-02-15 {hms}"


def streams(demo: Any) -> None:
    demo.output.heading("Seed 001: Calcite's streaming SQL (Orders, a stream)")
    demo.step("CREATE STREAM Orders (rowtime TIMESTAMP, productId INTEGER, orderId INTEGER, units INTEGER)")
    demo.step("CREATE TABLE Products (productId INTEGER, name VARCHAR, unitPrice DOUBLE)")
    demo.step(
        "INSERT INTO Products VALUES (10, 'Paint', 3.5), (20, 'Paper', 1.25), (30, 'Brush', 6.0), (40, 'Glue', 2.0)"
    )
    demo.note("Each INSERT is one commit (one offset) of the stream; rowtime is monotonic, enforced at commit.")
    for chunk in (ORDERS[:4], ORDERS[4:]):
        values = ", ".join(f"(TIMESTAMP '{_t(t)}', {p}, {o}, {u})" for t, p, o, u in chunk)
        demo.step(f"INSERT INTO Orders VALUES {values}", count=len(chunk))
    demo.step("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:00:00', 10, 13, 1)", error="CONSTRAINT_VIOLATION")
    demo.note(
        "SELECT STREAM runs bounded here: what a running query has emitted by now, plus what end of input closes."
    )
    demo.step(
        "SELECT STREAM * FROM Orders WHERE units > 3",
        expect=[(_t(t), str(p), str(o), str(u)) for t, p, o, u in ORDERS if u > 3],
    )
    demo.step("SELECT * FROM Orders", error="STREAM_NOT_ALLOWED")
    demo.note(
        "Tumbling windows: each hour's rows come out once the hour closes (the seed's units 7 for product 20 "
        "is an erratum: its data says 2)."
    )
    demo.step(
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS rowtime, productId, COUNT(*) AS c, SUM(units) AS units\n"
        "FROM Orders GROUP BY FLOOR(rowtime TO HOUR), productId",
        expect=[
            (_t("10:00:00"), "10", "1", "1"),
            (_t("10:00:00"), "20", "1", "2"),
            (_t("10:00:00"), "30", "2", "24"),
            (_t("11:00:00"), "10", "3", "11"),
            (_t("11:00:00"), "40", "1", "12"),
        ],
    )
    demo.step(
        "SELECT STREAM o.rowtime, o.productId, o.orderId, o.units, p.name, p.unitPrice\n"
        "FROM Orders AS o JOIN Products AS p ON o.productId = p.productId WHERE o.units > 10",
        expect=[(_t("10:18:07"), "30", "8", "20", "Brush", "6.0"), (_t("11:09:30"), "40", "11", "12", "Glue", "2.0")],
    )
    demo.note("Beyond the seed: a streaming job runs one MERGE per micro-batch, its batch id committed with its rows.")
    demo.step("CREATE TABLE product_units (productId INTEGER, units BIGINT, last_order TIMESTAMP)")
    demo.step(
        "CREATE STREAMING JOB units_by_product AS\n"
        "MERGE INTO product_units AS t\n"
        "USING (SELECT STREAM productId, SUM(units) AS units, MAX(rowtime) AS last_order FROM Orders\n"
        "       GROUP BY FLOOR(rowtime TO HOUR), productId) AS s\n"
        "ON t.productId = s.productId\n"
        "WHEN MATCHED THEN UPDATE SET units = t.units + s.units, last_order = s.last_order\n"
        "WHEN NOT MATCHED THEN INSERT VALUES (s.productId, s.units, s.last_order)",
        seed=False,
    )
    demo.step("RUN STREAMING JOB units_by_product", seed=False)
    demo.note("The 11:00 window is still open (a later order could fall in it): only 10:00's totals are merged.")
    demo.step(
        "SELECT * FROM product_units ORDER BY productId",
        expect=[("10", "1", _t("10:17:05")), ("20", "2", _t("10:18:05")), ("30", "24", _t("10:18:07"))],
        seed=False,
    )
    demo.step("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 12:01:00', 30, 13, 5)", count=1)
    demo.step("RUN STREAMING JOB units_by_product", seed=False)
    demo.step(
        "SELECT * FROM product_units ORDER BY productId",
        expect=[
            ("10", "12", _t("11:24:11")),
            ("20", "2", _t("10:18:05")),
            ("30", "24", _t("10:18:07")),
            ("40", "12", _t("11:09:30")),
        ],
        seed=False,
    )
    demo.step("DROP STREAMING JOB units_by_product")
