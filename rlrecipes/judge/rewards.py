"""J1's rewards (arXiv 2505.10320 §2, Tab. 4 and 8) as pure functions of judge outputs.

- correctness (the main reward): `right` if the parsed verdict is the gold one, else
  `wrong` (0; the "negative reward" ablation row is `wrong = -1`). An unparseable output
  (see verdicts.py) is wrong.
- consistency (Tab. 8): +1 only when the judge is right in **both** orders. With G sampled
  judgements per order, rollout i of order AB is paired with rollout i of order BA (the
  samples are exchangeable, so index pairing is a uniformly random matching) and both get
  `right` iff both are right; this keeps the reward binary, as in the paper.
- pointwise pairs (PoS, distant supervision): rollout i scoring the chosen response and
  rollout i scoring the rejected one both get `right` iff score(chosen) > score(rejected)
  **strictly**: a tie is wrong (the paper leaves ties unspecified; a judge that gives equal
  scores has not separated the pair), as is an unparseable score on either side.
- format (Tab. 4's "+format reward"): 1 if the output thinks first (a non-empty
  `<think>...</think>` before the final tags) and its verdict parses, else 0.
- RM-R1's verdict reward (arXiv 2505.02387; RM-R1-UIUC/RM-R1 rm_r1/verl/utils/reward_score/
  lm_as_judge.py:3-17, the reward of its RLVR scripts): only the output's last 80 characters
  are read; +1 when they hold the gold verdict's exact `<answer>[[A]]</answer>` (or `[[B]]`)
  and not the other one, else -1 (`wrong`), a missing verdict included.
"""

from __future__ import annotations

import re
from typing import Sequence

from rlrecipes.judge.verdicts import Judgement, parse

_THINK_FIRST = re.compile(r"^\s*<think>\s*\S.*?</think>", re.DOTALL)


def correctness(
    judgements: Sequence[Judgement], gold: Sequence[str], right: float = 1.0, wrong: float = 0.0
) -> list[float]:
    return [right if j.ok and j.verdict == g else wrong for j, g in zip(judgements, gold)]


def consistency(
    first: Sequence[Judgement], second: Sequence[Judgement], right: float = 1.0, wrong: float = 0.0
) -> list[float]:
    """Per index i: `right` iff order AB's i-th verdict is A and order BA's i-th is B."""
    if len(first) != len(second):
        raise ValueError(f"the two orders have {len(first)} and {len(second)} judgements; pairing needs equal groups")
    return [right if a.ok and a.verdict == "A" and b.ok and b.verdict == "B" else wrong for a, b in zip(first, second)]


def pointwise_pair(
    chosen: Sequence[Judgement], rejected: Sequence[Judgement], right: float = 1.0, wrong: float = 0.0
) -> list[float]:
    """Per index i: `right` iff both scores parsed and score(chosen) > score(rejected) (a tie is wrong)."""
    if len(chosen) != len(rejected):
        raise ValueError(f"{len(chosen)} chosen and {len(rejected)} rejected judgements; pairing needs equal groups")
    return [right if c.ok and r.ok and c.score > r.score else wrong for c, r in zip(chosen, rejected)]


def format_reward(text: str, judge: str) -> float:
    return float(bool(_THINK_FIRST.match(text)) and parse(text, judge).ok)


RM_R1_TAIL = 80  # lm_as_judge.py:4: `pred = solution_str[-80:]`


def rm_r1_verdict(text: str, gold: str, right: float = 1.0, wrong: float = -1.0) -> float:
    """RM-R1's `answer_reward` (lm_as_judge.py:3-17); `gold` is "A" or "B" (model_a / model_b there)."""
    if gold not in ("A", "B"):
        raise ValueError(f"gold verdict {gold!r}; RM-R1 labels name model_a (A) or model_b (B)")
    tail, other = text[-RM_R1_TAIL:], "B" if gold == "A" else "A"
    return right if f"<answer>[[{gold}]]</answer>" in tail and f"<answer>[[{other}]]</answer>" not in tail else wrong
