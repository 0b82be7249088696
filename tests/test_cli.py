"""End-to-end tests of the `rlrecipes` command, run as users run it (a subprocess)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY
from tests.helpers.scripted_model import answering, scripted_model


def rlrecipes(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def test_help_lists_commands():
    out = rlrecipes("--help")
    assert out.returncode == 0
    for command in ("train", "recipes", "config"):
        assert command in out.stdout


@pytest.mark.integration
def test_recipes_table_comes_from_the_registry():
    from rlrecipes.recipes import load_all

    out = rlrecipes("recipes")
    assert out.returncode == 0
    for name, cls in load_all().items():
        assert name in out.stdout and cls.status in out.stdout


@pytest.mark.integration
def test_config_show_prints_the_resolved_config():
    out = rlrecipes("config", "show", "trainer.max_steps=7", "recipe.beta=0.01")
    assert out.returncode == 0
    assert "max_steps: 7" in out.stdout and "beta: 0.01" in out.stdout and "${" not in out.stdout


@pytest.mark.integration
@pytest.mark.parametrize(
    "args,needle",
    [
        (("config", "show", "trainer.lerning_rate=1"), "unknown key 'trainer.lerning_rate'; valid keys here:"),
        (("train", "recipe=dapoo"), "unknown recipe 'dapoo'; valid: "),
        (("train", "recipe.name=foo", "--dry-run"), "recipe.name='foo': unknown recipe; valid: clip_cov, dapo,"),
        (("train", "-m", "seed=1,2", "data=nope"), "unknown data 'nope'; valid: "),
    ],
)
def test_mistakes_are_one_line_errors(args, needle):
    out = rlrecipes(*args)
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2
    assert needle in text and "Traceback" not in text
    assert len(text.splitlines()) == 1, text


@pytest.mark.integration
def test_train_writes_a_complete_run_directory(tmp_path):
    run = tmp_path / "run"
    # a scripted policy (tests/helpers/scripted_model.py) answers 95 to every problem, on every machine:
    # right on 3 of the 64 held-out problems, so accuracies that could be wrong
    base = scripted_model(tmp_path / "model", answering("95"))
    out = rlrecipes("train", *TINY, f"model.name_or_path={base}", f"run_dir={run}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("config.yaml", "metrics.jsonl", "summary.json", "versions.json", "model/model.safetensors"):
        assert (run / name).is_file(), name
    summary = json.loads((run / "summary.json").read_text())
    # the summary's held-out accuracies are the starting model's and the saved model's (every
    # group is unanimous, so no advantage moved the policy)
    assert summary["accuracy_before"] == heldout_greedy_accuracy(base) == 3 / 64
    assert summary["accuracy_after"] == heldout_greedy_accuracy(run / "model") == 3 / 64
    assert summary["wall_seconds"] > 0 and summary["steps"] == 2
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for key in (
        "reward_mean",
        "reward_std",
        "accuracy",
        "kl",
        "entropy",
        "clip_ratio_low",
        "clip_ratio_high",
        "completion_length_mean",
        "step_time",
        "tokens_per_second",
        "wall_time",
    ):
        assert key in rows[0], key
    # when each step ended, on the clock: the second step's end is the first's plus its duration
    assert abs(rows[1]["wall_time"] - rows[0]["wall_time"] - rows[1]["step_time"]) < 0.002
    versions = json.loads((run / "versions.json").read_text())
    assert versions["trl"] and versions["torch"] and "git_commit" in versions
    assert " train " in versions["command"] and f"run_dir={run}" in versions["job_overrides"]  # rerunnable
    # the same run_dir again is refused: runs are never overwritten
    again = rlrecipes("train", *TINY, f"run_dir={run}", cwd=tmp_path)
    assert again.returncode == 2 and "already holds a run" in again.stdout + again.stderr


def heldout_greedy_accuracy(model_dir: Path) -> float:
    """Greedy accuracy of a model folder on the TINY task's held-out problems, measured here."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import greedy_accuracy
    from rlrecipes.models import load_model
    from tests.conftest import compose

    cfg = compose()
    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(model_dir), cfg.model)
    prompts = [render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt) for it in problems.eval]
    answers = [it["answer"] for it in problems.eval]
    return greedy_accuracy(
        model, tok, prompts, answers, problems.verify, max_new_tokens=cfg.trainer.max_completion_length
    )


