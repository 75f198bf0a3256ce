# sanlens — every target installs what it needs, idempotently, under .venv/ and .tools/.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS := $(CURDIR)/.tools
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
export PATH := $(TOOLS)/bin:$(CURDIR)/$(BIN):$(PATH)

.PHONY: all venv tools demo test test-unit test-integration lint bench clean

all: test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,winrm,sim]'
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
	$(BIN)/ruff check exporter tests bench rules dashboards mixin docs/build.py docs/families.py helm/build.py
	$(BIN)/ruff format --check exporter tests bench rules dashboards mixin docs/build.py docs/families.py helm/build.py
	$(BIN)/mypy

bench: venv
	$(BIN)/python bench/serve_scale.py
	$(BIN)/python bench/poll_scale.py
	$(BIN)/python bench/perfmon_parse.py

clean:
	rm -rf $(VENV) $(TOOLS) build dist .pytest_cache .mypy_cache .ruff_cache
