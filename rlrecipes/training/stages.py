"""Pipelines of stages (`rlrecipes stages pipeline=NAME`): SFT then RL, or RL phases, as one
command with one parent run directory.

A pipeline (`conf/pipeline/<name>.yaml`) lists stages, each an `rlrecipes sft` or
`rlrecipes train` command line (its overrides) and optionally `model_from`, an earlier stage
whose `RUN/model` it starts from. The parent directory holds `config.yaml` (the pipeline
with every override it runs with: a resume needs nothing else) and one run directory per
stage, `<i>-<name>/`, written by the stage's own command in a process of its own (a clean
slate: its memory, its torch.distributed world, its vLLM engine).

A `train` stage with a `phase` block is a curriculum phase (QwenLong-L1,
`rlrecipes.training.phase_data`): just before it starts, its data is written under the parent
(prompts over its input-length limit left out, earlier phases' hard examples carried in) and
the stage trains on those files.
A phase whose `model_from` is an earlier phase also starts from that phase's optimizer state
(`trainer.checkpoints.init_optimizer_from=` its final checkpoint: AdamW's moments, not its step, schedule
or data position), so the phases continue one optimisation; `phase.carry_optimizer: false`
restarts the optimizer. The earlier phase must save checkpoints (`trainer.checkpoints.every` set:
HF's Trainer then also saves at the last step).

A stage is *finished* when its run directory has `summary.json`, *started* when it has
`config.yaml` only, else *new*. `resume=true run_dir=PARENT` keeps every finished stage as it
is, resumes a started one with its command's own `resume=true`, and starts the new ones.

The stages command holds the parent's lock (`rundir.lock_run_dir`) and each stage's process
its own run directory's. A SIGTERM, SIGINT or SIGHUP to the stages command ends the running
stage (SIGTERM to it: a train or sft stage saves a checkpoint and exits), waits for it, then
stops; if the command is killed outright, Linux sends the stage SIGTERM itself (once per
thread of the dying command, which SIGTERM's handling takes as one request).

This module composes and plans (no model, no TRL); the command checks each stage's values
with its command's checks before the first stage starts.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from rlrecipes.compose.compose import compose_config, moved_override
from rlrecipes.errors import ConfigError, RunInterrupted, UserError
from rlrecipes.parent_death import dying_with_this_process
from rlrecipes.rundir import MARKER, read_config, write_json
from rlrecipes.training.phase_data import phase_overrides
from rlrecipes.training.phase_data import prepare as prepare_phase

OPTIMIZER_KEY = "trainer.checkpoints.init_optimizer_from"
ROOT_KEYS = ("pipeline", "run_dir", "resume", "output_root", "launcher")
Log = Callable[[str], None]


@dataclass(frozen=True)
class Stage:
    index: int  # 1-based
    name: str
    command: str  # sft | train
    overrides: tuple[str, ...]  # the preset's, then the command line's
    model_from: str | None
    phase: Any = None  # the stage's PhaseConfig (a curriculum phase), or None
    optimizer_from: str | None = None  # the earlier phase whose optimizer state it starts from

    def run_dir(self, parent: Path) -> Path:
        return parent / f"{self.index}-{self.name}"

    def argv(self, parent: Path, plan: Sequence[Stage], phase_data: bool = True) -> list[str]:
        """The stage's command-line overrides as it runs under `parent`; `phase_data=False`
        leaves out a phase's prepared data (its own data settings then hold)."""
        model = []
        if self.model_from:
            source = next(s for s in plan if s.name == self.model_from)
            model = [f"model.name_or_path={source.run_dir(parent) / 'model'}"]
        if self.optimizer_from:
            source = next(s for s in plan if s.name == self.optimizer_from)
            model.append(f"{OPTIMIZER_KEY}={final_checkpoint(source.run_dir(parent))}")
        data = phase_overrides(self, parent) if self.phase is not None and phase_data else []
        return [*self.overrides, *model, *data, f"run_dir={self.run_dir(parent)}"]


