"""The training job under a real multi-process launch on CPU (gloo), in the README's form:
`accelerate launch --config_file $(rlrecipes launch-config ddp) --num_processes 2 -m
rlrecipes.cli train ...` (on a CPU machine accelerate's `--cpu` or a MULTI_CPU config
start only one process; the DDP config starts two, and `trainer.use_cpu=true` makes them
form a gloo group). Every test asserts the world size it got."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY
from tests.helpers.processes import accelerate_launcher
from tests.helpers.scripted_model import answering, scripted_model

ROOT = Path(__file__).resolve().parents[1]
ENTRY = str(ROOT / "tests" / "helpers" / "multiprocess_entry.py")
pytestmark = pytest.mark.e2e


def launch(processes: int, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, *accelerate_launcher(processes), ENTRY, "train", *TINY, *overrides]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def metrics_on_one_and_two_processes(settings: list[str], keys: tuple[str, ...], tmp_path: Path) -> dict:
    """{process count: the `keys` of every metrics.jsonl row} for the same run on 1 and on 2 processes."""
    seen = {}
    for n in (1, 2):
        out = launch(n, *settings, f"run_dir={tmp_path / str(n)}", cwd=tmp_path)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert json.loads((tmp_path / str(n) / "summary.json").read_text())["world_size"] == n
        seen[n] = [{k: row[k] for k in keys} for row in metrics(tmp_path / str(n))]
    return seen


def test_two_processes_share_one_run_dir_and_measure_held_out_accuracy_once(toy_model_dir, tmp_path):
    out = launch(2, f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["world_size"] == 2
    assert [row["step"] for row in metrics(tmp_path / "run")] == [1, 2]  # one writer, no step twice
    assert out.stdout.count("held-out accuracy before RL") == 1 and out.stdout.count("held-out accuracy after RL") == 1
    assert summary["accuracy_before"] is not None and summary["accuracy_after"] is not None
    assert (tmp_path / "run" / "model" / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no second run directory

    # the same run_dir again: refused once, with one line, by a launch that exits
    again = launch(2, f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert again.returncode != 0
    errors = [line for line in (again.stdout + again.stderr).splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "already holds a run" in errors[0]


def test_held_out_accuracy_does_not_depend_on_the_process_count(tmp_path):
    """Each process generates for its share of the held-out problems; the gathered verdicts
    must give the single-process number. A scripted policy (tests/helpers/scripted_model.py) answers 95
    to every problem, on every machine: right on held-out problems 24, 36 and 49 of 64, one in
    the first process's share (0-31) and two in the second's, so a share lost or counted alone
    reads 1/64, 2/64, 1/32 or 2/32 instead of 3/64."""
    model = scripted_model(tmp_path / "model", answering("95"))
    runs = {}
    for n in (1, 2):
        out = launch(
            n, f"model.name_or_path={model}", "trainer.max_steps=1", f"run_dir={tmp_path / str(n)}", cwd=tmp_path
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        runs[n] = json.loads((tmp_path / str(n) / "summary.json").read_text())
        assert runs[n]["world_size"] == n
    assert runs[1]["accuracy_before"] == runs[2]["accuracy_before"] == 3 / 64


def test_dynamic_sampling_fills_the_global_batch_as_one_process_does(toy_model_dir, tmp_path):
    """DAPO's filter on a scripted reward (mixed groups depend on the prompt only): with 2
    processes the rounds, generated and filtered counts match the single-process run on the
    same seed and data, i.e. the quota is counted globally (a per-process quota needs more
    rounds whenever the mixed groups fall unevenly)."""
    settings = [
        "recipe=dapo",
        "recipe.rewards=[{name: scripted_groups, weight: 1.0}]",
        "recipe.dynamic_sampling.filter=scripted_groups",
        "recipe.dynamic_sampling.max_rounds=20",
        "trainer.max_steps=3",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    ]
    keys = (
        "dynamic_sampling/rounds",
        "dynamic_sampling/prompts_generated",
        "dynamic_sampling/filtered_fraction",
        "dynamic_sampling/surplus_discarded",
        "dynamic_sampling/prompts_kept",
    )
    seen = metrics_on_one_and_two_processes(settings, keys, tmp_path)
    assert seen[1] == seen[2]
    assert all(row["dynamic_sampling/prompts_kept"] == 4 for row in seen[2])
    assert any(row["dynamic_sampling/rounds"] > 1 for row in seen[2])  # the filter did act


def test_ttrl_votes_over_whole_groups_as_one_process_does(tmp_path):
    """TTRL's vote on 2 processes, each holding 2 of a step's 4 groups: the diagnostics are the
    gathered batch's, as on one process. A scripted policy answers 142 to every problem, so of
    the TINY data's first four (golds 110, 142, 33, 124) exactly one label is right: the groups
    of one process alone would read 0 or 1/2, never the batch's 1/4."""
    model = scripted_model(tmp_path / "model", answering("142"))
    settings = [
        f"model.name_or_path={model}",
        "data.max_examples=4",
        "recipe=ttrl",
        "trainer.max_steps=2",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    ]
    keys = ("ttrl/label_accuracy", "ttrl/majority_ratio", "ttrl/reward_accuracy")
    seen = metrics_on_one_and_two_processes(settings, keys, tmp_path)
    step = {"ttrl/label_accuracy": 0.25, "ttrl/majority_ratio": 1.0, "ttrl/reward_accuracy": 0.25}
    assert seen[1] == seen[2] == [step, step]


@pytest.mark.parametrize(
    "recipe",
    [
        ["recipe=intuitor"],
        ["recipe=one_shot", "recipe.examples=[68+42]", "recipe.rows=8"],
        ["recipe=spurious", "reward=random"],
    ],
    ids=["intuitor", "one_shot", "spurious"],
)
def test_the_other_recipes_train_on_two_processes(recipe, toy_model_dir, tmp_path):
    out = launch(2, *recipe, "trainer.eval.before=false", f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["steps"] == 2
    assert [row["step"] for row in metrics(tmp_path / "run")] == [1, 2]
