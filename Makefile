# Two entry points a fresh machine with only Python 3.11 can run:
#   make demo   — installs into .venv, then runs `lavalog demo`
#   make test   — installs into .venv, then runs ruff (lint and format check), mypy, import-linter and pytest
#   make chaos  — the full chaos run: 300 jobs without and with faults, compared (ARGS=...)
#   make lock   — write deploy/requirements.lock (the image's exact versions) from pyproject.toml
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint unit bench chaos lock clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/lavalog demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# most of the suite waits (on the broker, the simulated cluster, child processes), so it
# runs in more workers than the machine has cores
TEST_WORKERS ?= 4

# Python writes each module's bytecode once (__pycache__/, ignored by git) and every worker
# and child process reads it, instead of each compiling (and pytest rewriting) the sources
# again, as they do where PYTHONDONTWRITEBYTECODE is set
test: lint
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/decider.py
	$(BIN)/python bench/replay.py
	$(BIN)/python bench/pipeline.py
	$(BIN)/python bench/reaction.py
	$(BIN)/python bench/recovery.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/scaleout.py
	$(BIN)/python bench/simulator.py
	$(BIN)/python bench/validate.py
	$(BIN)/python bench/whatif.py
	$(BIN)/python bench/job_pages.py

chaos: $(STAMP)
	$(BIN)/python bench/chaos.py $(ARGS)

# lavalog[postgres,fast] for Python 3.11 on any platform, every file's hash: what the image installs
lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml --extra postgres --extra fast --universal --python-version 3.11 \
		--generate-hashes --quiet --custom-compile-command "make lock" -o deploy/requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
