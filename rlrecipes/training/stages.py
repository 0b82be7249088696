"""Pipelines of stages (`rlrecipes stages pipeline=NAME`): SFT then RL, or RL phases, as one
command with one parent run directory.

A pipeline (`conf/pipeline/<name>.yaml`) lists stages, each an `rlrecipes sft` or
`rlrecipes train` command line (its overrides) and optionally `model_from`, an earlier stage
whose `RUN/model` it starts from. The parent directory holds `config.yaml` (the pipeline
with every override it runs with: a resume needs nothing else) and one run directory per
stage, `<i>-<name>/`, written by the stage's own command in a process of its own (a clean
slate: its memory, its torch.distributed world, its vLLM engine).

A stage is *finished* when its run directory has `summary.json`, *started* when it has
`config.yaml` only, else *new*. `resume=true run_dir=PARENT` keeps every finished stage as it
is, resumes a started one with its command's own `resume=true`, and starts the new ones.

This module composes and plans (no model, no TRL); the command checks each stage's values
with its command's checks before the first stage starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from rlrecipes.compose.compose import compose_config
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.rundir import MARKER, read_config, write_json

ROOT_KEYS = ("pipeline", "run_dir", "resume", "output_root", "launcher")
Log = Callable[[str], None]


@dataclass(frozen=True)
class Stage:
    index: int  # 1-based
    name: str
    command: str  # sft | train
    overrides: tuple[str, ...]  # the preset's, then the command line's
    model_from: str | None

    def run_dir(self, parent: Path) -> Path:
        return parent / f"{self.index}-{self.name}"

    def argv(self, parent: Path, plan: Sequence[Stage]) -> list[str]:
        """The stage's command-line overrides as it runs under `parent`."""
        model = []
        if self.model_from:
            source = next(s for s in plan if s.name == self.model_from)
            model = [f"model.name_or_path={source.run_dir(parent) / 'model'}"]
        return [*self.overrides, *model, f"run_dir={self.run_dir(parent)}"]


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
        stages.append(Stage(i, name, command, tuple(str(o) for o in spec.overrides), spec.model_from))
    if not stages:
        raise ConfigError(f"pipeline {cfg.pipeline.name} has no stages")
    return stages


_KEYS: dict[str, list[str]] = {}


def _config_keys(command: str) -> list[str]:
    if command not in _KEYS:
        _KEYS[command] = list(compose_config(command).keys())
    return _KEYS[command]


def stage_config(stage: Stage, parent: Path, plan: Sequence[Stage], for_check: bool = False) -> DictConfig:
    """The stage's composed config; `for_check` leaves out the model of `model_from` (written
    only when that stage finishes), so a stage is checked before its input exists."""
    argv = stage.argv(parent, plan)
    if for_check:
        argv = [a for a in argv if not (stage.model_from and a.startswith("model.name_or_path="))]
    try:
        return compose_config(stage.command, argv)
    except UserError as exc:
        raise ConfigError(f"stage {stage.name}: {exc}") from None


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
        argv = [stage.command, *stage.argv(parent, stages)]
    log(f"stage {stage.index} ({stage.name}): rlrecipes {' '.join(argv)}")
    return subprocess.run([*entry, *argv]).returncode


def write_summary(parent: Path, cfg: DictConfig, stages: Sequence[Stage]) -> dict[str, Any]:
    """PARENT/summary.json: each stage's run directory and headline numbers."""
    rows = []
    for stage in stages:
        summary = json.loads((stage.run_dir(parent) / "summary.json").read_text())
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
        return OmegaConf.merge(compose_config("stages"), saved)
    except Exception as exc:  # a key this version no longer has, or a value of the wrong type
        raise UserError(
            f"{run_dir / MARKER} does not fit this version of rlrecipes ({str(exc).strip().splitlines()[0]})"
        ) from None