@pytest.mark.integration
def test_a_run_that_fails_before_training_leaves_its_run_dir_reusable(toy_model_dir, tmp_path):
    run = tmp_path / "run"
    bad = rlrecipes(
        "train", *TINY, "recipe=ttrl", "recipe.dynamic_sampling.enabled=true", f"run_dir={run}", cwd=tmp_path
    )
    assert bad.returncode == 2 and "cannot be combined with recipe.dynamic_sampling.enabled=true" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr and not run.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")  # a folder the user made: only our files go
    assert (
        rlrecipes(
            "train", *TINY, "recipe=ttrl", "recipe.dynamic_sampling.enabled=true", f"run_dir={kept}", cwd=tmp_path
        ).returncode
        == 2
    )
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]
    good = rlrecipes("train", *TINY, "recipe=ttrl", "trainer.max_steps=1", f"run_dir={run}", cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr


@pytest.mark.integration
def test_multirun_sweeps_a_2x2_grid(toy_model_dir, tmp_path):
    out = rlrecipes(
        "train",
        "-m",
        *TINY,
        "trainer.max_steps=1",
        "seed=0,1",
        "trainer.learning_rate=1e-4,2e-4",
        f"output_root={tmp_path}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    summaries = sorted(tmp_path.glob("multirun/*/*/summary.json"))
    assert len(summaries) == 4
    configs = [(json.loads(p.read_text())["seed"]) for p in summaries]
    assert sorted(configs) == [0, 0, 1, 1]
    [sweep] = tmp_path.glob("multirun/*")  # only the runs (and Hydra's multirun.yaml), no empty job folders
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == [p.parent.name for p in summaries]


@pytest.mark.integration
def test_train_from_a_local_model_folder_and_a_jsonl_file(toy_model_dir, tmp_path):
    """Any folder works as model.name_or_path; a jsonl with a field mapping works as data."""
    rows = [{"question": f"{a}+{b}", "gold": str(a + b)} for a, b in [(1, 2), (3, 4), (10, 5), (7, 7)]]
    rows.append({"question": "2+2", "gold": ""})  # no usable answer: reported, not trained on
    data = tmp_path / "sums.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    run = tmp_path / "run"
    out = rlrecipes(
        "train",
        *TINY,
        f"model.name_or_path={toy_model_dir}",
        "data.source=file",
        f"data.path={data}",
        f"data.eval_path={data}",
        "data.problem_field=question",
        "data.answer_field=gold",
        "trainer.prompts_per_rollout=2",
        "trainer.micro_batch_size=8",
        f"run_dir={run}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 rows left out: row 4 (no gold)" in " ".join(out.stdout.split())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_train_problems"] == 4 and summary["model"] == str(toy_model_dir)


@pytest.mark.integration
@pytest.mark.parametrize(
    "args", [["--help"], *([c, "--help"] for c in ("report", "plot", "select", "config", "launch-config"))]
)
def test_light_commands_import_no_heavy_library(args):
    """`rlrecipes --help` lists the commands from `cli.COMMANDS`, and the commands that read
    run directories or print configs start without torch, transformers, TRL or vLLM."""
    code = (
        f"import sys\nfrom rlrecipes.cli import main\ntry:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'vllm') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "Usage" in out.stdout and "HEAVY []" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


def test_the_listed_help_is_each_commands_own_first_line():
    import click
    import typer

    from rlrecipes.cli import COMMANDS, LazyCommands, app

    group = typer.main.get_command(app)
    ctx = click.Context(group)
    for name, (_, listed) in COMMANDS.items():
        command = LazyCommands.get_command(group, ctx, name)
        assert command.get_short_help_str(limit=1000) == listed, name
