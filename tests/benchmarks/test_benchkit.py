"""benchkit: the command line every bench takes, where its result goes, and how it is written."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import benchkit
import pytest

MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 40, "budget": 40.0, "agreement_only": False},
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "steps": 2},
}


def test_full_run_settings_and_stored_result_file():
    args = benchkit.parse_bench_args("benchmarks/bench_demo.py", MODES, overrides=True, argv=["data=countdown"])
    assert (args.name, args.mode) == ("demo", "full")
    assert args.settings == {"seeds": [0, 1, 2], "steps": 40, "budget": 40.0, "agreement_only": False}
    assert args.overrides == ["data=countdown"]
    assert args.out == benchkit.RESULTS_DIR / "demo.json"


def test_quick_and_smoke_change_only_their_settings_and_never_write_the_stored_file():
    quick = benchkit.parse_bench_args("bench_demo.py", MODES, argv=["--quick"])
    assert quick.settings == {"seeds": [0], "steps": 40, "budget": 40.0, "agreement_only": False}
    assert quick.out.parent == benchkit.REPO / "outputs" / "bench-quick"
    smoke = benchkit.parse_bench_args("bench_demo.py", MODES, overrides=True, argv=["--smoke", "seed=3"])
    assert smoke.settings["seeds"] == [0] and smoke.settings["steps"] == 2
    assert smoke.overrides == [*benchkit.SMOKE_MODEL, "seed=3"]  # the tiny model first, the caller's last
    assert smoke.out.parent == benchkit.REPO / "outputs" / "bench-smoke"


def test_an_explicit_option_wins_over_the_mode():
    args = benchkit.parse_bench_args(
        "bench_demo.py", MODES, argv=["--smoke", "--seeds", "4", "5", "--budget", "2.5", "--agreement-only"]
    )
    assert args.settings == {"seeds": [4, 5], "steps": 2, "budget": 2.5, "agreement_only": True}


def test_quick_and_smoke_together_are_refused():
    with pytest.raises(SystemExit):
        benchkit.parse_bench_args("bench_demo.py", MODES, argv=["--quick", "--smoke"])


def test_a_bench_without_overrides_refuses_key_values():
    with pytest.raises(SystemExit):
        benchkit.parse_bench_args("bench_demo.py", MODES, argv=["seed=3"])


def test_a_scratch_result_never_takes_an_earlier_files_name(tmp_path, monkeypatch):
    monkeypatch.setattr(benchkit, "REPO", tmp_path)
    first = benchkit.result_path("demo", "smoke")
    first.parent.mkdir(parents=True)
    first.write_text("{}")
    second = benchkit.result_path("demo", "smoke")
    assert second != first and not second.exists()
    assert benchkit.result_path("demo", "full", results_dir=tmp_path / "r") == tmp_path / "r" / "demo.json"


def test_a_failed_write_leaves_the_previous_result_intact(tmp_path):
    path = tmp_path / "demo.json"
    benchkit.write_json_atomically(path, {"ratio": 1.0})
    with pytest.raises(TypeError):
        benchkit.write_json_atomically(path, {"ratio": 2.0, "oops": object()})  # fails half-way
    assert json.loads(path.read_text()) == {"ratio": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == ["demo.json"]  # no temporary file left behind


def test_the_record_has_what_a_reader_needs_and_valid_json(tmp_path, capsys):
    args = SimpleNamespace(
        name="demo",
        mode="smoke",
        started=0.0,
        settings={"seeds": [0, 1], "steps": 2},
        overrides=["seed=1"],
        out=tmp_path / "demo.json",
        commit=benchkit.git_commit(),
    )
    benchkit.save_result(args, {"ratio": 1.25, "never_logged": math.nan})
    record = json.loads((tmp_path / "demo.json").read_text())
    assert json.loads(capsys.readouterr().out) == record  # the same record on stdout, one line
    assert record["bench"] == "demo" and record["mode"] == "smoke"
    assert record["seeds"] == [0, 1] and record["settings"] == {"seeds": [0, 1], "steps": 2}
    assert record["result"] == {"ratio": 1.25, "never_logged": None}  # NaN is no JSON number
    assert len(record["commit"]) == 40 and isinstance(record["commit_dirty"], bool)
    assert record["machine"]["cpus"] >= 1 and record["date"][:2] == "20" and record["wall_seconds"] > 0


def test_ci95_halfwidth_by_hand():
    # mean 1.0, sample stdev 0.1, n = 3: t(0.975, 2 df) = 4.303, half-width 4.303 * 0.1 / sqrt(3)
    assert benchkit.ci95_halfwidth([1.0, 1.1, 0.9]) == pytest.approx(0.248434, abs=1e-6)
    assert benchkit.ci95_halfwidth([1.0]) == math.inf
