"""Run a task function under `@hydra.main`, so `-m` gets real Hydra sweeper/launcher
semantics (plugins such as submitit work), after validating every job's overrides
with the compose API so mistakes fail at once with one line."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from omegaconf import DictConfig

from rlrecipes.config.compose import ConfigError, compose_config, conf_dir
from rlrecipes.config.store import register_configs


def expand_sweep(overrides: Sequence[str]) -> list[list[str]]:
    """The override list of every job a multirun would launch (basic sweeper order)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as exc:
        raise ConfigError(f"cannot parse overrides: {str(exc).splitlines()[0]}") from None
    jobs: list[list[str]] = []
    for batch in BasicSweeper.split_arguments(parsed, None):
        jobs.extend(list(job) for job in batch)
    return jobs or [[]]


def validate(config_name: str, overrides: Sequence[str], multirun: bool) -> None:
    """Compose each job's config now; raise ConfigError naming the first bad key/option."""
    hydra_flags = [ov for ov in overrides if ov.startswith("hydra") or ov.startswith("+hydra")]
    plain = [ov for ov in overrides if ov not in hydra_flags]
    for job in expand_sweep(plain) if multirun else [plain]:
        compose_config(config_name, job)


def run_hydra(config_name: str, task: Callable[[DictConfig], Any], overrides: Sequence[str], multirun: bool) -> None:
    import hydra

    validate(config_name, overrides, multirun)
    register_configs()

    @hydra.main(config_path=str(conf_dir()), config_name=config_name, version_base="1.3")
    def _main(cfg: DictConfig) -> Any:
        return task(cfg)

    from rlrecipes import rundir

    saved = sys.argv
    rundir.invocation = list(saved)
    sys.argv = [saved[0], *(["--multirun"] if multirun else []), *overrides]
    try:
        _main()
    finally:
        sys.argv = saved