def is_root_override(override: str) -> bool:
    key = override.lstrip("+~").split("=", 1)[0]
    return key.split(".")[0] in ROOT_KEYS or key.startswith("hydra")


def compose_pipeline(overrides: Sequence[str]) -> DictConfig:
    """The stages config: `conf/stages.yaml` with the root overrides, and every other override
    appended to the stages it is for (`STAGE.key=value` to one, `key=value` to all)."""
    cfg = compose_config("stages", [ov for ov in overrides if is_root_override(ov)])
    names = [str(s.name) for s in cfg.pipeline.stages]
    for ov in overrides:
        if is_root_override(ov):
            continue
        head, _, rest = ov.lstrip("+~").partition(".")
        prefix = ov[: len(ov) - len(ov.lstrip("+~"))]
        for stage in cfg.pipeline.stages:
            if head in names and rest:
                if stage.name == head:
                    stage.overrides.append(prefix + rest)
            else:
                stage.overrides.append(ov)
    return cfg


def plan(cfg: DictConfig) -> list[Stage]:
    """The stages of a composed stages config, checked: names unique and never a config key of
    their command (a `STAGE.key` prefix must be unambiguous), `model_from` an earlier stage."""
    stages: list[Stage] = []
    for i, spec in enumerate(cfg.pipeline.stages, 1):
        name, command = str(spec.name), str(spec.command)
        if not name.replace("_", "").isalnum():
            raise ConfigError(f"pipeline.stages[{i - 1}].name={name!r}: use letters, digits and _")
        if name in [s.name for s in stages]:
            raise ConfigError(f"pipeline {cfg.pipeline.name}: two stages are named {name!r}")
        if name in _config_keys(command):
            raise ConfigError(f"stage name {name!r} is a key of the {command} config; rename the stage")
        if spec.model_from is not None and spec.model_from not in [s.name for s in stages]:
            raise ConfigError(
                f"stage {name}: model_from={spec.model_from!r} is not an earlier stage; "
                f"earlier: {', '.join(s.name for s in stages) or 'none'}"
            )
        phase = spec.get("phase")
        stages.append(
            Stage(
                i,
                name,
                command,
                tuple(str(o) for o in spec.overrides),
                spec.model_from,
                phase,
                _optimizer_source(phase, spec.model_from, stages),
            )
        )
        check_phase(stages[-1], stages[:-1])
    if not stages:
        raise ConfigError(f"pipeline {cfg.pipeline.name} has no stages")
    return stages


def check_phase(stage: Stage, earlier: Sequence[Stage]) -> None:
    """A phase's settings, checked before anything runs."""
    phase = stage.phase
    if phase is None:
        return
    where = f"stage {stage.name}: phase"
    if stage.command != "train":
        raise ConfigError(f"{where}: only a train stage can be a curriculum phase (this one is {stage.command})")
    if phase.max_input_tokens is not None and phase.max_input_tokens < 1:
        raise ConfigError(f"{where}.max_input_tokens={phase.max_input_tokens}: use a positive number of tokens or null")
    retro = phase.retrospective
    phases = [s.name for s in earlier if s.phase is not None]
    for name in retro.phases:
        if name not in phases:
            raise ConfigError(
                f"{where}.retrospective.phases: {name!r} is not an earlier phase; earlier phases: "
                f"{', '.join(phases) or 'none'}"
            )
    if retro.enabled and not phases:
        raise ConfigError(f"{where}.retrospective.enabled=true but no earlier stage is a phase")
    if not 0 < retro.reward_floor <= 1:
        raise ConfigError(f"{where}.retrospective.reward_floor={retro.reward_floor}: use a value in (0, 1]")
    if retro.max_copies < 1:
        raise ConfigError(f"{where}.retrospective.max_copies={retro.max_copies}: use 1 or more")
    if retro.max_examples is not None and retro.max_examples < 1:
        raise ConfigError(f"{where}.retrospective.max_examples={retro.max_examples}: use 1 or more, or null")


_KEYS: dict[str, list[str]] = {}


