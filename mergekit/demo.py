"""The accounts MERGE of Trino's "Supporting MERGE" page (seed 002), end to end.

``make demo`` / ``mergekit demo`` run it together with the other seeds' examples (mergekit/seeds_demo.py).

Runs in a fresh local warehouse (a temporary directory unless ``--warehouse`` is given) and prints every
statement, its result and the tables before and after.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

ACCOUNTS_SETUP = [
    "CREATE TABLE accounts (customer VARCHAR, purchases DECIMAL(10,2), address VARCHAR)",
    "INSERT INTO accounts (customer, purchases, address) VALUES "
    "('Aaron', 5.00, 'Antioch'), ('Bill', 7.00, 'Buena'), ('Carol', 3.00, 'Cambridge'), "
    "('Dave', 11.00, 'Devon'), ('Joe Shmoe', 20.00, 'Jacksonville')",
    "CREATE TABLE monthly_accounts_update (customer VARCHAR, purchases DECIMAL(10,2), address VARCHAR)",
    "INSERT INTO monthly_accounts_update (customer, purchases, address) VALUES "
    "('Aaron', 6.00, 'Arches'), ('Carol', 9.00, 'Berkeley'), ('Dave', 11.00, 'Darbyshire'), "
    "('Ed', 7.00, 'Etherville'), ('Joe Shmoe', 1.00, 'Jacksonville')",
]

ACCOUNTS_MERGE = """MERGE INTO accounts t USING monthly_accounts_update s
  ON (t.customer = s.customer)
  WHEN MATCHED AND s.address = 'Berkeley' THEN
    DELETE
  WHEN MATCHED AND s.customer = 'Joe Shmoe' THEN
    UPDATE SET purchases = t.purchases + 100.0
  WHEN MATCHED THEN
    UPDATE SET purchases = s.purchases + t.purchases, address = s.address
  WHEN NOT MATCHED THEN
    INSERT (customer, purchases, address)
    VALUES (s.customer, s.purchases, s.address)"""


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table (the CLI renders richer ones)."""
    cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    out = [line, "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |", line]
    out += ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |" for r in cells]
    out.append(line)
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def run(engine: Any, sql: str, *, echo: bool = True) -> Any:
    if echo:
        print(f"\nmergekit> {sql}")
    started = time.perf_counter()
    result = engine.execute(sql)
    elapsed = time.perf_counter() - started
    if result.columns == ["Query Plan"]:
        print(result.rows()[0][0])
    elif result.table is not None:
        print(format_table(result.columns, result.rows()))
    elif result.row_count is not None:
        print(f"{result.statement}: {result.row_count} rows ({elapsed:.2f}s)")
        print(
            f"metrics: inserted={result.metrics['inserted']} updated={result.metrics['updated']} "
            f"deleted={result.metrics['deleted']} per WHEN clause={result.metrics['per_case']}"
        )
    else:
        print(f"{result.statement}: OK")
    return result


def accounts_demo(engine: Any) -> None:
    print("== Seed 002: Trino's accounts MERGE ==")
    for sql in ACCOUNTS_SETUP:
        run(engine, sql)
    print("\nBefore:")
    run(engine, "SELECT * FROM accounts ORDER BY customer", echo=False)
    run(engine, "EXPLAIN " + ACCOUNTS_MERGE)
    run(engine, ACCOUNTS_MERGE)
    print("\nAfter (Carol deleted: Berkeley; Joe Shmoe +100; Aaron and Dave summed and moved; Ed inserted):")
    run(engine, "SELECT * FROM accounts ORDER BY customer", echo=False)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mergekit.demo``: the same as ``mergekit demo`` (all the seeds, mergekit/seeds_demo.py)."""
    from mergekit.cli import main as cli

    return cli(["demo", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
