"""Seeded workload generator: target T and sources S as Parquet (issue 6's workload).

T(id BIGINT key, grp INT, name VARCHAR(16), amount DOUBLE, updated DATE): ids 0..n-1, sorted, written as files of
at most 1M rows. S(id, grp, name, amount, updated, op): 50% updates of existing ids (op 'U'), 10% deletes of other
existing ids (op 'D'), 40% new ids (op 'I'), in random order; a 1-row source is one update of an existing id.
Same seed, same files.

Layout under the data directory (``--data``, default /tmp/mergekit-bench):

- ``T-<n>-seed<seed>/T``: the target, shared by every source size over the same target (the loaded tables of
  every system are kept beside it, see bench/run.py);
- ``<n>-<m>-seed<seed>/S``: the source of one size pair;
- ``history-<n>-<m>-seed<seed>/S-001 ...``: the successive sources of the history scenario, each drawn from the
  ids live after the previous ones (updates and deletes hit live ids, inserts are new ids).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROWS_PER_FILE = 1_000_000
EPOCH = dt.date(2020, 1, 1)


def label(n: int) -> str:
    """1000000 -> '1M', 10000 -> '10k', 1 -> '1'."""
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def shape(n_source: int) -> tuple[int, int, int]:
    """(updates, deletes, inserts) of a source of ``n_source`` rows."""
    if n_source == 1:
        return 1, 0, 0
    n_upd, n_del = n_source // 2, n_source // 10
    return n_upd, n_del, n_source - n_upd - n_del


def expected_rows(n_target: int, n_source: int) -> int:
    """Live rows of T after the MERGE of one source."""
    _, n_del, n_ins = shape(n_source)
    return n_target - n_del + n_ins


def _rows(rng: np.random.Generator, ids: np.ndarray, prefix: str) -> dict[str, pa.Array]:
    n = len(ids)
    id_arr = pa.array(ids, pa.int64())
    days = rng.integers(0, 2000, n).astype("int32") + (EPOCH - dt.date(1970, 1, 1)).days
    return {
        "id": id_arr,
        "grp": pa.array(rng.integers(0, 1000, n).astype("int32"), pa.int32()),
        "name": pc.binary_join_element_wise(prefix, pc.cast(id_arr, pa.string()), ""),
        "amount": pa.array(np.round(rng.random(n) * 1000.0, 2), pa.float64()),
        "updated": pa.array(days, pa.int32()).cast(pa.date32()),
    }


def _fresh_dir(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        os.remove(os.path.join(path, name))


def _marker_matches(marker: str, params: dict) -> bool:
    if not os.path.exists(marker):
        return False
    with open(marker) as f:
        return json.load(f) == params


def _write_marker(marker: str, params: dict) -> None:
    with open(marker, "w") as f:
        json.dump(params, f)


def _legacy_target(data: str, n_target: int, seed: int) -> str | None:
    """A T written by the first version of this module (``<n>-<m>-seed<seed>/T``): the same bytes as ours."""
    if not os.path.isdir(data):
        return None
    for name in sorted(os.listdir(data)):
        marker = os.path.join(data, name, "workload.json")
        if not name.startswith(f"{label(n_target)}-") or not os.path.exists(marker):
            continue
        with open(marker) as f:
            params = json.load(f)
        t_dir = os.path.join(data, name, "T")
        if params.get("n_target") == n_target and params.get("seed") == seed and os.path.isdir(t_dir):
            files = [n for n in os.listdir(t_dir) if n.endswith(".parquet")]
            if len(files) == -(-n_target // ROWS_PER_FILE):
                return t_dir
    return None


def target_root(data: str, n_target: int, seed: int) -> str:
    return os.path.join(data, f"T-{label(n_target)}-seed{seed}")


def _cached_dir(root: str, name: str, marker_name: str, params: dict, write: Callable[[str], None]) -> str:
    """``root/name``, as ``write`` fills it (a fresh directory) unless the marker file ``root/marker_name`` says
    it was written with ``params`` already."""
    path = os.path.join(root, name)
    marker = os.path.join(root, marker_name)
    if _marker_matches(marker, params):
        return path
    _fresh_dir(path)
    write(path)
    _write_marker(marker, params)
    return path


def generate_target(data: str, n_target: int, seed: int = 42) -> str:
    """Write ``T-<n>-seed<seed>/T`` unless it exists; return the directory of T's Parquet files."""

    def write(t_dir: str) -> None:
        legacy = _legacy_target(data, n_target, seed)
        if legacy is not None:  # hard-link the files instead of generating them again
            for name in sorted(os.listdir(legacy)):
                os.link(os.path.join(legacy, name), os.path.join(t_dir, name))
            return
        rng = np.random.default_rng(seed)
        for i, start in enumerate(range(0, n_target, ROWS_PER_FILE)):
            ids = np.arange(start, min(n_target, start + ROWS_PER_FILE), dtype=np.int64)
            pq.write_table(pa.table(_rows(rng, ids, "n")), os.path.join(t_dir, f"part-{i:05d}.parquet"))

    params = {"n_target": n_target, "seed": seed, "rows_per_file": ROWS_PER_FILE}
    return _cached_dir(target_root(data, n_target, seed), "T", "target.json", params, write)


