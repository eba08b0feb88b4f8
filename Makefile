# The two set-up commands: `make run` (the demo on the embedded store) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench-core bench-lineage bench-search clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/sessiondb demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench-core: $(STAMP)
	$(BIN)/python bench/bench_core.py

bench-search: $(STAMP)
	$(BIN)/python bench/bench_search.py

bench-lineage: $(STAMP)
	$(BIN)/python bench/bench_lineage.py

clean:
	rm -rf $(VENV) build *.egg-info
