"""`rlrecipes train resume=true run_dir=R`: continue a run exactly as it was configured.

A resumed run takes every setting from the run's own `config.yaml`, not from today's
defaults: a run started with `trainer.max_steps=400` and pre-empted at step 55 continues to
step 400 when resumed with the command the interruption printed. Settings named on the
resume command line override the saved ones (each change is logged and appended to
`resumes.log`); only those that do not change what is computed up to `max_steps` may
differ (`RESUMABLE_CHANGES`), so a resumed run is the run it was.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from rlrecipes import rundir
from rlrecipes.compose.compose import compose_config, conf_dir
from rlrecipes.config.schema import MOVED_KEYS
from rlrecipes.engine.checkpoints import remove_incomplete, usable_checkpoint
from rlrecipes.errors import ConfigError, UserError

Log = Callable[[str], None]

# Settings a resumed run may change: they do not change what is computed up to max_steps.
# (`run_dir` is where the run is now, not a setting: a moved or copied run resumes.)
RESUMABLE_CHANGES = (
    "resume",
    "run_dir",
    "trainer.max_steps",
    "trainer.progress",
    "trainer.log_samples_every",  # what is stored for reading, not what is trained
    "trainer.policy_shift_every",  # what is measured, not what is trained
    "trainer.policy_shift_rows",
    "trainer.doctor",  # what is reported (and whether a finding stops the run), not what is trained
    "trainer.preflight",  # judged on the first rollout only, which a resumed run has passed
    "final_eval",
    "tracking",
    "output_root",
    "report_to",
    "cache_dir",
)

Change = tuple[str, Any, Any]  # (key, saved value, value from the command line)


def resume_requested(composed: DictConfig) -> bool:
    return bool(composed.get("resume"))


def resumed_config(composed: DictConfig, overrides: Sequence[str]) -> tuple[DictConfig, list[Change]]:
    """The config a training run resumes with: the run's saved `config.yaml`, typed by the schema
    of its recipe, with each key the command line names explicitly taken from `composed` (the
    command line composed as usual). Returns it with the keys whose values changed."""
    return resumed_run_config(composed, overrides, "train", _recipe_schema)


def _recipe_schema(saved: DictConfig, path: Path) -> list[str]:
    recipe = OmegaConf.select(saved, "recipe.name")
    if not isinstance(recipe, str):
        raise UserError(f"{path} names no recipe (recipe.name); it is not a training run's config")
    return [f"recipe={recipe}"]


def resumed_run_config(
    composed: DictConfig,
    overrides: Sequence[str],
    config_name: str,
    schema_of: Callable[[DictConfig, Path], list[str]],
) -> tuple[DictConfig, list[Change]]:
    """A resume of any run command (`train`, `sft`): the saved config merged into the typed
    schema `schema_of(saved, path)` selects (the overrides that compose it), then the command
    line's explicit keys on top; its config groups must give the run's own values."""
    if not composed.run_dir:
        raise ConfigError("resume=true needs run_dir=RUN (the run to continue)")
    run_dir = Path(composed.run_dir).expanduser()
    saved = saved_run_config(run_dir)
    schema = schema_of(saved, run_dir / rundir.MARKER)
    try:  # the saved values, merged into the typed schema
        cfg = merged_into_schema(compose_config(config_name, schema), saved)
    except ConfigError:
        raise
    except Exception as exc:  # a key this version no longer has, or a value of the wrong type
        raise UserError(
            f"{run_dir / rundir.MARKER} does not fit this version of rlrecipes "
            f"({str(exc).strip().splitlines()[0]}); resume it with the version that started it"
        ) from None
    keys, groups = explicit_keys(overrides)
    changes: list[Change] = []
    for key in keys:
        new = OmegaConf.select(composed, key)
        old = OmegaConf.select(cfg, key, default=None)
        if old != new:
            changes.append((key, old, new))
        OmegaConf.update(cfg, key, new, merge=False)
    for group, line in groups:
        check_group_is_the_runs(group, line, composed, cfg, keys)
    cfg.resume, cfg.run_dir = True, str(composed.run_dir)
    return cfg, changes


def merged_into_schema(schema: DictConfig, saved: DictConfig) -> DictConfig:
    """`saved` merged into the composed `schema`. Hydra composes with struct mode off and turns
    it on at the end, so a merge into its result refuses the keys of a free-form dict field
    (`rollout.tool_kwargs.search`, `trainer.lr_scheduler_kwargs.min_lr_rate`) that composing
    the run accepted: those fields are opened for the merge, then closed again. Keys the
    typed nodes do not have are still refused."""
    for node in _free_form_dicts(schema):
        OmegaConf.set_struct(node, False)
    cfg = OmegaConf.merge(schema, saved)
    for node in _free_form_dicts(cfg):
        OmegaConf.set_struct(node, None)  # inherited again, as in a composed config
    return cfg


def _free_form_dicts(node: DictConfig) -> list[DictConfig]:
    """The dict nodes below `node` that no dataclass types (`Dict[str, Any]` fields), outermost first."""
    found = []
    for key in node.keys():
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
            if OmegaConf.get_type(child) is dict:
                found.append(child)
            else:
                found += _free_form_dicts(child)
    return found


def saved_run_config(run_dir: Path) -> DictConfig:
    """A run's `config.yaml`, with the keys an earlier version wrote moved to where they are now."""
    return with_moved_keys(rundir.read_config(run_dir))


