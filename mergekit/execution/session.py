"""Creating (or reusing) the Spark session mergekit runs on."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

# pyspark logs every failed query (with the Java stack) before raising it; mergekit reports errors itself.
logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL + 1)

__all__ = ["local_session", "configure_session"]

# Settings mergekit relies on for Trino semantics: ANSI arithmetic (overflow and division by zero are
# errors), UTC session time zone, case-insensitive identifiers.
REQUIRED_CONF: Mapping[str, str] = {
    "spark.sql.ansi.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.caseSensitive": "false",
}


def local_session(
    *, master: str | None = None, shuffle_partitions: int | None = None, conf: Mapping[str, str] | None = None
) -> SparkSession:
    """The active Spark session, or a new local one whose Python workers run this interpreter.

    PySpark starts ``python3`` from PATH for its workers unless told otherwise, which would not see a
    virtualenv, so ``PYSPARK_PYTHON`` and ``spark.pyspark.python`` are set to ``sys.executable``.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        configure_session(active)
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    master = master or os.environ.get("MERGEKIT_SPARK_MASTER", f"local[{min(cores, 4)}]")
    builder = (
        SparkSession.builder.master(master)
        .appName("mergekit")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2, cores)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Arrow batches to and from Python workers (scans, processors, sinks): fewer, larger pages
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "65536")
        # Native scans name their files one by one (a journal's deltas: hundreds); above this many paths Spark
        # lists them with a distributed job, which costs more than listing them on the driver.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1024")
        .config("spark.driver.memory", os.environ.get("MERGEKIT_DRIVER_MEMORY", "2g"))
        .config("spark.sql.adaptive.enabled", "true")
    )
    if master.startswith("local[") or master == "local":
        # One process: shuffle blocks never cross a network, and compressing them costs the CPU the join needs
        # (a 10M/1M MERGE shuffles 1.6M rows; about 0.2 s of its 3.5 s on 2 cores).
        builder = builder.config("spark.shuffle.compress", "false").config("spark.shuffle.spill.compress", "false")
    for key, value in {**REQUIRED_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


def configure_session(spark: SparkSession) -> None:
    """Apply the settings mergekit's semantics depend on to an existing session."""
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
