# One command runs the demo, one runs the tests. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CONNECTORS := connectors/memory $(wildcard connectors/journal) $(wildcard connectors/partitioned)

.PHONY: venv test lint demo clean bench-quick

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(wildcard connectors/*/pyproject.toml) $(wildcard examples/csvdir/pyproject.toml examples/csvdir/mergekit_csvdir/*.py)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]" $(foreach c,$(CONNECTORS),-e $(c)) ./examples/csvdir
	touch $@

test: venv lint
	$(PY) -m pytest -q -p no:cacheprovider

# ruff (lint and format) everywhere, strict mypy on the SPI (the public contract)
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy mergekit/spi mergekit/errors.py

demo: venv
	$(PY) -m mergekit.cli demo

# First benchmark (bench/README.md): mergekit MERGE on a journal table vs a hand-written PySpark rewrite.
bench-quick: venv
	$(PY) -m bench.run --sizes 1M/100k --reps 2 --warm 2

clean:
	rm -rf $(VENV) warehouse spark-warehouse
