"""Compose configs outside `@hydra.main` (for `config show`, validation and tests),
turning Hydra's multi-line exceptions into one line that names the valid choices.

Composition checks keys and types (a `Choice` field takes only its listed values); the
rules between values are each command's validation (`rlrecipes.training.check_run`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf, open_dict

from rlrecipes.compose.store import register_configs
from rlrecipes.config.schema import MOVED_KEYS
from rlrecipes.errors import ConfigError


def conf_dir() -> Path:
    """The `conf/` folder: inside the installed package, or at the source checkout's root."""
    here = Path(__file__).resolve().parent.parent  # .../rlrecipes
    for candidate in (here / "conf", here.parent / "conf"):
        if (candidate / "train.yaml").is_file():
            return candidate
    raise ConfigError(f"rlrecipes config folder not found next to {here}; reinstall the package")


def group_options(group: str) -> list[str]:
    folder = conf_dir() / group
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


# list settings that also take one bare value (`report_to=tensorboard` for `[tensorboard]`),
# which OmegaConf would refuse with "str is not a ListConfig"
ONE_OR_MANY = ("report_to",)


def as_lists(overrides: Sequence[str]) -> list[str]:
    """`report_to=tensorboard` -> `report_to=[tensorboard]` (a comma list stays a sweep)."""
    out = []
    for ov in overrides:
        key, eq, value = ov.partition("=")
        if eq and key.lstrip("+") in ONE_OR_MANY and value and not value.startswith("[") and "," not in value:
            ov = f"{key}=[{value}]"
        out.append(ov)
    return out


def compose_config(config_name: str, overrides: Sequence[str] = ()) -> DictConfig:
    """Compose `conf/<config_name>.yaml` with overrides; raise `ConfigError` on mistakes."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    overrides = as_lists(overrides)
    refuse_moved_keys(overrides)
    _refuse_free_additions(config_name, overrides)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
            OmegaConf.resolve(cfg)
    except ConfigError:
        raise
    except Exception as exc:  # Hydra/OmegaConf raise many types; all become one line
        raise ConfigError(explain(exc, config_name, overrides)) from None
    finally:
        GlobalHydra.instance().clear()
    return cfg


def refuse_moved_keys(overrides: Sequence[str]) -> None:
    """A key that moved (schema.MOVED_KEYS) names its new home, not a list of valid keys."""
    for ov in overrides:
        new = moved_override(ov)
        if new != ov:
            raise ConfigError(f"{ov.split('=', 1)[0].lstrip('+~')} moved: write {new} (see README, Changes)")


def moved_override(ov: str) -> str:
    """`recipe.max_generation_rounds=4` -> `recipe.dynamic_sampling.max_rounds=4`: the stage
    command lines a pipeline saved before a key moved resume as they were written.
    `recipe.dynamic_sampling` is itself a node now: a mapping value for it is the new form."""
    key, eq, value = ov.partition("=")
    bare = key.lstrip("+~")
    if eq and bare in MOVED_KEYS and not value.lstrip().startswith("{"):
        return f"{key[: len(key) - len(bare)]}{MOVED_KEYS[bare]}={value}"
    return ov


def _refuse_free_additions(config_name: str, overrides: Sequence[str]) -> None:
    """`+key=value` adds a key Hydra would otherwise accept silently; only free-form dicts
    (`*_kwargs`, e.g. trainer.lr_scheduler_kwargs) and config groups may take new keys, so
    `+trainer.lerning_rate=1` is a typo, not a setting."""
    for ov in overrides:
        if not ov.startswith("+") or ov.startswith("++"):
            continue
        key = ov[1:].split("=", 1)[0]
        parts = key.split(".")
        if parts[0] == "hydra" or (len(parts) == 1 and (conf_dir() / key).is_dir()):
            continue
        if any(part.endswith("_kwargs") for part in parts[:-1]):
            continue
        valid = _valid_keys(key, config_name, [o for o in overrides if o != ov])
        raise ConfigError(
            f"unknown key {key!r} ('+' adds keys only inside *_kwargs dicts such as "
            f"trainer.lr_scheduler_kwargs); valid keys here: {', '.join(valid)}"
        )


def explain(exc: BaseException, config_name: str, overrides: Sequence[str] = ()) -> str:
    """One line describing a composition error, with the valid keys or options."""
    from hydra.errors import MissingConfigException

    if isinstance(exc, MissingConfigException):
        for ov in overrides:
            key = ov.lstrip("+~").split("=", 1)[0]
            if "." not in key and (conf_dir() / key).is_dir():
                value = ov.split("=", 1)[-1]
                if value not in group_options(key):
                    return f"unknown {key} {value!r}; valid: {', '.join(group_options(key))}"
        options = getattr(exc, "options", None)
        if options:
            return f"{_first_line(exc)}; valid: {', '.join(options)}"
        return _first_line(exc)
    text = str(exc)
    if "Ambiguous value" in text:  # "a=1,2" outside a sweep
        return f"{_first_line(exc)}; a comma list is a sweep: add -m (rlrecipes {'train' if config_name == 'train' else config_name} -m ...)"
    if "No match in the defaults list" in text:  # a group of the other root config
        other = "eval" if config_name == "train" else "train"
        group = re.search(r"override '([^']+)'", text)
        if group and (conf_dir() / group.group(1)).is_dir():
            return (
                f"{group.group(1)}= is not a group of the {config_name} config (valid groups: "
                f"{', '.join(_groups_of(config_name))}); for {other}: rlrecipes config show --name {other} ..."
            )
    # the interesting OmegaConf error is usually the cause of Hydra's wrapper
    cause = exc.__cause__ or exc.__context__
    choice = re.search(r"Invalid value '(.*)', expected one of \[(.*)\]", str(cause or exc))
    if choice:  # a `Choice` field (schema.Choice) given a value outside its set
        full = re.search(r"full_key: ([\w.]+)", str(cause or exc))
        key = full.group(1) if full else "value"
        return f"{key}={choice.group(1)!r}; valid: {choice.group(2)}"
    if cause is not None and "Key '" in str(cause):
        text = str(cause)
    match = re.search(r"Key '([^']+)' not in '([^']+)'", text)
    if match:
        key = match.group(1)
        full = re.search(r"full_key: ([\w.]+)", text)
        full_key = full.group(1) if full else key
        return f"unknown key {full_key!r}; valid keys here: {', '.join(_valid_keys(full_key, config_name, overrides))}"
    if "Could not override" in text or "Could not append" in text:
        match = re.search(r"Key '([^']+)' is not in struct", text)
        if match:
            key = _override_key_for(match.group(1), overrides)
            return f"unknown key {key!r}; valid keys here: {', '.join(_valid_keys(key, config_name, overrides))}"
    if cause is not None:
        return f"{_first_line(exc)}: {_first_line(cause)}"
    return _first_line(exc)


def _groups_of(config_name: str) -> list[str]:
    """The config groups named in `conf/<config_name>.yaml`'s defaults list."""
    text = (conf_dir() / f"{config_name}.yaml").read_text()
    names = re.findall(r"^\s*-\s*(?:optional\s+)?([a-z_]+)\s*:", text, flags=re.M)
    return sorted({n for n in names if (conf_dir() / n).is_dir()})


