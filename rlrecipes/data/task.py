"""What every synthetic task is (rlrecipes/data/synthetic.py builds the configured ones; the tool
tasks of data/tool_task.py are built on it): its own module so that task modules which read
others (the long documents read the fact base's people) import it without a loop."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class SyntheticTask:
    name: str
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    verify: Callable[[str, Any], bool]
    demonstration: Callable[[dict[str, Any], random.Random], str]  # flawed-teacher completion
    solution: Callable[[dict[str, Any]], str]  # the correct completion
    # graded by matching the gold against the completion's answer line (answer_style answer_line),
    # so its rows can be written as {id, problem, answer} files and read back unchanged (curriculum
    # phases' data); False: its own verifier is needed
    answer_line_graded: bool = field(default=False, kw_only=True)
