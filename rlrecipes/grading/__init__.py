"""Answer extraction and equivalence grading for math benchmarks and rewards.

Public API (stable, see shared spec):

- ``extract_answer(text, style="boxed"|"answer_line"|"gsm8k"|"auto") -> str | None``
- ``grade(prediction, gold) -> bool``: the prediction may be a full response
- ``is_equivalent(pred_answer, gold_answer) -> bool``: two already-extracted answers
- ``normalize_answer(answer) -> str``: the MATH-convention comparison key
- ``GradingPool`` / ``grade_many``: the same verdicts in worker processes, fast and
  with hard per-answer time limits

Importing this package is cheap: math-verify and sympy load on the first comparison
that needs them.
"""

from rlrecipes.grading.equivalence import (
    DEFAULT_TIMEOUT_S,
    answer_of,
    fast_verdict,
    grade,
    is_equivalent,
)
from rlrecipes.grading.extract import STYLES, extract_answer, last_boxed
from rlrecipes.grading.normalize import normalize_answer, parse_answer
from rlrecipes.grading.pool import GradingPool, default_pool, grade_many

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "STYLES",
    "GradingPool",
    "answer_of",
    "default_pool",
    "extract_answer",
    "fast_verdict",
    "grade",
    "grade_many",
    "is_equivalent",
    "last_boxed",
    "normalize_answer",
    "parse_answer",
]
