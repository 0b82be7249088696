"""`make gpu-check`'s result (scripts/gpu_check_report.py), from a hand-written phase log: each
test's outcome and reason, and a run cut off by its budget or with no CUDA never reads as passed."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check_report.py"
spec = importlib.util.spec_from_file_location("gpu_check_report", SCRIPT)
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def phases(test, *steps):
    """The lines gpu_check_plugin writes for one test: start, then (when, outcome, reason) per phase."""
    out = [{"test": test, "when": "start"}]
    out += [{"test": test, "when": w, "outcome": o, "seconds": 1.5, "reason": r} for w, o, r in steps]
    return out


LOG = [
    *phases("t::ok", ("setup", "passed", None), ("call", "passed", None), ("teardown", "passed", None)),
    *phases(
        "t::bad", ("setup", "passed", None), ("call", "failed", "AssertionError: 1 == 2"), ("teardown", "passed", None)
    ),
    *phases("t::broken_fixture", ("setup", "failed", "RuntimeError: no GPU"), ("teardown", "passed", None)),
    *phases("t::two_gpus", ("setup", "skipped", "needs 2 GPUs"), ("teardown", "passed", None)),
    *phases(
        "t::vllm",
        ("setup", "passed", None),
        ("call", "skipped", "could not import 'vllm'"),
        ("teardown", "passed", None),
    ),
    *phases("t::slow", ("setup", "passed", None)),  # the budget's timeout killed it mid-call
]


def test_each_test_gets_its_outcome_reason_and_time():
    rows = {r["test"]: r for r in report.summarize_tests(LOG)}
    assert [r["outcome"] for r in rows.values()] == ["passed", "failed", "error", "skipped", "skipped", "cut_off"]
    assert rows["t::ok"] == {"test": "t::ok", "outcome": "passed", "seconds": 4.5, "reason": None}
    assert rows["t::bad"]["reason"] == "AssertionError: 1 == 2"
    assert rows["t::broken_fixture"]["reason"] == "RuntimeError: no GPU"
    assert rows["t::two_gpus"]["reason"] == "needs 2 GPUs" and rows["t::vllm"]["reason"] == "could not import 'vllm'"
    assert rows["t::slow"]["reason"] == "still running when the time budget ended the run"
    assert report.count(list(rows.values())) == {"passed": 1, "failed": 1, "error": 1, "skipped": 2, "cut_off": 1}


def test_only_a_complete_run_on_cuda_passes():
    passed = report.summarize_tests(phases("t::ok", ("setup", "passed", None), ("call", "passed", None)))
    skipped = report.summarize_tests(phases("t::gpu", ("setup", "skipped", "needs a CUDA GPU")))
    assert report.status(passed, 0, cuda=True) == "passed"
    assert report.status(passed, 124, cuda=True) == "failed"  # pytest killed by the budget after the last test
    assert report.status(report.summarize_tests(LOG), 1, cuda=True) == "failed"
    assert report.status(skipped, 0, cuda=False) == "no_cuda"  # all skipped: nothing about the GPU was checked
