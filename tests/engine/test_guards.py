"""Reward failures get a fallback and are counted; too many stop the run; non-finite
advantages never reach the loss."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.engine.guards import RewardGuard, check_advantages
from rlrecipes.errors import UserError
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[2]


def fake_trainer(step=0):
    logged = {}
    accelerator = SimpleNamespace(device="cpu", reduce=lambda t, reduction: t)
    return SimpleNamespace(
        accelerator=accelerator,
        state=SimpleNamespace(global_step=step),
        log_metric=lambda name, value: logged.__setitem__(name, value),
        logged=logged,
    )


def named(fn, name):
    fn.__name__ = name
    return fn


def test_a_raising_reward_gives_the_fallback_and_is_counted():
    guard = RewardGuard(fallback=-1.0, max_failure_rate=1.0, timeout_s=None)
    broken = guard.wrap(named(lambda prompts, completions, **kw: 1 / 0, "broken"))
    assert broken.__name__ == "broken"  # TRL logs rewards/<name>
    assert broken(prompts=["p", "p"], completions=["a", "b"]) == [-1.0, -1.0]
    trainer = fake_trainer()
    guard.after_scoring(trainer, {"advantages": torch.zeros(2)}, None)
    assert trainer.logged == {"reward_failures/broken": 2, "grading/errors": 0, "grading/timeouts": 0}
    assert guard.first_error["broken"].startswith("ZeroDivisionError")


def test_non_finite_values_are_failures_but_none_means_not_applicable():
    guard = RewardGuard(fallback=0.0, max_failure_rate=1.0, timeout_s=None)
    fn = guard.wrap(named(lambda prompts, completions, **kw: [math.nan, None, math.inf, 0.5], "r"))
    assert fn(prompts=["p"] * 4, completions=["a"] * 4) == [0.0, None, 0.0, 0.5]
    assert guard.failures["r"] == 2 and guard.calls["r"] == 4


@pytest.mark.integration
def test_a_hung_reward_is_cut_off_by_its_cpu_budget():
    import time

    def spins(prompts, completions, **kw):
        while True:  # a parser stuck on a pathological completion
            pass

    guard = RewardGuard(fallback=0.0, max_failure_rate=1.0, timeout_s=0.3)
    started = time.process_time()
    assert guard.wrap(named(spins, "spins"))(prompts=["p"] * 3, completions=["a"] * 3) == [0.0, 0.0, 0.0]
    assert time.process_time() - started < 5
    assert guard.failures["spins"] == 3 and "trainer.reward_guard.timeout_s=0.3" in guard.first_error["spins"]
    # the timer is gone afterwards: a later slow-but-finite call is not cut off
    fine = guard.wrap(named(lambda prompts, completions, **kw: [1.0] * len(completions), "fine"))
    assert fine(prompts=["p"], completions=["a"]) == [1.0]


def test_past_the_rate_the_run_stops_with_one_line():
    guard = RewardGuard(fallback=0.0, max_failure_rate=0.25, timeout_s=None)
    fn = guard.wrap(named(lambda prompts, completions, **kw: [math.nan] + [1.0] * (len(completions) - 1), "half"))
    fn(prompts=["p"] * 4, completions=["a"] * 4)  # 1 of 4 = 25%: allowed
    guard.after_scoring(fake_trainer(), {"advantages": torch.zeros(4)}, None)
    fn(prompts=["p"] * 2, completions=["a"] * 2)  # 2 of 6 = 33%: over
    with pytest.raises(
        UserError,
        match=r"reward 'half' failed on 2 of 6 completions \(33.3% > "
        r"trainer.reward_guard.max_failure_rate=0.25\); first failure: returned nan",
    ):
        guard.after_scoring(fake_trainer(), {"advantages": torch.zeros(2)}, None)


def test_the_graders_timeouts_and_errors_are_logged_per_step(monkeypatch):
    import rlrecipes.engine.guards as guards
    from rlrecipes.grading import GradingCounts

    counts = iter([GradingCounts(errors=2, timeouts=1), GradingCounts(errors=0, timeouts=0)])
    monkeypatch.setattr(guards, "take_grading_counts", lambda: next(counts))
    guard, trainer = RewardGuard(fallback=0.0, max_failure_rate=0.05, timeout_s=None), fake_trainer()
    guard.after_scoring(trainer, {"advantages": torch.zeros(2)}, None)
    assert (trainer.logged["grading/errors"], trainer.logged["grading/timeouts"]) == (2, 1)
    guard.after_scoring(trainer, {"advantages": torch.zeros(2)}, None)  # counts since the last step
    assert (trainer.logged["grading/errors"], trainer.logged["grading/timeouts"]) == (0, 0)


def test_non_finite_advantages_stop_the_step():
    check_advantages({"advantages": torch.tensor([0.5, -0.5])}, 3)
    with pytest.raises(UserError, match="step 3: 1 of 2 advantages are NaN or infinite .* weights were not changed"):
        check_advantages({"advantages": torch.tensor([0.5, math.inf])}, 3)


def entry(*overrides, cwd):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "helpers" / "multiprocess_entry.py"),
            "train",
            *TINY,
            "trainer.eval.before=false",
            "trainer.eval.after=false",
            *overrides,
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


@pytest.mark.integration
def test_a_run_survives_occasional_failures_and_stops_on_constant_ones(toy_model_dir, tmp_path):
    ok = entry(
        "recipe.rewards=[{name: accuracy, weight: 1.0}, {name: first_is_nan, weight: 1.0}]",
        "trainer.reward_guard.max_failure_rate=0.5",
        f"run_dir={tmp_path / 'ok'}",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "ok" / "metrics.jsonl").read_text().splitlines()]
    assert [row["reward_failures/first_is_nan"] for row in rows] == [1, 1]  # one NaN per call, 16 completions
    assert all(row["reward_failures/accuracy"] == 0 for row in rows)

    stop = entry(
        "recipe.rewards=[{name: accuracy, weight: 1.0}, {name: always_raises, weight: 1.0}]",
        f"run_dir={tmp_path / 'stop'}",
        cwd=tmp_path,
    )
    assert stop.returncode == 2
    errors = [line for line in stop.stdout.splitlines() if line.startswith("error:")]
    assert (
        len(errors) == 1
        and "reward 'always_raises' failed on 16 of 16 completions" in " ".join(stop.stdout.split())
        and "Traceback" not in stop.stdout + stop.stderr
    )
