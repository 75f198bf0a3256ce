# sanlens — every target installs what it needs, idempotently, under .venv/ and .tools/.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS := $(CURDIR)/.tools
# The hashed locks (scripts/lock.py writes them from pyproject.toml): every venv installs from
# them with --require-hashes. A changed lock or pyproject.toml names a new stamp: a reinstall.
LOCKS := requirements/runtime.txt requirements/build.txt requirements/dev.txt
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml sim/pyproject.toml $(LOCKS) 2>/dev/null | sha1sum | cut -c1-12)
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check
# `make image BASE_IMAGE=...`: build on another base (default: the Dockerfile's, pinned by digest)
BASE_IMAGE ?=
export PATH := $(TOOLS)/bin:$(CURDIR)/$(BIN):$(PATH)

.PHONY: all venv tools demo test test-unit test-integration lint bench lock lock-upgrade lock-check image clean

all: test

# pip refuses editable installs under --require-hashes: the locked dependencies first (the
# simulator's among them), then the product alone and the simulator (sim/, which needs the
# product) alone, built by the locked setuptools (no build isolation: nothing unpinned is fetched).
$(STAMP): pyproject.toml sim/pyproject.toml $(LOCKS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --require-hashes --only-binary=:all: -r requirements/dev.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	$(PIP) install --no-deps --no-build-isolation -e sim
	@rm -f $(VENV)/.installed-*; touch $@

venv: $(STAMP)

tools: venv
	@scripts/install-tools.sh "$(TOOLS)"

demo: venv
	$(BIN)/sanlens demo

test: venv tools
	$(BIN)/python -m pytest -q -ra

test-unit: venv
	$(BIN)/python -m pytest -q -ra -m unit

test-integration: venv
	$(BIN)/python -m pytest -q -ra -m integration

lint: venv
	$(BIN)/ruff check exporter sim tests bench rules dashboards mixin docs/build.py docs/families.py helm/build.py scripts/lock.py
	$(BIN)/ruff format --check exporter sim tests bench rules dashboards mixin docs/build.py docs/families.py helm/build.py scripts/lock.py
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: venv
	$(BIN)/python bench/serve_scale.py
	$(BIN)/python bench/poll_scale.py
	$(BIN)/python bench/perfmon_parse.py
	$(BIN)/python bench/engine_cost.py

# requirements/*.txt from pyproject.toml and requirements/*.in, resolved as of requirements/EXCLUDE_NEWER
lock: venv
	$(BIN)/python scripts/lock.py

# the same, with EXCLUDE_NEWER moved to now: the newest versions the specifiers allow
lock-upgrade: venv
	$(BIN)/python scripts/lock.py --exclude-newer now

lock-check: venv
	$(BIN)/python scripts/lock.py --check

# the container image, with buildah (scripts/image.sh; `make tools` installs buildah)
image: tools
	scripts/image.sh build $(if $(BASE_IMAGE),-- --build-arg BASE_IMAGE=$(BASE_IMAGE))

clean:
	rm -rf $(VENV) $(TOOLS) build dist .pytest_cache .mypy_cache .ruff_cache
