# Set-up on a fresh machine is part of each target: a virtual environment in .venv,
# torch pinned to the 2.13.0 CPU build this machine keeps on disk (the package itself
# asks for a range), then parity itself.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN ?= torch==2.13.0
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
# the test device's C++ extension is built with the venv's ninja
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: demo test fast nightly lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) "$(TORCH_PIN)"
	$(PIP) -e ".[report]"
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	$(PIP) -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/parity compare

# mypy also checks the tests no CI machine runs (they need a GPU), so they cannot rot
# unseen: the first GPU run found six of them indexing dataclasses as dicts
lint: $(VENV)/.dev
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy $$(grep -rl --include='*.py' 'pytest.mark.cuda' tests)

# the whole suite but the nightly tests, on one worker per core and one more (tests/conftest.py)
test: lint
	$(PY) -m pytest

# while iterating: the tests that start no worker process and no fresh interpreter
fast: $(VENV)/.dev
	$(PY) -m pytest -m "not slow and not nightly"

# the tests that install packages, build venvs or run a real pretrained model, in one
# process: their caches (the venv of the oldest versions, the converted checkpoint) are
# shared by path and built on first use
nightly: $(VENV)/.dev
	$(PY) -m pytest -m nightly -n 0

clean:
	rm -rf $(VENV) parity-runs .pytest_cache .mypy_cache .ruff_cache
