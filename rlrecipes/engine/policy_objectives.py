"""The per-token policy losses of the engine's loss hook (`policy_loss.py` runs them), each as its
authors' code computes it.

- Clip-Cov (Cui et al., arXiv 2505.22617; PRIME-RL/Entropy-Mechanism-of-RL
  verl/trainer/ppo/core_algos.py l.469-518): PPO's clipped loss, except that a random
  clip_ratio share of the tokens (at least one) whose centred covariance
  (A - mean A)(log pi - mean log pi) lies in (lower, upper), among those PPO did not clip,
  lose their loss and gradient (multiplied by 0, still counted by the aggregation).
- KL-Cov (ibid. l.426-467): the unclipped -A * ratio on every token, plus
  coef * |log pi - log pi_old| on the top k_ratio share (at least one) of tokens by covariance.
- GMPO (Zhao et al., arXiv 2507.20673; callsys/GMPO train_zero_math_gmpo.py l.675-701): one
  value per completion, -A * exp(mean_t clip_A(log pi_t - log pi_old_t)), where each token's
  log-ratio is clipped at +clip when A >= 0 and at -clip when A < 0: the geometric mean of the
  token ratios, clipped to (e^-clip, e^clip) on the side PPO would clip.
"""

from __future__ import annotations

from typing import Any

import torch

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.engine.policy_loss import TokenBatch, check_trainer, global_mean, masked_mean


def clip_cov_loss(
    batch: TokenBatch,
    epsilon_low: float,
    epsilon_high: float,
    clip_ratio: float,
    lower: float,
    upper: float,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(per-token loss, the tokens whose gradient was cut). The draw among the candidates is
    `torch.randperm` on `generator` (None: torch's global generator, as the authors' code, which
    a resumed run restores with the rest of its RNG state)."""
    advantages = batch.advantages.expand_as(batch.logps)
    ratio = torch.exp(batch.logps - batch.old_logps)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - epsilon_low, 1 + epsilon_high)
    valid = batch.mask > 0
    with torch.no_grad():
        logps = batch.logps.detach()
        cov = (advantages - masked_mean(advantages, batch.mask)) * (logps - masked_mean(logps, batch.mask))
        candidates = valid & ~(clipped > unclipped) & (cov > lower) & (cov < upper)
        count = max(int(clip_ratio * int(valid.sum())), 1)
        where = torch.nonzero(candidates)
        if len(where):
            where = where[torch.randperm(len(where), generator=generator)[: min(count, len(where))]]
        keep = torch.ones_like(batch.logps)
        keep[where[:, 0], where[:, 1]] = 0
    return torch.maximum(unclipped, clipped) * keep, (keep == 0) & valid


def kl_cov_loss(batch: TokenBatch, k_ratio: float, coef: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(per-token loss, the tokens given the |log-ratio| penalty)."""
    advantages = batch.advantages.expand_as(batch.logps)
    log_ratio = batch.logps - batch.old_logps
    loss = -advantages * torch.exp(log_ratio)
    valid = batch.mask > 0
    chosen = torch.zeros_like(valid)
    count = int(valid.sum())
    if count and k_ratio > 0:
        with torch.no_grad():
            adv, logps = advantages[valid].detach(), batch.logps[valid].detach()
            cov = (adv - adv.mean()) * (logps - logps.mean())
            top = torch.topk(cov, max(1, int(count * k_ratio))).indices
            flat = chosen.view(-1)
            flat[torch.nonzero(valid.view(-1), as_tuple=True)[0][top]] = True
    return torch.where(chosen, loss + coef * log_ratio.abs(), loss), chosen


def gmpo_loss(batch: TokenBatch, clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss per completion (B, 1), the tokens whose log-ratio was clipped)."""
    mask = batch.mask
    advantages = batch.advantages
    if advantages.size(1) != 1:  # per-token advantages: their mean over the completion (verl's geo_mean)
        advantages = ((advantages * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(1)
    log_ratio = batch.logps - batch.old_logps
    positive = (advantages >= 0).expand_as(log_ratio)
    bounded = torch.where(positive, log_ratio.clamp(max=clip), log_ratio.clamp(min=-clip))
    mean_log_ratio = (bounded * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)
    return -advantages * torch.exp(mean_log_ratio), (bounded != log_ratio) & (mask > 0)


# --------------------------------------------------------------------------- the hooks
class ClipCov(EngineHook):
    def __init__(self, clip_ratio: float, lower: float, upper: float):
        self.clip_ratio, self.lower, self.upper = clip_ratio, lower, upper

    def bind(self, trainer: Any) -> None:
        check_trainer(trainer, "clip_cov")

    def policy_loss(self, trainer: Any, batch: TokenBatch) -> torch.Tensor:
        loss, cut = clip_cov_loss(
            batch, trainer.epsilon_low, trainer.epsilon_high, self.clip_ratio, self.lower, self.upper
        )
        trainer.log_metric("clip_cov/clipped_tokens", global_mean(trainer, cut, batch.mask))
        return loss

    def describe(self) -> str:
        return (
            f"policy loss: Clip-Cov (gradient cut on a {self.clip_ratio:g} share of tokens with covariance in "
            f"({self.lower:g}, {self.upper:g}))"
        )


class KLCov(EngineHook):
    def __init__(self, k_ratio: float, coef: float):
        self.k_ratio, self.coef = k_ratio, coef

    def bind(self, trainer: Any) -> None:
        check_trainer(trainer, "kl_cov")

    def policy_loss(self, trainer: Any, batch: TokenBatch) -> torch.Tensor:
        loss, chosen = kl_cov_loss(batch, self.k_ratio, self.coef)
        trainer.log_metric("kl_cov/penalised_tokens", global_mean(trainer, chosen, batch.mask))
        trainer.log_metric(
            "kl_cov/abs_log_ratio", global_mean(trainer, (batch.logps - batch.old_logps).abs(), batch.mask)
        )
        return loss

    def describe(self) -> str:
        return f"policy loss: KL-Cov (+{self.coef:g} |log ratio| on the top {self.k_ratio:g} of tokens by covariance)"


class GMPO(EngineHook):
    def __init__(self, clip: float):
        self.clip = clip

    def bind(self, trainer: Any) -> None:
        check_trainer(trainer, "gmpo")

    def policy_loss(self, trainer: Any, batch: TokenBatch) -> torch.Tensor:
        loss, clipped = gmpo_loss(batch, self.clip)
        trainer.log_metric("gmpo/clipped_tokens", global_mean(trainer, clipped, batch.mask))
        return loss

    def describe(self) -> str:
        return f"policy loss: GMPO (geometric mean of token ratios, log-ratio clipped to +-{self.clip:g})"
