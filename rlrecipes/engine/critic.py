"""PPO's critic as an engine hook: values, GAE, and the critic's own update on each rollout.

verl's PPO step (verl/trainer/ppo/ray_trainer.py:772-821 at PeterGriffinJin/Search-R1 a14dc3a)
is: the critic's values of the rollout, the rewards with the KL penalty, GAE, then the critic's
update on this batch, then the actor's. `PPOCritic.after_scoring` does the first four on TRL's
scored batch and hands TRL token-level advantages as a (B, T) `advantages` tensor, which TRL
1.16's `_compute_loss` multiplies into its clipped surrogate token by token; the actor's
update is then TRL's own.

The critic is a token-classification model with one label (verl's AutoModelForTokenClassification,
fsdp_workers.py:599-624): the policy's backbone with a linear value head. `source=None` copies
the policy's weights (verl's critic.model.path = the actor's model in both papers' scripts); a
path loads that model instead. Its value for completion token t is read at the position before
it (dp_critic.py:93-100), the state the token was chosen in. It has its own AdamW (lr, weight
decay 0.01, betas 0.9/0.999: fsdp_workers.py:665-668), verl's warm-up schedule, gradient
clipping, and `warmup_rollouts` rollout steps in which only it trains (verl's
trainer.critic_warmup). With several processes every process holds the whole critic and the
gradients of each update are averaged over them before clipping, as DDP does, so 2 processes
take the step 1 process takes on the same global batch.

Its weights (safetensors) and optimizer state go into every checkpoint folder
(`critic/model.safetensors`, `critic/optimizer.pt`, read back with `weights_only=True`), its
step count into the engine state, and the final critic into RUN/critic.

Where this differs from verl's code (docs/methods/ppo.md): the values and the value loss use
the completion mask itself, where this verl version shifts it by one token
(dp_critic.py:136, 178: `attention_mask[:, -response_length - 1:-1]`, which counts the state
after the last token and drops nothing else); with gamma = lambda = 1, the papers' setting, the
advantages are the same, and only verl's critic also learns V = 0 after the end of a completion.
"""

from __future__ import annotations

import copy
import os
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import is_peft_model
from transformers import TrainerCallback
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import use_adapter

from rlrecipes.engine.advantages import weighted_rewards
from rlrecipes.engine.dropout import is_dropout_rate
from rlrecipes.engine.gae import gae, kl_penalty, masked_whiten, token_level_rewards, value_loss, verl_warmup_factor
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError
from rlrecipes.integrity import load_torch_state

CRITIC_FOLDER = "critic"  # in a checkpoint folder and in the run directory
WEIGHTS, OPTIMIZER = "model.safetensors", "optimizer.pt"


@dataclass(frozen=True)
class CriticSettings:
    """The critic and GAE settings (recipe=ppo's `recipe.*` and `recipe.critic.*`)."""

    source: str | None = None  # None: the policy's own weights; else a model path or hub id
    learning_rate: float = 1e-5
    lr_warmup_rollouts: int = 0  # verl: int(critic.optim.lr_warmup_steps_ratio x total_training_steps)
    warmup_rollouts: int = 0  # rollout steps in which only the critic trains
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    cliprange_value: float = 0.5
    updates_per_rollout: int | None = None  # None: the actor's (trainer.updates_per_rollout)
    micro_batch_size: int | None = None  # per device; None: trainer.micro_batch_size
    gamma: float = 1.0
    lam: float = 1.0
    kl_coef: float = 0.0
    kl_penalty: str = "kl"
    whiten_advantages: bool = True
    seed: int = 0  # the value head's initialisation