def _config_keys(command: str) -> list[str]:
    if command not in _KEYS:
        _KEYS[command] = list(compose_config(command).keys())
    return _KEYS[command]


def stage_config(
    stage: Stage, parent: Path, plan: Sequence[Stage], for_check: bool = False, phase_data: bool = True
) -> DictConfig:
    """The stage's composed config; `for_check` leaves out the model of `model_from` (written
    only when that stage finishes) and a phase's prepared data, so a stage is checked before
    its inputs exist; `phase_data=False` leaves out the prepared data only."""
    argv = stage.argv(parent, plan, phase_data=phase_data and not for_check)
    if for_check:
        argv = [a for a in argv if not (stage.model_from and a.startswith("model.name_or_path="))]
        argv = [a for a in argv if not (stage.optimizer_from and a.startswith(f"{OPTIMIZER_KEY}="))]
    try:
        cfg = compose_config(stage.command, argv)
    except UserError as exc:
        raise ConfigError(f"stage {stage.name}: {exc}") from None
    if for_check:
        _check_saves_optimizer(stage, cfg, plan)
    return cfg


def _optimizer_source(phase: Any, model_from: str | None, earlier: Sequence[Stage]) -> str | None:
    """The earlier phase a phase takes its optimizer state from: its `model_from`, when that
    stage is a phase and `phase.carry_optimizer` is on (QwenLong-L1's phases continue one
    optimisation; a warm-up SFT's optimizer is not carried into RL)."""
    if phase is None or not phase.carry_optimizer or model_from is None:
        return None
    source = next(s for s in earlier if s.name == model_from)
    return source.name if source.phase is not None else None


def final_checkpoint(run_dir: Path) -> Path:
    """The checkpoint a finished train stage ended with (`checkpoint-<its steps>`); before it
    finished, a placeholder naming where it will be (`--dry-run`, the checks leave it out)."""
    summary = run_dir / "summary.json"
    steps = stage_summary(run_dir).get("steps", "<last step>") if summary.is_file() else "<last step>"
    return run_dir / "checkpoints" / f"checkpoint-{steps}"


def stage_summary(run_dir: Path) -> dict[str, Any]:
    """A finished stage's summary.json; one line naming it if it is torn or not a summary."""
    path = run_dir / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        why = f"not valid JSON ({exc.msg}); torn or not a run summary"
    except UnicodeDecodeError:
        why = "not UTF-8 text, so not a run summary"
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or exc})"
    else:
        if isinstance(summary, dict):
            return summary
        why = "not a run summary (a JSON object is expected)"
    raise UserError(
        f"{path}: {why}; restore it, or remove it and the stage finishes again from its last checkpoint "
        f"(rlrecipes stages resume=true run_dir={run_dir.parent})"
    )


def _check_saves_optimizer(stage: Stage, cfg: DictConfig, plan: Sequence[Stage]) -> None:
    """A phase a later phase takes its optimizer state from must save checkpoints: with
    trainer.checkpoints.every set, HF's Trainer also saves one at the last step."""
    takers = [s.name for s in plan if s.optimizer_from == stage.name]
    if takers and cfg.trainer.checkpoints.every is None:
        raise ConfigError(
            f"stage {stage.name}: trainer.checkpoints.every=null saves no checkpoint, but {takers[0]} starts from its "
            f"optimizer state; set {stage.name}.trainer.checkpoints.every, or phase.carry_optimizer: false in {takers[0]}"
        )


def state(stage: Stage, parent: Path) -> str:
    """finished | started | new (see the module doc)."""
    folder = stage.run_dir(parent)
    if (folder / "summary.json").is_file():
        return "finished"
    return "started" if (folder / MARKER).is_file() else "new"


