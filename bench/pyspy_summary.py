"""Summarise a py-spy ``--format raw`` profile (collapsed stacks): where the sampled Python time went.

    py-spy record --subprocesses --idle=false --format raw -o prof.txt -- python -m bench.run --mode worker ...
    python -m bench.pyspy_summary prof.txt

Prints the share of samples spent inside each of mergekit's pipeline steps (inclusive) and the top functions by
self time. Samples of idle threads are not taken (``--idle=false``), so the shares are of busy Python time.
"""

from __future__ import annotations

import collections
import re
import sys

STEPS = {
    "journal scan (page source: read Parquet, resolve versions)": r"JournalPageSource\.__iter__|_SplitReader\.__call__",
    "row change processor (mapInArrow)": r"_Process\.__call__|transform_page",
    "writer task: duplicate check": r"_check_duplicates",
    "writer task: sink store_merged_rows": r"store_merged_rows",
    "writer task: sink finish (close Parquet)": r"JournalMergeSink\.finish|CrashingSink\.finish",
    "Arrow <-> Spark serialisation in Python workers": r"(dump_stream|load_stream|_create_batch|ArrowStreamSerializer)",
    "finish_merge on the driver": r"finish_merge",
    "py4j calls from the driver (waiting for Spark)": r"send_command|java_gateway",
    "Python worker start/imports": r"_find_and_load",
}


def main(path: str) -> None:
    inclusive: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    total = 0
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        for step, pattern in STEPS.items():
            if re.search(pattern, stack):
                inclusive[step] += n
        leaf = stack.split(";")[-1]
        self_time[re.sub(r":\d+\)", ")", leaf)] += n
    print(f"samples: {total}")
    for step, n in inclusive.most_common():
        print(f"  {100 * n / total:5.1f}%  {step}")
    print("top self time:")
    for leaf, n in self_time.most_common(15):
        print(f"  {100 * n / total:5.1f}%  {leaf}")


if __name__ == "__main__":
    main(sys.argv[1])
