"""Group-relative advantages recomputed outside TRL, with TRL's exact formula.

Hooks that change which rows train (group_subset.py) or where the reward comes from
(policy_score.py) must normalise again; they use this one function so their numbers
match what TRL would have produced for the same rewards:

    A_i = (r_i - nanmean_group(r)) / (nanstd_group(r) + 1e-4)     (scale_rewards="group")

with the unbiased std, `scale_rewards="batch"` using one std over the batch and
`"none"` skipping the division, NaN rewards (unscorable rows) left out of the
statistics and given advantage 0.
"""

from __future__ import annotations

import torch
from trl.trainer.utils import nanstd

from rlrecipes.config.schema import ScaleRewards

TRL_EPS = 1e-4  # trl 1.16 GRPOTrainer._generate_and_score_completions


def group_advantages(
    rewards: torch.Tensor, num_generations: int, scale_rewards: str = "group", keep: torch.Tensor | None = None
) -> torch.Tensor:
    """Advantages for `rewards` [N] laid out as consecutive groups of `num_generations`.

    `keep` [N] bool: rows outside it are ignored by the statistics and get advantage 0
    (the groups then have fewer members, e.g. TTRL's first N_train of N_vote votes).
    """
    if rewards.numel() % num_generations:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {num_generations}")
    if scale_rewards not in ScaleRewards.values():
        raise ValueError(f"scale_rewards={scale_rewards!r}; valid: {ScaleRewards.valid()}")
    values = rewards.float().clone()
    if keep is not None:
        values[~keep] = torch.nan
    groups = values.view(-1, num_generations)
    centred = groups - torch.nanmean(groups, dim=1, keepdim=True)
    if scale_rewards == "group":
        centred = centred / (nanstd(groups, dim=1, keepdim=True) + TRL_EPS)
    elif scale_rewards == "batch":
        centred = centred / (nanstd(values) + TRL_EPS)
    return torch.nan_to_num(centred.reshape(-1), nan=0.0)


def weighted_rewards(rewards_per_func: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """TRL's combined reward: weighted nansum over functions, NaN where every function is NaN."""
    total = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    total[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    return total
