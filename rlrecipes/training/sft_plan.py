"""What `rlrecipes sft` checks before anything loads, and the `trl.SFTConfig` it trains with.

`check_sft(cfg)` is the one validation of an SFT config: the values the types cannot
express, the data's field mapping, the LoRA settings, the input model (a whole model, from
a finished run), the batch plan and TRL's own checks. `rlrecipes sft` runs it on every job
before the first starts, the job first thing, and `--dry-run` stops after it (`dry_run`).
"""

from __future__ import annotations

import math
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rlrecipes.config.checks import NEEDS_MIN_LR, check_numbers_are_finite, scheduler_types
from rlrecipes.data.problems import data_label
from rlrecipes.data.sft_examples import check_sft_fields
from rlrecipes.engine.grpo_args import bf16_gpu_assumed, training_arguments
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.integrity import folder_problem
from rlrecipes.models import check_model_location, lora
from rlrecipes.models.lora import peft_config
from rlrecipes.rundir import MARKER


def check_sft(cfg: DictConfig, run_dir: Path | None = None, hardware: bool = True) -> Any:
    """Every check that needs no model and no data; returns the `trl.SFTConfig`.
    `hardware=False` leaves out what depends on this machine (bf16 on a GPU)."""
    check_numbers_are_finite(cfg)
    _check_values(cfg)
    check_sft_fields(cfg.data, cfg.sft.traces)
    peft_config(cfg.model)  # the LoRA settings
    if cfg.model.name_or_path:
        check_input_model(str(cfg.model.name_or_path))
    if run_dir is None:  # named in the SFTConfig only: nothing is created
        run_dir = Path(cfg.run_dir or Path(cfg.output_root) / f"sft-{data_label(cfg.data)}")
    return build_sft_config(cfg, run_dir, hardware)


def _check_values(cfg: DictConfig) -> None:
    t, s = cfg.trainer, cfg.sft
    if t.lr_scheduler_type not in scheduler_types():
        raise ConfigError(f"trainer.lr_scheduler_type={t.lr_scheduler_type!r}; valid: {', '.join(scheduler_types())}")
    if t.lr_scheduler_type in NEEDS_MIN_LR and not ({"min_lr", "min_lr_rate"} & set(t.lr_scheduler_kwargs or {})):
        raise ConfigError(
            f"trainer.lr_scheduler_type={t.lr_scheduler_type} needs +trainer.lr_scheduler_kwargs.min_lr_rate=..."
        )
    for key, value, low in (
        ("trainer.max_steps", t.max_steps, 1),
        ("trainer.micro_batch_size", t.micro_batch_size, 1),
        ("trainer.logging_steps", t.logging_steps, 1),
        ("trainer.eval.batch_size", t.eval.batch_size, 1),
        ("trainer.learning_rate", t.learning_rate, 0),
        ("trainer.weight_decay", t.weight_decay, 0),
        ("trainer.max_grad_norm", t.max_grad_norm, 0),
        ("sft.batch_size", s.batch_size, 1),
        ("sft.max_length", s.max_length, 2),
        ("seed", cfg.seed, 0),
    ):
        if value < low:
            raise ConfigError(f"{key}={value} must be at least {low}")
    for key, value in (
        ("trainer.checkpoints.every", t.checkpoints.every),
        ("trainer.checkpoints.keep_last", t.checkpoints.keep_last),
    ):
        if value is not None and value < 1:
            raise ConfigError(f"{key}={value} must be at least 1 (or null)")
    for key, value in (("trainer.adam_beta1", t.adam_beta1), ("trainer.adam_beta2", t.adam_beta2)):
        if not 0 <= value < 1:
            raise ConfigError(f"{key}={value} must be in [0, 1)")
    if not 0 <= t.warmup_ratio <= 1:
        raise ConfigError(f"trainer.warmup_ratio={t.warmup_ratio} must be in [0, 1]")
    if s.epochs is not None and not s.epochs > 0:
        raise ConfigError(f"sft.epochs={s.epochs} must be above 0 (or null: train trainer.max_steps steps)")


def epoch_steps(rows: int, batch_size: int, epochs: float) -> int:
    """Optimizer steps of `epochs` passes over `rows` at `batch_size` rows per step: the last,
    partial batch of a pass is a step too (as transformers' Trainer counts an epoch)."""
    return max(1, math.ceil(epochs * rows / batch_size))


