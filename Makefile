# skewbench: every target bootstraps what it needs (virtual environment, locked dependencies).
#   make run        generate, validate and describe the default dataset catalog (embedded defaults)
#   make test       the test suite (what CI runs)
#   make bench      the benchmarks (figures go to BENCHMARKS.md)
#   make reproduce  the paper-reproduction checks (tests/reproduction, all of them)
#   make lock       re-resolve requirements.lock from pyproject.toml (needs the package registry)

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(abspath $(VENV))/bin
UV_VERSION := 0.13.8
STAMP := $(VENV)/.installed
STATE ?= $(abspath .skewbench)
ROOT ?= $(STATE)/datasets
PYTEST_ARGS ?=

export PYSPARK_PYTHON := $(BIN)/python
export PYSPARK_DRIVER_PYTHON := $(BIN)/python
export GX_ANALYTICS_ENABLED := false
export PATH := $(BIN):$(PATH)

.PHONY: install run test bench reproduce lock clean java

install: $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || { echo "Java not found: installing OpenJDK 17 (Spark needs it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }

$(STAMP): requirements.lock pyproject.toml | java
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip sync -q --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	@touch $@

run: $(STAMP)
	$(BIN)/skewbench datasets generate catalog --set default --root $(ROOT) --validate
	@for d in $(ROOT)/*/; do [ -f "$$d/_skewbench.json" ] && { echo; $(BIN)/skewbench datasets describe "$$d"; }; done; true
	@echo; echo "datasets are in $(ROOT)"

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_generate.py

reproduce: $(STAMP)
	SKEWBENCH_REPRODUCE=full $(BIN)/python -m pytest -q -m reproduction tests/reproduction

lock:
	$(BIN)/uv pip compile pyproject.toml --extra airflow --extra dev --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) $(STATE) .pytest_cache .hypothesis
