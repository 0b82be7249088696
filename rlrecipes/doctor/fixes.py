"""A finding's fix as a command line: the run's own command and overrides (versions.json),
with the settings to change put in place of the run's values."""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

from omegaconf import OmegaConf

from rlrecipes.compose.compose import conf_dir
from rlrecipes.config.schema import MOVED_KEYS
from rlrecipes.doctor.reading import RunRecord
from rlrecipes.runs.discover import number

# overrides a new run must not repeat: they name this run's folder or continue it
NOT_REPEATED = ("run_dir", "resume")
UNKNOWN = "..."  # where the run recorded no overrides: the user's own


def command_line(record: RunRecord, changes: dict[str, Any]) -> str:
    """`rlrecipes train <the run's overrides, less those changed> <key=value ...>`."""
    kept = (
        [UNKNOWN]
        if record.overrides is None
        else [o for o in record.overrides if _key(o) not in (*NOT_REPEATED, *changes)]
    )
    words = ["rlrecipes", record.command, *kept, *(f"{key}={value_text(v)}" for key, v in changes.items())]
    return " ".join(word if word == UNKNOWN else shlex.quote(word) for word in words)


def _key(override: str) -> str:
    key = override.partition("=")[0].lstrip("+~")
    return MOVED_KEYS.get(key, key)  # an older run's name for a key the fix names anew


def value_text(value: Any) -> str:
    """A value as Hydra's command line reads it back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return str(value)


def _flow(item: Any) -> str:
    if isinstance(item, dict):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in item.items() if v != {}) + "}"
    return value_text(item)


def setting(record: RunRecord, key: str, kind: type) -> Any:
    """The run's value of `key` as `kind`, or None when the config does not hold one."""
    value = record.setting(key)
    if kind is list and isinstance(value, str):  # flatten_config keeps lists as JSON text
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if kind is int:  # a whole number, not a bool
        finite = number(value)
        return int(finite) if finite is not None and finite.is_integer() else None
    if kind is float:  # a number, not a bool; an infinite float too (an unbounded clip range)
        return value if isinstance(value, float) and math.isinf(value) else number(value)
    return value if isinstance(value, kind) else None


def halved_learning_rate(record: RunRecord) -> dict[str, Any]:
    """{"trainer.learning_rate": half the run's} (a placeholder when the config is unreadable)."""
    lr = setting(record, "trainer.learning_rate", float)
    return {"trainer.learning_rate": lr / 2 if lr else "<half of yours>"}


def dapo_epsilon_high() -> float:
    """DAPO's clip-higher bound, read from its recipe YAML (its one home)."""
    return float(OmegaConf.load(conf_dir() / "recipe" / "dapo.yaml").epsilon_high)
