"""One-shot RLVR's example selection: rank training examples by the variance of their
accuracy history and keep the top K (one-shot RLVR, Wang et al. 2025, §2: the historical variance score).

A history maps an example's id to the accuracies it scored each time it was sampled:
`{id: [acc, acc, ...]}`. Both our own `accuracy_history.json` (engine/history.py) and the
paper's `acc_step_500.json` (keys = DSR-sub row indices) have this shape.

Ranking follows the paper's code (`data/data_selection.py --method std`): the score is
the *population* variance (NumPy's default, ddof=0); the code sorts by `np.std`, which
orders examples identically. Ties keep the file's order (Python's sort is stable), so
the paper's history reproduces π1 = 124, π2 = 267, π13 = 682 and π1209 = 789.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from rlrecipes.data.loader import get_field, read_records
from rlrecipes.errors import UserError

# accuracy_history.json: example id -> its accuracy (share of its group correct) each time it was sampled
AccuracyHistory = dict[str, list[float]]


def _finite(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def population_variance(values: Sequence[float]) -> float:
    """Mean squared deviation from the mean (ddof=0) over the finite values.

    An example never scored (no finite value, e.g. its gold answer was missing) has no
    evidence of being informative: it scores 0 and so ranks with the constant ones.
    """
    import numpy as np

    xs = _finite(values)
    return float(np.var(xs)) if xs else 0.0


def population_std(values: Sequence[float]) -> float:
    import numpy as np

    xs = _finite(values)
    return float(np.std(xs)) if xs else 0.0


METHODS: dict[str, Callable[[Sequence[float]], float]] = {
    "variance": population_variance,  # the paper's Eq. 1-2
    "std": population_std,  # the paper's code; same order as variance
}


@dataclass(frozen=True)
class Ranked:
    id: str
    score: float
    rank: int  # 1 = highest score (the paper's π1)
    samples: int  # how many accuracies the history holds for this example


def load_history(path: str | Path) -> AccuracyHistory:
    """Read a history file, checking its shape: a JSON object of lists of numbers."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise UserError(f"history file {file} does not exist")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{file}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or not data:
        raise UserError(f"{file}: expected a non-empty JSON object {{id: [accuracy, ...]}}")
    history: AccuracyHistory = {}
    for key, values in data.items():
        if not isinstance(values, list) or not all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values
        ):
            raise UserError(f"{file}: entry {key!r} must be a list of accuracies (numbers)")
        history[str(key)] = [float("nan") if v is None else float(v) for v in values]
    return history


def rank(history: AccuracyHistory, method: str = "variance") -> list[Ranked]:
    """All examples, highest score first; equal scores keep the history's order."""
    if method not in METHODS:
        raise UserError(f"--method {method!r} is unknown; valid: {', '.join(METHODS)}")
    score = METHODS[method]
    # Sort by np.std whatever the reported score: variance and std order examples alike
    # in exact arithmetic, but their rounding differs, and on the paper's history 33
    # exact ties would break differently under np.var than under the code's np.std.
    scored = [(key, population_std(values), score(values), len(values)) for key, values in history.items()]
    ordered = sorted(scored, key=lambda item: -item[1])  # stable: ties keep file order
    return [Ranked(key, s, i + 1, n) for i, (key, _, s, n) in enumerate(ordered)]


def ranking_problem(history: AccuracyHistory, ranked: Sequence[Ranked]) -> str | None:
    """Why `ranked` says nothing about which examples are informative, or None: every example
    scored at most once (a variance needs two accuracies), or every score the same (the order
    is then the file's)."""
    if not ranked:
        return None
    if all(len(_finite(values)) <= 1 for values in history.values()):
        return (
            f"each of the {len(history)} examples was scored at most once, so every variance is 0 and the "
            "ranking is the file's order; record a longer history over fewer problems "
            "(more trainer.max_steps, a smaller data.max_examples)"
        )
    scores = {c.score for c in rank(history, "variance")}
    if len(scores) == 1:
        return (
            f"all {len(history)} examples have the same variance ({scores.pop():.4f}), so the ranking is "
            "the file's order; record a longer history (more trainer.max_steps)"
        )
    return None


def select(history: AccuracyHistory, top: int, method: str = "variance") -> list[Ranked]:
    if top < 1:
        raise UserError(f"--top must be at least 1, got {top}")
    return rank(history, method)[:top]


def rows_for(chosen: Sequence[Ranked], data: str | Path, id_field: Optional[str] = None) -> list[dict[str, Any]]:
    """The dataset rows of the chosen examples, in rank order.

    History keys name rows by position (the paper's DSR-sub keys are row indices; our own
    histories use row positions for files without an id column) unless `id_field`
    (dotted, e.g. `extra_info.index`) says which column holds the id.
    """

    rows, source = read_records(str(data))
    if id_field:
        by_id = {str(get_field(row, id_field)): row for row in rows}
    else:
        by_id = {str(i): row for i, row in enumerate(rows)}
    missing = [c.id for c in chosen if c.id not in by_id]
    if missing:
        how = f"column {id_field!r}" if id_field else f"row index (0..{len(rows) - 1})"
        raise UserError(
            f"selected id(s) {', '.join(missing[:5])} not found in {source} by {how}; "
            "pass --id-field COLUMN if the history is keyed by a column"
        )
    return [by_id[c.id] for c in chosen]


def write_jsonl(path: str | Path, rows: Sequence[dict[str, Any]]) -> Path:
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return out


def selection_records(chosen: Sequence[Ranked], method: str) -> list[dict[str, Any]]:
    return [{"id": c.id, "rank": c.rank, method: c.score, "samples": c.samples} for c in chosen]
