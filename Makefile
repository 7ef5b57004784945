# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,test,web]'
	touch $(STAMP)

demo: venv
	$(BIN)/tidings demo

SCREENSHOTS := $(CURDIR)/build/screenshots

# pytest-xdist workers of `make test` (the suite mostly waits on processes; 2 cores).
TEST_WORKERS ?= 2

test: venv lint
	@echo "web console screenshots (browser tests): $(SCREENSHOTS)"
	TIDINGS_SCREENSHOTS=$(SCREENSHOTS) $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# mypy and import-linter read files, not imports: they run over the installed shape of the
# package, laid out as links (the layer folders install as tidings.<layer>).
TYPECHECK := build/typecheck

lint: venv
	$(BIN)/ruff check tidings workers jobs scheduler store tests bench examples
	$(BIN)/ruff format --check tidings workers jobs scheduler store tests bench examples
	$(BIN)/python -m tests.support.linktree $(TYPECHECK)
	cd $(TYPECHECK) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml
	cd $(TYPECHECK) && $(CURDIR)/$(BIN)/lint-imports --no-cache $(CURDIR)/pyproject.toml

BENCH_STAMP := $(VENV)/.bench-installed

# The tokenizers of bench/tokens.py (the `bench` extra), installed only for `make bench`.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,test,web,bench]'
	touch $(BENCH_STAMP)

bench: venv $(BENCH_STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