# ------------------------------------------------------------------ the value model
def value_head_problem(config: Any) -> str | None:
    """Why a value head cannot be put on a model with this (transformers) config, or None:
    it must be a causal LM with a hidden size and a token-classification class in transformers."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES,
    )

    kind = config.get("model_type") if isinstance(config, dict) else getattr(config, "model_type", None)
    hidden = config.get("hidden_size") if isinstance(config, dict) else getattr(config, "hidden_size", None)
    if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return f"model_type {kind!r} is not a causal language model"
    if kind not in MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES:
        return f"transformers has no token-classification (value head) class for model_type {kind!r}"
    if not isinstance(hidden, int):
        return f"its config (model_type {kind!r}) has no hidden_size for the value head"
    return None


def stored_model_config(source: str) -> dict[str, Any] | None:
    """The config.json of a model folder, or of a hub model already in the local cache, read
    without loading anything; None when neither is on this machine (a hub id not downloaded)."""
    import json

    from huggingface_hub import try_to_load_from_cache

    folder = Path(source).expanduser()
    path: Any = folder / "config.json" if folder.is_dir() else None
    if path is None and "/" in source and not source.startswith((".", "/", "~")):
        path = try_to_load_from_cache(source, "config.json")
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def backbone_state(policy: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The policy's weights under the names of a plain transformers model: a LoRA-wrapped
    policy (peft) gives its base layers (`...q_proj.base_layer.weight` -> `...q_proj.weight`)
    without the adapters, which start at zero."""
    if is_peft_model(policy):
        policy = policy.get_base_model()
    state = {}
    for name, tensor in policy.state_dict().items():
        if ".lora_" in name:
            continue
        state[name.replace(".base_layer.", ".")] = tensor
    return state


def _no_dropout(config: Any) -> None:
    """verl builds the critic with classifier_dropout 0 (fsdp_workers.py:618-619; transformers'
    token-classification head would otherwise drop 10%); every other dropout of the config is
    set to 0 too, so the critic's forward passes draw no random numbers."""
    config.classifier_dropout = 0.0
    for name, value in list(vars(config).items()):
        if is_dropout_rate(name) and isinstance(value, float):
            setattr(config, name, 0.0)


def build_critic(policy: torch.nn.Module, source: str | None, seed: int) -> torch.nn.Module:
    """A token-classification model with one output (the value) on `policy`'s backbone (source
    None) or on the model at `source`; the new value head is drawn from `seed` (the global RNG
    is left as it was), so every process builds the same critic."""
    from transformers import AutoConfig, AutoModelForTokenClassification

    base = policy.get_base_model() if is_peft_model(policy) else policy
    config = copy.deepcopy(base.config) if source is None else AutoConfig.from_pretrained(source)
    where = "recipe.critic.model" if source is not None else "the policy (recipe.critic.model=null)"
    problem = value_head_problem(config)
    if problem is not None:
        raise UserError(f"recipe=ppo cannot put a value head on {where}: {problem}")
    config.num_labels = 1
    _no_dropout(config)
    dtype = next(policy.parameters()).dtype
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if source is not None:
            return AutoModelForTokenClassification.from_pretrained(source, config=config, dtype=dtype)
        critic = AutoModelForTokenClassification.from_config(config, dtype=dtype)
    missing, _ = critic.load_state_dict(backbone_state(policy), strict=False)
    backbone = critic.base_model_prefix
    if any(name.startswith(f"{backbone}.") for name in missing):
        raise UserError(
            f"recipe=ppo cannot copy the policy's backbone into the critic ({len(missing)} weights missing, "
            f"e.g. {missing[0]}); give recipe.critic.model"
        )
    return critic


