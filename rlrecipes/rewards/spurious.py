"""The weak and spurious rewards of "Spurious Rewards" (Shao et al., 2025, arXiv 2506.10947, §2;
code/ttrl/verifier/auto_verify.py of the authors' repository).

- `format`: 1 for a response with a non-empty final answer, correct or not. For
  boxed answers this is the code's `box_only_format`: the text contains "boxed" and
  what follows the last "boxed" (brace-matched, else up to a "$") is non-empty once
  normalised; for other answer styles (the synthetic tasks' "Answer:" line), the
  style's extracted answer is non-empty.
- `random`: Bernoulli(gamma) per response, independent of its content (`random0.5`).
  Draws are seeded by (run seed, optimizer step, scoring call of that step, process),
  the i-th response taking the i-th draw, so a rerun gets the same rewards.
- `majority_label` / `incorrect_label`: 1 when the response matches the row's
  `label` column under the data's verifier, i.e. ground-truth grading against a
  stored pseudo-label (majority vote of the model before RL, or a wrong answer the
  model produced). The labels are built once by `build_labels` and stored in a jsonl
  file; the spurious recipe attaches them to the training rows.

`rlrecipes spurious-labels OUT.jsonl [train overrides...]` samples the base model and
writes the labels file (rlrecipes/commands/spurious_labels.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from rlrecipes.errors import UserError
from rlrecipes.grading import extract_answer, normalize_answer
from rlrecipes.grading.vote import majority_vote
from rlrecipes.rewards import RewardContext, RewardFn, Verifier, register_reward


# ------------------------------------------------------------------------------ format
def boxed_content(text: str) -> str | None:
    """What follows the last "boxed" (the Qwen2.5-Math parser's rule); None without one."""
    if "boxed" not in text:
        return None
    tail = text.split("boxed")[-1]
    if not tail.startswith("{"):
        return tail.split("$")[0].strip()
    depth, out = 1, []
    for ch in tail[1:]:
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            break
        out.append(ch)
    return "".join(out)


def format_reward(completions: Sequence[str], style: str = "boxed") -> list[float]:
    """1.0 where the response gives a non-empty final answer in `style`, else 0.0."""

    def has_answer(text: str) -> bool:
        if style in ("boxed", "auto"):
            content = boxed_content(text)
            return content is not None and bool(normalize_answer(content))
        answer = extract_answer(text, style)
        return answer is not None and bool(answer.strip())

    return [float(has_answer(text)) for text in completions]


@register_reward("format", needs_answer=False)
def _format(ctx: RewardContext) -> RewardFn:
    def reward(completions: list[str], **_: Any) -> list[float]:
        return format_reward(completions, ctx.answer_style)

    return reward


# ------------------------------------------------------------------------------ random
def random_rewards(count: int, gamma: float, key: Sequence[int]) -> list[float]:
    """`count` independent Bernoulli(`gamma`) rewards from a generator seeded by `key`."""
    import numpy as np

    if not 0.0 <= gamma <= 1.0:
        raise UserError(f"recipe.gamma={gamma} must be a probability in [0, 1]")
    draws = np.random.default_rng([int(k) for k in key]).random(count)
    return (draws < gamma).astype(float).tolist()


@dataclass(frozen=True)
class RandomParams:
    gamma: float = 0.5  # P(reward = 1): the paper's random0.5


@register_reward("random", needs_answer=False, params=RandomParams)
def _random(ctx: RewardContext) -> RewardFn:
    gamma = float(ctx.params.gamma)
    random_rewards(0, gamma, [0])  # a bad gamma fails when the run starts, not at step 1
    calls: dict[int, int] = {}

    def reward(completions: list[str], trainer_state: Any = None, **_: Any) -> list[float]:
        from accelerate import PartialState

        step = int(getattr(trainer_state, "global_step", 0) or 0)
        calls[step] = calls.get(step, 0) + 1  # several scoring rounds in one step draw anew
        key = [ctx.seed, step, calls[step], PartialState().process_index]
        return random_rewards(len(completions), gamma, key)

    return reward


# ------------------------------------------------------------------------ stored labels
def label_reward(completions: Sequence[str], labels: Sequence[Any], verify: Verifier) -> list[float | None]:
    """`verify(response, label)` as 1.0/0.0; None for rows without a label."""
    return [None if label is None else float(verify(text, label)) for text, label in zip(completions, labels)]


@dataclass(frozen=True)
class LabelParams:
    labels: Optional[str] = None  # the labels file (recipe.labels of recipe=spurious)


def _label_factory(ctx: RewardContext) -> RewardFn:
    if not ctx.params.labels:
        raise UserError(
            "reward=majority|incorrect grades against stored labels: use recipe=spurious "
            "with recipe.labels=FILE.jsonl (built by `rlrecipes spurious-labels FILE`)"
        )

    def reward(completions: list[str], label: list[Any] | None = None, **_: Any) -> list[float | None]:
        if label is None:
            raise UserError(
                "this reward reads the `label` column; use it through recipe=spurious "
                "with recipe.labels=FILE.jsonl (built by `rlrecipes spurious-labels FILE`)"
            )
        return label_reward(completions, label, ctx.verify)

    return reward


register_reward("majority_label", needs_answer=False, params=LabelParams)(_label_factory)
register_reward("incorrect_label", needs_answer=False, params=LabelParams)(_label_factory)


def build_labels(
    problems: Sequence[dict[str, Any]], samples: Sequence[Sequence[str]], *, style: str, verify: Verifier
) -> list[dict[str, Any]]:
    """Majority and incorrect labels of each problem from the base model's samples.

    `majority`: the vote winner among the non-empty answers (empty predictions are
    dropped before voting, as the paper's script does); `majority_correct`: whether it
    matches the gold answer; `incorrect`: the most common answer that is wrong (the
    majority itself when the majority is wrong, the paper's incorrect-label set).
    """

    rows = []
    for item, texts in zip(problems, samples, strict=True):
        answers = [extract_answer(t, style) for t in texts]
        correct = [bool(verify(t, item["answer"])) for t in texts]
        majority, count = majority_vote(answers)
        wrong = [a if a is not None and not ok else None for a, ok in zip(answers, correct)]
        incorrect, incorrect_count = majority_vote(wrong)
        rows.append(
            {
                "id": str(item["id"]),
                "problem": item["problem"],
                "answer": item["answer"],
                "majority": majority,
                "majority_count": count,
                "majority_correct": majority is not None and correct[answers.index(majority)],
                "incorrect": incorrect,
                "incorrect_count": incorrect_count,
                "num_samples": len(texts),
            }
        )
    return rows


def load_labels(path: str | Path) -> dict[str, dict[str, Any]]:
    """The rows of a labels file by problem id."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise UserError(f"recipe.labels={path}: no such file; build it with `rlrecipes spurious-labels FILE`")
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    missing = [k for k in ("id", "majority", "majority_correct", "incorrect") if rows and k not in rows[0]]
    if missing:
        raise UserError(f"recipe.labels={path} lacks column(s) {', '.join(missing)}; rebuild it")
    return {str(row["id"]): row for row in rows}
