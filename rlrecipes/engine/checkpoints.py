"""Checkpoints a run can resume from exactly, whatever moment it was killed at.

HF's Trainer writes a full checkpoint (weights or adapter, optimizer, scheduler, RNG
state of every process, step, log history) into `checkpoint-N/`; resuming from it
replays the data sampler to the same position. This module adds what only the engine
knows and what makes a checkpoint trustworthy:

- **engine state** (`engine_state.pt`): every hook's `state_dict()` (e.g. the one-shot
  accuracy history), the dynamic-sampling refill stream, and the job's own values
  (held-out accuracy before training); a hook's large state in files of its own
  (`save_files`: PPO's critic in `critic/`);
- **a completion marker** (`rlrecipes_checkpoint.json`), written last: HF writes into
  the final folder directly, so a folder without the marker was cut short by a crash
  and is never resumed from;
- **retention**: the last `keep_last` complete checkpoints, plus the best one by a
  logged metric when asked (HF's own rotation knows only evaluation metrics);
- **graceful stop**: SIGINT/SIGTERM (Slurm pre-emption) end the run at the next rollout
  boundary with a checkpoint, agreed by all processes so none waits for the others.

Checkpoints are taken at rollout boundaries only (every `rollout_steps` optimizer
steps): TRL keeps the rest of a rollout's completions in memory between optimizer
steps, which a checkpoint taken mid-rollout could not restore.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Callable

import torch
from transformers import TrainerCallback

from rlrecipes.errors import UserError
from rlrecipes.integrity import folder_problem, load_torch_state
from rlrecipes.rundir import write_json

CHECKPOINT_MARKER = "rlrecipes_checkpoint.json"
ENGINE_STATE = "engine_state.pt"
OPTIMIZER_FILE = "optimizer.pt"  # HF Trainer's name for the optimizer state in a checkpoint
_STEP = re.compile(r"^checkpoint-(\d+)$")


def checkpoints(folder: Path) -> list[tuple[int, Path, bool]]:
    """(step, path, complete) of every `checkpoint-N` folder, by step."""
    if not folder.is_dir():
        return []
    found = [
        (int(m.group(1)), p, (p / CHECKPOINT_MARKER).is_file())
        for p in folder.iterdir()
        if p.is_dir() and (m := _STEP.match(p.name))
    ]
    return sorted(found)


def last_complete_checkpoint(folder: Path) -> Path | None:
    complete = [path for _, path, ok in checkpoints(folder) if ok]
    return complete[-1] if complete else None


def usable_checkpoint(folder: Path, log: Callable[[str], None]) -> Path | None:
    """The last complete checkpoint whose files all read back safely (JSON, safetensors,
    torch files with `weights_only=True`); a damaged one is moved aside to
    `damaged-checkpoint-N` (kept for inspection, never resumed from), naming the bad file, and
    the one before it is tried. None when no complete checkpoint is usable."""
    for _, path, ok in reversed(checkpoints(folder)):
        if not ok:
            continue
        problem = folder_problem(path)
        if problem is None:
            return path
        bad, reason = problem
        aside = path.with_name(f"damaged-{path.name}")
        shutil.rmtree(aside, ignore_errors=True)
        path.rename(aside)
        log(f"{path.name} cannot be resumed from: {bad.relative_to(path)} is damaged ({reason}); moved to {aside.name}")
    return None


def remove_incomplete(folder: Path) -> list[str]:
    """Delete checkpoint folders a crash left half-written; returns their names."""
    removed = []
    for _, path, ok in checkpoints(folder):
        if not ok:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed


def engine_state(trainer: Any, extra: dict[str, Any]) -> dict[str, Any]:
    sampler = getattr(trainer, "dynamic_sampling", None)
    return {
        "hooks": [hook.state_dict() for hook in trainer.hooks],
        "dynamic_sampling": sampler.state_dict() if sampler is not None else None,
        "job": dict(extra),
    }


def load_engine_state(trainer: Any, checkpoint: Path) -> dict[str, Any]:
    """Restore the hooks and the dynamic sampler from `checkpoint`; returns the job's values."""
    state = load_torch_state(checkpoint / ENGINE_STATE)
    if len(state["hooks"]) != len(trainer.hooks):
        raise RuntimeError(
            f"{checkpoint} holds the state of {len(state['hooks'])} engine hooks, this run has "
            f"{len(trainer.hooks)}: it was written by another recipe or version"
        )
    for hook, hook_state in zip(trainer.hooks, state["hooks"]):
        hook.load_state_dict(hook_state)
        hook.load_files(checkpoint)  # what a hook wrote into the folder itself (PPO's critic)
    if state["dynamic_sampling"] is not None and getattr(trainer, "dynamic_sampling", None) is not None:
        trainer.dynamic_sampling.load_state_dict(state["dynamic_sampling"])
    return state["job"]


def load_optimizer_moments(optimizer: Any, checkpoint: Path, this_run: str) -> None:
    """Load the per-parameter state of `checkpoint`'s optimizer.pt (AdamW's moments and their
    step counts) into `optimizer`, keeping this run's hyper-parameters (learning rate, betas,
    weight decay: its param groups' settings); the trainer's step, schedule, RNG and data
    position are not read. Both optimizers must hold the same parameters in the same order."""
    saved = load_torch_state(checkpoint / OPTIMIZER_FILE)
    mine = optimizer.state_dict()
    theirs = [len(group["params"]) for group in saved["param_groups"]]
    ours = [len(group["params"]) for group in mine["param_groups"]]
    where = f"trainer.checkpoints.init_optimizer_from={checkpoint}"
    if theirs != ours:
        raise UserError(
            f"{where}: its optimizer has parameter groups of {theirs} parameters, this run ({this_run}) has "
            f"{ours}; both runs must train the same model with the same LoRA settings"
        )
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for index, param in enumerate(params):
        for name, value in saved["state"].get(index, {}).items():
            if torch.is_tensor(value) and value.dim() > 0 and value.shape != param.shape:
                raise UserError(
                    f"{where}: parameter {index}'s {name} has shape {tuple(value.shape)} there, "
                    f"{tuple(param.shape)} in this run ({this_run}); both runs must train the same model"
                )
    # the saved state with this run's groups: torch pairs them by index, as both are ordered
    optimizer.load_state_dict({"state": saved["state"], "param_groups": mine["param_groups"]})


