"""Every preset, pipeline, benchmark and protocol the README names exists in conf/ (brace lists
such as `intuitor_qwen2_5_{1_5b,3b}_math` expanded), so a command copied from it composes."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {"experiment": "experiment", "pipeline": "pipeline", "sft_experiment": "sft_experiment"}
GROUPS |= {"benchmark": "benchmark", "protocol": "protocol"}
NAME = re.compile(r"(?<![\w.])(experiment|pipeline|sft_experiment|benchmark|protocol)=([\w{},]+)")


def expand(name: str) -> list[str]:
    """`a_{x,y}_b{1,2}` -> a_x_b1, a_x_b2, a_y_b1, a_y_b2."""
    parts = re.split(r"\{([^}]*)\}", name)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def named_configs(text: str) -> set[tuple[str, str]]:
    found = set()
    for group, raw in NAME.findall(text):
        if raw.isupper() or raw in ("NAME", "SET"):
            continue  # a placeholder for the reader's own value
        for name in expand(raw.rstrip(",")):
            found.add((group, name))
    return found


def test_brace_lists_expand_like_a_shell():
    assert expand("i_{1_5b,3b}_m") == ["i_1_5b_m", "i_3b_m"]
    assert named_configs("`experiment=a_{x,y}` and `pipeline=NAME`") == {("experiment", "a_x"), ("experiment", "a_y")}


def test_every_config_the_readme_names_exists():
    names = named_configs((ROOT / "README.md").read_text())
    assert len(names) > 30  # the papers' tables are read
    missing = sorted(f"{g}={n}" for g, n in names if not (ROOT / "conf" / GROUPS[g] / f"{n}.yaml").is_file())
    assert not missing, missing