def run_stage(stage: Stage, parent: Path, stages: Sequence[Stage], launcher: Sequence[str], log: Log) -> int:
    """Run (or resume) one stage in its own process; returns its exit status."""
    entry = list(launcher) or [sys.executable, "-m", "rlrecipes.cli"]
    if state(stage, parent) == "started":
        argv = [stage.command, "resume=true", f"run_dir={stage.run_dir(parent)}"]
    else:
        if stage.phase is not None:  # its data depends on the model and the phases before it
            prepare_phase(stage, parent, stages, stage_config(stage, parent, stages, phase_data=False), log)
        argv = [stage.command, *stage.argv(parent, stages)]
    log(f"stage {stage.index} ({stage.name}): rlrecipes {' '.join(argv)}")
    code, received = run_to_the_end([*entry, *argv], log)
    if received is not None:
        raise StageInterrupted(
            f"{signal.Signals(received).name}: stage {stage.index} ({stage.name}) was stopped (exit status {code}); "
            f"finished stages are kept; continue with: rlrecipes stages resume=true run_dir={parent}",
            received,
        )
    return code


class StageInterrupted(RunInterrupted):
    """SIGTERM, SIGINT or SIGHUP to the stages command stopped the running stage; `signal` is its number."""


STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run_to_the_end(command: list[str], log: Log) -> tuple[int, int | None]:
    """Run `command` as a child process and wait for it: (its exit status, the first of
    `STOPPING` this process received meanwhile, or None).

    Such a signal is passed on as SIGTERM (a train or sft stage then saves a checkpoint at its
    next rollout step and exits) and the child is waited for; a second one kills it. If this
    process dies without a chance to pass anything on (SIGKILL), Linux sends the child SIGTERM
    (PR_SET_PDEATHSIG). That signal follows the *thread* that started the child, so this must
    run on the main thread, which signal handlers need too."""
    received: list[int] = []
    child: subprocess.Popen | None = None

    def stop(signum: int, frame: Any) -> None:
        received.append(signum)
        if child is not None:
            _signal(child, signal.SIGTERM if len(received) == 1 else signal.SIGKILL)
        if len(received) == 1:
            log(
                f"received {signal.Signals(signum).name}: stopping the running stage (a train or sft stage saves a "
                "checkpoint first; again to stop it at once)"
            )

    previous = {sig: signal.signal(sig, stop) for sig in STOPPING}
    try:
        if received:
            return 128 + received[0], received[0]
        child = subprocess.Popen(command, preexec_fn=dying_with_this_process())
        if received:  # arrived while it started
            _signal(child, signal.SIGTERM)
        return child.wait(), (received[0] if received else None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _signal(child: subprocess.Popen, sig: int) -> None:
    try:
        child.send_signal(sig)
    except ProcessLookupError:  # it ended meanwhile
        pass


def write_summary(parent: Path, cfg: DictConfig, stages: Sequence[Stage]) -> dict[str, Any]:
    """PARENT/summary.json: each stage's run directory and headline numbers."""
    rows = []
    for stage in stages:
        summary = stage_summary(stage.run_dir(parent))
        keep = ("steps", "accuracy_before", "accuracy_after", "loss_before", "loss_after", "wall_seconds")
        rows.append(
            {
                "stage": stage.name,
                "command": stage.command,
                "run_dir": str(stage.run_dir(parent)),
                **{k: summary[k] for k in keep if k in summary},
            }
        )
    out = {"pipeline": str(cfg.pipeline.name), "paper": cfg.pipeline.paper, "stages": rows}
    write_json(parent / "summary.json", out)
    return out


def saved_pipeline(run_dir: Path) -> DictConfig:
    """The stages config a pipeline was started with, typed by the schema."""
    saved = read_config(run_dir)
    if "pipeline" not in saved:
        raise UserError(f"{run_dir / MARKER} is not a pipeline's config; a single run resumes with its own command")
    try:
        cfg = OmegaConf.merge(compose_config("stages"), saved)
    except Exception as exc:  # a key this version no longer has, or a value of the wrong type
        raise UserError(
            f"{run_dir / MARKER} does not fit this version of rlrecipes ({str(exc).strip().splitlines()[0]})"
        ) from None
    for stage in cfg.pipeline.stages:  # command lines saved before a key moved
        stage.overrides = [moved_override(str(ov)) for ov in stage.overrides]
    return cfg
