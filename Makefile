# skewbench: every target bootstraps what it needs (virtual environment, locked dependencies).
#   make run        the nightly pipeline once, on embedded defaults (Airflow, Spark, GE, MLflow), its tasks
#                   two at a time (SKEWBENCH_RUN_PARALLELISM=1: one at a time);
#                   RUN_CONF='{"catalog_set": "paper"}' passes the DAG's parameters
#   make live       the live mode once (the skewbench_live DAG with dag.test()), short: live-zipf-1.4
#                   on Flink and Spark, six strategies, 8 s phases twice, each measured against the
#                   model's prediction (under 10 minutes on 2 cores); RUN_CONF='{"engines": ["spark"]}'
#                   replaces that conf (the Params it does not name: the DAG's weekly defaults)
#   make ui         the Airflow and MLflow UIs on localhost (make ui-stop stops them)
#   make cluster    a Spark standalone cluster on localhost, a master and 2 workers (make cluster-stop)
#   make datasets   generate, validate and describe the default dataset catalog only
#   make test       the import-layer contracts (import-linter) and the test suite, reproduction and
#                   slow tests aside (what CI runs first)
#   make docs       regenerate docs/results.md from the families' schemas
#   make bench      the benchmarks, about an hour (figures go to BENCHMARKS.md, plots to docs/img)
#   make reproduce  the paper-reproduction checks and the timing checks (CI runs it after make test)
#   make slow       the slow integration checks: Airflow's scheduler and UI, the live DAG (CI: after reproduce)
#   make images     the Docker images of docker/compose.yaml, with or without an image registry
#   make deploy-test the stack in Docker (its own daemon if none runs): the nightly through it, checked
#   make lock       re-resolve requirements.lock from pyproject.toml (needs the package registry)
#   make flink-env  the Flink environment .venv-flink (PyFlink 2.3 from requirements-flink.lock, apart
#                   from the project's: its pins cannot share requirements.lock); make reproduce and slow need it
#   make lock-flink re-resolve requirements-flink.lock from requirements-flink.in

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(abspath $(VENV))/bin
UV_VERSION := 0.13.8
STAMP := $(VENV)/.installed
STATE ?= $(abspath .skewbench)
ROOT ?= $(STATE)/datasets
PYTEST_ARGS ?=
# make test, make reproduce and make slow run on both cores: pytest-xdist deals whole test files to two
# workers (module fixtures stay computed once), the heaviest files first (tests/conftest.py)
XDIST ?= -n 2 --dist loadfile --no-loadscope-reorder
DURATIONS := --durations=25

export PYSPARK_PYTHON := $(BIN)/python
export PYSPARK_DRIVER_PYTHON := $(BIN)/python
export GX_ANALYTICS_ENABLED := false
export MLFLOW_DISABLE_TELEMETRY := true
export PATH := $(BIN):$(PATH)

# Embedded defaults: everything under one state directory (git-ignored); override any of these.
export SKEWBENCH_STATE := $(STATE)
export SKEWBENCH_TRACKING_URI ?= sqlite:///$(STATE)/mlflow/mlflow.db
export SKEWBENCH_MLFLOW_ARTIFACTS ?= $(STATE)/mlflow/artifacts
export AIRFLOW_HOME ?= $(STATE)/airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(abspath dags)
export AIRFLOW__CORE__PLUGINS_FOLDER := $(abspath plugins)
export AIRFLOW__CORE__LOAD_EXAMPLES := False
export AIRFLOW_CONN_SPARK_DEFAULT ?= {"conn_type": "spark", "host": "$(or $(SKEWBENCH_SPARK_MASTER),local[*])"}

