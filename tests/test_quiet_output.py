"""Quiet, readable terminal output: the dependencies' notes filtered once (rlrecipes/quiet.py),
only the main process warning, tables and progress lines within 80 columns, every metric once
and labelled, sweep jobs' progress lines prefixed with their job number."""

import io
import json
import logging
import os
import subprocess
import sys
import warnings
from types import SimpleNamespace

import pytest
from rich.console import Console

from rlrecipes import quiet as quiet_module
from tests.conftest import TINY


@pytest.fixture
def restored_warnings(monkeypatch):
    monkeypatch.setattr(warnings, "filters", list(warnings.filters))
    for key in quiet_module.ENVIRONMENT:
        monkeypatch.delenv(key, raising=False)
    yield
    logging.disable(logging.NOTSET)


def test_quiet_sets_the_dependencies_defaults_but_keeps_the_users(restored_warnings, monkeypatch):
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "INFO")  # the user wants vLLM's lines back
    quiet_module.quiet()
    assert os.environ["VLLM_LOGGING_LEVEL"] == "INFO"
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "error" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger = logging.getLogger("DeepSpeed")  # the object DeepSpeed's own logger will be
    handler = Keep()
    logger.addHandler(handler)
    try:
        logger.warning("Setting accelerator to CPU. If you have GPU or other accelerator, we were unable to detect it.")
        logger.warning("ZeRO-3 is out of memory")
    finally:
        logger.removeHandler(handler)
    assert seen == ["ZeRO-3 is out of memory"]  # only the note about our own choice goes
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("default", message="something else")
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use ReduceOp", FutureWarning, stacklevel=2)
    assert caught == []


