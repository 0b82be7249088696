"""Majority-vote pseudo-labels: TTRL's online reward and Spurious Rewards' offline labels.

TTRL (Zuo, Zhang et al. 2025, §3): per prompt, extract the answer of every sampled response,
take the most common answer as the label and reward each response 1 if it agrees with
the label, else 0. Gold answers never enter the reward; when a dataset has them they
only feed the paper's diagnostics (label accuracy, reward accuracy, majority ratio).

Two vote rules (`recipe.vote`):
- equivalence: answers are grouped by mathematical equivalence
  (`rlrecipes.grading.vote.majority_vote`); a response without an answer votes for nobody.
- exact (the default, as TTRL's code, `ttt_metrics.py`): a `Counter` over the normalised answer
  strings, so "0.5" and "\\frac{1}{2}" split the vote, and a missing answer counts as
  the empty string, which can win; the code's grader then gives 1 to every response
  without an answer (its MATH normaliser maps "" to "", so `grade_answer("", "")`
  holds) and 0 to the others. The strings are keyed by rlrecipes' `normalize_answer`,
  not by Qwen2.5-Math's `strip_string` the code uses; the two agree on the common
  rewrites (\\dfrac, \\left/\right, "3.0" -> "3", units, degrees, dollars) but not on
  everything: ours drops leading zeros ("025" and "25" vote together), theirs does not.

The reward compares each response with the label through the data's verifier
(`verify(completion, label)`: extract + equivalence grading), as TTRL's
`grade_answer(model_answer, estimated_label)` does, so equivalent spellings of the
label also score 1 under either rule.

Spurious Rewards' "majority" and "incorrect" labels are the same vote run once,
offline, on samples of the model before RL (`rlrecipes.rewards.spurious.build_labels`,
`rlrecipes spurious-labels`), stored in a file next to the data.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from rlrecipes.choice import Choice
from rlrecipes.errors import UserError
from rlrecipes.grading import extract_answer, normalize_answer
from rlrecipes.grading.vote import majority_vote
from rlrecipes.rewards import CompletionGroup, GroupRewardFn, MetricLog, RewardContext, Verifier, register_reward


@dataclass
class Vote:
    """One group's vote: the label, its support, and the reward of each response."""

    label: str | None  # None: no response had an answer (equivalence rule)
    count: int  # responses that voted for the label
    rewards: list[float]
    label_correct: bool | None = None  # label == gold (None without gold)
    true_rewards: list[float] | None = None  # verify(response, gold) (None without gold)
    answers: list[str | None] = field(default_factory=list)

    @property
    def majority_ratio(self) -> float:
        return self.count / len(self.rewards) if self.rewards else 0.0


def vote(answers: Sequence[str | None], exact: bool = False) -> tuple[str | None, int]:
    """The majority answer and its count (see the module doc for the two rules)."""
    if not exact:
        return majority_vote(answers)

    first: dict[str, str] = {}
    keys = []
    for answer in answers:
        text = "" if answer is None else str(answer)
        key = normalize_answer(text) if text.strip() else ""
        first.setdefault(key, text)
        keys.append(key)
    if not keys:
        return None, 0
    key, count = Counter(keys).most_common(1)[0]  # ties: the key seen first (insertion order)
    return first[key], count


def vote_rewards(
    completions: Sequence[str], *, style: str, verify: Verifier, exact: bool = False, gold: Any = None
) -> Vote:
    """TTRL's reward for one prompt's responses, with the diagnostics when `gold` is known."""

    answers = [extract_answer(text, style) for text in completions]
    label, count = vote(answers, exact)
    if label is None:
        rewards = [0.0] * len(completions)
    elif exact and label == "":
        rewards = [float(a is None or not a.strip()) for a in answers]
    else:
        rewards = [float(verify(text, label)) for text in completions]
    result = Vote(label, count, rewards, answers=answers)
    if gold is not None:
        result.true_rewards = [float(verify(text, gold)) for text in completions]
        result.label_correct = _label_correct(label, answers, result.true_rewards, exact)
    return result


def _label_correct(label: str | None, answers: list[str | None], correct: list[float], exact: bool) -> bool:
    """Is the label right? Judged on the first response that voted for it, so the data's
    own verifier decides (it grades responses, not bare answers)."""
    if label is None or (exact and label == ""):
        return False
    return bool(correct[answers.index(label)])


def diagnostics(votes: Sequence[Vote]) -> dict[str, float]:
    """TTRL's training-time diagnostics (paper App. B) over a batch of groups.

    label_accuracy: fraction of groups whose label equals the gold answer;
    reward_accuracy: fraction of responses whose pseudo-reward equals the true reward;
    majority_ratio: mean share of the votes the label received.
    Groups without gold are left out of the first two.
    """
    out = {"majority_ratio": sum(v.majority_ratio for v in votes) / len(votes)} if votes else {}
    labelled = [v for v in votes if v.true_rewards is not None]
    if labelled:
        out["label_accuracy"] = sum(bool(v.label_correct) for v in labelled) / len(labelled)
        pairs = [(p, t) for v in labelled for p, t in zip(v.rewards, v.true_rewards)]
        out["reward_accuracy"] = sum(p == t for p, t in pairs) / len(pairs)
    return out


class VoteRule(Choice):
    """How the group's answers elect its label (`recipe.vote` of TTRL; see the module doc)."""

    equivalence = "equivalence"  # grouped by mathematical equivalence; a missing answer votes for nobody
    exact = "exact"  # the TTRL code's Counter over normalised answer strings: an empty answer can win


@dataclass(frozen=True)
class VoteParams:
    vote: str = VoteRule.exact  # exact: the TTRL code's Counter over answer strings | equivalence


@register_reward("majority_vote", needs_answer=False, scope="group", params=VoteParams)
def _majority_vote(ctx: RewardContext) -> GroupRewardFn:
    """TTRL's pseudo-reward, scored per group (a vote needs every answer of its prompt);
    logs `ttrl/label_accuracy`, `ttrl/reward_accuracy` and `ttrl/majority_ratio` when the
    data has gold answers (used for nothing else)."""
    if ctx.params.vote not in VoteRule.values():  # a reward option is not typed by the schema
        raise UserError(f"recipe.vote={ctx.params.vote!r}; valid: {VoteRule.valid()}")
    exact = ctx.params.vote == "exact"

    def score(groups: Sequence[CompletionGroup], log: MetricLog) -> list[list[float]]:
        votes = [
            vote_rewards(
                g.completions,
                style=ctx.answer_style,
                verify=ctx.verify,
                exact=exact,
                gold=(g.columns.get("answer") or [None])[0],
            )
            for g in groups
        ]
        for name, value in diagnostics(votes).items():
            log(f"ttrl/{name}", value)
        return [v.rewards for v in votes]

    return score
