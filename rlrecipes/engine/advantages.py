"""Group-relative advantages recomputed outside TRL, with TRL's exact formula.

Hooks that change which rows train (group_subset.py) or where the reward comes from
(policy_score.py) must normalise again; they use this one function so their numbers
match what TRL would have produced for the same rewards:

    A_i = (r_i - nanmean_group(r)) / (nanstd_group(r) + 1e-4)     (scale_rewards="group")

with the unbiased std, `scale_rewards="batch"` using one std over the batch and
`"none"` skipping the division, NaN rewards (unscorable rows) left out of the
statistics and given advantage 0.

The other estimators a recipe may train with instead (RLOO, REINFORCE++-baseline, MaxRL,
positive/negative sample reinforcement) are pure functions of the same rewards below; the
hook that writes them into TRL's scored batch is `estimators.EstimatedAdvantages`.
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


# ------------------------------------------------------------ other estimators
# Each takes the combined reward of every completion of the rollout batch (all processes, in
# TRL's order: consecutive groups of `num_generations`), NaN where no reward scored it, and
# returns one advantage per completion; an unscorable completion gets 0 and is left out of
# every statistic.

MAXRL_EPS = 1e-6  # tajwarfahim/maxrl verl/trainer/ppo/core_algos.py l.407 (`epsilon`)
WHITEN_VAR_FLOOR = 1e-8  # OpenRLHF openrlhf/trainer/ppo_utils/experience_maker.py l.323


def _grouped(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    if rewards.numel() % num_generations:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {num_generations}")
    return rewards.float().reshape(-1, num_generations)


def rloo_advantages(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """REINFORCE Leave-One-Out (Ahmadian et al. 2024, arXiv 2402.14740):

        A_i = r_i - 1/(k-1) * sum_{j != i} r_j        (k scorable completions in i's group)

    which is k/(k-1) * (r_i - mean_group r): OpenRLHF writes the first form
    (experience_maker.py l.264-266), verl the second (core_algos.py compute_rloo_outcome_advantage);
    no further scale. A group with one scorable completion has no baseline: advantage 0, as in
    TRL's RLOOTrainer (rloo_trainer.py, "scorable_counts - 1")."""
    groups = _grouped(rewards, num_generations)
    scorable = (~torch.isnan(groups)).sum(dim=1, keepdim=True)
    baseline = (torch.nansum(groups, dim=1, keepdim=True) - groups) / (scorable - 1)
    return torch.nan_to_num((groups - baseline).reshape(-1), nan=0.0, posinf=0.0, neginf=0.0)


def reinforce_pp_advantages(
    rewards: torch.Tensor, num_generations: int, tokens: torch.Tensor
) -> tuple[torch.Tensor, float, float]:
    """REINFORCE++-baseline (Hu et al., arXiv 2501.03262, "REINFORCE++ w/ Baseline"), as OpenRLHF's
    `reinforce_baseline` computes it (experience_maker.py l.267-268, then l.314-328):

        a_i = r_i - mean_group(r)
        A_i = (a_i - mu) / sqrt(max(var, 1e-8)),  mu, var over every valid token of the batch

    A completion's advantage is the same on each of its tokens, so the token statistics weight
    completion i by its `tokens[i]` (valid tokens in the loss): mu = sum L_i a_i / sum L_i,
    var = sum L_i (a_i - mu)^2 / sum L_i (the biased variance, as OpenRLHF). Returns the
    advantages with mu and sqrt(var)."""
    groups = _grouped(rewards, num_generations)
    centred = (groups - torch.nanmean(groups, dim=1, keepdim=True)).reshape(-1)
    unscorable = torch.isnan(centred)
    weight = torch.where(unscorable, 0.0, tokens.float().reshape(-1).to(centred.device))
    values = torch.nan_to_num(centred, nan=0.0)
    total = weight.sum()
    if total <= 0:
        return torch.zeros_like(values), 0.0, 0.0
    mean = (values * weight).sum() / total
    var = ((values - mean) ** 2 * weight).sum() / total
    advantages = (values - mean) * var.clamp(min=WHITEN_VAR_FLOOR).rsqrt()
    return advantages.masked_fill(unscorable, 0.0), float(mean), float(var.sqrt())


def maxrl_advantages(rewards: torch.Tensor, num_generations: int, eps: float = MAXRL_EPS) -> torch.Tensor:
    """MaxRL (Tajwar, Zeng et al., arXiv 2602.02710): the group-centred reward divided by the group
    mean instead of its std, the authors' verl code (tajwarfahim/maxrl core_algos.py l.437):

        A_i = (r_i - mean_group r) / (mean_group r + 1e-6)

    For 0/1 rewards the mean is the group's pass rate p, so correct answers weigh ~1/p: hard
    prompts count more. A group that solved nothing has advantage 0 (0 / 1e-6)."""
    groups = _grouped(rewards, num_generations)
    mean = torch.nanmean(groups, dim=1, keepdim=True)
    return torch.nan_to_num(((groups - mean) / (mean + eps)).reshape(-1), nan=0.0)


def sample_reinforcement_advantages(rewards: torch.Tensor, psr_weight: float, nsr_weight: float) -> torch.Tensor:
    """Positive and negative sample reinforcement (Zhu et al., arXiv 2506.01347), for 0/1 rewards:

        A_i = psr_weight * r_i - nsr_weight * (1 - r_i)

    i.e. +psr_weight on a correct completion, -nsr_weight on a wrong one, no baseline and no
    group statistic. The authors' `compute_psr_nsr_outcome_advantage` (TianHongZXY/RLVR-Decomposed
    verl/trainer/ppo/core_algos.py l.142-149): PSR (`positive`) = (1, 0), NSR (`negative`) =
    (0, 1), W-REINFORCE (`weighted`, positive_advantage_weight lambda) = (lambda, 1)."""
    values = rewards.float().reshape(-1)
    advantages = psr_weight * values - nsr_weight * (1.0 - values)
    return torch.nan_to_num(advantages, nan=0.0)
