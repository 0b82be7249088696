"""benchkit: the command line every bench takes, where its result goes, and how it is written."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import benchkit
import pytest

from tests.helpers.processes import alive

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
    import torch  # which kernels torch runs: two CPU types train the same toy to different weights

    assert record["machine"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_ci95_halfwidth_by_hand():
    # mean 1.0, sample stdev 0.1, n = 3: t(0.975, 2 df) = 4.303, half-width 4.303 * 0.1 / sqrt(3)
    assert benchkit.ci95_halfwidth([1.0, 1.1, 0.9]) == pytest.approx(0.248434, abs=1e-6)
    assert benchkit.ci95_halfwidth([1.0]) == math.inf


def test_pass_at_ks_is_the_unbiased_estimator_averaged_over_problems():
    # one problem, 8 samples, 2 right: pass@1 = 2/8; pass@4 = 1 - C(6,4)/C(8,4) = 1 - 15/70; pass@8 = 1
    # (the biased 1 - (1 - c/n)^k would give pass@4 = 1 - 0.75^4 = 0.6836)
    assert benchkit.pass_at_ks([2], 8) == {"pass@1": 0.25, "pass@4": 0.7857, "pass@8": 1.0}
    # three problems with 2, 0 and 8 right: the mean of the per-problem estimates
    # pass@1 (0.25 + 0 + 1) / 3; pass@4 (55/70 + 0 + 1) / 3 = 0.595238; pass@8 (1 + 0 + 1) / 3
    assert benchkit.pass_at_ks([2, 0, 8], 8) == {"pass@1": 0.4167, "pass@4": 0.5952, "pass@8": 0.6667}
    with pytest.raises(ValueError, match="at least one problem"):
        benchkit.pass_at_ks([], 8)


def test_sampled_pass_at_k_counts_right_samples_per_problem(monkeypatch):
    # problem a: 2 of 8 samples right; problem b: 8 of 8. Pooled over problems (10 of 16) pass@4 would
    # be 1 - C(6,4)/C(16,4) = 0.9918; per problem it is (55/70 + 1) / 2 = 0.892857.
    texts = {"a": ["1", "1", "0", "0", "0", "0", "0", "0"], "b": ["2"] * 8}
    seen = {}

    def fake_samples(model, cfg, items, samples, temperature):
        seen.update(model=model, samples=samples, temperature=temperature)
        return [texts[it["id"]] for it in items]

    monkeypatch.setattr(benchkit, "sample_completions", fake_samples)
    items = [{"id": "a", "answer": "1"}, {"id": "b", "answer": "2"}]
    got = benchkit.sampled_pass_at_k("model-dir", None, items, lambda text, answer: text == answer, temperature=0.6)
    assert got == {"pass@1": 0.625, "pass@4": 0.8929, "pass@8": 1.0}
    assert seen == {"model": "model-dir", "samples": 8, "temperature": 0.6}  # 8 samples at the run's temperature


def test_pass_at_k_stats_per_k_over_seeds():
    runs = [{"pass@1": 0.2, "pass@8": 0.6}, {"pass@1": 0.4, "pass@8": 0.8}]
    # mean 0.3 and 0.7; sample stdev of two values d apart is d / sqrt(2) = 0.2 / 1.41421 = 0.141421
    assert benchkit.pass_at_k_stats(runs) == {
        "pass@1": {"mean": 0.3, "stdev": 0.1414, "min": 0.2, "max": 0.4},
        "pass@8": {"mean": 0.7, "stdev": 0.1414, "min": 0.6, "max": 0.8},
    }


def test_an_error_is_recorded_as_its_type_and_first_line():
    assert benchkit.error_line(RuntimeError("non-finite loss\nat step 3")) == "RuntimeError: non-finite loss"
    assert benchkit.error_line(KeyError()) == "KeyError: "


def _boom(message: str) -> None:
    raise ValueError(message)


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel kills a process for memory


def _hung_in_here() -> None:
    time.sleep(600)


def test_a_spawned_run_returns_its_value_and_raises_its_error_here():
    assert benchkit.run_spawned(divmod, 7, 2) == (3, 1)
    with pytest.raises(ValueError, match="from the child") as raised:
        benchkit.run_spawned(_boom, "from the child")
    assert "_boom" in "".join(raised.value.__notes__)  # the child's traceback comes with it


def test_a_spawned_run_that_dies_raises_instead_of_waiting_for_ever():
    # multiprocessing.Pool.apply never returns once its worker is killed (a case hung the CI's
    # bench_doctor smoke run for its whole 20 minutes)
    with pytest.raises(ChildProcessError, match="exit code -9"):
        benchkit.run_spawned(_killed)


def test_a_spawned_run_past_its_time_shows_where_it_hung_and_is_killed(capfd):
    with pytest.raises(TimeoutError, match="did not finish in 5 s"):
        benchkit.run_spawned(_hung_in_here, timeout_s=5)
    assert "_hung_in_here" in capfd.readouterr().err  # the child's stack at the timeout
    assert not [p for p in multiprocessing.active_children() if p.name == "spawned _hung_in_here"]  # killed


def _writes_its_pid_and_waits(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    time.sleep(600)


def test_a_spawned_run_ends_with_a_bench_killed_outright(tmp_path):
    """SIGKILL leaves the bench no chance to end its run: Linux sends the run SIGTERM
    (PR_SET_PDEATHSIG), where it would otherwise train on, an orphan."""
    pid_file = tmp_path / "run.pid"
    script = (
        "import benchkit\n"
        "from tests.benchmarks.test_benchkit import _writes_its_pid_and_waits\n"
        f"benchkit.run_spawned(_writes_its_pid_and_waits, {str(pid_file)!r})\n"
    )
    paths = os.pathsep.join([str(benchkit.REPO / "benchmarks"), str(benchkit.REPO)])
    bench = subprocess.Popen([sys.executable, "-c", script], cwd=benchkit.REPO, env={**os.environ, "PYTHONPATH": paths})
    run = None
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() and bench.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the pid written, not half of it
        run = int(pid_file.read_text())
        bench.kill()
        bench.wait()
        deadline = time.monotonic() + 30
        while alive(run) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(run)
    finally:
        bench.kill()
        if run is not None and alive(run):
            os.kill(run, signal.SIGKILL)


def test_a_jsonl_store_drops_a_last_line_cut_short_by_a_kill(tmp_path):
    store = tmp_path / "zoo" / "records.jsonl"
    benchkit.append_jsonl(store, {"case": "healthy/grpo", "seed": 1, "loss": math.nan})
    with store.open("a") as f:
        f.write('{"case": "healthy/da')
    assert benchkit.read_jsonl(store) == [{"case": "healthy/grpo", "seed": 1, "loss": None}]
    assert benchkit.read_jsonl(tmp_path / "missing.jsonl") == []


def test_a_digest_names_the_settings_not_their_order():
    assert benchkit.digest({"steps": 30, "overrides": []}) == benchkit.digest({"overrides": [], "steps": 30})
    assert benchkit.digest({"steps": 30, "overrides": []}) != benchkit.digest({"steps": 20, "overrides": []})
    assert len(benchkit.digest({})) == 16


def test_the_starting_model_is_found_as_the_run_finds_it(monkeypatch, tmp_path):
    """The recipe's warm-start key (J1's judge toy, not the arithmetic toy) and the run's cache_dir:
    a bench that keyed the toy by data.synthetic or dropped cache_dir scored another model."""
    from rlrecipes.compose import compose_config
    from rlrecipes.training import job

    seen = {}

    def resolve(model_cfg, task, key, cache_dir, log):
        seen.update(key=key, cache_dir=cache_dir)
        return "toy-folder"

    monkeypatch.setattr(job, "resolve_model_path", resolve)
    cfg = compose_config("train", ["recipe=j1", f"cache_dir={tmp_path}"])
    assert benchkit.starting_model(cfg) == "toy-folder"
    assert seen["cache_dir"] == str(tmp_path)
    assert seen["key"]["judge_pairs"] is not None and "judge" in seen["key"]
    assert seen["key"]["seed"] == cfg.data.synthetic.seed


def test_an_sft_stage_starts_from_the_toy_of_its_synthetic_task(monkeypatch):
    """`rlrecipes sft` has no recipe (bench_curriculum's warm-up stage): the key is data.synthetic."""
    from rlrecipes.compose import compose_config

    seen = {}

    def resolve(model_cfg, task, key, cache_dir, log):
        seen.update(key=key, task=task)
        return "toy-folder"

    monkeypatch.setattr("rlrecipes.models.resolve_model_path", resolve)
    cfg = compose_config("sft")
    assert benchkit.starting_model(cfg) == "toy-folder"
    assert seen["key"] == cfg.data.synthetic and seen["task"].train


def test_kept_runs_continue_where_an_earlier_invocation_stopped(tmp_path):
    trained = []

    def train(name):
        def fn():
            trained.append(name)
            return {"after": len(trained)}

        return fn

    first = benchkit.KeptRuns(tmp_path, {"commit": "a" * 40})
    assert first.run(["seed=0", "arm=x"], train("x0")) == {"after": 1}
    # a later invocation (another commit) trains only what is missing
    later = benchkit.KeptRuns(tmp_path, {"commit": "b" * 40})
    assert later.run(["seed=0", "arm=x"], train("again")) == {"after": 1}
    assert later.run(["seed=1", "arm=x"], train("x1")) == {"after": 2}
    assert trained == ["x0", "x1"]
    seen = later.provenance()
    assert seen["runs"] == 2 and seen["trained_at_commits"] == ["a" * 40, "b" * 40]
    # a run whose overrides differ in any way is another run
    assert later.run(["seed=0", "arm=y"], train("y0")) == {"after": 3}


def test_without_a_folder_every_run_trains_and_nothing_is_kept(tmp_path):
    calls = []
    kept = benchkit.KeptRuns(None, {"commit": "a" * 40})
    for _ in range(2):
        kept.run(["seed=0"], lambda: calls.append(1) or {})
    assert len(calls) == 2 and not list(tmp_path.iterdir())


def test_only_a_full_run_keeps_its_runs(tmp_path):
    full = benchkit.parse_bench_args("bench_tools.py", MODES, overrides=True, argv=["--results-dir", str(tmp_path)])
    assert benchkit.kept_runs_folder(full) == tmp_path / "kept-runs" / "tools"
    smoke = benchkit.parse_bench_args("bench_tools.py", MODES, overrides=True, argv=["--smoke"])
    assert benchkit.kept_runs_folder(smoke) is None


def test_a_record_from_kept_runs_names_every_commit_that_trained_them():
    record = {
        "commit": "c" * 40,
        "date": "2026-12-07T04:00:00+00:00",
        "machine": {"cpus": 2, "load_average": [1.0, 2.04, 3.0]},
        "result": {"kept_runs": {"trained_at_commits": ["a" * 40, "c" * 40]}},
    }
    assert (
        benchkit.provenance(record) == "`ccccccc`, runs trained at `aaaaaaa`, `ccccccc`, 2026-12-07, 2 cores, load 2.0"
    )
    record["result"]["kept_runs"]["trained_at_commits"] = ["c" * 40]
    assert benchkit.provenance(record) == "`ccccccc`, 2026-12-07, 2 cores, load 2.0"
