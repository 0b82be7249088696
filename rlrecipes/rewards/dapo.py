"""DAPO's rule-based reward (paper Eq. 7): +1 if the final answer is right, -1 otherwise.

The rule is that of verl's `math_dapo.compute_score`, which DAPO trained with:

1. look only at the last 300 characters of the response (the longest MATH-500 answer
   has 159; this also keeps a stray early "Answer:" in the reasoning from counting);
2. take the text after the *last* `Answer:` there (case-insensitive) up to the line end;
3. normalise prediction and gold with Minerva's normalisation (`minerva_normalize`, verl's
   `normalize_final_answer`; Lewkowycz et al. 2022, App. D) and compare the strings exactly.

Steps 1-2 are `rlrecipes.grading.extract.raw_answer_line`, the parser the `answer_line`
answer style builds on.

So a `\\boxed{}`-only answer scores -1: base models must be prompted with the DAPO
instruction (`data.template=dapo`). Exact string equality is enough for DAPO-Math-17k,
whose answers were all rewritten to integers; `recipe.verifier=task` swaps in the
data's own checker (math-verify, or a synthetic task's) for data where it is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rlrecipes.choice import Choice
from rlrecipes.errors import UserError
from rlrecipes.grading.extract import raw_answer_line
from rlrecipes.rewards import RewardContext, RewardFn, register_reward

# Minerva's normalisation tables, applied in this order (App. D of the Minerva paper).
_SUBSTITUTIONS = (
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    ("\\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
)
_REMOVED = (
    "square",
    "ways",
    "integers",
    "dollars",
    "mph",
    "inches",
    "hours",
    "km",
    "units",
    "\\ldots",
    "sue",
    "points",
    "feet",
    "minutes",
    "digits",
    "cents",
    "degrees",
    "cm",
    "gm",
    "pounds",
    "meters",
    "meals",
    "edges",
    "students",
    "childrentickets",
    "multiples",
    "\\text{s}",
    "\\text{.}",
    "\\text{\ns}",
    "\\text{}^2",
    "\\text{}^3",
    "\\text{\n}",
    "\\text{}",
    "\\mathrm{th}",
    "^\\circ",
    "^{\\circ}",
    "\\;",
    ",\\!",
    "{,}",
    '"',
    "\\dots",
)
# (pattern, replacement): keep what is inside $..$, \text{}, \textbf{}, \overline{}, \boxed{};
# then spell out shorthand TeX (\frac12 -> \frac{1}{2}, \sqrt2 -> \sqrt{2}).
_UNWRAP = (
    (re.compile(r"(.*?)(\$)(.*?)(\$)(.*)"), r"$\3$"),
    (re.compile(r"(\\text\{)(.*?)(\})"), r"\2"),
    (re.compile(r"(\\textbf\{)(.*?)(\})"), r"\2"),
    (re.compile(r"(\\overline\{)(.*?)(\})"), r"\2"),
    (re.compile(r"(\\boxed\{)(.*)(\})"), r"\2"),
    (re.compile(r"(frac)([^{])(.)"), r"frac{\2}{\3}"),
    (re.compile(r"(sqrt)([^{])"), r"sqrt{\2}"),
)


def minerva_normalize(answer: str) -> str:
    """Minerva's canonical form of a final answer: `"x = \\$1,000."` -> `"1000"`.

    Keeps the right-hand side of the last `=`, strips articles, spaces, units and
    wrappers, fixes shorthand TeX, and drops thousands separators from integers.
    """
    text = answer.split("=")[-1]
    for before, after in _SUBSTITUTIONS:
        text = text.replace(before, after)
    for junk in _REMOVED:
        text = text.replace(junk, "")
    for pattern, replacement in _UNWRAP:
        text = pattern.sub(replacement, text)
    text = text.replace("$", "")
    if text.replace(",", "").isdigit():
        text = text.replace(",", "")
    return text.strip()


def dapo_score(response: str, gold: str) -> tuple[float, bool, str | None]:
    """`(reward, correct, normalised prediction)`: reward is +1.0 if correct else -1.0."""
    raw = raw_answer_line(response)
    pred = None if raw is None else minerva_normalize(raw)
    correct = pred is not None and pred == minerva_normalize(str(gold))
    return (1.0 if correct else -1.0), correct, pred


def dapo_reward(completions: list[str], answer: list[Any], **_: Any) -> list[float | None]:
    """+1 / -1 per completion by DAPO's rule; None where the row has no gold answer."""
    return [None if gold is None else dapo_score(text, gold)[0] for text, gold in zip(completions, answer)]


class DapoVerifier(Choice):
    """How `dapo_answer` checks the "Answer:" line (`recipe.verifier` of DAPO)."""

    minerva = "minerva"  # DAPO's exact match after Minerva normalisation
    task = "task"  # the data's own checker (e.g. countdown's expression parser)


@dataclass(frozen=True)
class DapoAnswerParams:
    verifier: str = DapoVerifier.minerva  # minerva: DAPO's exact match | task: the data's own checker


@register_reward("dapo_answer", params=DapoAnswerParams)
def _dapo_answer(ctx: RewardContext) -> RewardFn:
    verifier = ctx.params.verifier
    if verifier not in DapoVerifier.values():  # a reward option is not typed by the schema
        raise UserError(f"recipe.verifier={verifier!r}; valid: {DapoVerifier.valid()}")
    if verifier == "minerva":
        return lambda completions, answer, **kw: dapo_reward(completions, answer)

    def task_checked(completions: list[str], answer: list[Any], **kw: Any) -> list[float | None]:
        return [
            None if gold is None else (1.0 if ctx.verify(text, gold) else -1.0)
            for text, gold in zip(completions, answer)
        ]

    return task_checked
