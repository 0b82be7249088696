"""Exact resume: a run killed at any moment and resumed gives the uninterrupted run's
metrics and weights (CPU, fixed seed: same losses within float tolerance)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[1]
ENTRY = str(ROOT / "tests" / "helpers" / "multiprocess_entry.py")
pytestmark = pytest.mark.e2e
# DAPO with dynamic sampling: its refill stream is engine state a resume must restore too. The
# filter is the scripted reward (mixed groups by prompt), so rounds happen on the weak tiny model;
# the sampled completions still decide the gradient, completion lengths and the accuracy logged.
SETTINGS = [
    "recipe=dapo",
    "recipe.rewards=[{name: scripted_groups, weight: 1.0}]",
    "recipe.dynamic_sampling.filter=scripted_groups",
    "recipe.dynamic_sampling.max_rounds=30",
    "trainer.max_steps=6",
    "trainer.checkpoints.every=2",
    "trainer.checkpoints.keep_last=2",
    "trainer.eval.before=false",
    "trainer.eval.after=false",
]
TIMING = ("step_time", "training_step_time", "tokens_per_second", "wall_time")


def train(*overrides: str, cwd: Path, fault: str | None = None, bare: bool = False) -> subprocess.CompletedProcess:
    """`rlrecipes train` with the tests' settings; `bare`: only `overrides` (a resume command
    as the interruption printed it, which takes every other setting from the run)."""
    # a wide console: rich's log lines then keep each message on one line, as the tests read them
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    env.pop("RLRECIPES_TEST_FAULT", None)
    if fault:
        env["RLRECIPES_TEST_FAULT"] = fault
    return subprocess.run(
        [sys.executable, ENTRY, "train", *([] if bare else [*TINY, *SETTINGS]), *overrides],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def rows(run_dir: Path) -> list[dict]:
    out = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMING} for row in out]


def weights(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(run_dir / "model" / "model.safetensors")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, toy_model_dir):
    folder = tmp_path_factory.mktemp("uninterrupted")
    out = train(f"run_dir={folder / 'run'}", cwd=folder)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return folder / "run"


def assert_same_run(resumed: Path, reference: Path) -> None:
    import torch

    got, want = rows(resumed), rows(reference)
    assert [r["step"] for r in got] == [1, 2, 3, 4, 5, 6]  # no step repeated or skipped
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float) and isinstance(b[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), (a["step"], key)
            else:
                assert a[key] == b[key], (a["step"], key)
    w1, w2 = weights(resumed), weights(reference)
    assert all(torch.allclose(w1[k], w2[k], atol=1e-5) for k in w2)


@pytest.mark.parametrize("fault", ["kill_after_step:3", "kill_in_checkpoint:4"])
def test_sigkill_then_resume_matches_the_uninterrupted_run(fault, uninterrupted, tmp_path):
    run = tmp_path / "run"
    died = train(f"run_dir={run}", cwd=tmp_path, fault=fault)
    assert died.returncode == -9
    if fault.startswith("kill_in_checkpoint"):
        assert (run / "checkpoints" / "checkpoint-4" / "model.safetensors").exists()  # written, not completed
    resumed = train(f"run_dir={run}", "resume=true", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "resuming from" in resumed.stdout and "(step 2)" in resumed.stdout
    assert_same_run(run, uninterrupted)
    log = (run / "resumes.log").read_text()  # both die before checkpoint-4 is complete
    assert "from checkpoint-2" in log and ("removed incomplete checkpoint-4" in log) == ("in_checkpoint" in fault)
    assert sorted(p.name for p in (run / "checkpoints").glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-6"]


def test_sigterm_saves_a_checkpoint_and_stops_with_the_resume_command(uninterrupted, tmp_path):
    run = tmp_path / "run"
    stopped = train(f"run_dir={run}", cwd=tmp_path, fault="term_after_step:3")
    assert stopped.returncode == 128 + 15, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    # the signal arrives while step 3 is logged: step 4 runs to its end, then the run stops
    text = " ".join(stopped.stdout.split())
    assert "stopped after step 4 with a checkpoint" in text and f"resume=true run_dir={run}" in text
    assert (run / "checkpoints" / "checkpoint-4" / "rlrecipes_checkpoint.json").is_file()
    assert not (run / "summary.json").exists()
    # the printed command alone: max_steps=6 (not the default), the tiny model and every other
    # setting come from the run's config.yaml, so the resumed run is the run that was started
    resumed = train("resume=true", f"run_dir={run}", cwd=tmp_path, bare=True)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert_same_run(run, uninterrupted)
    assert json.loads((run / "summary.json").read_text())["steps"] == 6


def test_resume_refuses_other_settings_and_finished_runs(uninterrupted, tmp_path):
    out = train(f"run_dir={uninterrupted}", "resume=true", cwd=tmp_path)
    assert out.returncode == 2 and "finished already" in out.stdout
    run = tmp_path / "run"
    died = train(f"run_dir={run}", cwd=tmp_path, fault="kill_after_step:3")
    assert died.returncode == -9
    out = train(f"run_dir={run}", "resume=true", "trainer.learning_rate=1e-3", cwd=tmp_path)
    assert out.returncode == 2
    assert "resume=true with other settings than the run was started with: trainer.learning_rate" in out.stdout
    assert "error:" in out.stdout and len([line for line in out.stdout.splitlines() if line.startswith("error:")]) == 1


def test_disk_full_at_the_final_save_is_one_line_and_the_checkpoint_finishes_the_run(tmp_path):
    run = tmp_path / "run"
    full = train(f"run_dir={run}", cwd=tmp_path, fault="disk_full_at_final_save:0")
    assert full.returncode == 2
    text = " ".join(full.stdout.split())
    assert f"cannot write the trained model to {run / 'model'}: No space left on device" in text
    assert "checkpoint-6 is intact" in text and "Traceback" not in full.stdout + full.stderr
    resumed = train(f"run_dir={run}", "resume=true", cwd=tmp_path)  # space freed: the model is written
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (run / "model" / "model.safetensors").is_file() and (run / "summary.json").is_file()
    assert [r["step"] for r in rows(run)] == [1, 2, 3, 4, 5, 6]


def test_disk_full_in_a_checkpoint_is_one_line_and_the_run_continues(uninterrupted, tmp_path):
    run = tmp_path / "run"
    full = train(f"run_dir={run}", cwd=tmp_path, fault="disk_full_in_checkpoint:4")
    assert full.returncode == 2, full.stdout[-3000:] + full.stderr[-3000:]
    text = " ".join(full.stdout.split())
    assert "a write failed while training (Error while serializing" in text
    assert (
        f"the last complete checkpoint checkpoint-2 is intact: free space, then `rlrecipes train resume=true run_dir={run}` continues from it"
        in text
    )
    assert "Traceback" not in full.stdout + full.stderr
    resumed = train("resume=true", f"run_dir={run}", cwd=tmp_path, bare=True)  # space freed
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "removed incomplete checkpoint-4" in (run / "resumes.log").read_text()
    assert_same_run(run, uninterrupted)


def test_a_run_with_no_complete_checkpoint_resumes_from_step_0_in_place(uninterrupted, tmp_path):
    run = tmp_path / "run"
    full = train(f"run_dir={run}", cwd=tmp_path, fault="disk_full_in_checkpoint:2")
    assert full.returncode == 2
    assert "no checkpoint is complete yet: free space, then `rlrecipes train resume=true" in " ".join(
        full.stdout.split()
    )
    again = train(f"run_dir={run}", cwd=tmp_path)  # a rerun is refused, and says what to do
    assert again.returncode == 2 and f"continue it with `rlrecipes train resume=true run_dir={run}`" in " ".join(
        again.stdout.split()
    )
    resumed = train("resume=true", f"run_dir={run}", cwd=tmp_path, bare=True)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "training it again from step 0" in " ".join(resumed.stdout.split())
    assert "from step 0 (no complete checkpoint)" in (run / "resumes.log").read_text()
    assert_same_run(run, uninterrupted)


def test_a_damaged_last_checkpoint_falls_back_to_the_one_before(uninterrupted, tmp_path):
    run = tmp_path / "run"
    died = train(f"run_dir={run}", cwd=tmp_path, fault="kill_after_step:5")
    assert died.returncode == -9
    weights_file = run / "checkpoints" / "checkpoint-4" / "model.safetensors"
    weights_file.write_bytes(weights_file.read_bytes()[:-10])  # truncated: a torn copy
    resumed = train("resume=true", f"run_dir={run}", cwd=tmp_path, bare=True)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    text = " ".join(resumed.stdout.split())
    assert "checkpoint-4 cannot be resumed from: model.safetensors is damaged" in text
    assert "(step 2)" in text and (run / "checkpoints" / "damaged-checkpoint-4" / "model.safetensors").is_file()
    assert_same_run(run, uninterrupted)


def test_a_moved_run_resumes_and_overrides_are_logged(uninterrupted, tmp_path):
    started = tmp_path / "started"
    died = train(f"run_dir={started}", cwd=tmp_path, fault="kill_after_step:3")
    assert died.returncode == -9
    moved = tmp_path / "moved"
    started.rename(moved)
    resumed = train("resume=true", f"run_dir={moved}", "trainer.max_steps=8", cwd=tmp_path, bare=True)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "resuming with the run's saved settings, except: trainer.max_steps 6 -> 8" in " ".join(
        resumed.stdout.split()
    )
    assert "(overrides: trainer.max_steps 6 -> 8)" in (moved / "resumes.log").read_text()
    assert json.loads((moved / "summary.json").read_text())["steps"] == 8


# Two prompts-per-rollout batches of 4 make an epoch of 8 rows: step 3 is in the second epoch,
# and a run killed after it resumes from checkpoint-2, at the epoch boundary. TRL's sampler alone
# would then draw the first epoch's prompt order again (engine/epoch_order.py).
EPOCHS = [
    *TINY,
    "data.max_examples=8",
    "trainer.max_steps=6",
    "trainer.checkpoints.every=2",
    "trainer.eval.before=false",
    "trainer.eval.after=false",
]


def test_a_run_resumed_in_a_later_epoch_draws_the_uninterrupted_runs_prompts(toy_model_dir, tmp_path):
    reference, run = tmp_path / "reference", tmp_path / "run"
    out = train(*EPOCHS, f"run_dir={reference}", cwd=tmp_path, bare=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    died = train(*EPOCHS, f"run_dir={run}", cwd=tmp_path, fault="kill_after_step:3", bare=True)
    assert died.returncode == -9
    resumed = train(*EPOCHS, f"run_dir={run}", "resume=true", cwd=tmp_path, bare=True)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert_same_run(run, reference)
