"""Checkpoint bookkeeping without a model: completeness, retention, the save interval."""

import json
from types import SimpleNamespace

import pytest

from rlrecipes.engine.checkpoints import (
    CHECKPOINT_MARKER,
    CheckpointKeeper,
    checkpoints,
    last_complete_checkpoint,
    remove_incomplete,
)
from rlrecipes.engine.grpo_args import checkpoint_interval
from rlrecipes.errors import UserError
from rlrecipes.integrity import load_torch_state


def make(folder, step, value=None, complete=True):
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_text("w")
    if complete:
        (path / CHECKPOINT_MARKER).write_text(json.dumps({"step": step, "metric": "heldout_accuracy", "value": value}))
    return path


def test_a_checkpoint_without_its_marker_is_never_resumed_from(tmp_path):
    make(tmp_path, 2)
    make(tmp_path, 10)
    make(tmp_path, 12, complete=False)  # the crash happened while it was written
    (tmp_path / "checkpoint-x").mkdir()  # not a checkpoint
    assert [(s, ok) for s, _, ok in checkpoints(tmp_path)] == [(2, True), (10, True), (12, False)]
    assert last_complete_checkpoint(tmp_path).name == "checkpoint-10"  # by step, not by name order
    assert remove_incomplete(tmp_path) == ["checkpoint-12"]
    assert not (tmp_path / "checkpoint-12").exists()
    assert last_complete_checkpoint(tmp_path / "none") is None


def test_retention_keeps_the_last_k_and_the_best_by_metric(tmp_path):
    for step, value in ((2, 0.5), (4, 0.9), (6, 0.4), (8, 0.6), (10, 0.1)):
        make(tmp_path, step, value)
    CheckpointKeeper(tmp_path, dict, keep_last=2, best_metric="heldout_accuracy").prune()
    assert [s for s, _, _ in checkpoints(tmp_path)] == [4, 8, 10]
    CheckpointKeeper(tmp_path, dict, keep_last=1).prune()  # no metric: the last one only
    assert [s for s, _, _ in checkpoints(tmp_path)] == [10]


def test_retention_never_touches_an_incomplete_checkpoint_and_null_keeps_all(tmp_path):
    for step in (2, 4, 6):
        make(tmp_path, step)
    make(tmp_path, 8, complete=False)
    CheckpointKeeper(tmp_path, dict, keep_last=None).prune()  # trainer.checkpoints.keep_last=null
    assert [s for s, _, _ in checkpoints(tmp_path)] == [2, 4, 6, 8]
    CheckpointKeeper(tmp_path, dict, keep_last=1).prune()
    assert [s for s, _, _ in checkpoints(tmp_path)] == [6, 8]
    with pytest.raises(UserError, match="trainer.checkpoints.keep_last=0 must be at least 1"):
        CheckpointKeeper(tmp_path, dict, keep_last=0)


def trainer(every, updates=1, iterations=1):
    checkpoints = SimpleNamespace(every=every)
    return SimpleNamespace(checkpoints=checkpoints, updates_per_rollout=updates, num_iterations=iterations)


def test_checkpoints_fall_on_rollout_boundaries():
    assert checkpoint_interval(trainer(None)) is None
    assert checkpoint_interval(trainer(40)) == 40
    assert checkpoint_interval(trainer(10, updates=4)) == 12  # rounded up to whole rollout steps
    assert checkpoint_interval(trainer(8, updates=2, iterations=2)) == 8
    with pytest.raises(UserError, match="trainer.checkpoints.every=-1 must be positive"):
        checkpoint_interval(trainer(-1))


def test_keeper_writes_engine_state_then_marker(tmp_path):

    (tmp_path / "checkpoint-3").mkdir()
    hook = SimpleNamespace(state_dict=lambda: {"history": {"a": [1.0]}})
    keeper = CheckpointKeeper(
        tmp_path,
        lambda: {"accuracy_before": 0.25},
        keep_last=2,
        best_metric="acc",
        latest_metrics=lambda: {"acc": 0.75},
    )
    keeper.trainer = SimpleNamespace(hooks=[hook], dynamic_sampling=None)
    keeper.on_save(None, SimpleNamespace(is_world_process_zero=True, global_step=3), None)
    state = load_torch_state(tmp_path / "checkpoint-3" / "engine_state.pt")  # plain values: weights_only=True reads it
    assert state == {"hooks": [{"history": {"a": [1.0]}}], "dynamic_sampling": None, "job": {"accuracy_before": 0.25}}
    assert json.loads((tmp_path / "checkpoint-3" / CHECKPOINT_MARKER).read_text()) == {
        "step": 3,
        "metric": "acc",
        "value": 0.75,
    }


def test_the_time_budget_stops_at_the_first_rollout_boundary_past_it():
    from rlrecipes.engine.checkpoints import TrainingTimeBudget

    now = [100.0]
    measured = [0.0]  # held-out seconds, not counted
    budget = TrainingTimeBudget(10, rollout_steps=2, excluded=lambda: measured[0], clock=lambda: now[0])
    budget.trainer = SimpleNamespace(accelerator=SimpleNamespace(device="cpu", reduce=lambda t, reduction: t))
    budget.on_train_begin(None, None, None)

    def step(n, at, heldout=0.0):
        now[0], measured[0] = at, heldout
        control = SimpleNamespace(should_training_stop=False)
        return budget.on_step_end(None, SimpleNamespace(global_step=n), control).should_training_stop

    assert not step(1, 105.0)
    assert not step(2, 112.0, heldout=5.0)  # 12 s passed, 5 of them measuring held-out accuracy: 7 s of training
    assert not step(3, 116.0, heldout=5.0)  # 11 s of training, but step 3 ends inside a rollout step
    assert step(4, 117.0, heldout=5.0) and budget.stopped_at == 4


@pytest.mark.integration
def test_a_run_past_its_time_budget_ends_as_a_finished_run(toy_model_dir, tmp_path):
    from rlrecipes.training.job import train
    from tests.conftest import compose

    cfg = compose("trainer.max_steps=6", "trainer.max_train_seconds=0.001", "trainer.eval.before=false")
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    assert summary["steps"] == 1  # any step takes longer than a millisecond: stopped after the first
    assert summary["stopped_by"] == "trainer.max_train_seconds=0.001 after step 1"
    assert (tmp_path / "run" / "summary.json").is_file() and (tmp_path / "run" / "model").is_dir()
