"""Search-R1's reward (arXiv 2503.09516, §3.3): 1 if the last `<answer>` block matches a gold
answer exactly after SQuAD normalisation, else 0 (`rlrecipes.grading.exact_match`; the
authors' `qa_em.compute_score_em` with its default `format_score=0`). `subem: true` is
their substring variant (`compute_score_subem`).

The engine hands rewards the model's own text (after a tool rollout, its `model_text`), so
an answer that appears only inside a retrieved passage earns nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlrecipes.grading.exact_match import exact_match
from rlrecipes.rewards import RewardContext, RewardFn, register_reward


@dataclass(frozen=True)
class ExactMatchParams:
    subem: bool = False  # a gold answer inside the prediction counts (Search-R1's subem_check)


def exact_match_reward(completions: list[str], answer: list[Any], substring: bool = False) -> list[float | None]:
    """1.0 / 0.0 per completion; None where the row has no gold answer (TRL leaves it out)."""
    return [
        None if gold is None else float(exact_match(text, gold, substring)) for text, gold in zip(completions, answer)
    ]


@register_reward("exact_match", params=ExactMatchParams)
def _exact_match(ctx: RewardContext) -> RewardFn:
    substring = bool(ctx.params.subem)

    def reward(completions: list[str], answer: list[Any], **kw: Any) -> list[float | None]:
        return exact_match_reward(completions, answer, substring)

    return reward
