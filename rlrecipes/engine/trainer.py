"""`RecipeGRPOTrainer`: TRL's GRPOTrainer with hook slots, never a copy of its methods.

Each override calls TRL's own implementation and then hands the result to the
recipe's hooks (see hooks.py). Dynamic sampling, an engine capability any recipe can
switch on, wraps scoring in a generate-filter-refill loop (dynamic_sampling.py). A hook that
supplies a per-token policy loss (Clip-Cov, KL-Cov, GMPO) has `compute_loss` go through the
engine's loss path instead of TRL's (policy_loss.py), which reuses TRL's log-prob pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import torch
from trl import GRPOTrainer

from rlrecipes.engine import policy_loss, rendezvous, vllm_sync
from rlrecipes.engine.checkpoints import load_optimizer_moments
from rlrecipes.engine.dynamic_sampling import DynamicSampler, GenerationBudget
from rlrecipes.engine.epoch_order import seed_each_epoch
from rlrecipes.engine.group_rewards import GatheredGroupReward
from rlrecipes.engine.gspo_token import sequence_token_ratio
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.engine.policy_shift import PolicyShift
from rlrecipes.engine.update_size import UpdateSize
from rlrecipes.errors import UserError
from rlrecipes.tool_loop.rollout import model_written


class RecipeGRPOTrainer(GRPOTrainer):
    def __init__(
        self,
        *args: Any,
        hooks: Sequence[EngineHook] = (),
        dynamic_sampling: Any = None,
        init_optimizer_from: str | None = None,
        **kwargs: Any,
    ):
        rendezvous.own_port_for_colocated_engine(kwargs.get("args"))  # not TRL's fixed 29500: runs side by side
        # vLLM-CPU: the colocated engine runs in the model's dtype and syncs through vLLM's
        # reload path (TRL's own sync fails there); the gap metric is on for any vLLM
        with vllm_sync.colocated_engine_dtype(kwargs.get("args"), kwargs.get("model")):
            super().__init__(*args, **kwargs)
        self.hooks = list(hooks) + vllm_sync.engine_hooks(self)
        self.last_rewards: torch.Tensor | None = None  # global (N, n_funcs) of the latest scoring
        self.last_inputs: list[dict[str, Any]] | None = None  # local dataset rows, one per completion
        self.dynamic_sampling = None
        if dynamic_sampling is not None:  # a DynamicSamplingSettings (None: off)
            self.dynamic_sampling = DynamicSampler(self, dynamic_sampling)
            if dynamic_sampling.max_batches is not None:
                self.add_callback(GenerationBudget(self.dynamic_sampling))
        for hook in self.hooks:
            hook.bind(self)
        self.loss_hook = policy_loss.loss_hook_of(self.hooks)  # a recipe's own policy loss, or None
        # a checkpoint whose optimizer state this run starts from (trainer.checkpoints.init_optimizer_from)
        self.init_optimizer_from = init_optimizer_from
        if init_optimizer_from and (self.is_deepspeed_enabled or self.is_fsdp_enabled):
            raise UserError(
                f"trainer.checkpoints.init_optimizer_from={init_optimizer_from}: DeepSpeed and FSDP shard the optimizer "
                "state in their own format; it can be loaded only without them (one process or DDP)"
            )
        self.add_callback(UpdateSize(self))  # update_ratio: how far each optimiser step moves the weights
        # policy_shift: how far it moves the policy, nats per token (a plain trl.GRPOConfig: never)
        self.policy_shift = PolicyShift(
            self, getattr(self.args, "policy_shift_every", 0), getattr(self.args, "policy_shift_rows", 0)
        )
        self.add_callback(self.policy_shift)
        for reward in self.reward_funcs:  # group rewards gather through this trainer's accelerator
            if isinstance(reward, GatheredGroupReward):
                reward.bind(self)

    # ------------------------------------------------------------------ rewards
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # tool rollouts: rewards read only what the model wrote, never a tool's result
        completions = model_written(inputs, completions)
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self.last_rewards = rewards
        self.last_inputs = inputs
        return rewards

    # ------------------------------------------------------------------ sampling
    def _get_train_sampler(self, dataset=None):
        sampler = super()._get_train_sampler(dataset)
        for hook in self.hooks:  # e.g. rows a recipe needs in one rollout batch (paired_batches.py)
            sampler = hook.wrap_sampler(sampler)
        return seed_each_epoch(sampler)  # a resumed epoch draws the order it drew uninterrupted

    # ----------------------------------------------------------------- scoring
    def _generate_and_score_completions(self, inputs):
        if self.dynamic_sampling is not None and self.model.training:
            return self.dynamic_sampling.generate(inputs, self._score_one_round)
        return self._score_one_round(inputs)

    def _score_one_round(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super()._generate_and_score_completions(inputs)
        for hook in self.hooks:
            batch = hook.after_scoring(self, batch, self.last_rewards)
        return batch

    # ---------------------------------------------------------- loss and schedule
    # (EngineGRPOConfig's fields; a plain trl.GRPOConfig has neither and gets TRL's behaviour)
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not all(hook.trains_policy() for hook in self.hooks):
            # a rollout step that trains a hook's own model only (PPO's critic warm-up): the policy gets
            # no gradient at all, so AdamW skips it (no weight decay, moments unchanged)
            return torch.zeros((), device=self.accelerator.device, requires_grad=True)
        if getattr(self.args, "loss_without_old_logps", False):
            inputs = without_old_logps(inputs)
        self.policy_shift.remember(inputs)  # the step's last micro-batch, probed around the optimiser step
        try:
            if self.loss_hook is not None:  # Clip-Cov, KL-Cov, GMPO: the hook's per-token loss (policy_loss.py)
                if return_outputs:
                    raise ValueError("The GRPOTrainer does not support returning outputs")
                return policy_loss.compute_loss(self, model, inputs, self.loss_hook)
            with sequence_token_ratio(self, inputs):  # recipe.importance_sampling_level=sequence_token (GSPO-token)
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        finally:
            self.policy_shift.stop_watching()  # no later pass is this micro-batch's loss forward

    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
        out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        shift = getattr(self, "policy_shift", None)  # None while TRL's __init__ runs
        if shift is not None:
            shift.seen(out[0])  # the loss's forward on a probed micro-batch: its "before" log-probs
        return out

    def create_optimizer(self, model: Any = None) -> Any:
        # HF builds the optimizer here, in _inner_training_loop before accelerate wraps it and
        # before any callback's on_train_begin; a resume then loads its own checkpoint over it
        fresh = self.optimizer is None
        optimizer = super().create_optimizer(model)
        if fresh and self.init_optimizer_from:
            load_optimizer_moments(optimizer, Path(self.init_optimizer_from), str(Path(self.args.output_dir).parent))
        return optimizer

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        # the schedule may be sized longer than the run (OpenRLHF sizes it from the data);
        # the warm-up share is taken of that horizon too, as OpenRLHF does
        horizon = getattr(self.args, "scheduler_steps", None) or num_training_steps
        return super().create_scheduler(horizon, optimizer)

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        # A checkpoint stores a tied output head once (safetensors keeps one copy of shared
        # storage); loading reports the alias "missing" and HF warns unless the model lists it
        # in `_keys_to_ignore_on_save`. Aliases are restored by tying, not lost: no warning.
        missing = set(load_result.missing_keys)
        if missing and missing <= shared_parameter_names(self.model):
            self.model.tie_weights()
            load_result = type(load_result)([], list(load_result.unexpected_keys))
        super()._issue_warnings_after_load(load_result)

    def log_metric(self, name: str, value: float) -> None:
        """Log a scalar with this step's TRL metrics (metrics.jsonl and the progress display)."""
        mode = "train" if self.model.training else "eval"
        self._metrics[mode][name].append(float(value))


def shared_parameter_names(model: torch.nn.Module) -> set[str]:
    """Names of parameters that share storage with another (tied embeddings and output head)."""
    by_storage: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        by_storage.setdefault(param.data_ptr(), []).append(name)
    return {name for names in by_storage.values() if len(names) > 1 for name in names}


def without_old_logps(inputs: dict[str, Any]) -> dict[str, Any]:
    """`inputs` with every old log-prob 0, so TRL's ratio exp(logp - old) is the policy's own
    probability pi: with epsilon=inf the surrogate is -pi * A per token (Spurious Rewards'
    PolicyLossWoOldLogProbs), whose gradient -pi * A * grad(log pi) is pi_old times the
    unclipped ratio's."""
    return {**inputs, "old_per_token_logps": torch.zeros_like(inputs["completion_mask"], dtype=torch.float32)}
