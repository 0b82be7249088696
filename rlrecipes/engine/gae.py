"""PPO's advantage and value formulas on (B, T) tensors: pure functions, no model.

They follow verl's `verl/trainer/ppo/core_algos.py` as vendored by the papers' code
(PeterGriffinJin/Search-R1 @ a14dc3a; kanishkg/cognitive-behaviors @ 9c90d33, the same file):

- token-level rewards: the outcome score on the last valid token of each completion
  (verl/trainer/main_ppo.py:80, `reward_tensor[i, valid_response_length - 1] = score`), minus
  `kl_coef` times a per-token KL estimate between the rollout policy and the reference on
  the tokens the model wrote (ray_trainer.py:91-120, `apply_kl_penalty`; core_algos.py:242-274);
- GAE (Schulman et al. 2016, arXiv 1506.02438, Eq. 16) with gamma and lambda, returns =
  advantages + values, then the advantages whitened over the batch's valid tokens
  (core_algos.py:70-107, `compute_gae_advantage_return`; torch_functional.py:112-136);
- the clipped value loss (core_algos.py:216-239, `compute_value_loss`).

`masked_whiten` takes a `reduce` that sums a tensor over processes: verl whitens the whole
rollout batch on its driver, so with several processes the mean and variance are the
global ones, and 2 processes whiten as 1 does.
"""

from __future__ import annotations

from typing import Callable

import torch

from rlrecipes.config.schema import KLPenalty

Reduce = Callable[[torch.Tensor], torch.Tensor]


def kl_penalty(logps: torch.Tensor, ref_logps: torch.Tensor, kind: str) -> torch.Tensor:
    """verl's per-token KL estimate between the rollout policy and the reference."""
    diff = logps - ref_logps
    if kind == KLPenalty.kl:
        return diff
    if kind == KLPenalty.abs:
        return diff.abs()
    if kind == KLPenalty.mse:
        return 0.5 * diff.square()
    if kind == KLPenalty.low_var_kl:
        return torch.clamp(torch.exp(-diff) + diff - 1, min=-10, max=10)
    raise ValueError(f"kl_penalty={kind!r}; valid: {KLPenalty.valid()}")


def last_token_index(mask: torch.Tensor) -> torch.Tensor:
    """The index of each row's last valid token (-1 for a row with none)."""
    positions = torch.arange(mask.size(1), device=mask.device).expand_as(mask)
    return torch.where(mask.bool(), positions, torch.full_like(positions, -1)).max(dim=1).values


def token_level_rewards(
    scores: torch.Tensor, mask: torch.Tensor, kl: torch.Tensor | None = None, kl_coef: float = 0.0
) -> torch.Tensor:
    """(B, T) rewards: `scores[i]` on row i's last valid token, minus `kl_coef * kl` where `kl`
    is given (already zero on the tokens it must not touch, e.g. tool output)."""
    rewards = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    last = last_token_index(mask)
    rows = torch.nonzero(last >= 0).flatten()
    rewards[rows, last[rows]] = scores.float().to(mask.device)[rows]
    if kl is not None and kl_coef:
        rewards = rewards - kl_coef * kl.float()
    return rewards


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates and returns, verl's loop over positions from the end:

        delta_t = r_t + gamma V_{t+1} - V_t        (V past the last position = 0)
        A_t     = delta_t + gamma lam A_{t+1}
        R_t     = A_t + V_t

    `values` are zeroed outside `mask` first, so a completion bootstraps from nothing after
    its last valid token."""
    values = values.float() * mask
    rewards = rewards.float()
    length = rewards.size(1)
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(length)):
        following = values[:, t + 1] if t < length - 1 else torch.zeros_like(running)
        delta = rewards[:, t] + gamma * following - values[:, t]
        running = delta + gamma * lam * running
        advantages[:, t] = running
    return advantages, advantages + values


def _own(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def masked_whiten(values: torch.Tensor, mask: torch.Tensor, reduce: Reduce = _own) -> torch.Tensor:
    """(x - mean) / sqrt(var + 1e-8) over the valid tokens, with the unbiased variance, as
    verl's masked_whiten (torch_functional.py:112-136); `reduce` sums over processes. Tokens
    outside `mask` are 0 (verl leaves them whitened; no loss reads them)."""
    mask = mask.float()
    values = values.float()
    count = reduce(mask.sum())
    mean = reduce((values * mask).sum()) / count.clamp(min=1.0)
    squares = reduce(((values - mean).square() * mask).sum())
    variance = squares / (count - 1).clamp(min=1.0)  # verl: masked_mean(...) * n / (n - 1)
    return (values - mean) * torch.rsqrt(variance + 1e-8) * mask


def value_loss(
    predicted: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's clipped value loss and the share of tokens where the clipped term was larger:

        V_clip = clip(V, V_old - c, V_old + c)
        L_V    = 0.5 * mean_tokens max((V - R)^2, (V_clip - R)^2)

    (a token mean over `mask`, as verl's masked_mean over one micro-batch)."""
    mask = mask.float()
    clipped = old_values + (predicted - old_values).clamp(-clip, clip)
    unclipped_loss = (predicted - returns).square()
    clipped_loss = (clipped - returns).square()
    count = mask.sum().clamp(min=1.0)
    loss = 0.5 * (torch.max(unclipped_loss, clipped_loss) * mask).sum() / count
    clipped_share = ((clipped_loss > unclipped_loss).float() * mask).sum() / count
    return loss, clipped_share


def verl_warmup_factor(step: int, warmup: int) -> float:
    """verl's get_constant_schedule_with_warmup (torch_functional.py:422-431): the learning
    rate's factor at scheduler step `step` (from 0), min(1, step / max(1, warmup)); the first
    update is at factor 0 even with no warm-up, as in verl."""
    return min(1.0, step / max(1, warmup))
