# The two set-up commands of the README: `make demo` and `make test`. Each is self-sufficient on a
# fresh Debian machine: it installs a JRE and ZooKeeper (apt-get) when missing, creates .venv and
# installs kadmin into it: the demos only kadmin and its runtime dependencies (`.`), the tests also the
# dev and Spark extras (~850 MB) on top, in the same .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
BASE_STAMP := $(VENV)/.installed-base
STAMP := $(VENV)/.installed
# setuptools' editable build prints a boxed UserWarning about folders named like the package (this checkout is
# one): not for a user to act on, so the installs hide UserWarnings (errors and pip's own messages still show)
QUIET_BUILD := ignore::UserWarning

.PHONY: demo demo-kraft demo-migration test test-times test-fast system venv venv-base lint completions docs bench clean kafka dist

system:
	@scripts/ensure-system.sh

# A .venv made before the distribution was renamed holds it as `kadmin`: uninstalled first so one
# distribution owns the `kadmin` command.
$(BASE_STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@if $(PY) -m pip show --quiet kadmin >/dev/null 2>&1; then $(PY) -m pip uninstall --quiet --yes kadmin; fi
	PYTHONWARNINGS=$(QUIET_BUILD) $(PY) -m pip install --quiet -e .
	@touch $(BASE_STAMP)

$(STAMP): $(BASE_STAMP)
	PYTHONWARNINGS=$(QUIET_BUILD) $(PY) -m pip install --quiet -e '.[dev,spark]'
	@touch $(STAMP)

venv-base: $(BASE_STAMP)

venv: $(STAMP)

# The demo runs three real Kafka 3.9.1 brokers (ZooKeeper mode) when scripts/fetch-kafka.sh can provide
# them (Maven, java, network; the home is its last stdout line), else the emulated brokers.
demo: system venv-base
	@log=$$(mktemp); home=$$(scripts/fetch-kafka.sh 3.9.1 2>$$log | tail -n 1); \
	if [ -z "$$home" ] || [ ! -d "$$home/libs" ]; then \
		echo "demo: no real Kafka 3.9.1 ($$(tail -n 1 $$log)); falling back to emulated brokers" >&2; home=; fi; \
	rm -f $$log; PATH="$(CURDIR)/$(VENV)/bin:$$PATH" scripts/demo.sh $$home

# A real KRaft quorum of Kafka 4.3.1: 3 controllers + 3 brokers (no fallback: KRaft needs real Kafka).
demo-kraft: system venv-base
	@log=$$(mktemp); home=$$(scripts/fetch-kafka.sh 4.3.1 2>$$log | tail -n 1); \
	if [ -z "$$home" ] || [ ! -d "$$home/libs" ]; then \
		echo "demo-kraft: no real Kafka 4.3.1 ($$(tail -n 1 $$log))" >&2; rm -f $$log; exit 1; fi; \
	rm -f $$log; PATH="$(CURDIR)/$(VENV)/bin:$$PATH" scripts/demo-kraft.sh $$home

# The ZooKeeper -> KRaft migration of a 3.9.1 cluster, phase by phase, then onto 4.3.1 (real Kafka only).
demo-migration: system venv-base
	@log=$$(mktemp); old=$$(scripts/fetch-kafka.sh 3.9.1 2>$$log | tail -n 1); new=$$(scripts/fetch-kafka.sh 4.3.1 2>>$$log | tail -n 1); \
	if [ ! -d "$$old/libs" ] || [ ! -d "$$new/libs" ]; then \
		echo "demo-migration: no real Kafka 3.9.1 and 4.3.1 ($$(tail -n 1 $$log))" >&2; rm -f $$log; exit 1; fi; \
	rm -f $$log; PATH="$(CURDIR)/$(VENV)/bin:$$PATH" scripts/demo-migration.sh $$old $$new

# The suite on TEST_WORKERS pytest-xdist workers. loadscope keeps a module (or a class) on one worker, so its real
# cluster starts once; tests/support/schedule.py orders the scopes longest first from tests/scope_seconds.json.
TEST_WORKERS ?= 4
# kadmin's and the tests' bytecode, written once before a run even where PYTHONDONTWRITEBYTECODE is set (as on the
# project's machines): else each of the suite's ~1,000 `python -m kadmin` processes compiles every module it
# imports (0.48 against 0.33 CPU-s for `sandbox status`). An installed kadmin has its bytecode from pip.
BYTECODE := PYTHONDONTWRITEBYTECODE= $(PY) -m compileall -q kadmin tests bench > /dev/null
XDIST := -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Temporary files on a tmpfs when there is one (scripts/test-tmpdir.sh), removed when the run passes and kept,
# named on stderr, when it fails.
test: system venv kafka
	@$(BYTECODE)
	@tmp=$$(scripts/test-tmpdir.sh); \
	if [ -n "$$tmp" ]; then export TMPDIR="$$tmp"; echo "test: temporary files in $$tmp (tmpfs)" >&2; fi; \
	$(PY) -m pytest -q --durations=30 $(XDIST); rc=$$?; \
	if [ -n "$$tmp" ]; then \
		if [ $$rc -eq 0 ]; then rm -rf "$$tmp"; else echo "test: the failed run's files are kept in $$tmp" >&2; fi; \
	fi; \
	exit $$rc
	$(VENV)/bin/ruff check kadmin tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The whole suite once, writing each scope's measured seconds to tests/scope_seconds.json (the order above and
# bench/README.md's budget per directory).
test-times: venv kafka
	@$(BYTECODE)
	KADMIN_TEST_TIMES=tests/scope_seconds.json $(PY) -m pytest -q $(XDIST)

# The unit and CLI tests only (no ZooKeeper, no Spark): under a minute.
test-fast: venv
	$(PY) -m pytest -q tests/unit tests/cli

# Real Apache Kafka for tests/kafka (Maven Central -> ~/.cache/kadmin/kafka/<version>/libs): the last
# ZooKeeper-mode line and the newest 4.x. Idempotent; KADMIN_KAFKA_CACHE moves the cache.
kafka:
	scripts/fetch-kafka.sh 3.9.1
	scripts/fetch-kafka.sh 4.3.1
	scripts/fetch-kafka.sh 4.0.0  # only its kafka-metadata-quorum text format is tested

lint: venv
	$(VENV)/bin/ruff check kadmin tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

completions: venv
	for s in bash zsh fish; do $(VENV)/bin/kadmin completion $$s > completions/kadmin.$$s; done

docs: venv
	$(PY) -m kadmin.cli.docs

# Every benchmark, one after another (a few hours: million.py builds 1,000,000 partitions, kraft_scale.py and
# history_kraft.py run real KRaft clusters); each prints its numbers, the run ends with every issue-13 ratio
# next to its goal. The full output of each is kept in $(BENCH_OUT)/NAME.log.
BENCH_OUT ?= .bench
BENCHES = startup brokers scan partitions ids history history_kraft million kraft_scale realkafka roll
bench: SHELL := /bin/bash
bench: system venv kafka
	mkdir -p $(BENCH_OUT)
	set -o pipefail; for b in $(BENCHES); do \
	  echo "== bench/$$b.py"; $(PY) bench/$$b.py 2>&1 | tee $(BENCH_OUT)/$$b.log || exit 1; done
	@echo "== every ratio next to its goal"
	@for b in $(BENCHES); do grep -H "(goal" $(BENCH_OUT)/$$b.log | grep -v ':{'; done

# The wheel and the sdist in dist/ (PEP 517 build in an isolated environment, its build requirements from PyPI);
# tests/cli/test_dist.py installs the wheel in a fresh venv and runs it.
DIST ?= dist
dist: venv-base
	rm -rf $(DIST)
	$(PY) -m pip install --quiet build
	PYTHONWARNINGS=$(QUIET_BUILD) $(PY) -m build --outdir $(DIST) . >/dev/null
	@ls $(DIST)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache $(DIST)
