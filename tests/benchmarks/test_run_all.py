"""run_all.py learns how each bench ended from the status file the bench writes, not from its
printed lines: a bench that prints a record and then fails is a failure, one that ends without
a word is a failure, a skip carries its reason."""

from __future__ import annotations

import json
from pathlib import Path

import benchkit
import pytest
import run_all

BENCHMARKS = Path(benchkit.__file__).resolve().parent

SCRIPTS = {
    "bench_writes": """
from benchkit import parse_bench_args, save_result
args = parse_bench_args(__file__, {"full": {"seeds": [0]}})
save_result(args, {"accuracy": 0.5})
""",
    "bench_skips": """
from benchkit import parse_bench_args, skip
skip(parse_bench_args(__file__, {"full": {"seeds": [0]}}), "needs a GPU")
""",
    "bench_prints_then_fails": """
import json
print(json.dumps({"bench": "prints_then_fails", "result": {}}))
raise SystemExit(1)
""",
    "bench_says_nothing": "print('{}')\n",
}


@pytest.fixture
def benches(tmp_path, monkeypatch):
    for name, text in SCRIPTS.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.setattr(run_all, "HERE", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(BENCHMARKS))
    return tmp_path


def test_each_ending_is_read_from_the_status_file(benches, tmp_path):
    out = tmp_path / "results"
    assert run_all.run_one("bench_writes", "quick", out)["status"] == "ok"
    assert json.loads((out / "writes.json").read_text())["result"] == {"accuracy": 0.5}
    skipped = run_all.run_one("bench_skips", "quick", out)
    assert (skipped["status"], skipped["reason"]) == ("skipped", "needs a GPU")
    assert not (out / "skips.json").exists()
    failed = run_all.run_one("bench_prints_then_fails", "quick", out)
    assert (failed["status"], failed["exit_code"]) == ("failed", 1)
    silent = run_all.run_one("bench_says_nothing", "quick", out)
    assert (silent["status"], silent["exit_code"]) == ("failed", 0)