# Kernels compiled ahead of time (skewbench.jit, skewbench.aot): a CLI process then starts without
# numba's 1.1 s of initialisation. Rebuilt when a kernel's source changes; when the build fails
# (no C compiler) everything still works, with numba compiling the kernels just in time.
KERNELS := src/skewbench/_kernels.json
KERNEL_SOURCES := src/skewbench/jit.py src/skewbench/aot.py $(wildcard src/skewbench/*/cli.py) $(wildcard src/skewbench/advise/*.py) \
	$(shell grep -rl "^from skewbench.jit import njit" src/skewbench)
READY := $(STAMP) $(KERNELS)

.PHONY: install bytecode run live datasets ui ui-stop cluster cluster-stop test bench reproduce slow lock clean java browser docs \
	docker-tools images deploy-test flink-env lock-flink reproduce-slow

install: $(READY)

# a JDK, not only the runtime: Spark and Flink need Java, the known-answer tests compile small Java
# programs with javac (tests/integration/test_engine_hashes.py, test_flink_engine.py)
java:
	@command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || { \
	  echo "Java or javac not found: installing OpenJDK 17's JDK (Spark and Flink need Java, the tests javac)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; }

# the browser tests drive Debian's Chromium with Playwright (no browser download works offline)
browser:
	@test -x /usr/bin/chromium || { echo "Chromium not found: installing Debian's chromium (the browser tests need it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

$(STAMP): requirements.lock pyproject.toml | java
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip sync -q --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	@$(MAKE) -s bytecode
	@touch $@

# The Flink environment: PyFlink (apache-flink, its Java jars included) in a virtual environment of
# its own, from its own lock; its programs run as separate processes of that interpreter
# (SKEWBENCH_FLINK_PYTHON, exported to the targets that use it). Built once, rebuilt from nothing
# when the lock changes; prints how long it took. make test does not need it.
FLINK_VENV := .venv-flink
FLINK_STAMP := $(FLINK_VENV)/.installed
FLINK_PYTHON := $(abspath $(FLINK_VENV))/bin/python

flink-env: $(FLINK_STAMP)

$(FLINK_STAMP): requirements-flink.lock | $(STAMP) java
	@t0=$$(date +%s); echo "installing the Flink environment $(FLINK_VENV) from requirements-flink.lock"; \
	rm -rf $(FLINK_VENV) && $(BIN)/uv venv -q --python $(PYTHON) $(FLINK_VENV) && \
	$(BIN)/uv pip sync -q --compile-bytecode --python $(FLINK_VENV)/bin/python requirements-flink.lock && \
	touch $@ && echo "the Flink environment took $$(( $$(date +%s) - t0 )) s ($(FLINK_PYTHON))"

# the grouping strategies for a Flink user's own job (docs/flink.md): one jar, the Java routers, their
# Flink Partitioner (skewbench.flink.StrategyPartitioner) and the merge step (KeySplitting), compiled
# against the Flink environment's jars into $(STATE)/flink/skewbench-partitioners.jar (its path
# printed), the Flink environment installed first when missing
.PHONY: flink-partitioners
flink-partitioners: export SKEWBENCH_FLINK_PYTHON := $(FLINK_PYTHON)
flink-partitioners: $(READY) $(FLINK_STAMP)
	@$(BIN)/python -m skewbench.live.partitioners

$(KERNELS): $(KERNEL_SOURCES) $(STAMP)
	@echo "compiling the kernels ahead of time (python -m skewbench.aot, about a minute)"
	@mkdir -p $(STATE)
	@$(BIN)/python -m skewbench.aot > $(STATE)/aot.log 2>&1 || { tail -5 $(STATE)/aot.log; \
	  echo "warning: no ahead-of-time kernels; numba compiles them just in time (about 1 s more per process)"; }

# Bytecode for the packages and this tree: with PYTHONDONTWRITEBYTECODE set, and uv compiling
# nothing unless asked, every process (each CLI call, Spark Python worker, Airflow task) would
# otherwise compile all it imports, about 2 s each. Files changed later are recompiled on import.
bytecode:
	@$(BIN)/python -m compileall -q -j 0 src dags plugins spark_jobs scripts benchmarks tests > /dev/null

run: $(READY)
	@mkdir -p $(STATE)/mlflow
	$(BIN)/airflow db migrate > $(STATE)/airflow-migrate.log 2>&1 || { tail -20 $(STATE)/airflow-migrate.log; exit 1; }
	$(BIN)/python scripts/run_nightly.py $(if $(RUN_CONF),'$(RUN_CONF)')

# the live DAG once on scripts/run_live.py's short conf (DEFAULT_CONF: live-zipf-1.4, kg, pkg, dc,
# sg, flink and spark-sql, 8 s phases twice, on Flink and Spark); a RUN_CONF replaces it
live: export SKEWBENCH_FLINK_PYTHON := $(FLINK_PYTHON)
live: $(READY) $(FLINK_STAMP)
	@mkdir -p $(STATE)/mlflow
	$(BIN)/airflow db migrate > $(STATE)/airflow-migrate.log 2>&1 || { tail -20 $(STATE)/airflow-migrate.log; exit 1; }
	$(BIN)/python scripts/run_live.py $(if $(RUN_CONF),'$(RUN_CONF)')

datasets: $(READY)
	$(BIN)/skewbench datasets generate catalog --set default --root $(ROOT) --validate
	@for d in $(ROOT)/*/; do [ -f "$$d/_skewbench.json" ] && { echo; $(BIN)/skewbench datasets describe "$$d"; }; done; true
	@echo; echo "datasets are in $(ROOT)"

ui: $(READY)
	@mkdir -p $(STATE)/mlflow
	@scripts/ui.sh start

ui-stop:
	@scripts/ui.sh stop

CLUSTER_ARGS ?=
cluster: $(READY)
	@$(BIN)/skewbench cluster start $(CLUSTER_ARGS)

cluster-stop:
	@$(BIN)/skewbench cluster stop

test: $(READY) bytecode | browser
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q $(XDIST) $(DURATIONS) -m "not reproduction" $(PYTEST_ARGS)

# every benchmark runs even when an earlier one misses a target; the exit status says whether all met theirs
bench: $(READY)
	@rc=0; \
	$(BIN)/python benchmarks/bench_generate.py || rc=1; \
	$(BIN)/python benchmarks/bench_grouping.py all || rc=1; \
	$(BIN)/python benchmarks/bench_cli.py || rc=1; \
	$(BIN)/python benchmarks/bench_advise.py || rc=1; \
	$(BIN)/python benchmarks/bench_sweep.py || rc=1; \
	$(BIN)/python benchmarks/bench_scaling.py || rc=1; \
	$(BIN)/python benchmarks/bench_allocation.py || rc=1; \
	$(BIN)/python benchmarks/bench_partitioners.py || rc=1; \
	$(BIN)/python benchmarks/bench_nightly.py || rc=1; \
	exit $$rc

docs: $(READY)
	$(BIN)/skewbench results doc --out docs/results.md

# the paper-reproduction checks: every test marked reproduction, and every timing check (measured
# engine time against predictions, tests marked timing); make test skips them.
# reproduce-slow: make reproduce and make slow in one go, as CI runs them: the reproductions and the
# slow checks in one run on both cores (one start-up and one tail where a core waits, not two:
# about 2 min less than the two targets one after the other), then the timing checks alone
reproduce: CHECKS := reproduction and not timing
reproduce-slow: CHECKS := (reproduction or slow) and not timing
reproduce reproduce-slow: export SKEWBENCH_FLINK_PYTHON := $(FLINK_PYTHON)
reproduce-slow: | browser
reproduce reproduce-slow: $(READY) bytecode $(FLINK_STAMP)
	@# two runs: the checks on both cores, then the timing checks alone, with nothing beside them;
	@# both always run, the first failure's status is make's (5, nothing selected by PYTEST_ARGS, is
	@# not a failure)
	@rc=0; SKEWBENCH_REPRODUCE=full $(BIN)/python -m pytest -q $(XDIST) $(DURATIONS) -m "$(CHECKS)" $(PYTEST_ARGS) tests || rc=$$?; \
	  [ $$rc -eq 5 ] && rc=0; \
	  echo "the timing checks alone (measured engine time against predictions, nothing else running)"; \
	  SKEWBENCH_REPRODUCE=full $(BIN)/python -m pytest -q $(DURATIONS) -m "timing" $(PYTEST_ARGS) tests || { r=$$?; [ $$r -eq 5 ] || [ $$rc -ne 0 ] || rc=$$r; }; \
	  exit $$rc

# the slow integration checks, the rest of what make test skips (tests marked slow, neither
# reproduction nor timing): the fault tests under Airflow's real scheduler, the UI in a browser,
# the live DAG's runs, the 10^7-tuple generation check, the long conformance and end-to-end cases
slow: export SKEWBENCH_FLINK_PYTHON := $(FLINK_PYTHON)
slow: $(READY) bytecode $(FLINK_STAMP) | browser
	@SKEWBENCH_REPRODUCE=full $(BIN)/python -m pytest -q $(XDIST) $(DURATIONS) -m "slow and not reproduction and not timing" $(PYTEST_ARGS) tests; \
	  rc=$$?; [ $$rc -eq 5 ] && rc=0; exit $$rc

# the deployed stack (docs/deploy.md): Debian's Docker engine, docker-compose 1.29 and mmdebstrap
# when missing; images built with no registry (bases from Debian's packages when the public ones
# cannot be pulled); the whole stack started, the nightly run through it and checked, then removed
docker-tools:
	@command -v dockerd >/dev/null && command -v docker-compose >/dev/null && command -v mmdebstrap >/dev/null || \
	  { echo "installing Debian's docker.io, docker-compose and mmdebstrap"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose mmdebstrap >/dev/null; }

images: | docker-tools
	@scripts/stack.sh with-daemon scripts/stack.sh images

deploy-test: $(READY) bytecode | docker-tools
	@scripts/stack.sh with-daemon sh -c 'scripts/stack.sh images && \
	  SKEWBENCH_DEPLOY_TEST=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider -m deploy tests/deploy'
	@scripts/stack.sh daemon-status | grep -qx "not running" || { scripts/stack.sh daemon-status; echo "our Docker daemon, its processes or its mounts are left"; exit 1; }

lock:
	$(BIN)/uv pip compile pyproject.toml --extra airflow --extra dev --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 --generate-hashes -o requirements.lock

lock-flink:
	$(BIN)/uv pip compile requirements-flink.in --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 --generate-hashes -o requirements-flink.lock

clean:
	rm -rf $(VENV) $(FLINK_VENV) $(STATE) .pytest_cache .hypothesis
