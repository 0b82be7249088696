"""RM-R1's verdict reward as a TRL reward (arXiv 2505.02387; RM-R1-UIUC/RM-R1
rm_r1/verl/utils/reward_score/lm_as_judge.py:3-17, named by REWARD_FUNC_NAME in
rm_r1/scripts/RLVR/local/train_rm_r1_rlvr_qwen2.5_instruct_7b.sh:31-32).

A per-row reward: each judge row carries its gold verdict ("A" / "B") as its answer, and only
the output's last 80 characters count (`rlrecipes.judge.rewards.rm_r1_verdict`). Unlike J1's
`verdict` column it needs no other row, so it trains on pairs judged in one order
(`recipe.pair_orders=one`, RM-R1's data) as well as in both. A wrong or missing verdict earns
`wrong_reward`: recipe=j1's field, one setting with the `verdict` reward's (0 unless set; RM-R1's
-1, lm_as_judge.py:10, 15, is its preset's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rlrecipes.judge.rewards import rm_r1_verdict
from rlrecipes.rewards import RewardContext, register_reward
from rlrecipes.rewards.j1 import VerdictParams


@dataclass
class RMR1VerdictParams:
    wrong_reward: float = VerdictParams.wrong_reward


@register_reward("rm_r1_verdict", params=RMR1VerdictParams)
def _rm_r1_verdict(ctx: RewardContext) -> Callable[..., list]:
    wrong = float(ctx.params.wrong_reward)

    def reward(completions: list[str], answer: list[Any], **_: Any) -> list[float]:
        return [rm_r1_verdict(text, str(gold), wrong=wrong) for text, gold in zip(completions, answer)]

    return reward
