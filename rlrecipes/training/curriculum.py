"""QwenLong-L1's curriculum rules (Wan et al. 2025, arXiv 2505.17667 §3), as pure functions:
the input-length limit of a phase and the difficulty-aware retrospective sampling.

Input-length limit. A phase trains only on prompts of at most `max_input_tokens` tokens, counted
on the prompt as the policy sees it (rendered with the data template). This is verl's
`data.filter_overlong_prompts` as the authors' script sets it (Tongyi-Zhiwen/QwenLong-L1
scripts/rl_4nodes_dapo.sh l.10-11; verl/verl/utils/dataset/rl_dataset.py l.135-140 keeps a row
when the chat-templated prompt has <= max_prompt_length tokens).

Retrospective sampling. The paper carries examples that were hard in earlier phases into later
ones, weighting them by a difficulty score, the inverse of the example's mean reward. The
authors' repository holds only a single-phase demo (README l.218 "basic demo training code for
single stage RL training"), so the rule's details below are ours and are settings:
- an example's mean reward in a phase is the mean of the accuracies its groups scored there
  (`accuracy_history.json`, one entry per time it was sampled); over several earlier phases
  the last phase that scored it decides;
- it is hard when that mean is below `hard_below`; its difficulty is 1 / max(mean, reward_floor)
  (the floor keeps a never-solved example finite: 1/0.125 = 8);
- its weight is carried as copies in the next phase's data: round(difficulty), at most
  `max_copies`, so a uniform sampler draws it about `difficulty` times as often as a plain row;
- the hardest come first (ties: earlier phase, then first sampled), at most `max_examples`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

# a phase's accuracy_history.json, read as QwenLong-L1's rewards: example id -> its reward each time it
# was sampled (None: not scored)
PhaseRewardHistory = dict[str, list[Optional[float]]]


@dataclass(frozen=True)
class LengthFilter:
    kept: list[dict[str, Any]]
    left_out: int  # rows over the limit
    limit: Optional[int]
    shortest: Optional[int]  # the shortest prompt's tokens (why nothing fits, when nothing does)

    def report(self, total: int) -> str:
        if self.limit is None:
            return f"{total} prompts (no input-length limit)"
        return f"{len(self.kept)} of {total} prompts within {self.limit} tokens ({self.left_out} longer left out)"


def filter_by_length(
    items: Sequence[dict[str, Any]], limit: Optional[int], tokens: Callable[[str], int]
) -> LengthFilter:
    """The items whose prompt (`tokens(problem)` counts it as rendered) has at most `limit` tokens."""
    if limit is None:
        return LengthFilter(list(items), 0, None, None)
    counts = [tokens(item["problem"]) for item in items]
    kept = [item for item, n in zip(items, counts) if n <= limit]
    return LengthFilter(kept, len(items) - len(kept), limit, min(counts) if counts else None)


@dataclass(frozen=True)
class Carried:
    id: str
    phase: str  # the last earlier phase that scored it
    mean_reward: float
    difficulty: float
    copies: int


def mean_rewards(history: PhaseRewardHistory) -> dict[str, float]:
    """Each example's mean over its finite entries; an example never scored is left out
    (its difficulty is unknown, not high)."""
    means = {}
    for key, values in history.items():
        finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        if finite:
            means[key] = sum(finite) / len(finite)
    return means


def retrospective_selection(
    phases: Sequence[tuple[str, PhaseRewardHistory]],
    hard_below: float,
    reward_floor: float,
    max_copies: int,
    max_examples: Optional[int] = None,
) -> list[Carried]:
    """The examples carried into the next phase, hardest first (see the module doc)."""
    last: dict[str, tuple[int, int, str, float]] = {}  # id -> (phase index, order in it, phase, mean)
    for p, (name, history) in enumerate(phases):
        for order, (key, mean) in enumerate(mean_rewards(history).items()):
            last[key] = (p, order, name, mean)
    hard = [(key, *rest) for key, rest in last.items() if rest[3] < hard_below]
    carried = []
    for key, p, order, name, mean in hard:
        difficulty = 1.0 / max(mean, reward_floor)
        copies = min(max_copies, max(1, math.floor(difficulty + 0.5)))
        carried.append((-difficulty, p, order, Carried(key, name, mean, difficulty, copies)))
    carried.sort(key=lambda row: row[:3])
    chosen = [row[3] for row in carried]
    return chosen[:max_examples] if max_examples is not None else chosen


def carried_rows(carried: Sequence[Carried], rows_by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each carried example's row, `copies` times (its id kept, so its history continues)."""
    return [rows_by_id[c.id] for c in carried for _ in range(c.copies)]
