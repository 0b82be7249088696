"""Experiment trackers (`report_to=`) and the plain progress lines of training."""

import json
import os
from types import SimpleNamespace

import pytest

from rlrecipes.engine.grpo_args import build_grpo_config, tracking_args
from rlrecipes.engine.progress import MetricsWriter, RichProgress, TrackerConfig
from rlrecipes.errors import UserError
from tests.conftest import compose


def test_off_by_default_and_named_after_the_run_directory(tmp_path):
    args = build_grpo_config(compose(), tmp_path / "0-grpo-arithmetic", {}, [1.0])
    assert args.report_to == [] and args.run_name == "0-grpo-arithmetic"


def test_several_trackers_at_once_and_their_files_in_the_run_directory(tmp_path, monkeypatch):
    import rlrecipes.engine.grpo_args as grpo_args

    pytest.importorskip("tensorboard")
    # wandb is optional (not installed by `make install`): what is checked here is where each
    # tracker is told to write, which needs only that its module is found
    monkeypatch.setitem(grpo_args.TRACKERS, "wandb", "json")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    run = tmp_path / "run-a"
    args = build_grpo_config(compose("report_to=[tensorboard,wandb]"), run, {}, [1.0])
    assert args.report_to == ["tensorboard", "wandb"] and args.run_name == "run-a"
    assert os.environ["TENSORBOARD_LOGGING_DIR"] == str(run / "tensorboard")
    assert os.environ["WANDB_DIR"] == str(run)
    # a second run in the same process (a joblib worker) logs into its own directory
    tracking_args(compose("report_to=[tensorboard]"), tmp_path / "run-b")
    assert os.environ["TENSORBOARD_LOGGING_DIR"] == str(tmp_path / "run-b" / "tensorboard")


def test_unknown_or_missing_tracker_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(UserError, match="report_to='mlflow' is unknown; valid: tensorboard, wandb, trackio"):
        tracking_args(compose("report_to=[mlflow]"), tmp_path)
    import rlrecipes.engine.grpo_args as grpo_args

    monkeypatch.setitem(grpo_args.TRACKERS, "trackio", "no_such_module_for_trackio")
    with pytest.raises(UserError, match="report_to=trackio needs the trackio package: pip install trackio"):
        tracking_args(compose("report_to=[trackio]"), tmp_path)


@pytest.mark.integration
def test_tensorboard_events_hold_the_logged_scalars_and_wandb_runs_offline(toy_model_dir, tmp_path, monkeypatch):
    """A real 2-step run with report_to=[tensorboard,wandb] and WANDB_MODE=offline (no network)."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from rlrecipes.rundir import write_manifest
    from rlrecipes.training.job import train

    trackers = ["tensorboard"]
    try:
        import wandb  # noqa: F401

        trackers.append("wandb")
        monkeypatch.setenv("WANDB_MODE", "offline")
        monkeypatch.setenv("WANDB_SILENT", "true")
    except ImportError:
        pass
    cfg = compose(
        f"report_to=[{','.join(trackers)}]",
        f"model.name_or_path={toy_model_dir}",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    run = tmp_path / "0-grpo-arithmetic"
    run.mkdir()
    write_manifest(run, cfg)
    train(cfg, run, log=lambda _: None)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    reward = events.Scalars("train/reward")
    assert [e.step for e in reward] == [1, 2]
    assert [e.value for e in reward] == pytest.approx([r["reward_mean"] for r in rows])
    assert "train/completions/mean_length" in events.Tags()["scalars"]
    # the resolved rlrecipes config, not only TRL's arguments (TrackerConfig)
    [tag] = [t for t in events.Tags()["tensors"] if t.startswith("rlrecipes_config")]
    text = events.Tensors(tag)[0].tensor_proto.string_val[0].decode()
    assert f"num_train: {cfg.data.synthetic.num_train}" in text and "- tensorboard" in text
    if "wandb" in trackers:
        offline = list((run / "wandb").glob("offline-run-*"))
        assert len(offline) == 1, list((run / "wandb").iterdir())
        import wandb

        try:  # TRL leaves the run open until the process ends (offline files hold no config yet)
            assert wandb.run.name == run.name
            assert wandb.run.config["rlrecipes"]["recipe"]["name"] == "grpo"
        finally:
            wandb.finish()


def test_resolved_config_reaches_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    callback = TrackerConfig(
        {"recipe": {"name": "dapo"}, "trainer": {"learning_rate": 3e-6}}, ["tensorboard"], tmp_path / "tensorboard"
    )
    callback.on_train_begin(None, SimpleNamespace(is_world_process_zero=True), None)
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    [tag] = [t for t in events.Tags()["tensors"] if t.startswith("rlrecipes_config")]
    text = events.Tensors(tag)[0].tensor_proto.string_val[0].decode()
    assert "learning_rate: 3.0e-06" in text and "name: dapo" in text


# ---------------------------------------------------------------------- progress lines
def fake_training(progress: RichProgress, writer: MetricsWriter, max_steps: int) -> None:
    state = SimpleNamespace(is_world_process_zero=True, global_step=0, max_steps=max_steps)
    progress.on_train_begin(None, state, None)
    for step in range(1, max_steps + 1):
        state.global_step = step
        writer.rows.append(
            {
                "step": step,
                "reward_mean": step / 100,
                "accuracy": 0.5,
                "kl": 0.01,
                "entropy": 0.3,
                "completion_length_mean": 42.0,
                "step_time": 1.5,
            }
        )
        progress.on_log(None, state, None, logs={"loss": 0.1})
    progress.on_log(None, state, None, logs={"train_runtime": 9.0})  # HF's end-of-training log
    progress.on_train_end(None, state, None)


def test_plain_lines_every_n_steps_with_the_key_metrics_when_not_a_terminal(tmp_path):
    lines: list[str] = []
    writer = MetricsWriter(tmp_path / "metrics.jsonl")
    fake_training(RichProgress(writer, terminal=False, log=lines.append), writer, max_steps=45)
    steps = [int(line.split()[2].split("/")[0]) for line in lines[1:]]
    assert lines[0] == "train: 45 steps, a line every 2"  # about 20 lines a run
    assert steps == list(range(2, 45, 2)) + [45]  # and the last step, once
    # 80 columns (no terminal): what does not fit after the step's headline goes to a second line
    first, second = lines[-1].splitlines()
    assert first.startswith("train step 45/45: reward 0.450  acc 0.500  1.50s/step, ETA 0s (")
    assert second == "    kl 0.010  entropy 0.300  length 42.000"
    assert "ETA" in lines[5] and "elapsed" in lines[5]
    assert max(len(line) for entry in lines for line in entry.splitlines()) <= 80


def test_long_runs_print_at_least_every_ten_steps_and_a_terminal_gets_the_bar(tmp_path):
    lines: list[str] = []
    writer = MetricsWriter(tmp_path / "metrics.jsonl")
    fake_training(RichProgress(writer, terminal=False, log=lines.append), writer, max_steps=1000)
    assert len(lines) == 1 + 100
    lines.clear()
    writer.rows.clear()
    fake_training(RichProgress(writer, terminal=True, log=lines.append), writer, max_steps=5)
    assert lines == []  # the live bar instead