def critic_inputs(batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids, attention mask and position ids of prompt + completion (left-padded prompts:
    positions counted from each row's first token, verl's compute_position_id_with_mask)."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    positions = (attention.long().cumsum(dim=1) - 1).clamp(min=0)
    return ids, attention, positions


def token_values(critic: Any, ids: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor, length: int):
    """The critic's value of each of the last `length` tokens, read at the position before it."""
    out = critic(input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=False)
    return out.logits[:, -length - 1 : -1, 0].float()


# ------------------------------------------------------------------ the hook
class PPOCritic(EngineHook):
    """Values, KL-penalised token rewards, GAE advantages and the critic's update, per rollout."""

    def __init__(self, settings: CriticSettings):
        self.settings = settings
        self.rollouts = 0  # rollout steps scored so far: the critic's schedule and warm-up
        self.actor_trains = True
        self.critic: Any = None
        self.optimizer: Any = None
        self.reference: Any = None
        self.trainer: Any = None

    # -------------------------------------------------------------- set-up
    def bind(self, trainer: Any) -> None:
        if trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled:
            raise UserError(
                "recipe=ppo keeps a whole critic on every process (DDP); FSDP and DeepSpeed shard the policy it "
                "starts from: launch with the ddp config or one process"
            )
        s, args = self.settings, trainer.args
        self.trainer = trainer
        policy = trainer.accelerator.unwrap_model(trainer.model)
        self.critic = build_critic(policy, s.source, s.seed).to(trainer.accelerator.device)
        if args.gradient_checkpointing:  # verl: critic.model.enable_gradient_checkpointing (Search-R1 l.63)
            self.critic.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self._broadcast_weights()
        self.optimizer = torch.optim.AdamW(
            self.critic.parameters(), lr=s.learning_rate, betas=(0.9, 0.999), weight_decay=s.weight_decay
        )
        self.updates = s.updates_per_rollout or args.steps_per_generation // args.gradient_accumulation_steps
        self.micro_batch = s.micro_batch_size or args.per_device_train_batch_size
        self.epochs = args.num_iterations
        # the KL penalty's reference: TRL's own (a KL loss is on: beta > 0), the adapters switched
        # off (LoRA), or a frozen copy of the initial policy (verl's ref worker)
        if s.kl_coef and trainer.ref_model is None and not is_peft_model(policy):
            self.reference = copy.deepcopy(policy).eval().requires_grad_(False)
        trainer.add_callback(SaveFinalCritic(self))

    def _broadcast_weights(self) -> None:
        """Every process built the same critic; rank 0's copy is sent to all the same, so no
        rounding difference of a build can make the processes' critics drift apart."""
        if self._world() > 1:
            for tensor in self.critic.state_dict().values():
                torch.distributed.broadcast(tensor, src=0)

    def _world(self) -> int:
        return self.trainer.accelerator.num_processes if self.trainer is not None else 1

    def _sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """`tensor` summed over processes (every process gets the sum)."""
        if self._world() == 1:
            return tensor
        return self.trainer.accelerator.reduce(tensor.clone(), reduction="sum")

    def describe(self) -> str:
        s = self.settings
        kl = f"KL in the reward {s.kl_coef:g} x {s.kl_penalty}" if s.kl_coef else "no KL in the reward"
        return (
            f"PPO: GAE gamma={s.gamma:g} lam={s.lam:g} ({'whitened' if s.whiten_advantages else 'not whitened'}), "
            f"{kl}; critic from {s.source or 'the policy'} with a value head: lr={s.learning_rate:g} "
            f"(warm-up {s.lr_warmup_rollouts} rollouts) weight_decay={s.weight_decay:g} "
            f"max_grad_norm={s.max_grad_norm:g} cliprange_value={s.cliprange_value:g}, "
            f"{f'{s.updates_per_rollout} update(s)' if s.updates_per_rollout else 'as many updates as the actor'} "
            f"per rollout step, micro-batch {s.micro_batch_size or 'as the actor'}, {s.warmup_rollouts} "
            "critic-only rollout step(s)"
        )

    # -------------------------------------------------------------- the step
    def trains_policy(self) -> bool:
        return self.actor_trains

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        if not trainer.model.training:
            return batch
        s = self.settings
        mask = batch["completion_mask"].float()
        written = mask * batch["tool_mask"] if "tool_mask" in batch else mask  # what the model wrote
        local = mask.size(0)
        start = trainer.accelerator.process_index * local
        scores = torch.nan_to_num(weighted_rewards(rewards, trainer.reward_weights)[start : start + local], nan=0.0)
        ids, attention, positions = critic_inputs(batch)
        length = mask.size(1)
        values = self._values(ids, attention, positions, length)  # GAE zeroes them outside the mask
        kl = None
        if s.kl_coef:
            kl = kl_penalty(self._rollout_logps(trainer, batch), self._reference_logps(trainer, batch), s.kl_penalty)
            kl = kl * written
        token_rewards = token_level_rewards(scores.to(mask.device), mask, kl, s.kl_coef)
        advantages, returns = gae(token_rewards, values, mask, s.gamma, s.lam)
        if s.whiten_advantages:
            advantages = masked_whiten(advantages, mask, self._sum)
        else:
            advantages = advantages * mask
        update = self._update(ids, attention, positions, values, returns, mask)
        self.actor_trains = self.rollouts >= s.warmup_rollouts
        self.rollouts += 1
        self._log(trainer, mask, written, values, returns, advantages, kl, update)
        return {**batch, "advantages": advantages.to(batch["completion_mask"].device)}

    def _autocast(self) -> Any:
        device = self.trainer.accelerator.device
        if self.trainer.args.bf16 and device.type == "cuda":  # verl's critic forward (dp_critic.py:55)
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return nullcontext()

    def _values(self, ids, attention, positions, length) -> torch.Tensor:
        self.critic.eval()
        parts = []
        with torch.no_grad(), self._autocast():
            for rows in _chunks(ids.size(0), self.micro_batch):
                parts.append(token_values(self.critic, ids[rows], attention[rows], positions[rows], length))
        return torch.cat(parts)

    def _update(self, ids, attention, positions, old_values, returns, mask) -> dict[str, list[float]]:
        """verl's update_critic (dp_critic.py:146-204): per mini-batch, the value loss of each
        micro-batch divided by the micro-batches of the mini-batch, backward, then one clipped
        AdamW step; the learning rate follows verl's warm-up, stepped once per rollout."""
        s = self.settings
        factor = verl_warmup_factor(self.rollouts, s.lr_warmup_rollouts)
        for group in self.optimizer.param_groups:
            group["lr"] = s.learning_rate * factor
        self.critic.train()
        stats: dict[str, list[float]] = {"vf_loss": [], "vf_clipfrac": [], "vpred_mean": [], "grad_norm": []}
        size = ids.size(0) // self.updates
        for _ in range(self.epochs):
            for update in range(self.updates):
                micro = [
                    slice(start, min(start + self.micro_batch, (update + 1) * size))
                    for start in range(update * size, (update + 1) * size, self.micro_batch)
                ]
                self.optimizer.zero_grad(set_to_none=True)
                for rows in micro:
                    with self._autocast():
                        predicted = token_values(self.critic, ids[rows], attention[rows], positions[rows], mask.size(1))
                    loss, clipped = value_loss(
                        predicted, old_values[rows], returns[rows], mask[rows], s.cliprange_value
                    )
                    (loss / len(micro)).backward()
                    stats["vf_loss"].append(loss.item())
                    stats["vf_clipfrac"].append(clipped.item())
                    count = mask[rows].sum().clamp(min=1.0)
                    stats["vpred_mean"].append(((predicted.detach() * mask[rows]).sum() / count).item())
                self._average_gradients()
                norm = torch.nn.utils.clip_grad_norm_(self.critic.parameters(), s.max_grad_norm)
                stats["grad_norm"].append(float(norm))
                self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.critic.eval()
        stats["lr"] = [s.learning_rate * factor]
        return stats

    def _average_gradients(self) -> None:
        world = self._world()
        if world == 1:
            return
        for param in self.critic.parameters():
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            torch.distributed.all_reduce(param.grad)
            param.grad.div_(world)

    # -------------------------------------------------------------- log-probs
    def _rollout_logps(self, trainer: Any, batch: dict[str, Any]) -> torch.Tensor:
        """verl's old_log_probs: the trainer's log-probs of the rollout (TRL's when it computed them)."""
        if batch.get("old_per_token_logps") is not None:
            return batch["old_per_token_logps"]
        with disable_gradient_checkpointing(trainer.model, trainer.args.gradient_checkpointing_kwargs):
            return self._logps(trainer, trainer.model, batch)

    def _reference_logps(self, trainer: Any, batch: dict[str, Any]) -> torch.Tensor:
        if batch.get("ref_per_token_logps") is not None:
            return batch["ref_per_token_logps"]
        if self.reference is not None:
            return self._logps(trainer, self.reference, batch)
        model = trainer.accelerator.unwrap_model(trainer.model)  # LoRA: the base model is the reference
        with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
            return self._logps(trainer, trainer.model, batch)

    @staticmethod
    def _logps(trainer: Any, model: Any, batch: dict[str, Any]) -> torch.Tensor:
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        with torch.no_grad():
            return trainer._get_per_token_logps_and_entropies(
                model,
                ids,
                attention,
                batch["completion_ids"].size(1),
                batch_size=trainer.args.per_device_train_batch_size,
            )[0]

    # -------------------------------------------------------------- metrics
    def _log(self, trainer, mask, written, values, returns, advantages, kl, update) -> None:
        """verl's critic metrics (ray_trainer.py:179-243, dp_critic.py:192-201), over every process."""
        valid = mask.bool()
        totals = {
            "tokens": mask.sum(),
            "values": values[valid].sum(),
            "returns": returns[valid].sum(),
            "returns_sq": returns[valid].square().sum(),
            "residual": (returns - values)[valid].sum(),
            "residual_sq": (returns - values)[valid].square().sum(),
            "advantages": advantages[valid].sum(),
        }
        for name in ("vf_loss", "vf_clipfrac", "vpred_mean", "grad_norm"):
            totals[name] = torch.tensor(sum(update[name]))
            totals[f"{name}_n"] = torch.tensor(float(len(update[name])))
        if kl is not None:  # verl: the mean over sequences of each sequence's token mean
            per_sequence = (kl * written).sum(1) / written.sum(1).clamp(min=1.0)
            totals["kl"], totals["sequences"] = per_sequence.sum(), torch.tensor(float(mask.size(0)))
        names = list(totals)
        device = trainer.accelerator.device
        summed = self._sum(torch.stack([totals[n].to(device=device, dtype=torch.float64) for n in names])).tolist()
        got = dict(zip(names, summed))
        n = max(got["tokens"], 1.0)
        explained = 1.0 - _variance(got["residual"], got["residual_sq"], n) / (
            _variance(got["returns"], got["returns_sq"], n) + 1e-5
        )
        metrics = {
            "critic/values/mean": got["values"] / n,
            "critic/returns/mean": got["returns"] / n,
            "critic/advantages/mean": got["advantages"] / n,
            "critic/vf_explained_var": explained,
            "critic/lr": update["lr"][0],
        }
        for name in ("vf_loss", "vf_clipfrac", "vpred_mean", "grad_norm"):
            metrics[f"critic/{name}"] = got[name] / max(got[f"{name}_n"], 1.0)
        if kl is not None:
            metrics["critic/kl"] = got["kl"] / max(got["sequences"], 1.0)
            metrics["critic/kl_coeff"] = self.settings.kl_coef
        for name, value in metrics.items():
            trainer.log_metric(name, value)

    # -------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        return {"rollouts": self.rollouts, "actor_trains": self.actor_trains}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rollouts = int(state["rollouts"])
        self.actor_trains = bool(state["actor_trains"])

    def save_files(self, folder: Path) -> None:
        """The critic's weights (safetensors) and AdamW state into checkpoint `folder`."""
        target = Path(folder) / CRITIC_FOLDER
        write_critic(self.critic, target)
        torch.save(self.optimizer.state_dict(), target / OPTIMIZER)

    def load_files(self, folder: Path) -> None:
        from safetensors.torch import load_file

        source = Path(folder) / CRITIC_FOLDER
        for name in (WEIGHTS, OPTIMIZER):
            if not (source / name).is_file():
                raise UserError(f"{folder} has no {CRITIC_FOLDER}/{name}: it was not written by recipe=ppo")
        device = next(self.critic.parameters()).device
        self.critic.load_state_dict(load_file(source / WEIGHTS, device=str(device)))
        self.optimizer.load_state_dict(load_torch_state(source / OPTIMIZER))


def write_critic(critic: torch.nn.Module, folder: Path) -> None:
    """The critic as a transformers model folder (config.json, model.safetensors; the weights
    written under a temporary name and renamed)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().contiguous().cpu() for name, tensor in critic.state_dict().items()}
    partial = folder / f".{WEIGHTS}.partial"
    save_file(state, str(partial), metadata={"format": "pt"})
    os.replace(partial, folder / WEIGHTS)
    critic.config.to_json_file(str(folder / "config.json"))


class SaveFinalCritic(TrainerCallback):
    """RUN/critic: the trained critic, beside RUN/model (written by the main process)."""

    def __init__(self, hook: PPOCritic):
        self.hook = hook

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            write_critic(self.hook.critic, Path(args.output_dir).parent / CRITIC_FOLDER)


def _variance(total: float, squares: float, n: float) -> float:
    """The unbiased variance from a sum and a sum of squares over n values (torch.var)."""
    return max(squares - total * total / n, 0.0) / max(n - 1.0, 1.0)


def _chunks(rows: int, size: int) -> list[slice]:
    return [slice(start, min(start + size, rows)) for start in range(0, rows, size)]
