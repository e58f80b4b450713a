# One command runs the demo, one runs the tests. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CONNECTORS := connectors/memory $(wildcard connectors/journal) $(wildcard connectors/partitioned)

.PHONY: venv test demo clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(wildcard connectors/*/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]" $(foreach c,$(CONNECTORS),-e $(c))
	touch $@

test: venv
	$(PY) -m pytest -q -p no:cacheprovider

demo: venv
	$(PY) -m mergekit.demo

clean:
	rm -rf $(VENV) warehouse spark-warehouse