def with_moved_keys(saved: DictConfig) -> DictConfig:
    """A config.yaml written before a key moved (schema.MOVED_KEYS: DAPO's flat `recipe.*`
    dynamic-sampling keys became the `recipe.dynamic_sampling` node) holds it at its old place:
    move it, so the run resumes with the values it was started with. The file is left as it is."""
    moved = []
    for old, new in MOVED_KEYS.items():
        parent, leaf = old.rsplit(".", 1)
        node = OmegaConf.select(saved, parent)
        if isinstance(node, DictConfig) and leaf in node and not isinstance(node[leaf], DictConfig):
            moved.append((new, node.pop(leaf)))  # all popped first: an old key may be a new node's name
    for new, value in moved:
        OmegaConf.update(saved, new, value, merge=True)
    return saved


def explicit_keys(overrides: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The config keys the command line sets (`resume` and `run_dir` aside) and the config
    groups it chooses (`trainer=gpu`). Deletions and Hydra's own settings are refused: a
    resume runs in this process, with the run's settings."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as exc:
        raise ConfigError(f"cannot parse overrides: {str(exc).splitlines()[0]}") from None
    keys: list[str] = []
    groups: list[tuple[str, str]] = []
    for ov in parsed:
        key = ov.key_or_group
        if key in ("resume", "run_dir"):
            continue
        if key.startswith("hydra"):
            raise ConfigError(
                f"{ov.input_line}: resume=true continues one run in this process, without Hydra's launchers; "
                "run the resume command inside the job (e.g. the sbatch script) instead"
            )
        if ov.is_delete():
            raise ConfigError(f"{ov.input_line}: resume=true cannot delete a setting of the run")
        if "." not in key and (conf_dir() / key).is_dir():
            groups.append((key, ov.input_line))
        else:
            keys.append(key)
    return keys, groups


def check_group_is_the_runs(group: str, line: str, composed: DictConfig, cfg: DictConfig, keys: Sequence[str]) -> None:
    """A config group named again on a resume (the start command repeated with resume=true, as
    a Slurm script does) must give the run's own values: it may not silently reset a setting
    the run was started with. Groups packaged at the root (`experiment`) are compared whole."""
    node = group if group in cfg else ""
    got = rundir.flatten_config(OmegaConf.to_container(OmegaConf.select(composed, node) if node else composed))
    run = rundir.flatten_config(OmegaConf.to_container(OmegaConf.select(cfg, node) if node else cfg))
    prefix = f"{node}." if node else ""
    skip = (*keys, "resume", "run_dir")
    differ = sorted(k for k in set(got) | set(run) if got.get(k) != run.get(k) and not f"{prefix}{k}".startswith(skip))
    if differ:
        shown = ", ".join(f"{prefix}{k} {run.get(k)!r} -> {got.get(k)!r}" for k in differ[:3])
        raise ConfigError(
            f"{line} on a resume gives "
            f"other settings than the run's ({shown}{' ...' if len(differ) > 3 else ''}); leave the group out "
            "(a resume keeps the run's settings) or set those keys explicitly"
        )


def describe(changes: Sequence[Change]) -> str:
    return ", ".join(f"{key} {old!r} -> {new!r}" for key, old, new in changes)


def reopen_run_dir(cfg: DictConfig, changes: Sequence[Change] = (), log: Log = print) -> Path:
    """The run directory `resume=true run_dir=R` continues, after checking it can be continued
    with this config: it is locked for this process (a run another process trains in is
    refused in one line), incomplete checkpoints are removed, damaged ones set aside, the first
    config.yaml is kept and the resume (with its overrides) appended to resumes.log."""
    run_dir = Path(cfg.run_dir).expanduser()
    rundir.lock_run_dir(run_dir)  # first: nothing is read or changed while another process trains there
    if (run_dir / "summary.json").is_file():
        raise UserError(f"run_dir={run_dir} finished already (it has summary.json); nothing to resume")
    before = rundir.flatten_config(OmegaConf.to_container(saved_run_config(run_dir), resolve=True))
    now = rundir.flatten_config(OmegaConf.to_container(cfg, resolve=True))
    changed = sorted(
        k for k in set(before) | set(now) if before.get(k) != now.get(k) and not k.startswith(RESUMABLE_CHANGES)
    )
    if changed:
        shown = ", ".join(f"{k} ({before.get(k)!r} -> {now.get(k)!r})" for k in changed[:4])
        raise UserError(
            f"resume=true with other settings than the run was started with: {shown}"
            f"{' ...' if len(changed) > 4 else ''}; only {', '.join(RESUMABLE_CHANGES[2:])} may change"
        )
    removed = remove_incomplete(run_dir / "checkpoints")
    checkpoint = usable_checkpoint(run_dir / "checkpoints", log)
    if changes:
        log(f"resuming with the run's saved settings, except: {describe(changes)}")
    rundir.append_line(
        run_dir / "resumes.log",
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} from {checkpoint.name if checkpoint else 'step 0 (no complete checkpoint)'}"
        f"{' (removed incomplete ' + ', '.join(removed) + ')' if removed else ''}"
        f"{' (overrides: ' + describe(changes) + ')' if changes else ''}: "
        f"{shlex.join(rundir.invocation or sys.argv)}",  # read now: the CLI sets it at start-up
    )
    return run_dir
