"""`rlrecipes sft resume=true run_dir=R`: continue an SFT run exactly as it was configured.

As for `rlrecipes train` (`rlrecipes.training.resume`): the run's own `config.yaml` gives every
setting, typed by the SFT schema; keys named on the command line override it, each change
logged, and only those that leave the computation up to `trainer.max_steps` unchanged may
differ (`rlrecipes.training.resume.reopen_run_dir` checks them and appends to `resumes.log`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig

from rlrecipes.errors import UserError
from rlrecipes.training.resume import Change, resumed_run_config


def resumed_sft_config(composed: DictConfig, overrides: Sequence[str]) -> tuple[DictConfig, list[Change]]:
    """The config a resumed SFT run continues with, and the keys the command line changed."""
    return resumed_run_config(composed, overrides, "sft", _sft_schema)


def _sft_schema(saved: DictConfig, path: Path) -> list[str]:
    if "sft" not in saved or "recipe" in saved:
        raise UserError(
            f"{path} is not an SFT run's config; a training run resumes with "
            f"`rlrecipes train resume=true run_dir={path.parent}`"
        )
    return []
