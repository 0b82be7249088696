"""Every bench runs end to end (a few steps, one seed, the tiny toy) and its record holds what the
README's table reads, so a bench that breaks fails here instead of on the day it is rerun."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import readme_figures
from benchkit import bench_name

from tests.conftest import SHARED_DATA

BENCHMARKS = Path(readme_figures.__file__).resolve().parent
# bench_atlas writes one record per task (atlas_<task>.json) and has no README row until its first stored
# result; tests/benchmarks/test_bench_atlas.py runs its smoke and checks its records
OWN_SMOKE_TEST = {"bench_atlas"}
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("bench_*.py") if p.stem not in OWN_SMOKE_TEST)
TAKES_DATA = {"grading", "grading_bounds", "eval_threads", "vllm"}  # --data-dir: local MATH-500
NEEDS_DATA = {"grading", "eval_threads", "vllm"}  # grading_bounds falls back to built-in answers
FIELDS = ("bench", "mode", "commit", "commit_dirty", "date", "machine", "wall_seconds", "settings", "seeds", "result")

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_smoke_run_writes_a_record_the_readme_can_quote(script, tmp_path):
    name = bench_name(script)
    if name in NEEDS_DATA and not SHARED_DATA.is_dir():
        pytest.skip(f"needs MATH-500 under {SHARED_DATA}")
    if name == "vllm" and importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed (the bench then writes nothing)")
    if name == "real_model":
        from bench_real_model import missing_requirements

        if reason := missing_requirements():
            pytest.skip(f"{reason} (the bench then writes nothing)")
    command = [sys.executable, str(BENCHMARKS / f"{script}.py"), "--smoke", "--results-dir", str(tmp_path)]
    if name in TAKES_DATA:
        command += ["--data-dir", str(SHARED_DATA)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / f"{name}.json").read_text())
    assert all(key in record for key in FIELDS), sorted(set(FIELDS) - set(record))
    assert record["bench"] == name and record["mode"] == "smoke"
    assert json.loads(done.stdout.strip().splitlines()[-1]) == record
    rows = [row for row in readme_figures.ROWS if row.bench == name]
    assert rows, f"{name} has no row in the README's bench table"
    for row in rows:  # every field the README's row reads is there (a KeyError otherwise)
        assert readme_figures.UNMEASURED not in readme_figures.render_row(row, record)
