"""Parse a judge's output into a verdict, with a status for every way it can fail.

Statuses (each is counted by training and evaluation, never folded into "wrong" silently):
- `ok`: one verdict (pairwise), two in-range unequal scores (pairwise_scores), one in-range
  score (pointwise);
- `none`: no verdict / score tag at all (or a tag without a number);
- `both`: both verdicts (`[[A]]` and `[[B]]` in the final answer, or answer tags that
  disagree), or a score tag given twice with different values: ambiguous, not guessed;
- `out_of_range`: a score outside [0, 10];
- `tie` (pairwise_scores only): equal scores, so no verdict.

Whitespace inside and around the tags is tolerated (`<answer> [[ A ]] </answer>`); letters
are not case-folded (the formats ask for `[[A]]`). When several `<answer>` blocks agree the
verdict stands (a judge that restates its answer is not ambiguous).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlrecipes.judge.prompts import FORMATS, SCORE_RANGE

STATUSES = ("ok", "none", "both", "out_of_range", "tie")

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_VERDICT = re.compile(r"\[\[\s*([AB])\s*\]\]")
_NUMBER = r"\s*([-+]?\d+(?:\.\d+)?)\s*"


@dataclass(frozen=True)
class Judgement:
    status: str
    verdict: str | None = None  # "A" | "B" (pairwise formats)
    score: float | None = None  # pointwise
    scores: tuple[float, float] | None = None  # pairwise_scores: (A, B)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def parse(text: str, judge: str) -> Judgement:
    """The judgement in `text` under format `judge` (see the module doc)."""
    if judge == "pairwise":
        return _pairwise(text)
    if judge == "pairwise_scores":
        return _pairwise_scores(text)
    if judge == "pointwise":
        score = _score(text, "score")
        return score if isinstance(score, Judgement) else Judgement("ok", score=score)
    raise ValueError(f"unknown judge format {judge!r}; valid: {', '.join(FORMATS)}")


def _pairwise(text: str) -> Judgement:
    blocks = _ANSWER.findall(text)
    verdicts = {v for block in blocks for v in _VERDICT.findall(block)}
    if not verdicts:
        return Judgement("none")
    if len(verdicts) > 1:
        return Judgement("both")
    return Judgement("ok", verdict=verdicts.pop())


def _pairwise_scores(text: str) -> Judgement:
    a, b = _score(text, "score_A"), _score(text, "score_B")
    for part in (a, b):
        if isinstance(part, Judgement) and part.status != "none":
            return part
    if isinstance(a, Judgement) or isinstance(b, Judgement):
        return Judgement("none")
    if a == b:
        return Judgement("tie", scores=(a, b))
    return Judgement("ok", verdict="A" if a > b else "B", scores=(a, b))


def _score(text: str, tag: str) -> float | Judgement:
    """The number inside `<tag>...</tag>`, or the Judgement saying why there is none."""
    values = {float(v) for v in re.findall(rf"<{tag}>{_NUMBER}</{tag}>", text)}
    if not values:
        return Judgement("none")
    if len(values) > 1:
        return Judgement("both")
    value = values.pop()
    low, high = SCORE_RANGE
    if not low <= value <= high:
        return Judgement("out_of_range")
    return value


def verdict_verifier(judge: str):
    """`verify(completion, gold) -> bool` for training rows: a pairwise row (gold A/B) is right
    when its verdict is the gold letter; a pointwise row (gold `chosen`/`rejected`) has no
    per-row truth, so there it says whether the score parsed (the pair's reward is
    group-level). `multitask` rows are pairwise_scores or pointwise by their gold."""

    def verify(completion: str, gold: object) -> bool:
        if str(gold) in ("chosen", "rejected"):
            return parse(completion, "pointwise").ok
        judgement = parse(completion, "pairwise_scores" if judge == "multitask" else judge)
        return judgement.ok and judgement.verdict == str(gold)

    return verify
