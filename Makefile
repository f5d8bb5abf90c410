# Set-up is part of every target: a fresh machine needs nothing but python3 (3.11+) and make.
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

.PHONY: setup report test lint bench reference
setup: $(BIN)/.installed

# The main job (for now): analyze the example logs and print the published-report tables.
report: $(BIN)/.installed
	$(BIN)/benchbook analyze examples/logs
	$(BIN)/benchbook summarize examples/logs

lint: $(BIN)/.installed
	$(BIN)/ruff check lib tests tools bench

test: lint
	$(BIN)/python -m pytest

# Analysis against the published reference logs beside the repository (CI runs it when present).
reference: $(BIN)/.installed
	$(BIN)/python tools/check_reference_logs.py ../shared/reference-logs

bench: $(BIN)/.installed
	$(BIN)/python bench/bench_analyze.py
