"""Policy losses TRL does not have, in the engine's loss hook.

A hook that overrides `EngineHook.policy_loss` supplies the per-token policy loss; the rest is
the engine's (`compute_loss`), with TRL's own pieces and TRL's arithmetic:

    log-probs and entropies   TRL's _get_per_token_logps_and_entropies (one forward pass)
    per-token loss            the hook: Clip-Cov, KL-Cov or GMPO (policy_objectives.py)
    x top-entropy mask        TRL's get_high_entropy_mask, when top_entropy_quantile < 1
    x off-policy mask         TRL's get_off_policy_mask, when off_policy_mask_threshold is set
    x vLLM importance ratio   inputs["importance_sampling_ratio"], when TRL computed one
    + beta * k3 KL            as TRL (x the ratio when use_bias_correction_kl)
    aggregated                `aggregate`: TRL's grpo / bnpo / dr_grpo / dapo normalisers
    - entropy_coef * entropy  TRL's bonus (a mean over the trained tokens, per accumulation step)

and the metrics TRL logs for any loss (entropy, kl, policy_loss) beside the hook's own.
Settings these objectives have no meaning with (a sequence-level ratio, adaptive entropy,
two-sided clipping, the other loss types) are refused by `check_loss_settings`.

The objectives themselves (Clip-Cov, KL-Cov, GMPO) are in `policy_objectives.py`. torch is
imported where it is used: recipes import `check_loss_settings` when they are declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError, UserError

if TYPE_CHECKING:
    import torch

TOKEN_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")  # the normalisers `aggregate` reproduces


@dataclass(frozen=True)
class TokenBatch:
    """One micro-batch as a loss hook sees it (B completions, T completion positions)."""

    logps: torch.Tensor  # (B, T) log pi of each sampled token, with gradient
    old_logps: torch.Tensor  # (B, T) log pi_old (the rollout policy's, or logps detached on-policy)
    advantages: torch.Tensor  # (B, 1), or (B, T) when a hook wrote per-token advantages
    mask: torch.Tensor  # (B, T) float, 1 on the tokens the loss trains on


def loss_hook_of(hooks: Sequence[EngineHook]) -> EngineHook | None:
    """The one hook of `hooks` that supplies a policy loss, or None (TRL's loss)."""
    found = [h for h in hooks if type(h).policy_loss is not EngineHook.policy_loss]
    if len(found) > 1:
        raise UserError(
            f"two policy losses in one run ({', '.join(type(h).__name__ for h in found)}); a run trains one"
        )
    return found[0] if found else None


def check_loss_settings(recipe: Any, loss_types: Sequence[str] = TOKEN_LOSS_TYPES) -> None:
    """One line for a setting the engine's loss path cannot honour with `recipe`'s objective
    (called by the recipes' `validate`, before anything loads; `check_trainer` repeats it on the
    trainer's own values)."""
    name = recipe.name
    if recipe.loss_type not in loss_types:
        raise ConfigError(
            f"recipe.loss_type={recipe.loss_type} does not apply to recipe={name}; valid: {', '.join(loss_types)}"
        )
    unread = [
        ("importance_sampling_level", recipe.importance_sampling_level, "token"),
        ("adaptive_entropy.enabled", recipe.adaptive_entropy.enabled, False),
        ("delta", recipe.delta, None),
    ]
    for key, value, default in unread:
        if value != default:
            raise ConfigError(
                f"recipe.{key}={value} does not apply to recipe={name}'s own per-token policy loss; "
                f"leave it at {default}"
            )


def check_trainer(trainer: Any, name: str) -> None:
    """The trainer-side counterpart of `check_loss_settings` (whatever key set them)."""
    if trainer.importance_sampling_level != "token" or trainer.use_adaptive_entropy or trainer.args.delta is not None:
        raise UserError(
            f"recipe={name}'s policy loss is per token: importance_sampling_level must be token, "
            "with neither adaptive entropy nor two-sided clipping (delta)"
        )


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def global_mean(trainer: Any, values: torch.Tensor, mask: torch.Tensor) -> float:
    """The mean of `values` over the loss tokens of every process (TRL's global_masked_mean)."""
    import torch

    local = torch.stack([(values.detach().float() * mask).sum(), mask.sum()]).float()
    totals = trainer.accelerator.reduce(local, reduction="sum")
    return float(totals[0] / totals[1].clamp(min=1.0))


# ------------------------------------------------------------------- the engine's loss path
def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str,
    *,
    accumulation: float,
    tokens_in_batch: torch.Tensor | None = None,
    num_processes: int = 1,
    steps_per_generation: int = 1,
    max_completion_length: int = 1,
    training: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss to backpropagate, the policy loss TRL logs) with TRL 1.16's normaliser for
    `loss_type` (GRPOTrainer._compute_loss): grpo, mean over completions of their token mean;
    bnpo, token mean of the micro-batch; dr_grpo, token sum / (B x max_completion_length);
    all three / `accumulation`; dapo, token sum / (tokens of the rollout batch / processes x
    accumulation / steps_per_generation). `per_token` may be (B, 1): one value per completion."""
    summed = per_token * mask
    if loss_type == "grpo":
        loss = (summed.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "bnpo":
        loss = summed.sum() / mask.sum().clamp(min=1.0)
    elif loss_type == "dr_grpo":
        loss = summed.sum() / (per_token.size(0) * max_completion_length)
    elif loss_type == "dapo":
        normaliser = tokens_in_batch.clamp(min=1.0) / num_processes
        if training:
            normaliser = normaliser * accumulation / steps_per_generation
        loss = summed.sum() / normaliser
        return loss, loss.detach()
    else:
        raise ValueError(f"loss_type={loss_type!r}; the engine's loss path aggregates {', '.join(TOKEN_LOSS_TYPES)}")
    return loss / accumulation, loss.detach()


def compute_loss(trainer: Any, model: Any, inputs: dict[str, Any], hook: EngineHook) -> torch.Tensor:
    """The loss of one micro-batch with `hook`'s per-token policy loss (see the module's docstring)."""
    import torch

    if "pixel_values" in inputs:
        raise UserError("the engine's own policy losses (clip_cov, kl_cov, gmpo) take text inputs only")
    completion_mask = inputs["completion_mask"]
    mask = completion_mask * inputs["tool_mask"] if "tool_mask" in inputs else completion_mask
    logps, entropies, aux_loss = trainer._get_per_token_logps_and_entropies(
        model,
        torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1),
        torch.cat([inputs["prompt_mask"], completion_mask], dim=1),
        inputs["completion_ids"].size(1),
        compute_entropy=True,
        compute_aux_loss=trainer.aux_loss_enabled,
    )
    old = inputs.get("old_per_token_logps")
    advantages = inputs["advantages"]
    batch = TokenBatch(
        logps=logps,
        old_logps=logps.detach() if old is None else old,
        advantages=advantages.unsqueeze(1) if advantages.dim() == 1 else advantages,
        mask=mask.float(),
    )
    per_token = hook.policy_loss(trainer, batch)
    trained = batch.mask
    if trainer.top_entropy_quantile < 1.0:
        entropy_mask = trainer.get_high_entropy_mask(entropies, mask, 1 - trainer.top_entropy_quantile)
        per_token = per_token * entropy_mask
        trained = trained * entropy_mask
    if trainer.off_policy_mask_threshold is not None:
        per_token = per_token * trainer.get_off_policy_mask(
            batch.advantages,
            logps,
            inputs.get("sampling_per_token_logps", batch.old_logps),
            mask,
            trainer.off_policy_mask_threshold,
        )
    if trainer.use_vllm and trainer.vllm_importance_sampling_correction:
        per_token = per_token * inputs["importance_sampling_ratio"]
    mode = "train" if trainer.model.training else "eval"
    if trainer.beta != 0.0:
        ref = inputs["ref_per_token_logps"]
        kl = torch.exp(ref - logps) - (ref - logps) - 1
        if trainer.args.use_bias_correction_kl:
            kl = kl * torch.exp(logps - batch.old_logps)
        per_token = per_token + trainer.beta * kl
        trainer._metrics[mode]["kl"].append(global_mean(trainer, kl, batch.mask))
    training = mode == "train"
    accumulation = trainer.current_gradient_accumulation_steps if training else 1.0
    loss, policy_loss = aggregate(
        per_token,
        batch.mask,
        trainer.loss_type,
        accumulation=accumulation,
        tokens_in_batch=inputs.get("num_items_in_batch"),
        num_processes=trainer.accelerator.num_processes,
        steps_per_generation=trainer.args.steps_per_generation,
        max_completion_length=trainer.max_completion_length,
        training=training,
    )
    if trainer._entropy_bonus_enabled:  # static coefficient (adaptive entropy is refused at bind)
        loss = loss - trainer.entropy_coef * masked_mean(entropies, trained) / accumulation
        trainer._metrics[mode]["policy_loss"].append(trainer.accelerator.gather(policy_loss).nanmean().item())
    if trainer.aux_loss_enabled:
        loss = loss + trainer.router_aux_loss_coef * aux_loss / accumulation
    trainer._metrics[mode]["entropy"].append(global_mean(trainer, entropies, batch.mask))
    return loss
