# Two entry points of the README's quick start:
#   make reproduce   set up the environment and run the full reproduction (snakemake --cores 8)
#   make test        set up the environment and run the test suite (what CI runs)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CORES  ?= 8

.PHONY: reproduce test smoke lint bench clean-results

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $@

reproduce: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/snakemake --cores $(CORES)

test: $(BIN)/.installed
	$(BIN)/ruff check src tests $(wildcard benchmarks)
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python -m pytest -q

smoke: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/snakemake --cores 2 --profile workflow/profiles/smoke

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests $(wildcard benchmarks)
	$(BIN)/snakemake --lint

bench: $(BIN)/.installed
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python benchmarks/oracle_pass.py
