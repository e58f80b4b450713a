"""The journal's lookup cache (mergekit_journal/_files/lookup_cache.py): the row groups a key lookup decoded are kept in
memory, so the next statement's lookups of keys in them decode nothing. What a user must see: the same rows as
without it, through upserts that supersede cached rows, automatic compactions that replace the files, and a file
replaced under the same name."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from mergekit_journal._files import lookup_cache as _lookup_cache
from mergekit_journal._files.lookup_cache import LookupCache, held_keys, read_row_groups
from mergekit_journal._files.storage import ROW_GROUP_ROWS, KeyFilter

from mergekit import Engine

pytestmark = pytest.mark.spark

ROWS = 2 * ROW_GROUP_ROWS + 1000  # three row groups in the loaded file


def _engine(spark, path) -> Engine:
    return Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(path), "version_type": "bigint"}},
        default_catalog="lake",
    )


@pytest.mark.parametrize("capacity", [256 * 2**20, 0], ids=["cached", "uncached"])
def test_upserts_and_point_reads_through_the_cache_see_every_commit(spark, tmp_path, monkeypatch, capacity):
    monkeypatch.setattr(_lookup_cache, "cache", LookupCache(capacity))
    engine = _engine(spark, tmp_path)
    engine.execute("CREATE TABLE t (id BIGINT NOT NULL, n BIGINT, name VARCHAR, PRIMARY KEY (id))")
    ids = np.arange(ROWS, dtype=np.int64)
    engine.insert_arrow(
        "t",
        pa.table(
            {
                "id": ids,
                "n": ids * 10,
                "name": pc.binary_join_element_wise("r", pc.cast(pa.array(ids), pa.string()), ""),
            }
        ),
    )
    model = {int(i): (int(i) * 10, f"r{i}") for i in ids}
    rng = random.Random(29)
    hot = [rng.randrange(ROWS) for _ in range(6)]  # keys looked up again and again: their row groups stay cached
    next_id = ROWS
    for step in range(60):
        keys = rng.sample(hot, 3) + [rng.randrange(ROWS), next_id]
        next_id += 1
        values = ", ".join(f"({k}, {step}, 'v{step}')" for k in keys)
        result = engine.execute(
            f"MERGE INTO t USING (VALUES {values}) AS s(id, d, tag) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET n = t.n + s.d, name = s.tag "
            "WHEN NOT MATCHED THEN INSERT (id, n, name) VALUES (s.id, s.d, 'new')"
        )
        assert (result.metrics["strategy"], result.metrics["tier"]) == ("index_lookup", "driver")
        for k in keys:
            n, name = model.get(k, (None, None))
            model[k] = (step, "new") if n is None else (n + step, f"v{step}")
        probe = rng.choice(keys)
        assert engine.execute(f"SELECT n, name FROM t WHERE id = {probe}").rows() == [model[probe]]
    # a DELETE of a cached key, and the whole table at the end
    engine.execute(f"DELETE FROM t WHERE id = {hot[0]}")
    del model[hot[0]]
    assert engine.execute(f"SELECT count(*) FROM t WHERE id = {hot[0]}").rows() == [(0,)]
    got = engine.execute("SELECT id, n, name FROM t").to_arrow()
    assert (
        dict(zip(got["id"].to_pylist(), zip(got["n"].to_pylist(), got["name"].to_pylist(), strict=True), strict=True))
        == model
    )
    cache = _lookup_cache.cache
    if capacity:
        assert cache.hits > cache.misses > 0  # the hot keys' row groups were decoded once, not every statement
        assert 0 < cache.size <= capacity
    else:
        assert cache.hits == cache.misses == 0


def test_a_file_replaced_under_the_same_name_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setattr(_lookup_cache, "cache", LookupCache(2**20))
    fs, path = pafs.LocalFileSystem(), str(tmp_path / "f.parquet")

    def first_group(pf):
        return [0]

    pq.write_table(pa.table({"k": [1, 2, 3]}), path)
    assert read_row_groups(fs, path, ["k", "absent"], first_group, threads=False)[0]["k"].to_pylist() == [1, 2, 3]
    assert read_row_groups(fs, path, ["k"], first_group, threads=False)[0]["k"].to_pylist() == [1, 2, 3]
    assert _lookup_cache.cache.hits == 2  # the footer and the column
    pq.write_table(pa.table({"k": [7, 8, 9, 10]}), path)
    table, present = read_row_groups(fs, path, ["k"], first_group, threads=False)
    assert table["k"].to_pylist() == [7, 8, 9, 10] and present == {"k"}


@pytest.mark.parametrize("capacity", [2**20, 0], ids=["cached", "uncached"])
def test_a_lookup_keeps_each_row_groups_wanted_rows_sorted_or_not(tmp_path, monkeypatch, capacity):
    """A lookup picks the wanted rows of each row group before they are put together: the same rows as a filter
    of the whole file, whether a row group's keys ascend (searched) or not (filtered), asked twice (the second
    time whether they ascend comes from the cache), and with the cache off."""
    monkeypatch.setattr(_lookup_cache, "cache", LookupCache(capacity))
    fs, path = pafs.LocalFileSystem(), str(tmp_path / "f.parquet")
    # ascending; not (a binary search would miss 60); repeats
    keys = [1, 3, 5, 7, 9, 11] + [60, 10, 20, 30, 40, 50] + [70, 70, 80, 90, 95, 99]
    pq.write_table(pa.table({"k": pa.array(keys, pa.int64()), "v": list(range(18))}), path, row_group_size=6)
    wanted = KeyFilter("k", pa.array([3, 9, 40, 60, 70, 99, 100], pa.int64()))

    def pick(part, memo):
        return wanted.take(part, part.column("k"), memo)

    expected = [(3, 1), (9, 4), (60, 6), (40, 10), (70, 12), (70, 13), (99, 17)]
    for _ in range(2):
        table, _ = read_row_groups(fs, path, ["k", "v"], wanted.row_groups, threads=False, pick=pick)
        assert list(zip(table["k"].to_pylist(), table["v"].to_pylist(), strict=True)) == expected


def test_held_keys_are_the_wanted_keys_the_file_holds_and_none_where_it_does_not_apply(tmp_path, monkeypatch):
    """A delta's keys kept sorted (a small MERGE asks each delta which of its keys it holds): the same answer as
    reading the file, from an unsorted key column with repeats (versions of one key) written as INTEGER and read as
    BIGINT; a string key, a NULL among the wanted keys, a file past the bound or no cache: None (read the file)."""
    monkeypatch.setattr(_lookup_cache, "cache", LookupCache(2**20))
    fs, path = pafs.LocalFileSystem(), str(tmp_path / "delta.parquet")
    written = [40, 7, 7, -3, 1_000, 40, 12]
    pq.write_table(pa.table({"k": pa.array(written, pa.int32()), "v": list(range(7))}), path, row_group_size=3)
    wanted = pa.array([-5, -3, 7, 8, 12, 40, 999, 1_000, 2**40], pa.int64())
    for _ in range(2):  # the second answer from the cache
        held = held_keys(fs, path, "k", pa.int64(), wanted)
        assert held.type == pa.int64() and held.to_pylist() == [-3, 7, 12, 40, 1_000]
    assert _lookup_cache.cache.hits >= 1
    assert held_keys(fs, path, "k", pa.int64(), pa.array([], pa.int64())).to_pylist() == []
    assert held_keys(fs, path, "k", pa.int64(), pa.array([7, None], pa.int64())) is None
    assert held_keys(fs, path, "k", pa.string(), pa.array(["7"])) is None
    monkeypatch.setattr(_lookup_cache, "SORTED_KEYS_MAX_ROWS", 6)
    other = str(tmp_path / "large.parquet")
    pq.write_table(pa.table({"k": pa.array(written, pa.int64())}), other)
    assert held_keys(fs, other, "k", pa.int64(), wanted) is None
    monkeypatch.setattr(_lookup_cache, "cache", LookupCache(0))
    assert held_keys(fs, path, "k", pa.int64(), wanted) is None


def test_the_cache_stays_within_its_capacity_and_finds_most_of_a_cycle_larger_than_it():
    """A statement whose keys fall in every row group of a table a little larger than the cache (10k random keys
    into 10M rows) reads the row groups in the same order each time: least recently used first out, it would
    find none of them (each evicted just before it is needed again); the cache finds most."""
    cache = LookupCache(100, seed=7)
    for i in range(5):
        cache.put((i,), f"v{i}", 30)
    assert cache.size == 90 and sum(cache.get((i,)) is not None for i in range(5)) == 3
    cache.put((6,), "too large", 101)
    assert cache.get((6,)) is None and cache.size <= 100
    cache.put((7,), "again", 30)
    cache.put((7,), "replaced", 30)
    assert cache.get((7,)) == "replaced" and cache.size <= 90

    cache = LookupCache(1000, seed=7)
    groups = 110  # 10% more row groups than fit
    for _ in range(20):
        for g in range(groups):
            if cache.get(("column", "/t/f.parquet", g)) is None:
                cache.put(("column", "/t/f.parquet", g), g, 10)
        assert cache.size <= 1000
    cache.hits = cache.misses = 0
    for g in range(groups):
        if cache.get(("column", "/t/f.parquet", g)) is None:
            cache.put(("column", "/t/f.parquet", g), g, 10)
    assert cache.hits >= 0.75 * groups, (cache.hits, cache.misses)
    # a compaction replaced the file: its entries go, the others stay
    cache.put(("column", "/t/other.parquet", 0), "o", 10)
    cache.drop_files({"/t/f.parquet"})
    assert cache.size == 10 and cache.get(("column", "/t/other.parquet", 0)) == "o"