class CheckpointKeeper(TrainerCallback):
    """Completes every checkpoint HF saves (engine state, then the marker) and prunes old ones."""

    def __init__(
        self,
        folder: Path,
        job_state: Callable[[], dict[str, Any]],
        keep_last: int | None,
        best_metric: str | None = None,
        latest_metrics: Callable[[], dict[str, Any]] = dict,
    ):
        if keep_last is not None and keep_last < 1:  # 0 would delete the checkpoint a resume needs
            raise UserError(f"trainer.checkpoints.keep_last={keep_last} must be at least 1 (or null to keep all)")
        self.folder, self.job_state = folder, job_state
        self.keep_last, self.best_metric, self.latest_metrics = keep_last, best_metric, latest_metrics
        self.trainer: Any = None

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        path = self.folder / f"checkpoint-{state.global_step}"
        for hook in self.trainer.hooks:  # large hook state (PPO's critic), before the marker
            if hasattr(hook, "save_files"):  # an EngineHook's (a bare state holder has none)
                hook.save_files(path)
        torch.save(engine_state(self.trainer, self.job_state()), path / ENGINE_STATE)
        value = self.latest_metrics().get(self.best_metric) if self.best_metric else None
        write_json(path / CHECKPOINT_MARKER, {"step": state.global_step, "metric": self.best_metric, "value": value})
        self.prune()

    def prune(self) -> None:
        complete = [(step, path) for step, path, ok in checkpoints(self.folder) if ok]
        if self.keep_last is None:
            return
        keep = {path for _, path in complete[-self.keep_last :]}
        if self.best_metric:
            scored = [
                (json.loads((path / CHECKPOINT_MARKER).read_text()).get("value"), step, path) for step, path in complete
            ]
            scored = [s for s in scored if isinstance(s[0], (int, float))]
            if scored:
                keep.add(max(scored, key=lambda s: (s[0], s[1]))[2])  # the later one on a tie
        for _, path in complete:
            if path not in keep:
                shutil.rmtree(path, ignore_errors=True)


class GracefulStop(TrainerCallback):
    """SIGINT/SIGTERM: finish the current rollout, save a checkpoint, stop.

    The signal only sets a flag; the processes agree on it at each step end (a max over
    ranks: Slurm may signal one task first), and act on it at the next rollout boundary.
    A second SIGINT interrupts at once, without a checkpoint. `request(reason)` stops the run
    the same way, as SIGTERM would, for a reason of the run's own (`trainer.doctor=stop`).
    """

    def __init__(self, rollout_steps: int, notify: Callable[[str], None] = print):
        self.rollout_steps, self.notify = max(1, rollout_steps), notify
        self.received: int | None = None  # the signal number, once one arrived
        self.stopped_at: int | None = None  # the step whose checkpoint ended the run
        self.reason: str | None = None  # why `request` asked to stop (said instead of the signal's name)
        self.trainer: Any = None
        self._previous: dict[int, Any] = {}

    def request(self, reason: str) -> None:
        """Stop at the next rollout boundary with a checkpoint, as on SIGTERM, for `reason`."""
        self.reason = self.reason or reason

    def on_train_begin(self, args, state, control, **kwargs):
        import threading

        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be installed from the main thread
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame):
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # asked twice: stop now
        self.received = signum
        self.notify(
            f"received {signal.Signals(signum).name}: stopping at the end of this rollout step with a "
            "checkpoint (Ctrl-C again to stop at once, without one)"
        )

    def on_step_end(self, args, state, control, **kwargs):
        asked = self.received or (signal.SIGTERM if self.reason else 0)
        flag = torch.tensor([asked], dtype=torch.long, device=self.trainer.accelerator.device)
        received = int(self.trainer.accelerator.reduce(flag, reduction="max").item())
        if received and state.global_step % self.rollout_steps == 0:
            self.received = self.received or received
            self.stopped_at = state.global_step
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


class TrainingTimeBudget(TrainerCallback):
    """`trainer.max_train_seconds`: end the run at the first rollout boundary once this many
    seconds of training have passed (held-out measurements, `excluded()`, not counted), as a
    finished run whose summary says so. The processes agree on it (a max over ranks), so all
    stop at the same step. A benchmark's equal-time controls use it; no engine patching."""

    def __init__(
        self,
        seconds: float,
        rollout_steps: int,
        excluded: Callable[[], float] = lambda: 0.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.seconds, self.rollout_steps = float(seconds), max(1, rollout_steps)
        self.excluded, self.clock = excluded, clock
        self.started: float | None = None
        self.stopped_at: int | None = None
        self.trainer: Any = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = self.clock() - self.excluded()

    def on_step_end(self, args, state, control, **kwargs):
        elapsed = self.clock() - self.started - self.excluded()
        flag = torch.tensor([elapsed >= self.seconds], dtype=torch.long, device=self.trainer.accelerator.device)
        over = bool(self.trainer.accelerator.reduce(flag, reduction="max").item())
        if over and state.global_step % self.rollout_steps == 0:
            self.stopped_at = state.global_step
            control.should_training_stop = True
        return control
