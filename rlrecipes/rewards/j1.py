"""J1's rewards as TRL rewards (arXiv 2505.10320 §2): the `verdict` column and the think-format
reward, registered like every other reward so `recipe.rewards` names them. The scoring itself
is the judge library's (`rlrecipes.judge.rewards`, pure functions of parsed judgements).

`verdict` is a group reward: consistency and pointwise-pair rewards need the other order's (or
the other response's) judgements, which TRL may have generated on another process; scored on
the gathered batch, where the rows of every pair are present (`KeepRowsTogether`). One column
serves every format: rows judged in the two orders earn verdict correctness (or, with
`recipe.reward=consistency`, the both-orders reward), rows scoring one response earn the
pointwise-pair reward. Each step also logs the share of each parse status, `consistent`
(index-paired judgements right in both orders), `pointwise_right` (index-paired scores ranking
the pair right) and `first_position_share` (the share of pairwise verdicts picking the first
position: 0.5 = no position bias).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from rlrecipes.choice import Choice
from rlrecipes.judge import rewards as j1_rewards
from rlrecipes.judge.pairs import ORDERS, ROLES, split_row_id
from rlrecipes.judge.prompts import JudgeFormat
from rlrecipes.judge.verdicts import STATUSES, Judgement, parse
from rlrecipes.rewards import CompletionGroup, GroupRewardFn, MetricLog, RewardContext, register_reward


class VerdictReward(Choice):  # `recipe.reward` of J1: what a right verdict earns
    correctness = "correctness"  # verdict right: 1, else recipe.wrong_reward
    consistency = "consistency"  # right in both orders (index-paired rollouts)


@dataclass
class VerdictParams:
    """The settings `verdict` reads (recipe=j1's fields of these names)."""

    judge: str = JudgeFormat.pairwise  # recipe.judge: pairwise, pairwise_scores, pointwise, multitask
    reward: str = VerdictReward.correctness  # recipe.reward: correctness, or consistency (Tab. 8)
    wrong_reward: float = 0.0  # a wrong or unparseable verdict's reward (-1: Tab. 4 / RM-R1)


@dataclass
class JudgeFormatParams:
    judge: str = VerdictParams.judge


@register_reward("verdict", scope="group", params=VerdictParams)
def _verdict(ctx: RewardContext) -> GroupRewardFn:
    p = ctx.params
    return pair_reward(str(p.judge), str(p.reward) == "consistency", float(p.wrong_reward))


@register_reward("judge_format", params=JudgeFormatParams)
def _judge_format(ctx: RewardContext) -> Callable[..., list]:
    return format_reward_fn(str(ctx.params.judge))


# a pair's two kinds of row blocks: their kinds, the pairing rule, the metric it logs
BLOCKS = {
    "orders": (ORDERS, j1_rewards.consistency, "consistent"),
    "responses": (ROLES, j1_rewards.pointwise_pair, "pointwise_right"),
}


def row_format(judge: str, kind: str) -> str:
    """The output format of a row of `kind` (AB/BA/chosen/rejected) under `recipe.judge`."""
    if kind in ROLES:
        return "pointwise"
    return "pairwise_scores" if judge == "multitask" else judge


def pair_reward(judge: str, consistency: bool = False, wrong: float = 0.0) -> GroupRewardFn:
    """The scoring function of J1's `verdict` column (see the module doc)."""

    def score(groups: Sequence[CompletionGroup], log: MetricLog) -> list[list[float]]:
        sides: dict[str, dict[str, tuple[int, list[Judgement]]]] = {}
        for index, group in enumerate(groups):
            pair, kind = split_row_id(group.columns["id"][0])
            sides.setdefault(pair, {})[kind] = (index, [parse(t, row_format(judge, kind)) for t in group.completions])
        scores: list[list[float]] = [[] for _ in groups]
        paired: dict[str, list[float]] = {}
        for pair, found in sides.items():
            for block, (kinds, pairing, metric) in BLOCKS.items():
                present = [k for k in kinds if k in found]
                if len(present) == 1:
                    raise RuntimeError(
                        f"pair {pair!r} has one side in this rollout batch: the rows were not kept together"
                    )
                if not present:
                    continue
                (first, a), (second, b) = found[kinds[0]], found[kinds[1]]
                both = pairing(a, b)
                paired.setdefault(metric, []).extend(both)
                if block == "orders" and not consistency:
                    scores[first] = j1_rewards.correctness(a, ["A"] * len(a), wrong=wrong)
                    scores[second] = j1_rewards.correctness(b, ["B"] * len(b), wrong=wrong)
                else:
                    scores[first] = scores[second] = [v if v else wrong for v in both]
        judged = [j for found in sides.values() for _, js in found.values() for j in js]
        for name, value in diagnostics(judged, paired).items():
            log(f"j1/{name}", value)
        return scores

    return score


def diagnostics(judged: list[Judgement], paired: dict[str, list[float]]) -> dict[str, float]:
    statuses = Counter(j.status for j in judged)
    out = {f"parse_{s}": statuses[s] / len(judged) for s in STATUSES} if judged else {}
    out.update({metric: sum(values) / len(values) for metric, values in paired.items() if values})
    verdicts = [j.verdict for j in judged if j.ok and j.verdict]
    if verdicts:
        out["first_position_share"] = verdicts.count("A") / len(verdicts)
    return out


def format_reward_fn(judge: str) -> Callable[..., list]:
    def judge_format(completions: list[str], answer: list[Any], **_: Any) -> list:
        return [j1_rewards.format_reward(t, row_format(judge, g)) for t, g in zip(completions, answer)]

    return judge_format
