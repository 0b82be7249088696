"""bench_engine_overhead's comparison of two runs side by side: only the steps both spent training
at the same time count, and the two runs get disjoint cores."""

from __future__ import annotations

import sys

import bench_engine_overhead as bench
import pytest
from bench_engine_overhead import Steps


def test_only_the_steps_both_runs_trained_at_the_same_time_are_compared():
    # ours starts training at 10 (steps 10-11, 11-12, 12-13); plain at 10.5 (10.5-12.5, 12.5-14.5):
    # both train from 10.5 to 13, so ours keeps its 2nd and 3rd steps and plain its 1st
    ours = Steps(times=[1.0, 1.0, 1.0], ends=[11.0, 12.0, 13.0], lengths=[5.0, 6.0, 7.0])
    plain = Steps(times=[2.0, 2.0], ends=[12.5, 14.5], lengths=[4.0, 8.0])
    kept_ours, kept_plain = bench.overlapping(ours, plain)
    assert kept_ours == Steps([1.0, 1.0], [12.0, 13.0], [6.0, 7.0])
    assert kept_plain == Steps([2.0], [12.5], [4.0])
    # the same runs in the other order keep the same steps
    assert bench.overlapping(plain, ours) == (kept_plain, kept_ours)


def test_runs_that_never_overlap_leave_nothing_to_compare():
    early = Steps([1.0, 1.0], [1.0, 2.0], [3.0, 3.0])
    late = Steps([1.0], [5.0], [3.0])
    assert bench.overlapping(early, late) == (Steps([], [], []), Steps([], [], []))


def test_warm_up_steps_are_dropped_before_the_overlap_and_per_token_times_skip_empty_steps():
    run = Steps([4.0, 2.0, 3.0], [4.0, 6.0, 9.0], [2.0, 0.0, 6.0])
    assert run.after(1) == Steps([2.0, 3.0], [6.0, 9.0], [0.0, 6.0])
    assert run.per_token() == [2.0, 0.5]  # 4 s / 2 tokens, the 0-token step left out, 3 s / 6 tokens


def test_side_by_side_needs_two_disjoint_sets_of_the_runs_threads(monkeypatch):
    monkeypatch.setattr(bench.os, "sched_getaffinity", lambda _: {0, 1, 2, 3, 5})
    assert bench.core_sets(1) == ({0}, {1})
    assert bench.core_sets(2) == ({0, 1}, {2, 3})
    assert bench.core_sets(3) is None  # 5 usable cores: not 3 each; the pairs run one after the other


def test_a_run_is_waited_for_until_it_writes_its_file_and_one_that_ends_first_ends_the_bench(tmp_path):
    signal = tmp_path / "signal"
    writes = bench.Run(
        [sys.executable, "-c", f"import time; time.sleep(0.3); open({str(signal)!r}, 'w').write('x')"],
        tmp_path / "writes",
        None,
    )
    writes.wait_for(signal)
    assert signal.read_text() == "x"
    writes.wait()
    quits = bench.Run([sys.executable, "-c", "pass"], tmp_path / "quits", None)
    with pytest.raises(SystemExit, match="quits run ended before it wrote never"):
        quits.wait_for(tmp_path / "never")
