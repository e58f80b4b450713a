"""The row-level SPI against the merge SPI over the same storage (issue 28): a seeded set of DELETE and UPDATE
statements, each run on two catalogs that hold the same rows in the same storage (tests/rowlevel/rowlevel_connector):
one with only the row-level SPI (begin_delete / UpdatablePageSource / finish_delete, WHERE and SET evaluated in
Arrow), one that adds the merge SPI (a merge row id, DELETE_ROW_AND_INSERT_ROW, merge sinks: the Spark plan). Each
statement must give the same row count and the same rows, or the same error, on both.

MERGEKIT_SPI_DIFF_N (default 200) statements from seeds MERGEKIT_SPI_DIFF_SEED (default 28) to +3. Comparisons
of DOUBLE values are left out: the row-level evaluator refuses them (Spark orders NaN above every number), and a
statement one SPI refuses and the other runs would be a disagreement."""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle

from mergekit import Engine
from mergekit.errors import MergekitError
from mergekit.spi import (
    ColumnHandle,
    ConnectorMergeSink,
    ConnectorMergeTableHandle,
    ConnectorPageSinkProvider,
    ConnectorSession,
    ConnectorTableHandle,
    RowChangeParadigm,
    create_delete_and_insert_pages,
)

from .rowlevel_connector import ROW_ID, RLMetadata, RLTableHandle, RowLevelConnector, _load_meta, _read, _write

cloudpickle.register_pickle_by_value(sys.modules[__name__])

N = int(os.environ.get("MERGEKIT_SPI_DIFF_N") or 200)
SEED = int(os.environ.get("MERGEKIT_SPI_DIFF_SEED") or 28)

CREATE = "CREATE TABLE t (id BIGINT, k INTEGER, name VARCHAR, price DOUBLE, amount DECIMAL(10,2), d DATE, flag BOOLEAN)"


class MergeSpiMetadata(RLMetadata):
    """The same storage with the merge SPI too (which then wins): the row id ``$rid``, delete and insert rows."""

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        return ColumnHandle(name=ROW_ID, type=pa.int64())

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        return RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        handle = merge_handle.table_handle
        assert isinstance(handle, RLTableHandle)
        deleted: set[int] = set()
        inserts = []
        for kind, path in fragments:
            with pa.memory_map(path) as source:
                rows = pa.ipc.open_file(source).read_all()
            if kind == "delete":
                deleted.update(rows.column(0).to_pylist())
            else:
                inserts.append(path)
        if deleted:
            table = _read(handle.directory)
            keep = pa.array([rid not in deleted for rid in table.column(ROW_ID).to_pylist()], pa.bool_())
            _write(handle.directory, table.filter(keep))
        super().finish_merge(session=session, merge_handle=merge_handle, fragments=inserts)


