"""What `rlrecipes train --help` and `rlrecipes eval --help` list, read from the schema and
`conf/`, so the help cannot go stale: the config groups with their options (the YAML files
of each `conf/<group>/` folder) and, for a chosen list of keys, each key's default, its
valid values (a `Choice`) and the schema's own comment on it.

Nothing here imports Hydra's composition, torch or a recipe: the defaults are the schema
dataclass's, overlaid with the default option's YAML of their group and the command's root
YAML, which is what composing without overrides gives (tests/config/test_settings_help.py
checks each listed key against a real composition).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any, Sequence

from omegaconf import OmegaConf

from rlrecipes.compose.compose import conf_dir, group_options
from rlrecipes.config import schema
from rlrecipes.errors import ConfigError
from rlrecipes.eval.config import EvalConfig


@dataclass(frozen=True)
class ConfigGroup:
    """A Hydra config group of a command (`model=`, `recipe=` ...) with its options."""

    name: str  # a folder of conf/: recipe, model, benchmark ...
    default: str | None  # the option the command composes without `group=`
    options: tuple[str, ...]


@dataclass(frozen=True)
class Setting:
    key: str  # dotted, as typed on the command line
    default: str  # as typed: null, [], 16, grpo
    choices: tuple[str, ...]  # a Choice field's valid values; () for any value of its type
    help: str  # the schema's comment on the field, first clause


def root_schema(config_name: str) -> type:
    if config_name == "train":
        return schema.TrainConfig
    if config_name == "eval":
        return EvalConfig
    raise ConfigError(f"no settings help for config {config_name!r}; valid: train, eval")


def _root_yaml(config_name: str) -> Any:
    return OmegaConf.load(conf_dir() / f"{config_name}.yaml")


def command_groups(config_name: str) -> list[ConfigGroup]:
    """The groups of `conf/<config_name>.yaml`'s defaults list, in its order."""
    groups = []
    for entry in OmegaConf.to_container(_root_yaml(config_name)).get("defaults", []):
        if not isinstance(entry, dict) or len(entry) != 1:
            continue  # the schema (`train_schema`) and `_self_`
        (name, default), *_ = entry.items()
        if name.startswith("override ") or not (conf_dir() / name).is_dir():
            continue
        groups.append(ConfigGroup(name, default, tuple(group_options(name))))
    return groups


def command_settings(config_name: str, keys: Sequence[str]) -> list[Setting]:
    """One `Setting` per key; a key the schema does not have raises `ConfigError`."""
    out = []
    for key in keys:
        owner, name, hint = _field(root_schema(config_name), key)
        default, about = _default(config_name, key), field_comments(owner).get(name, "")
        if isinstance(default, str) and (ref := _INTERPOLATION.match(default)):  # follows another key
            about = f"{about} (follows {ref.group(1)})"
            for _ in range(_MAX_HOPS):  # ... which may follow another (model.max_completion_length)
                if not (isinstance(default, str) and (ref := _INTERPOLATION.match(default))):
                    break
                default = _default(config_name, ref.group(1))
        choices = tuple(m.value for m in hint) if isinstance(hint, type) and issubclass(hint, Enum) else ()
        out.append(Setting(key, as_typed(default), choices, about))
    return out


_INTERPOLATION = re.compile(r"^\$\{([\w.]+)\}$")
_MAX_HOPS = 5


def _default(config_name: str, key: str) -> Any:
    """The schema's default of `key`, or what the group's default option or the root YAML sets."""
    owner, name, _ = _field(root_schema(config_name), key)
    default = _schema_default(owner, name)
    groups = {g.name: g.default for g in command_groups(config_name)}
    group, _, rest = key.partition(".")
    if rest and groups.get(group):  # the group's default option may set it
        option = OmegaConf.load(conf_dir() / group / f"{groups[group]}.yaml")
        return _unresolved(option, rest, default)
    return _unresolved(_root_yaml(config_name), key, default) if not rest else default


def _unresolved(cfg: Any, key: str, default: Any) -> Any:
    """`key`'s value in `cfg` as written (an interpolation stays its `${...}` text: it may point
    into another group, which this file alone cannot resolve), or `default`."""
    node = OmegaConf.to_container(cfg, resolve=False)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _field(cls: type, key: str) -> tuple[type, str, Any]:
    """The dataclass that declares the last part of `key`, that part, and its type."""
    owner: Any = cls
    parts = key.split(".")
    for i, part in enumerate(parts):
        hints = typing.get_type_hints(owner)
        if part not in hints:
            raise ConfigError(f"settings help: {key!r} is not a key of {cls.__name__}")
        hint = _unwrap(hints[part])
        if part == "recipe" and owner is schema.TrainConfig:
            hint = schema.RecipeConfig  # `Any` in the schema: each recipe's own; the shared knobs here
        if i == len(parts) - 1:
            return owner, part, hint
        if not dataclasses.is_dataclass(hint):
            raise ConfigError(f"settings help: {key!r} goes below {part!r}, which is not a group of keys")
        owner = hint
    raise AssertionError("unreachable")


def _unwrap(hint: Any) -> Any:
    """`Optional[X]` -> X."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint


def _schema_default(owner: type, name: str) -> Any:
    for f in dataclasses.fields(owner):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
    return None


def as_typed(value: Any) -> str:
    """A default as a user types it on the command line."""
    if value is None:
        return "null"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool):
        return str(value).lower()
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(map(as_typed, value)) + "]"
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    return str(value)


_FIELD = re.compile(r"^    (\w+)\s*:[^#]*?(?:#\s*(.*))?$")
_COMMENT = re.compile(r"^    #\s?(.*)$")


@cache
def field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in the class's source: the one on its line, else the block just
    above it, cut to its first clause (up to `;`, `. ` or the end), parentheses left out."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):  # no source (a frozen build): the help lists keys without comments
        return {}
    out: dict[str, str] = {}
    above: list[str] = []
    for line in lines:
        if m := _COMMENT.match(line):
            above.append(m.group(1).strip())
            continue
        m = _FIELD.match(line)
        if m and not line.strip().startswith(("def ", "class ", '"""')):
            text = m.group(2) or " ".join(above)
            out[m.group(1)] = first_clause(text)
        above = []
    return out


def first_clause(text: str) -> str:
    text = re.sub(r"\s*\([^()]*\)", "", text).strip()  # asides in parentheses
    text = re.split(r";\s|\.\s|\.$", text, maxsplit=1)[0].strip()
    if text[:1].isupper() and not text[1:2].isupper():  # a sentence's capital, not an acronym's
        text = text[0].lower() + text[1:]
    return text
