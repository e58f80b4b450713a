"""Integer values into a DECIMAL column (``INSERT INTO t VALUES ('Aaron', 5, ...)`` into ``DECIMAL(10,2)``, the
quickstart's first INSERT): the driver tier writes them as Spark's store assignment casts them, and a value with more
integer digits than the column holds fails with the same coded error on both tiers, writing nothing. Conversions
that round (a DECIMAL with more scale than the column) or a column that mixes integers and DECIMALs stay on Spark."""

from __future__ import annotations

import itertools

from mergekit import Engine
from mergekit.errors import MergekitError

TABLE = "CREATE TABLE {t} (id integer, amount double, price decimal(10, 2))"
CASES = [
    # (statement, the tier it takes with the driver tier on, or "error" on both)
    ("INSERT INTO {t} (id, price) VALUES (1, 5), (2, -7), (3, NULL), (4, 99999999), (5, 0)", "driver"),
    ("INSERT INTO {t} VALUES (6, 1, 12), (7, 2, 2 * 21)", "driver"),
    ("INSERT INTO {t} (id, price) VALUES (8, 3000000000)", "error"),  # a BIGINT
    ("INSERT INTO {t} (id, price) VALUES (9, 1), (10, 300000000)", "error"),  # the second row: nothing is written
    ("INSERT INTO {t} (id, price) VALUES (11, 5), (12, 2.5)", "spark"),  # Spark types the mixed column
    ("INSERT INTO {t} (id, price) VALUES (13, 1.005)", "spark"),  # three decimals into two: Spark rounds
]
_tables = itertools.count()


def _outcome(engine: Engine, sql: str, tier: str) -> tuple:
    name = f"d{next(_tables)}"
    engine.execute(TABLE.format(t=name))
    engine.execute(f"SET SESSION driver_tier = '{tier}'")
    try:
        result = engine.execute(sql.format(t=name))
    except MergekitError as err:
        return ("error", err.code, str(err), engine.execute(f"SELECT count(*) FROM {name}").rows())
    finally:
        engine.execute("RESET SESSION driver_tier")
    return (result.metrics["tier"], result.row_count, engine.execute(f"SELECT * FROM {name} ORDER BY id").rows())


def test_integers_into_a_decimal_column_agree_on_both_tiers(spark, tmp_path) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    try:
        outcomes = []
        for sql, tier in CASES:
            driver, spark_tier = _outcome(engine, sql, "auto"), _outcome(engine, sql, "off")
            assert driver[1:] == spark_tier[1:], sql
            assert driver[0] == tier and spark_tier[0] in (tier, "spark"), (sql, driver[0], spark_tier[0])
            if tier == "error":
                assert driver[3] == [(0,)], sql
            outcomes.append(driver)
        first, error = outcomes[0], outcomes[3]
        assert [str(row[2]) for row in first[2]] == ["5.00", "-7.00", "None", "99999999.00", "0.00"]
        assert str(error[2]) == (
            "[NUMERIC_VALUE_OUT_OF_RANGE] Decimal overflow: 300000000 does not fit in DECIMAL(10, 2)"
        ), error
    finally:
        engine.close()
