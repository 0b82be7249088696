"""Answer extraction and equivalence grading for math benchmarks and rewards.

Public API (stable, see shared spec):

- ``extract_answer(text, style="auto"|"boxed"|"answer_line"|"gsm8k"|"minerva"|"none") -> str | None``
  and ``extract(text, style) -> Extraction(answer, status, source)``
- ``grade(prediction, gold) -> bool``: the prediction may be a full response
- ``is_equivalent(pred_answer, gold_answer, rel_tol=1e-4) -> bool``: two already-extracted answers
- ``grading_counts()`` / ``take_grading_counts()``: timeouts and errors so far
- ``normalize_answer(answer) -> str``: the MATH-convention comparison key
- ``GradingPool`` / ``grade_many``: the same verdicts in worker processes, fast and
  with hard per-answer time limits

Importing this package is cheap: math-verify and sympy load on the first comparison
that needs them.
"""

from rlrecipes.grading.boxes import last_boxed
from rlrecipes.grading.equivalence import (
    DEFAULT_REL_TOL,
    DEFAULT_TIMEOUT_S,
    GradingCounts,
    answer_of,
    fast_verdict,
    grade,
    grading_counts,
    is_equivalent,
    policy_verdict,
    take_grading_counts,
)
from rlrecipes.grading.extract import AnswerStyle, Extraction, extract, extract_answer
from rlrecipes.grading.normalize import normalize_answer, parse_answer
from rlrecipes.grading.pool import GradingPool, default_pool, grade_many

__all__ = [
    "DEFAULT_REL_TOL",
    "DEFAULT_TIMEOUT_S",
    "AnswerStyle",
    "Extraction",
    "GradingCounts",
    "GradingPool",
    "answer_of",
    "default_pool",
    "extract",
    "extract_answer",
    "fast_verdict",
    "grade",
    "grade_many",
    "grading_counts",
    "is_equivalent",
    "policy_verdict",
    "take_grading_counts",
    "last_boxed",
    "normalize_answer",
    "parse_answer",
]