def check_input_model(name_or_path: str) -> None:
    """A local model folder must hold a whole model: one a finished stage wrote, every file
    readable. A run's `model/` whose run has no summary.json was cut short while saving."""
    check_model_location(name_or_path)
    folder = Path(name_or_path).expanduser()
    if not folder.is_dir():
        return  # a hub id
    run = folder.parent
    if (run / MARKER).is_file() and not (run / "summary.json").is_file():
        raise UserError(
            f"model.name_or_path={name_or_path}: its run {run} has not finished (no summary.json), so the model "
            "may be half-written; finish that run first (resume=true run_dir=...)"
        )
    if not (folder / "config.json").is_file() and not (folder / "adapter_config.json").is_file():
        raise UserError(f"model.name_or_path={name_or_path} holds no model (no config.json or adapter_config.json)")
    problem = folder_problem(folder)
    if problem is not None:
        raise UserError(f"model.name_or_path={name_or_path}: {problem[0].name} is damaged ({problem[1]})")


def batch_plan(cfg: DictConfig, world: int) -> tuple[int, int]:
    """(sequences per device and forward pass, gradient-accumulation steps) for `sft.batch_size`."""
    total, micro = cfg.sft.batch_size, cfg.trainer.micro_batch_size
    per_device = min(micro, total // world)
    if per_device < 1 or total % (per_device * world):
        raise ConfigError(
            f"sft.batch_size={total} must be a multiple of trainer.micro_batch_size={micro} x {world} process(es) "
            "(or smaller than their product and divisible by the processes)"
        )
    return per_device, total // (per_device * world)


def build_sft_config(cfg: DictConfig, run_dir: Path, hardware: bool = True) -> Any:
    """The explicit field-by-field `trl.SFTConfig` (TRL's own defaults are not relied on)."""
    from trl import SFTConfig

    t = cfg.trainer
    per_device, accumulation = batch_plan(cfg, int(os.environ.get("WORLD_SIZE", "1")))
    args: dict[str, Any] = dict(
        **training_arguments(cfg, run_dir, checkpoint_every=t.checkpoints.every),
        per_device_train_batch_size=per_device,
        per_device_eval_batch_size=t.eval.batch_size,
        gradient_accumulation_steps=accumulation,
        eval_strategy="no",  # held-out loss is measured before and after, not by HF's schedule
        completion_only_loss=cfg.sft.completion_only_loss,
        max_length=None,  # rows over sft.max_length are left out and counted when tokenized
        packing=False,
    )
    try:
        with nullcontext() if hardware else bf16_gpu_assumed():
            return SFTConfig(**args)
    except ValueError as exc:
        raise ConfigError(f"TRL rejects these settings: {str(exc).strip().splitlines()[0]}") from None


def dry_run(cfg: DictConfig) -> list[tuple[str, str]]:
    """`rlrecipes sft --dry-run`: what the run would train with, as (what, value) rows."""
    args = check_sft(cfg, hardware=False)
    t, world = cfg.trainer, int(os.environ.get("WORLD_SIZE", "1"))
    data = cfg.data
    if data.source == "synthetic":
        fmt = f"synthetic {data.synthetic.task}: problem -> {cfg.sft.traces}"
    elif data.messages_field:
        fmt = f"chat: {data.messages_field} (last assistant turn = completion)"
    else:
        fmt = f"prompt-completion: {data.problem_field} -> {data.completion_field}"
    return [
        ("model", str(cfg.model.name_or_path or f"{cfg.model.name} (built: {cfg.model.builder})")),
        ("lora", f"r={cfg.model.lora.r}" if lora.lora_enabled(cfg.model) else "off (full fine-tuning)"),
        ("data", f"{data_label(data)} ({fmt}); template={data.template}"),
        (
            "loss",
            f"{'completion tokens only' if cfg.sft.completion_only_loss else 'every token'}; rows over "
            f"{cfg.sft.max_length} tokens left out",
        ),
        (
            "optimizer",
            f"learning_rate={args.learning_rate:g} weight_decay={args.weight_decay:g} max_grad_norm={args.max_grad_norm:g}",
        ),
        ("scheduler", f"{t.lr_scheduler_type} over {_length(cfg, args)}, warmup_steps={args.warmup_steps}"),
        (
            "batch",
            f"{cfg.sft.batch_size} sequences per optimizer step ({args.per_device_train_batch_size} per device x "
            f"{args.gradient_accumulation_steps} accumulation x {world} process(es))",
        ),
        (
            "checkpoints",
            f"every {t.checkpoints.every} steps, last {t.checkpoints.keep_last} kept"
            if t.checkpoints.every
            else "none",
        ),
        ("precision", f"bf16={args.bf16} use_cpu={args.use_cpu}"),
    ]


def _length(cfg: DictConfig, args: Any) -> str:
    if cfg.sft.epochs is None:
        return f"{args.max_steps} steps"
    return (
        f"{cfg.sft.epochs:g} epoch(s): ceil({cfg.sft.epochs:g} x training rows / {cfg.sft.batch_size}) steps, "
        "counted once the data is read (trainer.max_steps not used)"
    )