def _source_table(rng: np.random.Generator, live: np.ndarray, next_id: int, n_source: int) -> pa.Table:
    """``n_source`` rows: updates and deletes of distinct ids drawn from ``live``, inserts of ids from ``next_id``."""
    n_upd, n_del, n_ins = shape(n_source)
    existing = live[rng.choice(len(live), size=n_upd + n_del, replace=False)].astype(np.int64)
    new = np.arange(next_id, next_id + n_ins, dtype=np.int64)
    ids = np.concatenate([existing, new])
    ops = np.array(["U"] * n_upd + ["D"] * n_del + ["I"] * n_ins)
    order = rng.permutation(len(ids))
    src = _rows(rng, ids[order], "s")
    src["op"] = pa.array(ops[order], pa.string())
    return pa.table(src)


def generate_source(data: str, n_target: int, n_source: int, seed: int = 42) -> str:
    """Write ``<n>-<m>-seed<seed>/S`` unless it exists; return its directory."""

    def write(s_dir: str) -> None:
        rng = np.random.default_rng([seed, n_target, n_source])
        table = _source_table(rng, np.arange(n_target, dtype=np.int64), n_target, n_source)
        pq.write_table(table, os.path.join(s_dir, "part-00000.parquet"))

    root = os.path.join(data, f"{label(n_target)}-{label(n_source)}-seed{seed}")
    params = {"n_target": n_target, "n_source": n_source, "seed": seed}
    return _cached_dir(root, "S", "source.json", params, write)


def generate(data: str, n_target: int, n_source: int, seed: int = 42) -> dict[str, str]:
    """T and S of one size pair: ``{"T": dir, "S": dir, "root": T's root (where loaded tables are kept)}``."""
    return {
        "T": generate_target(data, n_target, seed),
        "S": generate_source(data, n_target, n_source, seed),
        "root": target_root(data, n_target, seed),
    }


def generate_history(data: str, n_target: int, n_source: int, commits: int, seed: int = 42) -> list[str]:
    """``commits`` successive sources of ``n_source`` rows over T of ``n_target`` rows; return their directories.

    Source k is drawn from the ids live after sources 1..k-1 were merged: its updates and deletes hit live ids
    (a deleted id is never touched again), its inserts are ids never used before. Cached: a longer series
    generated earlier with the same parameters is reused (its first ``commits`` sources are the same).
    """
    root = os.path.join(data, f"history-{label(n_target)}-{label(n_source)}-seed{seed}")
    marker = os.path.join(root, "history.json")
    params = {"n_target": n_target, "n_source": n_source, "seed": seed}
    dirs = [os.path.join(root, f"S-{k:03d}") for k in range(1, commits + 1)]
    if os.path.exists(marker):
        with open(marker) as f:
            done = json.load(f)
        if done.get("params") == params and done.get("commits", 0) >= commits:
            return dirs
    rng = np.random.default_rng([seed, n_target, n_source, 1])
    live = np.ones(n_target + commits * n_source, dtype=bool)
    live[n_target:] = False
    next_id = n_target
    for d in dirs:
        table = _source_table(rng, np.flatnonzero(live), next_id, n_source)
        ops = table.column("op").to_numpy(zero_copy_only=False)
        ids = table.column("id").to_numpy()
        live[ids[ops == "D"]] = False
        live[ids[ops == "I"]] = True
        next_id += int((ops == "I").sum())
        _fresh_dir(d)
        pq.write_table(table, os.path.join(d, "part-00000.parquet"))
    _write_marker(marker, {"params": params, "commits": commits})
    return dirs
