"""`RUN/samples/step_N.jsonl`: a training step's rollouts as text, written with
`trainer.log_samples_every` and read by `rlrecipes show` and `rlrecipes doctor`.

One JSON object per completion (the main process's share of the step's rollouts):

| key | value |
| --- | --- |
| `step` | the optimizer step whose update these rollouts fed (metrics.jsonl's `step`) |
| `group` | the prompt's group within the file (completions of one prompt share it) |
| `prompt` | the prompt as the model saw it (template applied) |
| `completion` | every completion token as text, tool results included |
| `answer` | the reference answer (null: label-free data) |
| `rewards` | each reward function's score, by name (null: the function did not apply) |
| `advantage` | the completion's advantage (per-token advantages: their mean) |
| `length` | completion tokens |
| `truncated` | true when the completion hit `trainer.max_completion_length` before it ended |
| `turns` | tool rollouts only: `[{"by": "model" or "tool", "text": ...}]`, who wrote which part |

Files are replaced whole (never half-written); a reader still skips a line that is not a
sample and says so, since a run directory may come from anywhere.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlrecipes.errors import UserError
from rlrecipes.rundir import write_lines

FOLDER = "samples"
REQUIRED = {"prompt": str, "completion": str}  # what a line must hold to be shown at all
_NAME = re.compile(r"step_(\d+)\.jsonl")


@dataclass
class StepSamples:
    step: int
    rows: list[dict[str, Any]]
    skipped: list[str] = field(default_factory=list)  # one note per line left out


def step_file(run: Path, step: int) -> Path:
    return run / FOLDER / f"step_{step}.jsonl"


def write_step(run: Path, step: int, rows: list[dict[str, Any]]) -> Path:
    path = step_file(run, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_lines(path, [json.dumps(row, ensure_ascii=False) for row in rows])
    return path


def stored_steps(run: Path) -> list[int]:
    """The steps whose samples the run holds, in order ([] when it stores none)."""
    folder = run / FOLDER
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _NAME.fullmatch(p.name)))


def read_step(run: Path, step: int) -> StepSamples:
    """Step `step`'s samples; one line (UserError) when the run stores none for it."""
    path = step_file(run, step)
    if not path.is_file():
        steps = stored_steps(run)
        if not steps:
            raise UserError(
                f"{run}: stores no samples ({FOLDER}/ is missing); train with trainer.log_samples_every=N to keep them"
            )
        raise UserError(f"{path}: no samples for step {step}; stored steps: {_listed(steps)}")
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    out = StepSamples(step, [])
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        problem = _problem(line)
        if problem:
            out.skipped.append(f"{path}: line {number} left out: {problem}")
        else:
            out.rows.append(json.loads(line))
    return out


def _problem(line: bytes) -> str | None:
    try:
        row = json.loads(line.decode("utf-8"))
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        return "not a whole JSON record (torn or damaged)"
    if not isinstance(row, dict):
        return "not a JSON object"
    wrong = [key for key, kind in REQUIRED.items() if not isinstance(row.get(key), kind)]
    return f"no text under {', '.join(wrong)} (a sample holds prompt and completion)" if wrong else None


def _listed(steps: list[int]) -> str:
    return ", ".join(map(str, steps)) if len(steps) <= 12 else ", ".join(map(str, steps[:10])) + f", ... {steps[-1]}"
