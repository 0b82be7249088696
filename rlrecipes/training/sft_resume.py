"""`rlrecipes sft resume=true run_dir=R`: continue an SFT run exactly as it was configured.

As for `rlrecipes train` (`rlrecipes.training.resume`): the run's own `config.yaml` gives every
setting, typed by the SFT schema; keys named on the command line override it, each change
logged, and only those that leave the computation up to `trainer.max_steps` unchanged may
differ (`rlrecipes.training.resume.reopen_run_dir` checks them and appends to `resumes.log`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig, OmegaConf

from rlrecipes import rundir
from rlrecipes.compose.compose import compose_config
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.training.resume import Change, check_group_is_the_runs, explicit_keys


def resumed_sft_config(composed: DictConfig, overrides: Sequence[str]) -> tuple[DictConfig, list[Change]]:
    """The config a resumed SFT run continues with, and the keys the command line changed."""
    if not composed.run_dir:
        raise ConfigError("resume=true needs run_dir=RUN (the run to continue)")
    run_dir = Path(composed.run_dir).expanduser()
    saved = rundir.read_config(run_dir)
    if "sft" not in saved or "recipe" in saved:
        raise UserError(
            f"{run_dir / rundir.MARKER} is not an SFT run's config; a training run resumes with "
            f"`rlrecipes train resume=true run_dir={run_dir}`"
        )
    try:
        cfg = OmegaConf.merge(compose_config("sft"), saved)
    except Exception as exc:  # a key this version no longer has, or a value of the wrong type
        raise UserError(
            f"{run_dir / rundir.MARKER} does not fit this version of rlrecipes "
            f"({str(exc).strip().splitlines()[0]}); resume it with the version that started it"
        ) from None
    keys, groups = explicit_keys(overrides)
    changes: list[Change] = []
    for key in keys:
        new, old = OmegaConf.select(composed, key), OmegaConf.select(cfg, key, default=None)
        if old != new:
            changes.append((key, old, new))
        OmegaConf.update(cfg, key, new, merge=False)
    for group, line in groups:
        check_group_is_the_runs(group, line, composed, cfg, keys)
    cfg.resume, cfg.run_dir = True, str(composed.run_dir)
    return cfg, changes
