#!/usr/bin/env bash
# make gpu-check: the CUDA paths (tests/gpu/) on this machine, in one command, with one JSON
# result and one table of what ran, passed, failed and was skipped (and why).
#
#   make gpu-check                                   # result: benchmarks/results/gpu_check.json
#                                                    # (without CUDA: outputs/gpu_check.json)
#   scripts/gpu_check.sh /tmp/gpu_check.json         # elsewhere
#
# For a GPU machine without network: first `make gpu-wheelhouse` on a networked one, then copy
# the checkout with its .whl/ folder. The wheels are installed into a temporary folder put first
# on PYTHONPATH; the system's packages are not touched. Without CUDA the tests skip, each with
# its reason, and the result says so.
#
# Settings (environment):
#   PY                     python with torch (default: .venv/bin/python if present, else python3)
#   WHEELHOUSE             wheels to install first (default .whl; none there: nothing installed)
#   GPU_CHECK_BUDGET_S     the whole pytest run, killed after this (default 540: inside 9 minutes)
#   GPU_TEST_TIMEOUT_S     each test, through pytest-timeout where installed, and each run a test
#                          starts (default 240)
#   GPU_CHECK_COMMIT       the commit to record when the checkout has no .git (a copied tree)
#   GPU_CHECK_ARGS         extra pytest arguments (e.g. -k lora)
# Exit status: 0 when nothing failed, 1 when a test failed or the run was cut off, 2 on bad use.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
if [ -z "${PY:-}" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
# a try without CUDA never replaces a GPU machine's stored result
if "$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
    RESULT=${1:-benchmarks/results/gpu_check.json}
else
    RESULT=${1:-outputs/gpu_check.json}
fi
WHEELHOUSE=${WHEELHOUSE:-.whl}
BUDGET_S=${GPU_CHECK_BUDGET_S:-540}
TEST_TIMEOUT_S=${GPU_TEST_TIMEOUT_S:-240}
WORK=$(mktemp -d -t gpu-check.XXXXXX)
SITE=$WORK/site
trap 'rm -rf "$WORK"' EXIT
started=$(date +%s.%N)

wheels=()
if compgen -G "$WHEELHOUSE/*.whl" >/dev/null; then
    wheels=("$WHEELHOUSE"/*.whl)
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "${wheels[@]}"; then
        echo "error: the wheels in $WHEELHOUSE do not install with $PY (one version of each? CPython 3.12?)"
        exit 2
    fi
fi
export PYTHONPATH="$SITE:$ROOT:$ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}"
export RLRECIPES_GPU_TEST_TIMEOUT_S=$TEST_TIMEOUT_S PYTHONUNBUFFERED=1
# the tests build their toy models locally: never wait on the Hub from a machine without network
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}

timeout_args=()
if "$PY" -c "import pytest_timeout" 2>/dev/null; then
    timeout_args=(--timeout "$TEST_TIMEOUT_S")
fi
# gpu_check_plugin records each test as it ends, so a run cut off by the budget still reports
# what finished and which test was running
# shellcheck disable=SC2086
timeout -k 15 "$BUDGET_S" "$PY" -m pytest tests/gpu -v -rA -p no:cacheprovider -p gpu_check_plugin \
    "${timeout_args[@]}" ${GPU_CHECK_ARGS:-} --gpu-check-log "$WORK/tests.jsonl" 2>&1 | tee "$WORK/pytest.log"
pytest_rc=${PIPESTATUS[0]}

"$PY" scripts/gpu_check_report.py --tests "$WORK/tests.jsonl" --pytest-rc "$pytest_rc" --out "$RESULT" \
    --started "$started" --budget-s "$BUDGET_S" --test-timeout-s "$TEST_TIMEOUT_S" --site "$SITE" \
    --wheelhouse "$WHEELHOUSE"
