"""A curriculum phase starts from the previous phase's optimizer state: `trainer.checkpoints.init_optimizer_from`
is checked before anything loads (one line), loads AdamW's moments only (this run's learning
rate stays), refuses an optimizer of other parameters in one line naming both runs, and
`rlrecipes stages` passes phase 1's last checkpoint to phase 2 unless `phase.carry_optimizer`
is off.

Run as a script, this file is the stages' launcher of the integration test: it runs
`rlrecipes ARGS` and saves the optimizer's state as the first optimizer step begins."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


def _run_saving_the_optimizer_before_its_first_step() -> None:
    import torch
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    run_dir = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("run_dir="))
    target = Path(os.environ["OPTIMIZER_DUMP"]) / f"{Path(run_dir).name}.pt"

    def save_once(optimizer, args, kwargs):  # AdamW's own step (accelerate's wrapper calls it)
        if isinstance(optimizer, torch.optim.AdamW) and not target.exists():
            torch.save(optimizer.state_dict(), target)

    register_optimizer_step_pre_hook(save_once)
    from rlrecipes.cli import main

    main(sys.argv[1:])


if __name__ == "__main__":
    _run_saving_the_optimizer_before_its_first_step()


# ------------------------------------------------------------------ the setting's checks
def _checkpoint(folder: Path, optimizer=None, marker: bool = True) -> Path:
    import torch

    from rlrecipes.engine.checkpoints import CHECKPOINT_MARKER

    folder.mkdir(parents=True)
    if optimizer is not None:
        torch.save(optimizer.state_dict(), folder / "optimizer.pt")
    if marker:
        (folder / CHECKPOINT_MARKER).write_text(json.dumps({"step": 2}))
    return folder


def _adamw(shape=(3, 2), lr=0.1, steps=1):
    import torch

    torch.manual_seed(0)
    param = torch.nn.Parameter(torch.randn(*shape))
    optimizer = torch.optim.AdamW([param], lr=lr)
    for _ in range(steps):
        param.grad = torch.ones_like(param)
        optimizer.step()
    return param, optimizer


def test_init_optimizer_from_is_checked_before_anything_loads(tmp_path):
    from rlrecipes.errors import ConfigError
    from rlrecipes.training.plan import check_run
    from tests.conftest import compose

    missing = tmp_path / "nowhere"
    with pytest.raises(ConfigError) as error:
        check_run(compose(f"trainer.checkpoints.init_optimizer_from={missing}"))
    assert str(error.value) == (
        f"trainer.checkpoints.init_optimizer_from={missing}: no optimizer.pt there; give a checkpoint folder of an earlier "
        "run (RUN/checkpoints/checkpoint-N, saved with trainer.checkpoints.every set)"
    )

    _, optimizer = _adamw()
    torn = _checkpoint(tmp_path / "torn", optimizer, marker=False)  # a save cut short: no marker
    with pytest.raises(
        ConfigError, match=r"^trainer.checkpoints.init_optimizer_from=.*/torn: not a complete checkpoint \(no "
    ):
        check_run(compose(f"trainer.checkpoints.init_optimizer_from={torn}"))

    damaged = _checkpoint(tmp_path / "damaged")
    (damaged / "optimizer.pt").write_bytes(b"not a torch file")
    with pytest.raises(
        ConfigError, match=r"^trainer.checkpoints.init_optimizer_from=.*/damaged: optimizer.pt is damaged \("
    ):
        check_run(compose(f"trainer.checkpoints.init_optimizer_from={damaged}"))

    good = _checkpoint(tmp_path / "checkpoint-2", optimizer)
    assert check_run(compose(f"trainer.checkpoints.init_optimizer_from={good}")) is not None


def test_only_the_moments_are_loaded_and_a_mismatch_names_both_runs(tmp_path):
    import torch

    from rlrecipes.engine.checkpoints import load_optimizer_moments
    from rlrecipes.errors import UserError

    _, earlier = _adamw(lr=0.1, steps=2)
    folder = _checkpoint(tmp_path / "checkpoint-2", earlier)
    param, fresh = _adamw(lr=0.5, steps=0)
    load_optimizer_moments(fresh, folder, "/runs/phase2")
    before, after = earlier.state_dict()["state"][0], fresh.state_dict()["state"][0]
    # grad 1 twice from zero: m = 0.1 + 0.9 * 0.1 = 0.19 (beta1 0.9), v = 0.001 + 0.999 * 0.001 (beta2 0.999)
    assert torch.allclose(after["exp_avg"], torch.full((3, 2), 0.19))
    assert torch.equal(after["exp_avg"], before["exp_avg"]) and torch.equal(after["exp_avg_sq"], before["exp_avg_sq"])
    assert float(after["step"]) == 2.0
    assert fresh.param_groups[0]["lr"] == 0.5  # this run's learning rate, not the checkpoint's 0.1

    _, other = _adamw(shape=(4, 2), steps=0)
    with pytest.raises(UserError) as error:
        load_optimizer_moments(other, folder, "/runs/phase2")
    assert str(error.value) == (
        f"trainer.checkpoints.init_optimizer_from={folder}: parameter 0's exp_avg has shape (3, 2) there, (4, 2) in this run "
        "(/runs/phase2); both runs must train the same model"
    )
    two = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(3, 2)), torch.nn.Parameter(torch.zeros(1))])
    with pytest.raises(UserError, match=r"its optimizer has parameter groups of \[1\] parameters, this run "):
        load_optimizer_moments(two, folder, "/runs/phase2")


# ------------------------------------------------------------------ the stages' wiring
def test_a_phase_from_a_phase_carries_its_optimizer_unless_switched_off(tmp_path):
    from rlrecipes.errors import ConfigError
    from rlrecipes.training.stages import compose_pipeline, plan, stage_config

    warmup, phase1, phase2 = plan(compose_pipeline(["pipeline=toy_length_curriculum"]))
    assert (warmup.optimizer_from, phase1.optimizer_from, phase2.optimizer_from) == (None, None, "phase1")
    (tmp_path / "2-phase1").mkdir()
    (tmp_path / "2-phase1" / "summary.json").write_text(json.dumps({"steps": 60}))
    argv = phase2.argv(tmp_path, [warmup, phase1, phase2])
    assert f"trainer.checkpoints.init_optimizer_from={tmp_path / '2-phase1' / 'checkpoints' / 'checkpoint-60'}" in argv
    # checked before phase 1 ran: its checkpoint is left out, as its model is
    checked = stage_config(phase2, tmp_path, [warmup, phase1, phase2], for_check=True)
    assert checked.trainer.checkpoints.init_optimizer_from is None

    off = plan(compose_pipeline(["pipeline=toy_length_curriculum", "pipeline.stages.2.phase.carry_optimizer=false"]))
    assert off[2].optimizer_from is None
    assert not any(a.startswith("trainer.checkpoints.init_optimizer_from=") for a in off[2].argv(tmp_path, off))

    steps = plan(compose_pipeline(["pipeline=toy_length_curriculum", "phase1.trainer.checkpoints.every=null"]))
    with pytest.raises(ConfigError) as error:
        stage_config(steps[1], tmp_path, steps, for_check=True)
    assert str(error.value) == (
        "stage phase1: trainer.checkpoints.every=null saves no checkpoint, but phase2 starts from its optimizer state; "
        "set phase1.trainer.checkpoints.every, or phase.carry_optimizer: false in phase2"
    )


@pytest.mark.integration
def test_phase2_starts_from_phase1s_final_adam_moments_and_not_when_switched_off(toy_model_dir, tmp_path, monkeypatch):
    import torch

    from tests.conftest import TINY
    from tests.test_stages import stages

    settings = ["pipeline=toy_length_curriculum", *TINY, "trainer.cpu_threads=1", "warmup.trainer.max_steps=2"]
    launcher = f"launcher=[{sys.executable},{Path(__file__).resolve()}]"
    dumps = {}
    for carry in ("true", "false"):
        parent, dump = tmp_path / f"carry-{carry}", tmp_path / f"dump-{carry}"
        dump.mkdir()
        monkeypatch.setenv("OPTIMIZER_DUMP", str(dump))
        switch = f"pipeline.stages.2.phase.carry_optimizer={carry}"
        done = stages(f"run_dir={parent}", *settings, launcher, switch, cwd=tmp_path)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        dumps[carry] = (parent, torch.load(dump / "3-phase2.pt", weights_only=True))

    parent, at_first_step = dumps["true"]
    final = torch.load(parent / "2-phase1" / "checkpoints" / "checkpoint-2" / "optimizer.pt", weights_only=True)
    assert torch.equal(at_first_step["state"][0]["exp_avg"], final["state"][0]["exp_avg"])
    assert float(at_first_step["state"][0]["step"]) == float(final["state"][0]["step"]) == 2.0
    assert (
        f"init_optimizer_from: {parent / '2-phase1' / 'checkpoints' / 'checkpoint-2'}"
        in (parent / "3-phase2" / "config.yaml").read_text()
    )

    parent, at_first_step = dumps["false"]
    assert at_first_step["state"] == {}  # a fresh AdamW: no moments before its first step
    assert "init_optimizer_from: null" in (parent / "3-phase2" / "config.yaml").read_text()
