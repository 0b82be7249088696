"""Run a task function under `@hydra.main`, so `-m` gets real Hydra sweeper/launcher
semantics (plugins such as submitit work), after validating every job's config (the
compose API, then the command's own `check`) so mistakes fail at once with one line,
before any job of a sweep starts."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from omegaconf import DictConfig

from rlrecipes import rundir
from rlrecipes.compose.compose import as_lists, compose_config, conf_dir, refuse_moved_keys
from rlrecipes.compose.store import register_configs
from rlrecipes.errors import ConfigError, UserError

Check = Callable[[DictConfig], Any]  # raises a UserError for a config no job can run


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


def compose_jobs(config_name: str, overrides: Sequence[str], multirun: bool) -> list[tuple[list[str], DictConfig]]:
    """Each job's overrides and composed config (one job without -m); `hydra.*` flags left out."""
    hydra_flags = [ov for ov in overrides if ov.startswith("hydra") or ov.startswith("+hydra")]
    plain = [ov for ov in overrides if ov not in hydra_flags]
    refuse_moved_keys(plain)  # before the sweep is expanded, so the line repeats what was typed
    return [(job, compose_config(config_name, job)) for job in (expand_sweep(plain) if multirun else [plain])]


def validate(config_name: str, overrides: Sequence[str], multirun: bool, check: Check | None = None) -> None:
    """Compose each job's config now and run `check` on it; raise the first mistake as one line."""
    jobs = compose_jobs(config_name, overrides, multirun)
    shared = set.intersection(*(set(job) for job, _ in jobs))
    for job, cfg in jobs:
        if check is not None:
            try:
                check(cfg)
            except UserError as exc:
                if len(jobs) == 1:
                    raise
                # name the sweep point whose values fail (the others may be fine)
                raise ConfigError(f"{' '.join(ov for ov in job if ov not in shared)}: {exc}") from None


def run_hydra(
    config_name: str,
    task: Callable[[DictConfig], Any],
    overrides: Sequence[str],
    multirun: bool,
    check: Check | None = None,
) -> None:
    import hydra

    overrides = as_lists(overrides)
    validate(config_name, overrides, multirun, check)
    register_configs()

    @hydra.main(config_path=str(conf_dir()), config_name=config_name, version_base="1.3")
    def _main(cfg: DictConfig) -> Any:
        return task(cfg)

    saved = sys.argv
    rundir.invocation = list(saved)
    sys.argv = [saved[0], *(["--multirun"] if multirun else []), *overrides]
    try:
        _main()
    finally:
        sys.argv = saved
