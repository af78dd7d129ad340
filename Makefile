# Two commands for a fresh machine (see README):
#   make claims   set up, fetch the embedded fixtures, run every claim  -> artifacts/
#   make test     set up, lint (before any fetch), fetch the embedded fixtures, run the unit/property tests of repro/
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is installed first and on its own: on the CPU reference machine `torch==2.13.0`
# resolves to a local CPU wheel; letting pip pick torch as a dependency could pull GBs of CUDA
# wheels. On a GPU machine, override, e.g. `make claims TORCH_SPEC="torch==2.13.0"` from a CUDA index.
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
# the claims run on this many processes (pytest-xdist), each with cores/N torch threads; tests
# that share a module fixture (a pretrained model, a trained trio) stay on one process
# (--dist loadgroup, groups in repro/harness/collection.py). Default 1 (the pytest process itself):
# on the 2-core reference machine `-n 2` (one thread each) showed no gain on this mostly
# matmul-bound run (results/reference-machine.md); use it on machines with more cores.
CLAIMS_PROCS ?= 1
CLAIMS_XDIST := $(if $(filter 1,$(CLAIMS_PROCS)),,-n $(CLAIMS_PROCS) --dist loadgroup)

.PHONY: setup fixtures claims test lint bench clean
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -c constraints.txt -e .
	touch $@

fixtures: setup
	$(BIN)/repro fetch

claims: fixtures
	$(BIN)/python -m pytest claims/ $(CLAIMS_XDIST) $(PYTEST_ARGS)

# the unit tests on this many processes (pytest-xdist, one torch thread each): most are small and
# single-threaded, so on 2 cores `-n 2` ran them in 187 s instead of 355 s (a bf16-native EPYC);
# the slowest 15 are listed so a slowdown shows. TEST_PROCS=1: in the pytest process.
TEST_PROCS ?= 2
TEST_XDIST := $(if $(filter 1,$(TEST_PROCS)),,-n $(TEST_PROCS))

# the lint first (seconds, no network: it needs only the virtualenv): ruff's checks (complexity,
# argument counts, banned aliases) and format, the import contracts (pyproject.toml
# [tool.importlinter]: harness > topics > core > ground, exhaustive; no loops between siblings), the
# house's shape (scripts/house_check.py: module sizes, re-export shims, against tests/house_allow.toml)
# and DESIGN.md's diagram of the floors (scripts/house_diagram.py --check)
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/house_check.py
	$(BIN)/python scripts/house_diagram.py --check

# the lint, then the fixtures (a network fetch on a fresh machine), then the unit/property tests,
# then every model-taking claim on three random-init architecture families
# (tests/test_model_families.py: one process, the families one after the other — each runs claims
# that train and fork a pool, so side by side they oversubscribe the cores),
# then every benchmark once at small sizes as a smoke test
test: lint
	$(BIN)/repro fetch
	$(BIN)/python -m pytest tests/ $(TEST_XDIST) --durations=15 $(PYTEST_ARGS)
	REPRO_FAMILY_TESTS=1 $(BIN)/python -m pytest tests/test_model_families.py -p no:xdist -q
	$(BIN)/python -m pytest benchmarks/ -p no:xdist --benchmark-disable -q

# full benchmark runs (no xdist): numbers under artifacts/benchmarks/
bench: fixtures
	mkdir -p artifacts/benchmarks
	$(BIN)/python -m pytest benchmarks/ -p no:xdist --benchmark-json=artifacts/benchmarks/benchmarks.json $(PYTEST_ARGS)

clean:
	rm -rf artifacts .pytest_cache .hypothesis