def _override_key_for(leaf: str, overrides: Sequence[str]) -> str:
    for ov in overrides:
        key = ov.split("=", 1)[0].lstrip("+~")
        if key.endswith(leaf):
            return key
    return leaf


def _valid_keys(full_key: str, config_name: str, overrides: Sequence[str]) -> list[str]:
    """Keys next to the first segment of `full_key` that does not exist, read from the
    config composed without the offending override."""

    def offending(ov: str) -> bool:
        key = ov.split("=", 1)[0].lstrip("+~")
        return key == full_key or key.startswith(full_key + ".")

    kept = [ov for ov in overrides if not offending(ov)]
    try:
        cfg = compose_config(config_name, kept)
    except ConfigError:
        return []
    node: object = cfg
    for part in full_key.split(".")[:-1]:
        if not isinstance(node, DictConfig) or part not in node:
            break
        node = node[part]
    return sorted(node.keys()) if isinstance(node, DictConfig) else []


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def eval_config_for(train_cfg: Any, model_path: str | None, eval_overrides: Sequence[str]) -> Any:
    """The `rlrecipes eval` config for a model trained with `train_cfg`: the model as trained
    (dtype, tokenizer...) and, for synthetic suites, its task; `model_path` None = the base."""
    cfg = compose_config("eval", list(eval_overrides))
    with open_dict(cfg):
        cfg.model = OmegaConf.merge(cfg.model, train_cfg.model)
        cfg.data = OmegaConf.merge(cfg.data, train_cfg.data)
        cfg.cache_dir = cfg.cache_dir or train_cfg.get("cache_dir")
        if model_path is not None:
            cfg.model.name_or_path = model_path
    return cfg
