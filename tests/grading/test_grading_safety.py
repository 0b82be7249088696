"""Model text is untrusted: never evaluated, pathological input times out, threads are safe."""

import threading
import time

import pytest

from rlrecipes.grading import GradingPool, grade, is_equivalent


@pytest.mark.integration
def test_pathological_factorial_times_out_and_is_wrong():
    start = time.monotonic()
    assert grade("\\boxed{(10^{7})!}", "5", timeout_s=1) is False
    assert time.monotonic() - start < 6


def test_python_in_an_answer_is_never_run(tmp_path, monkeypatch):
    import math_verify.parser

    def forbidden(*args, **kwargs):
        raise AssertionError("sympy parse_expr (which eval()s) must not see model text")

    monkeypatch.setattr(math_verify.parser, "parse_expr", forbidden)
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    for response in (payload, f"\\boxed{{{payload}}}", f"Answer: {payload}"):
        assert grade(response, "12345") is False
    assert not marker.exists()
    assert grade("\\boxed{2+3}", "5") is True  # plain arithmetic still works without it


@pytest.mark.integration
def test_grading_from_a_thread_uses_a_worker_process():
    # math-verify's signal.alarm cannot be armed outside the main thread; grade()
    # must still work (and keep its timeouts) when a thread calls it.
    results = {}

    def run():
        results["sym"] = is_equivalent("\\sqrt{8}", "2\\sqrt{2}")
        results["fast"] = grade("\\boxed{025}", "25")

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=120)
    assert results == {"sym": True, "fast": True}


@pytest.mark.integration
def test_pool_hard_deadline_kills_and_recovers():
    with GradingPool(workers=1, timeout_s=1, hard_timeout_s=0.5) as pool:
        pool.start()
        verdicts = pool.grade_many(["\\boxed{(10^{7})!}", "\\boxed{\\sqrt{8}}", "\\boxed{3}"], ["5", "2\\sqrt{2}", "3"])
        assert verdicts == [False, True, True]
        assert pool.killed >= 1


@pytest.mark.parametrize("junk", ["\\boxed{", "}}}{{{", "\\frac{", "\\begin{pmatrix}", "$$$$", "\x00\x01"])
def test_malformed_latex_is_just_wrong(junk):
    assert grade(junk, "1") is False


def test_workers_that_cannot_start_fail_loudly(monkeypatch):
    # A pool whose workers die at start must raise, not grade everything False.
    pool = GradingPool(workers=1, timeout_s=1, memory_limit_mb=0)
    monkeypatch.setattr(pool, "_spawn", _dead_worker_spawner(pool))
    with pytest.raises(RuntimeError, match="exit before answering"):
        pool.equivalent_many(["\\sqrt{8}"], ["2\\sqrt{2}"])


def _dead_worker_spawner(pool):
    import multiprocessing as mp

    from rlrecipes.grading.pool import _Worker

    def spawn():
        parent, child = mp.get_context("spawn").Pipe()
        proc = mp.get_context("spawn").Process(target=_exit_now, daemon=True)
        proc.start()
        child.close()
        return _Worker(proc, parent, time.monotonic())

    return spawn


def _exit_now() -> None:
    raise SystemExit(3)


# 10x the sizes at which per-box / per-marker rescans took 1.6-11 s: a quadratic extractor would
# need minutes here, a linear one well under a second, so the wide bound below cannot be met by
# chance (a loaded machine) and cannot be missed by a regression (a bound, not a speed claim)
DEGENERATE = 30_000


@pytest.mark.integration
@pytest.mark.parametrize(
    "text",
    [
        "x" * 100 + "\\boxed{" * DEGENERATE,  # a truncated loop of unclosed boxes
        "{" * (5 * DEGENERATE // 3) + "1 and more words",
        "\\boxed{5}" + " Answer: 3\n" * DEGENERATE,  # a repetition loop after the answer
        "the answer is " * DEGENERATE,
        "\\begin{pmatrix}" * DEGENERATE + " 1",
    ],
)
def test_degenerate_responses_are_extracted_in_linear_time(text):
    from rlrecipes.grading import extract

    start = time.monotonic()
    extract(text)
    assert time.monotonic() - start < 30.0


def test_power_towers_are_compared_as_text_within_bounds():
    """2^{2^{34}} is a 2^34-bit integer: sympy would build it in one uninterruptible call (4.5 GB,
    doubling with each +1 in the inner exponent). In-process grade() must stay small and fast."""
    import resource
    import time

    from rlrecipes.grading import grade
    from rlrecipes.grading.equivalence import explosive

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.time()
    assert grade("\\boxed{2^{2^{34}}-2^{2^{34}}+1}", "1") is False
    assert grade("\\boxed{2^{2^{34}}}", "2^{2^{34}}") is True  # the same text is still the same answer
    assert time.time() - started < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # KiB
    assert grade("2^{10}", "1024") and grade("\\boxed{2^{100}}", str(2**100))  # ordinary powers still evaluate
    assert [explosive(x) for x in ("2^{2^{34}}", "10^{5}", "3^{123456}", "1000000!", "x^2")] == [
        True,
        False,
        True,
        True,
        False,
    ]


def test_an_absurdly_nested_fraction_is_not_read_as_its_innermost_part():
    """Reported with an earlier math-verify (read as 1/2); the nesting guard compares such answers
    as text, so the verdict does not depend on the parser's recursion behaviour."""
    from rlrecipes.grading import grade
    from rlrecipes.grading.equivalence import explosive

    nested = "\\frac{1}{" * 110 + "2" + "}" * 110
    assert explosive(nested) and grade(f"\\boxed{{{nested}}}", "\\frac{1}{2}") is False
    assert grade("\\boxed{\\frac{1}{1+\\frac{1}{2}}}", "\\frac{2}{3}") is True  # ordinary nesting evaluates


MEGABYTE_RESPONSES = {
    "newline run inside a box": "\\boxed{1" + "\n" * 1_000_000 + "1}",
    "space run before the answer": "The answer is " + " " * 1_000_000 + "5",
    "unclosed boxes": "\\boxed{" * 200_000,
    "code in a math span": "$" + "print(1)" * 125_000 + "$",
    "a million digits": "1" * 1_000_000,
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(MEGABYTE_RESPONSES))
def test_a_megabyte_response_is_graded_within_bounds(name):
    """Each of these took minutes to hours (quadratic regexes in answer cleaning, a quadratic
    factorial check): answers longer than any real one are compared as text."""
    from rlrecipes.grading import grade

    started = time.monotonic()
    grade(MEGABYTE_RESPONSES[name], "11")
    assert time.monotonic() - started < 15


@pytest.mark.integration
def test_the_eval_cli_rescores_a_megabyte_response_within_bounds(tmp_path):
    import json
    import subprocess
    import sys

    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps({"gold": "11", "completions": list(MEGABYTE_RESPONSES.values())}) + "\n")
    started = time.monotonic()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlrecipes.cli",
            "eval",
            f"generations={path}",
            "benchmark=math500",
            f"run_dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert time.monotonic() - started < 120
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["benchmarks"]["math500"]["problems"] == 1
