"""Completion budgets follow the model (model.max_completion_length), and a run whose
completions mostly hit the limit says so in its progress line and in summary.json."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.engine.progress import MetricsWriter, RichProgress, truncation_warning
from tests.conftest import TINY


def test_smollm2_gets_a_budget_its_answers_fit_and_the_toy_keeps_its_own():
    assert compose_config("train", []).trainer.max_completion_length == 16
    assert compose_config("train", ["model=smollm2-135m"]).trainer.max_completion_length == 256
    # an explicit limit wins; the model's budget is only the default
    set_ = compose_config("train", ["model=smollm2-135m", "trainer.max_completion_length=64"])
    assert set_.trainer.max_completion_length == 64
    assert compose_config("train", ["trainer=gpu"]).trainer.max_completion_length == 3072  # paper scale


def test_the_synthetic_benchmarks_limit_follows_the_models_budget():
    from rlrecipes.eval.plan import plan_benchmark

    toy = compose_config("eval", ["limit=1"])
    smollm2 = compose_config("eval", ["limit=1", "model=smollm2-135m"])
    assert plan_benchmark(toy, "arithmetic").sampling.max_new_tokens == 32  # the benchmark's, above the toy's 16
    assert plan_benchmark(smollm2, "arithmetic").sampling.max_new_tokens == 256
    fixed = compose_config("eval", ["limit=1", "model=smollm2-135m", "protocol.max_new_tokens=8"])
    assert plan_benchmark(fixed, "arithmetic").sampling.max_new_tokens == 8


def test_most_completions_cut_is_one_warning():
    rows = [{"truncated_fraction": 0.9}, {"truncated_fraction": 0.8}, {"truncated_fraction": 0.2}, {"loss": 1.0}]
    warning = truncation_warning(rows, 16)  # mean (0.9 + 0.8 + 0.2) / 3 = 63%
    assert warning.startswith("63% of completions hit trainer.max_completion_length=16 (mean over 3 logged steps)")
    assert truncation_warning([{"truncated_fraction": 0.5}] * 2, 16) is None  # half is not most


def test_the_progress_line_and_the_final_metrics_carry_the_warning(tmp_path):
    lines: list[str] = []
    writer = MetricsWriter(tmp_path / "metrics.jsonl")
    progress = RichProgress(writer, terminal=False, every=1, log=lines.append)
    args = SimpleNamespace(max_completion_length=16)
    state = SimpleNamespace(is_world_process_zero=True, global_step=0, max_steps=2)
    progress.on_train_begin(args, state, None)
    for step, cut in ((1, 0.94), (2, 0.75)):
        state.global_step = step
        writer.rows.append({"step": step, "reward_mean": 0.0, "accuracy": 0.0, "truncated_fraction": cut})
        progress.on_log(args, state, None, logs={"loss": 0.1})
    writer.on_train_end(args, state, None)
    progress.on_train_end(args, state, None)
    steps = [line for line in lines if line.startswith("train step")]
    assert "truncated 94%!" in steps[0] and "truncated 75%!" in steps[1]
    said = [line for line in lines if line.startswith("warning:")]
    assert said[0].startswith("warning: 94% of this step's completions hit trainer.max_completion_length=16")
    assert said[1].startswith("warning: 84% of completions hit")  # (94 + 75) / 2, at the end
    assert len(said) == 2  # the per-step warning once, the run's at the end
    assert writer.rows[-1]["warnings"] == [truncation_warning(writer.rows, 16)]  # summary.json's final_metrics


def test_an_eval_whose_completions_are_mostly_cut_warns_in_its_line_and_summary():
    from rlrecipes.eval.progress import EvalProgress
    from rlrecipes.eval.summary import truncation_warnings

    lines: list[str] = []
    with EvalProgress(4, every=1, log=lines.append, terminal=False) as progress:
        progress.start_benchmark("math500")
        progress.advance(2, truncated=3, completions=4)
        progress.advance(2, truncated=0, completions=4)
    assert "(50%) truncated 75%!," in lines[0] and "truncated" not in lines[1]  # 3 of 8 overall
    settings = {"math500": {"sampling": {"max_new_tokens": 3072}}}
    results = {"math500": {"truncated_fraction": 0.75}, "aime24": {"truncated_fraction": 0.1}}
    assert truncation_warnings(results, settings) == [
        "math500: 75% of completions hit the 3072-token limit, so their answers are cut; raise protocol.max_new_tokens"
    ]


@pytest.mark.integration
def test_a_training_run_cut_by_its_limit_warns_in_80_columns(tmp_path):
    from tests.helpers.scripted_model import answering, scripted_model

    base = scripted_model(tmp_path / "model", answering("95"))  # "Answer: 95": 10 tokens, cut at 4
    run = tmp_path / "run"
    args = [*TINY, "trainer.progress=true", f"model.name_or_path={base}", "trainer.max_completion_length=4"]
    args.append("--no-preflight")  # every completion is cut: the run is refused without it
    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "train", *args, f"run_dir={run}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "truncated 100%!" in out.stdout and "warning: 100% of completions hit" in out.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["final_metrics"]["warnings"][0].startswith("100% of completions hit trainer.max_completion_length=4")
    ours = [line for line in out.stdout.splitlines() if line.startswith(("train", "warning", "    "))]
    assert len(ours) >= 4 and max(map(len, ours)) <= 80