class MergeSink(ConnectorMergeSink):
    def __init__(self, handle: RLTableHandle, data_columns: int) -> None:
        self._handle = handle
        self._n = data_columns
        self._inserts: list[pa.RecordBatch] = []
        self._deletes: list[pa.Array] = []

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        split = create_delete_and_insert_pages(page.select(list(range(self._n + 3))), self._n)
        if split.deletions is not None:
            self._deletes.append(split.deletions.column(split.deletions.num_columns - 1))  # data columns, $row_id
        if split.insertions is not None:
            self._inserts.append(split.insertions)

    def _stage(self, table: pa.Table) -> str:
        path = os.path.join(self._handle.staging, f"{uuid.uuid4().hex}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return path

    def finish(self) -> Sequence[Any]:
        out = []
        if self._deletes:
            out.append(("delete", self._stage(pa.table({"rid": pa.concat_arrays(self._deletes)}))))
        if self._inserts:
            out.append(("insert", self._stage(pa.Table.from_batches(self._inserts))))
        return out


class MergeSinkProvider(ConnectorPageSinkProvider):
    def create_merge_sink(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, sink_id: int
    ) -> ConnectorMergeSink:
        handle = merge_handle.table_handle
        assert isinstance(handle, RLTableHandle)
        return MergeSink(handle, len(_load_meta(handle.directory)["metadata"].columns))


class MergeSpiConnector(RowLevelConnector):
    def __init__(self, root: str) -> None:
        super().__init__(root)
        self._metadata = MergeSpiMetadata(root)

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return MergeSinkProvider()


# ---- the statements ---------------------------------------------------------------------------------------

DATES = ["DATE '2024-02-29'", "DATE '2024-03-01'", "DATE '2023-12-31'"]
DATE_VALUES = ["DATE '2024-01-01'", "NULL", "d - 1", "'2024-03-01'"]  # a string: TYPE_MISMATCH on both, as in Trino


def _rows(rng: random.Random) -> str:
    values = []
    for i in range(1, 13):

        def maybe(text: str) -> str:
            return "NULL" if rng.random() < 0.15 else text

        values.append(
            f"({i}, {maybe(str(rng.randint(-3, 9)))}, {maybe(repr(rng.choice(['a', 'b', 'ab', 'ba', 'c', ''])))}, "
            f"{maybe(rng.choice(['0.5', '2.25', '-1.5', '0.0', '7.0']))}, "
            f"{maybe(rng.choice(['10.25', '3.10', '-4.65', '0.00', '99.99']))}, "
            f"{maybe(rng.choice(DATES))}, "
            f"{maybe(rng.choice(['TRUE', 'FALSE']))})"
        )
    return "INSERT INTO t VALUES " + ", ".join(values)


def _condition(rng: random.Random, depth: int = 0) -> str:
    if depth < 2 and rng.random() < 0.3:
        op = rng.choice(["AND", "OR"])
        return f"({_condition(rng, depth + 1)} {op} {_condition(rng, depth + 1)})"
    if depth < 2 and rng.random() < 0.1:
        return f"NOT {_condition(rng, depth + 1)}"
    n = rng.randint(-3, 9)
    return rng.choice(
        [
            f"k {rng.choice(['=', '<>', '<', '<=', '>', '>='])} {n}",
            f"id {rng.choice(['<', '>', '='])} {rng.randint(1, 12)}",
            f"k BETWEEN {n} AND {n + rng.randint(0, 4)}",
            f"NOT k BETWEEN {n} AND {n + 3}",
            f"k IN ({n}, {n + 2}{', NULL' if rng.random() < 0.3 else ''})",
            f"k IS {'NOT ' if rng.random() < 0.5 else ''}NULL",
            f"k IS {'NOT ' if rng.random() < 0.5 else ''}DISTINCT FROM {rng.choice([str(n), 'NULL'])}",
            f"name {rng.choice(['=', '<>', '<'])} {repr(rng.choice(['a', 'b', 'ab']))}",
            f"name LIKE {repr(rng.choice(['a%', '%b', '_', '%']))}",
            f"name IS {'NOT ' if rng.random() < 0.5 else ''}DISTINCT FROM {repr(rng.choice(['a', 'c']))}",
            f"amount {rng.choice(['>', '<=', '='])} {rng.choice(['3.1', '10', '0', '-4.65'])}",
            f"amount BETWEEN {rng.choice(['0', '-5'])} AND {rng.choice(['10.25', '50'])}",
            f"amount * 2 >= {rng.choice(['20.5', '6', '0'])}",
            f"d {rng.choice(['=', '<', '>='])} DATE '2024-02-29'",
            f"d {rng.choice(['=', '<', '>='])} '2024-03-01'",  # TYPE_MISMATCH on both, as in Trino
            f"d + {rng.randint(-2, 2)} > DATE '2024-02-29'",
            f"flag {rng.choice(['', '= FALSE', 'IS NULL', 'IS NOT DISTINCT FROM TRUE'])}".rstrip(),
            f"k % {rng.choice(['2', '3', '(k - 1)'])} = {rng.randint(0, 1)}",
            f"k + id * 2 > {rng.randint(0, 20)}",
            f"price IS {'NOT ' if rng.random() < 0.5 else ''}NULL",
        ]
    )


def _assignment(rng: random.Random) -> str:
    n = rng.randint(-3, 9)
    return rng.choice(
        [
            f"k = k + {n}",
            f"k = {rng.choice([str(n), 'NULL', 'id % 5', 'k * 2'])}",
            "name = " + rng.choice([repr("z"), "NULL", "name", "name || 'z'", "concat(name, '-', name)", "name || k"]),
            f"price = price * {rng.choice(['1.5', '2', '0.5', '-1'])}",
            f"price = {rng.choice(['price / 2', 'price / 0', 'k', 'amount * 2', '-price'])}",
            f"amount = amount * {rng.choice(['1.5', '1.005', '2', '-1', '100000000'])}",
            f"amount = {rng.choice(['amount + 1', 'amount - 0.005', 'k', 'NULL', '-amount', '3.125'])}",
            f"d = d + {n}",
            f"d = {rng.choice(DATE_VALUES)}",
            f"flag = {rng.choice(['NOT flag', 'k > 2', 'NULL', 'name IS NULL'])}",
        ]
    )


def statements(seed: int, n: int) -> list[str]:
    """``n`` DELETE / UPDATE statements, with the table emptied and refilled before every tenth; the same for a
    seed."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        if i % 10 == 0:
            out += ["DELETE FROM t", _rows(rng)]
        where = f" WHERE {_condition(rng)}" if rng.random() < 0.85 else ""
        if rng.random() < 0.3:
            out.append(f"DELETE FROM t{where}")
        else:
            sets = ", ".join(dict.fromkeys(_assignment(rng) for _ in range(rng.randint(1, 2))))
            if len({a.split(" = ")[0] for a in sets.split(", ")}) < len(sets.split(", ")):
                sets = sets.split(", ")[0]  # one assignment per column
            out.append(f"UPDATE t SET {sets}{where}")
    return out


def _value(v: Any) -> Any:
    return "NaN" if isinstance(v, float) and math.isnan(v) else v


def _outcome(engine: Engine, statement: str) -> tuple[Any, ...]:
    try:
        count = engine.execute(statement).row_count
    except MergekitError as exc:
        # the same error; which row's value it quotes depends on the order the rows are met in
        return ("error", re.sub(r"-?\d[\d.]*", "#", str(exc)))
    rows = engine.execute("SELECT id, k, name, price, amount, d, flag FROM t").rows()
    return (count, sorted((tuple(_value(v) for v in r) for r in rows), key=repr))


CHUNKS = 4  # four tests of N / 4 statements each (seeds SEED..SEED+3): each well within the test timeout


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_the_row_level_spi_and_the_merge_spi_agree(spark: Any, tmp_path: Path, chunk: int) -> None:
    engines = {}
    for kind, connector_type in (("row_level", RowLevelConnector), ("merge", MergeSpiConnector)):
        root = tmp_path / kind
        root.mkdir()
        engines[kind] = Engine(spark=spark, catalogs={"lake": connector_type(str(root))})
        # (the statements run on Spark on both: neither names rows by key; the SELECTs that compare run on the driver)
        engines[kind].execute(CREATE)
    chosen = statements(SEED + chunk, N // CHUNKS)
    assert len([s for s in chosen if s.startswith(("DELETE", "UPDATE"))]) >= N // CHUNKS
    disagreements = []
    errors = 0
    for statement in chosen:
        outcomes = {kind: _outcome(engine, statement) for kind, engine in engines.items()}
        if outcomes["row_level"] != outcomes["merge"]:
            disagreements.append((statement, outcomes))
        errors += outcomes["merge"][0] == "error"
    # each ran its own SPI
    assert engines["row_level"].execute("UPDATE t SET k = k").metrics["spi"] == "row_level"
    assert engines["merge"].execute("UPDATE t SET k = k").metrics.get("spi", "merge") == "merge"
    for engine in engines.values():
        engine.close()
    for root in tmp_path.iterdir():
        shutil.rmtree(root, ignore_errors=True)
    assert not disagreements, "\n".join(
        f"{s}\n  row-level: {o['row_level']}\n  merge:     {o['merge']}" for s, o in disagreements[:5]
    )
    assert errors < len(chosen) // 2  # the statements mostly run: errors are compared, but are not the point
