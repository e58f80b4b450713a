"""Seeded workload generator: target T and source S as Parquet (issue 6's workload).

T(id BIGINT key, grp INT, name VARCHAR(16), amount DOUBLE, updated DATE): ids 0..n-1, sorted, written as files of
at most 1M rows. S(id, grp, name, amount, updated, op): 50% updates of existing ids (op 'U'), 10% deletes of other
existing ids (op 'D'), 40% new ids (op 'I'), in random order. Same seed, same files.
"""

from __future__ import annotations

import datetime as dt
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROWS_PER_FILE = 1_000_000
EPOCH = dt.date(2020, 1, 1)


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


def generate(root: str, n_target: int, n_source: int, seed: int = 42) -> dict[str, str]:
    """Write ``root/T`` and ``root/S`` (Parquet directories) unless they already exist for these parameters."""
    marker = os.path.join(root, "workload.json")
    params = {"n_target": n_target, "n_source": n_source, "seed": seed}
    paths = {"T": os.path.join(root, "T"), "S": os.path.join(root, "S")}
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == params:
                return paths
    os.makedirs(paths["T"], exist_ok=True)
    os.makedirs(paths["S"], exist_ok=True)
    for d in paths.values():
        for name in os.listdir(d):
            os.remove(os.path.join(d, name))
    rng = np.random.default_rng(seed)
    for i, start in enumerate(range(0, n_target, ROWS_PER_FILE)):
        ids = np.arange(start, min(n_target, start + ROWS_PER_FILE), dtype=np.int64)
        pq.write_table(pa.table(_rows(rng, ids, "n")), os.path.join(paths["T"], f"part-{i:05d}.parquet"))
    n_upd, n_del = n_source // 2, n_source // 10
    n_ins = n_source - n_upd - n_del
    existing = rng.choice(n_target, size=n_upd + n_del, replace=False).astype(np.int64)
    new = np.arange(n_target, n_target + n_ins, dtype=np.int64)
    ids = np.concatenate([existing, new])
    ops = np.array(["U"] * n_upd + ["D"] * n_del + ["I"] * n_ins)
    order = rng.permutation(len(ids))
    src = _rows(rng, ids[order], "s")
    src["op"] = pa.array(ops[order], pa.string())
    pq.write_table(pa.table(src), os.path.join(paths["S"], "part-00000.parquet"))
    with open(marker, "w") as f:
        json.dump(params, f)
    return paths
