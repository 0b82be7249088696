"""Advantages from a per-completion score that needs a model's forward pass.

Some rewards are functions of the model, not of the text: INTUITOR's self-certainty
is computed from the policy's full-vocabulary logits on each completion. TRL's
reward functions see only strings, so this hook scores the already-tokenised batch
right after TRL has scored it, then writes group-normalised advantages:

    A = normalise_group(score) [+ TRL's advantage of the reward functions, only if any
        reward weight is non-zero, as INTUITOR's trainer adds them]

`scorer="online"` scores with the current policy (INTUITOR); `"offline"` with the frozen
initial model (the paper's reward-hacked ablation, §5.4), never a second copy when one
already exists: with LoRA the base model with its adapters disabled, otherwise TRL's
reference model when the KL term loaded one. Only an unsharded model without either is
deep-copied; a sharded one (FSDP, ZeRO-3) is reloaded from its path and sharded the way
TRL shards its reference model.

Sharded policies are scored through the wrapped module's own forward (`sharded(trainer)`
tells the score function so): calling its submodules directly would bypass the
gathering of their parameters.

torch, TRL and `advantages.py` are imported where they are used: Intuitor's module imports
this one (its `Scorer`) when it is declared.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Callable

from rlrecipes.choice import Choice
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError

if TYPE_CHECKING:
    import torch

# (model, scored batch, trainer) -> one score per local completion, shape [B_local]
ScoreFn = Callable[[Any, dict[str, Any], Any], "torch.Tensor"]


class Scorer(Choice):
    """Which model's self-certainty is the reward (`recipe.scorer` of Intuitor)."""

    online = "online"  # the current policy (the paper)
    offline = "offline"  # a frozen copy of the initial model (the ablation the paper shows reward-hacked)


def sharded(trainer: Any) -> bool:
    """True when the policy's parameters are split across ranks (FSDP, DeepSpeed ZeRO-3)."""
    if getattr(trainer, "is_fsdp_enabled", False):
        return True
    if getattr(trainer, "is_deepspeed_enabled", False):
        plugin = trainer.accelerator.state.deepspeed_plugin
        return plugin is not None and plugin.zero_stage == 3
    return False


class PolicyScoreAdvantage(EngineHook):
    def __init__(self, score: ScoreFn, name: str, scorer: str = "online"):
        if scorer not in Scorer.values():
            raise UserError(f"scorer={scorer!r}; valid: {Scorer.valid()}")
        self.score, self.name, self.scorer = score, name, scorer
        self.frozen: Any = None

    def bind(self, trainer: Any) -> None:
        # Bound before the first update, so anything copied holds the initial weights.
        if self.scorer != "offline" or _is_peft(trainer):
            return  # online: the policy itself; LoRA: the policy with its adapters disabled
        # TRL's reference model is never updated (rlrecipes leaves TRL's sync_ref_model off)
        # and TRL already sharded it like the policy
        if trainer.ref_model is not None:
            self.frozen = trainer.ref_model
        elif sharded(trainer):
            self.frozen = _sharded_frozen_copy(trainer)
        else:
            self.frozen = copy.deepcopy(trainer.accelerator.unwrap_model(trainer.model)).eval()
            self.frozen.requires_grad_(False)

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        if not trainer.model.training:
            return batch
        import torch
        from trl.models.utils import disable_gradient_checkpointing

        from rlrecipes.engine.advantages import group_advantages

        policy = trainer.accelerator.unwrap_model(trainer.model)
        if self.frozen is not None:
            model = self.frozen
        else:  # a sharded policy runs as the wrapped module, which gathers its parameters
            model = trainer.model if sharded(trainer) else policy
        # under the trainer's autocast, as TRL computes log-probs (bf16 runs score in bf16)
        with (
            torch.no_grad(),
            disable_gradient_checkpointing(policy, trainer.args.gradient_checkpointing_kwargs),
            trainer.accelerator.autocast(),
            self._initial_weights(policy),
        ):
            local = self.score(model, batch, trainer).float()
        scores = trainer.accelerator.gather(local)
        advantages = group_advantages(scores, trainer.num_generations, trainer.scale_rewards)
        start = trainer.accelerator.process_index * local.numel()
        advantages = advantages[start : start + local.numel()].to(batch["advantages"].device)
        if bool((trainer.reward_weights != 0).any()):
            advantages = advantages + batch["advantages"]
        trainer.log_metric(f"{self.name}/mean", scores.mean().item())
        trainer.log_metric(f"{self.name}/std", scores.std().item() if scores.numel() > 1 else 0.0)
        return {**batch, "advantages": advantages}

    def _initial_weights(self, policy: Any) -> Any:
        """Offline scoring of a LoRA policy: its base, as TRL takes reference log-probs (a
        re-trained adapter's initial copy, "ref", when there is one; else adapters disabled)."""
        from accelerate.utils import is_peft_model

        if self.scorer != "offline" or self.frozen is not None or not is_peft_model(policy):
            return nullcontext()
        from trl.trainer.utils import use_adapter

        return use_adapter(policy, adapter_name="ref" if "ref" in policy.peft_config else None)


def _is_peft(trainer: Any) -> bool:
    from accelerate.utils import is_peft_model

    return is_peft_model(trainer.accelerator.unwrap_model(trainer.model))


def _sharded_frozen_copy(trainer: Any) -> Any:
    """The initial model, loaded again from its path and sharded as TRL shards its
    reference model (a deepcopy of a sharded module copies only this rank's shard)."""
    from trl.models import prepare_deepspeed, prepare_fsdp
    from trl.trainer.utils import create_model_from_path, get_config_model_id

    policy = trainer.accelerator.unwrap_model(trainer.model)
    kwargs = {
        "dtype": policy.dtype,
        "trust_remote_code": trainer.args.trust_remote_code,
        "attn_implementation": policy.config._attn_implementation,
    }
    if trainer.is_deepspeed_enabled:  # as TRL loads its reference model: DeepSpeed places it ("auto" fails)
        kwargs["device_map"] = None
    frozen = create_model_from_path(get_config_model_id(policy.config), **kwargs)
    frozen.eval().requires_grad_(False)
    if trainer.is_deepspeed_enabled:
        return prepare_deepspeed(frozen, trainer.accelerator)
    return prepare_fsdp(frozen, trainer.accelerator)