def test_only_the_main_rank_warns(restored_warnings, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    quiet_module.quiet()
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn("every rank meets this", UserWarning, stacklevel=2)
    assert caught == [] and logging.root.manager.disable >= logging.WARNING


def test_progress_labels_every_value_and_shows_each_metric_once(tmp_path):
    from rlrecipes.engine.progress import MetricsWriter, RichProgress
    from rlrecipes.recipes.dapo import DAPO
    from rlrecipes.recipes.intuitor import Intuitor

    row = {
        "reward_mean": 0.0,
        "accuracy": 0.25,
        "step_time": 1.5,
        "entropy": 0.5,
        "completion_length_mean": 12.0,
        "truncated_fraction": 0.1,
        "self_certainty/mean": 13.332,
        "dynamic_sampling/rounds": 2,
    }
    for recipe, needle in ((Intuitor, "self_certainty 13.332"), (DAPO, "rounds 2.000")):
        progress = RichProgress(MetricsWriter(tmp_path / "m.jsonl"), extra_keys=recipe.progress_keys, terminal=False)
        progress._plain = True
        parts = progress._stats(row)
        words = " ".join(parts).split()
        assert needle in " ".join(parts)
        assert words.count("entropy") <= 1 and words.count("length") <= 1, parts  # DAPO lists both again
        assert all(len(p.split()) == 2 or p.endswith("s/step") for p in parts), parts  # label + value


def test_a_sweep_jobs_lines_say_which_job(monkeypatch):
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from rlrecipes.display import job_prefix
    from rlrecipes.eval.progress import EvalProgress

    assert job_prefix() == ""  # no Hydra job here
    monkeypatch.setattr(
        HydraConfig, "get", staticmethod(lambda: SimpleNamespace(mode=RunMode.MULTIRUN, job=SimpleNamespace(num=3)))
    )
    lines = []
    with EvalProgress(2, every=1, log=lines.append, terminal=False) as progress:
        progress.start_benchmark("aime24")
        progress.advance(2)
    assert lines[0].startswith("[job 3] eval aime24: 2/2 problems")


def render(table, width: int = 80) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue().splitlines()


def test_report_of_train_and_eval_runs_fits_80_columns(tmp_path):
    from rlrecipes.runs.report import make_report, rich_table
    from tests.test_report import fake_run

    for i in range(2):
        fake_run(
            tmp_path / f"2026-01-0{i}_00-00-00-grpo-arithmetic",
            ["trainer.max_steps=3", f"trainer.learning_rate={i + 1}e-4", "data.synthetic.num_train=1200"],
            f"recipe:\n  name: grpo\nmodel:\n  name: toy\n  name_or_path: /very/long/cache/toy/{i}abcdef0123\n"
            f"data:\n  name: arithmetic\ntrainer:\n  learning_rate: {i + 1}e-4\n  max_steps: 3\nseed: 0\n",
            [{"step": 3, "reward_mean": 0.5, "accuracy": 0.5}],
            {"recipe": "grpo", "seed": 0, "steps": 3, "accuracy_before": 0.25, "accuracy_after": 0.5},
        )
    for i, bench in enumerate(("math500", "aime24")):
        eval_run = tmp_path / f"2026-01-0{i}_00-00-00-eval-{bench}-with-a-long-name"
        eval_run.mkdir()
        (eval_run / "config.yaml").write_text("model:\n  name: smollm2-135m\nlimit: 5\n")
        (eval_run / "versions.json").write_text(json.dumps({"job_overrides": [f"benchmark={bench}", "limit=5"]}))
        summary = {"kind": "eval", "model": "m", "protocol": {"name": "default"}, "seed": 0}
        summary["benchmarks"] = {bench: {"problems": 5, "samples_per_problem": 1, "pass@1": 0.2}}
        (eval_run / "summary.json").write_text(json.dumps(summary))
    lines = render(rich_table(make_report([str(tmp_path)], [], None, False, []), width=80))
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    body = [line for line in lines if line.lstrip().startswith(("2026", "…"))]
    assert len(body) == 4, "\n".join(lines)  # one line per run: no name folded over lines
    assert "20.0" in " ".join(lines) and "50.0" in " ".join(lines)  # both kinds' results shown


def test_judge_and_eval_tables_keep_every_header_whole_at_80_columns(monkeypatch):
    from rlrecipes.commands import judge
    from rlrecipes.eval.report import print_eval_summary

    console = Console(width=80, file=io.StringIO(), color_system=None)
    monkeypatch.setattr(judge, "console", console)
    m = {"pairs": 300, "accuracy": 0.5, "accuracy_mean_order": 0.5, "consistent_accuracy": 0.25}
    m |= {"flip_rate": 0.75, "tie_rate": 0.0, "unparseable_rate": 0.01}
    m["by_category"] = {"llmbar-adver-GPTInst-and-more": {**m, "pairs": 92}}
    judge._print_metrics({"metrics": m, "benchmark": "rewardbench", "model": "/x/" * 30, "headline_metric": "accuracy"})
    out = console.file.getvalue()
    assert "…" not in out.split("\n", 1)[1].split("llmbar")[0]  # no header cut (only the long names)
    assert "unparsed" in out and "flips" in out and max(map(len, out.splitlines())) <= 80
    bench = {"problems": 30, "samples_per_problem": 8, "pass@1": 0.1, "pass@8": 0.3, "maj@8": 0.2}
    bench |= {"no_answer_fraction": 0.0, "truncated_fraction": 0.9, "mean_completion_tokens": 3000.0}
    summary = {"model": "m", "protocol": {"name": "avg8_t06"}, "benchmarks": {"aime24": bench}, "average": {}}
    summary["warnings"] = ["aime24: 90% of completions hit the 3072-token limit, so their answers are cut"]
    eval_console = Console(width=80, file=io.StringIO(), color_system=None)
    print_eval_summary(summary, "RUN", eval_console)
    text = eval_console.file.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= 80 and "warning: aime24: 90%" in text


@pytest.mark.integration
def test_a_sweep_on_80_columns_is_quiet_and_says_whose_lines_these_are(tmp_path):
    from tests.helpers.scripted_model import answering, scripted_model

    base = scripted_model(tmp_path / "model", answering("95"))
    args = [*TINY, "trainer.progress=true", f"model.name_or_path={base}", f"output_root={tmp_path / 'out'}"]
    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "train", "-m", "seed=0,1", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        timeout=900,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    for noise in ("Triton", "[WARNING]", "Writing model shards", "Loading weights", "[transformers]"):
        assert noise not in text, noise
    steps = [line for line in out.stdout.splitlines() if " train step " in line]
    assert [line.split(" train")[0] for line in steps] == ["[job 0]"] * 2 + ["[job 1]"] * 2
    assert max(len(line) for line in text.splitlines()) <= 80, text
