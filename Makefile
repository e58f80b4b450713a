# One command runs the demo, one runs the tests. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CONNECTORS := connectors/memory $(wildcard connectors/journal) $(wildcard connectors/partitioned) $(wildcard connectors/sqldb)

.PHONY: venv test test-fast lint demo clean bench bench-quick bench-stream bench-sqldb fuzz conformance

venv: $(VENV)/.installed

EXAMPLES := ./examples/csvdir ./examples/jsonl_rowlevel ./examples/jsonl_merge

$(VENV)/.installed: pyproject.toml $(wildcard connectors/*/pyproject.toml) $(wildcard examples/*/pyproject.toml examples/*/mergekit_*/*.py)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]" $(foreach c,$(CONNECTORS),-e $(c)) $(EXAMPLES)
	touch $@

# The main run on TEST_WORKERS pytest-xdist workers (each its own Spark session and PostgreSQL server, a whole test
# file at a time; docs/performance.md, "The test suite on two workers"); the MERGE cases again on local-cluster, in
# one process (on two workers it took longer).
TEST_WORKERS ?= 2
test: venv lint
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=25
	MERGEKIT_DRIVER_TIER=off MERGEKIT_TEST_MASTER='local-cluster[2,1,1024]' $(PY) -m pytest -q -p no:cacheprovider -m merge_cases --durations=25

# Under a minute: the tests that start no Java and no PostgreSQL (markers set in tests/conftest.py); one that does
# anyway fails (MERGEKIT_TEST_NO_JVM=1 points Java at nothing) instead of making this run slow.
test-fast: venv
	MERGEKIT_TEST_NO_JVM=1 $(PY) -m pytest -q -p no:cacheprovider -m "not spark and not jvm and not pg" -n $(TEST_WORKERS) --dist loadfile

# ruff (lint and format) everywhere, strict mypy on the SPI (the public contract)
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy mergekit/spi mergekit/errors.py

demo: venv
	$(PY) -m mergekit.cli demo

# The conformance cases (the kit's scenarios, Trino's examples among them, on every connector; the journal's,
# merge tables' and streams' examples) with the driver tier as TIER says: auto (the default: every statement it can
# evaluate runs there, as in make test) or off (every statement on Spark). It sets MERGEKIT_DRIVER_TIER, the default
# of the session property driver_tier. About 6 (auto) to 10 (off) minutes on 2 cores.
CONFORMANCE_TESTS := tests/kit tests/rowlevel/test_kit_rowlevel.py tests/sqldb/test_kit_sqldb.py tests/journal/test_engine.py \
	tests/partitioned/test_conformance.py tests/partitioned/test_trino_conformance.py tests/streams/test_stream_examples.py
conformance: venv
	MERGEKIT_DRIVER_TIER=$(TIER) $(PY) -m pytest -q -p no:cacheprovider $(CONFORMANCE_TESTS)

# Issue 6's benchmark (bench/README.md, docs/performance.md); data and loaded tables are cached in /tmp/mergekit-bench.
# Everything: 6 systems x 4 sizes + history (about 1.5 h on 2 cores); rewrites docs/performance.md figures and .png.
bench: venv
	@$(PY) -c "import psutil, duckdb, deltalake, matplotlib" 2>/dev/null || $(PY) -m pip install --quiet -e ".[test,bench]"
	$(PY) -m bench.run --history --json bench/results.json --write-doc docs/performance.md --plot docs/performance.png

# Issue 6's and issue 29's ratio and metric lines (docs/performance.md), about 12 minutes on a quiet machine with the
# tables loaded (estimated; up to 15 while the small commits and the cold MERGE are below issue 29's targets; add
# about 3.5 minutes when the engine changed since the journal and merge tables were loaded): 1M/100k and 10M/10k,
# journal vs PySpark rewrite vs DuckDB (3-5 min); 10M/1, journal vs DuckDB (0.5 min); 10M/1M, journal vs merge table,
# and the history scenario, 100 MERGEs into 10M rows (4 min); 10,000 10-row upserts into 10M rows, stopped after
# 150 s (about 100 s at the target of 100 commits/s), then the full reads (2.5-3.5 min); a point SELECT from the
# command line and a 1-row MERGE from a new process (0.3 min; 2 min while the MERGE starts a JVM); a 1-row MERGE in
# a caller's session with Spark's defaults vs Engine.local() (bench/session.py, about 1 min).
bench-quick: venv
	@$(PY) -c "import psutil, duckdb, deltalake, matplotlib" 2>/dev/null || $(PY) -m pip install --quiet -e ".[test,bench]"
	$(PY) -m bench.run --sizes 1M/100k,10M/10k --systems journal,pyspark_rewrite,duckdb --reps 1 --warm 3
	$(PY) -m bench.run --sizes 10M/1 --systems journal,duckdb --reps 1 --warm 3
	$(PY) -m bench.run --sizes 10M/1M --systems journal,partitioned --reps 1 --warm 3 --history
	$(PY) -m bench.small_commits --rows 10M --commits 10000 --batch 10 --max-seconds 150
	$(PY) -m bench.cold --rows 10M
	$(PY) -m bench.session

# Issue 17's streaming bench (about 5-7 min: live feed, then backlog drains capped at 10 commits and uncapped): MERGE
# job vs PySpark foreachBatch; writes docs/performance.md's Streaming figures.
bench-stream: venv
	@$(PY) -c "import psutil" 2>/dev/null || $(PY) -m pip install --quiet -e ".[test,bench]"
	$(PY) -m bench.streaming --json bench/results-streaming.json --write-doc docs/performance.md

# Issue 18's bench (3 min measured with T loaded, 5-7 min under load; +20 s to load T the first time): MERGE of
# 1M rows into a 10M-row PostgreSQL table through the sqldb connector vs PostgreSQL's own MERGE vs a PySpark
# foreachPartition upsert; writes docs/performance.md's sqldb figures. Needs the PostgreSQL server binaries.
bench-sqldb: venv
	@$(PY) -c "import psutil, psycopg, mergekit_sqldb" 2>/dev/null || $(PY) -m pip install --quiet -e ".[test,bench]" -e connectors/sqldb
	$(PY) -m bench.sqldb --json bench/results-sqldb.json --write-doc docs/performance.md

# Issue 16's differential test against PostgreSQL 15 (tests/differential/): N statements (default 2000) from seed
# SEED (default 16); FEATURES=do_nothing,... turns optional generator features on (all: every one), ONLY=i re-runs
# scenario i, REPORT=path writes every disagreement as a JSON line, TIER=off runs every statement on Spark (the
# session's driver_tier). About 1-3 s per statement on 2 cores.
fuzz: venv
	MERGEKIT_FUZZ_N=$(or $(N),2000) MERGEKIT_FUZZ_SEED=$(SEED) MERGEKIT_FUZZ_FEATURES=$(FEATURES) \
	MERGEKIT_FUZZ_ONLY=$(ONLY) MERGEKIT_FUZZ_REPORT=$(REPORT) MERGEKIT_FUZZ_TIER=$(TIER) \
	$(PY) -m pytest -q -p no:cacheprovider -s tests/differential/test_differential.py

clean:
	rm -rf $(VENV) warehouse spark-warehouse
