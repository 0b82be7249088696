"""`sft(cfg, run_dir)`: one supervised fine-tuning run on TRL's `SFTTrainer`, from a resolved
`conf/sft.yaml` config to a finished run directory whose `model/` starts RL unchanged
(`rlrecipes train model.name_or_path=RUN/model`; a LoRA run's adapter included).

It shares the training job's conventions: `check_sft` validates everything that needs no
model and no data and returns the `trl.SFTConfig` (`--dry-run` stops there); the data's
field mapping is read before the model loads; checkpoints are the engine's (a completion
marker, retention, a graceful stop on SIGINT/SIGTERM), so `resume=true run_dir=RUN`
continues exactly; metrics go to `metrics.jsonl`; held-out completion loss and, where the
data has answers, greedy held-out accuracy are measured before and after.
"""

from __future__ import annotations

import errno
import os
import random
import time
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig

from rlrecipes.config.checks import NEEDS_MIN_LR, check_numbers_are_finite, scheduler_types
from rlrecipes.data.problems import answer_verifier, data_label
from rlrecipes.data.sft_examples import SFTData, check_sft_fields, load_sft_data, render_sft_prompt, tokenize_examples
from rlrecipes.engine.checkpoints import CheckpointKeeper, GracefulStop, last_complete_checkpoint, load_engine_state
from rlrecipes.engine.grpo_args import tracking_args
from rlrecipes.engine.progress import MetricsWriter, RichProgress
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.generation import greedy_accuracy
from rlrecipes.integrity import folder_problem
from rlrecipes.models import check_model_location, load_model, lora, resolve_model_path
from rlrecipes.models.lora import peft_config
from rlrecipes.rundir import MARKER, write_json

Log = Callable[[str], None]


class SFTInterrupted(Exception):
    """SIGINT/SIGTERM stopped the run after saving a checkpoint; `signal` is the signal number."""

    def __init__(self, message: str, signal: int):
        super().__init__(message)
        self.signal = signal


# --------------------------------------------------------------------------- validate
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
        ("trainer.eval_batch_size", t.eval_batch_size, 1),
        ("trainer.learning_rate", t.learning_rate, 0),
        ("trainer.weight_decay", t.weight_decay, 0),
        ("trainer.max_grad_norm", t.max_grad_norm, 0),
        ("sft.batch_size", s.batch_size, 1),
        ("sft.max_length", s.max_length, 2),
        ("seed", cfg.seed, 0),
    ):
        if value < low:
            raise ConfigError(f"{key}={value} must be at least {low}")
    for key, value in (("trainer.save_steps", t.save_steps), ("trainer.save_keep_last", t.save_keep_last)):
        if value is not None and value < 1:
            raise ConfigError(f"{key}={value} must be at least 1 (or null)")
    for key, value in (("trainer.adam_beta1", t.adam_beta1), ("trainer.adam_beta2", t.adam_beta2)):
        if not 0 <= value < 1:
            raise ConfigError(f"{key}={value} must be in [0, 1)")
    if not 0 <= t.warmup_ratio <= 1:
        raise ConfigError(f"trainer.warmup_ratio={t.warmup_ratio} must be in [0, 1]")


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
        output_dir=str(run_dir / "checkpoints"),
        seed=cfg.seed,
        **tracking_args(cfg, run_dir),
        disable_tqdm=True,
        logging_steps=t.logging_steps,
        save_strategy="steps" if t.save_steps else "no",
        save_steps=t.save_steps or 500,
        save_only_model=False,  # every checkpoint can be resumed from (optimizer, scheduler, RNG)
        save_total_limit=None,  # retention is the engine's CheckpointKeeper
        max_steps=t.max_steps,
        learning_rate=t.learning_rate,
        lr_scheduler_type=t.lr_scheduler_type,
        lr_scheduler_kwargs=dict(t.lr_scheduler_kwargs or {}),
        warmup_steps=float(t.warmup_ratio) if t.warmup_ratio else t.warmup_steps,  # < 1: a ratio (transformers 5)
        weight_decay=t.weight_decay,
        adam_beta1=t.adam_beta1,
        adam_beta2=t.adam_beta2,
        max_grad_norm=t.max_grad_norm,
        per_device_train_batch_size=per_device,
        per_device_eval_batch_size=t.eval_batch_size,
        gradient_accumulation_steps=accumulation,
        bf16=t.bf16,
        fp16=False,
        use_cpu=t.use_cpu,
        dataloader_num_workers=0,
        eval_strategy="no",  # held-out loss is measured before and after, not by HF's schedule
        completion_only_loss=cfg.sft.completion_only_loss,
        max_length=None,  # rows over sft.max_length are left out and counted when tokenized
        packing=False,
    )
    known = {f.name for f in fields(SFTConfig)}
    args["activation_checkpointing" if "activation_checkpointing" in known else "gradient_checkpointing"] = (
        t.gradient_checkpointing
    )
    try:
        if hardware:
            return SFTConfig(**args)
        from unittest import mock

        with mock.patch("transformers.training_args.is_torch_bf16_gpu_available", return_value=True):
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
        ("scheduler", f"{t.lr_scheduler_type} over {args.max_steps} steps, warmup_steps={args.warmup_steps}"),
        (
            "batch",
            f"{cfg.sft.batch_size} sequences per optimizer step ({args.per_device_train_batch_size} per device x "
            f"{args.gradient_accumulation_steps} accumulation x {world} process(es))",
        ),
        ("checkpoints", f"every {t.save_steps} steps, last {t.save_keep_last} kept" if t.save_steps else "none"),
        ("precision", f"bf16={args.bf16} use_cpu={args.use_cpu}"),
    ]


# --------------------------------------------------------------------------------- run
def sft(cfg: DictConfig, run_dir: Path, log: Log = print) -> dict[str, Any]:
    """The run: checks, data, model, trainer, SFT (from the last complete checkpoint when
    resuming), then `model/` and `summary.json`. Returns the summary."""
    import torch
    from datasets.utils.logging import disable_progress_bar
    from transformers.utils import logging as hf_logging

    started = time.time()
    args = check_sft(cfg, run_dir)
    hf_logging.disable_progress_bar()  # our own display reports progress
    disable_progress_bar()  # and the datasets library's label building
    is_main = int(os.environ.get("RANK", "0")) == 0
    log = log if is_main else (lambda _: None)
    if cfg.trainer.cpu_threads:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    data = load_sft_data(cfg.data, cfg.sft.traces)  # a field-mapping mistake fails here, before the model loads
    log(f"data: {data.report}")
    model_path = resolve_model_path(cfg.model, data.task, cfg.data.synthetic if data.task else None, cfg.cache_dir, log)
    model, tokenizer = load_model(model_path, cfg.model)
    log(f"model: {model_path}")
    train = tokenize_examples(data.train, cfg.data, tokenizer, cfg.sft.max_length)
    held_out = tokenize_examples(data.eval, cfg.data, tokenizer, cfg.sft.max_length)
    for name, part in (("train", train), ("held-out", held_out)):
        if part.too_long:
            log(f"{name}: {part.report('sft.max_length', cfg.sft.max_length)}")
    if not train.rows:
        raise UserError(f"no training example fits in sft.max_length={cfg.sft.max_length} tokens; raise it")
    summary: dict[str, Any] = {
        "recipe": "sft",
        "model": model_path,
        "data": data_label(cfg.data),
        "seed": cfg.seed,
        "num_train_examples": len(train.rows),
        "num_heldout_examples": len(held_out.rows),
        "left_out_too_long": {"train": train.too_long, "held_out": held_out.too_long},
    }
    trainer, writer, stop = build_trainer(cfg, run_dir, args, model, tokenizer, train.rows, held_out.rows, log)
    accuracy = _heldout_accuracy(cfg, data, tokenizer)
    before = _resume(cfg, run_dir, trainer, writer, log) if cfg.resume else None
    if before is None:
        before = {"loss_before": _heldout_loss(trainer), "accuracy_before": accuracy(trainer, cfg.trainer.eval_before)}
    trainer.job_values = before  # saved into every checkpoint (CheckpointKeeper)
    _train(cfg, run_dir, trainer, stop)
    summary.update(before)
    summary["loss_after"] = _heldout_loss(trainer)
    summary["accuracy_after"] = accuracy(trainer, cfg.trainer.eval_after)
    summary["steps"] = trainer.state.global_step
    try:
        summary["saved_model"] = lora.save_trained_model(trainer, tokenizer, run_dir / "model", cfg.model)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
            raise
        raise UserError(
            f"cannot write the model to {run_dir / 'model'}: {exc.strerror}; {_how_to_continue(run_dir)}"
        ) from None
    trainer.accelerator.wait_for_everyone()
    summary["final_metrics"] = next((row for row in reversed(writer.rows) if "loss" in row), {})
    summary["wall_seconds"] = round(time.time() - started, 2)
    if is_main:
        write_json(run_dir / "summary.json", summary)
    return summary


def build_trainer(cfg, run_dir, args, model, tokenizer, train_rows, eval_rows, log) -> tuple[Any, Any, Any]:
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTTrainer

    writer = MetricsWriter(run_dir / "metrics.jsonl")
    callbacks: list[Any] = [writer]
    if cfg.trainer.progress:
        callbacks.append(SFTProgress(writer))
    stop = GracefulStop(1, notify=log)
    keeper = CheckpointKeeper(
        run_dir / "checkpoints",
        lambda: trainer.job_values,
        keep_last=cfg.trainer.save_keep_last,
        latest_metrics=lambda: writer.rows[-1] if writer.rows else {},
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(train_rows),
        eval_dataset=Dataset.from_list(eval_rows) if eval_rows else None,
        processing_class=tokenizer,
        peft_config=peft_config(cfg.model),
        callbacks=[*callbacks, stop, keeper],
    )
    trainer.remove_callback(PrinterCallback)
    trainer.hooks = []  # the engine's checkpoint state lists RL hooks; SFT has none
    trainer.job_values = {}
    keeper.trainer = stop.trainer = trainer
    return trainer, writer, stop


def _heldout_loss(trainer: Any) -> float | None:
    """Mean completion-token cross-entropy on the held-out rows (None without any)."""
    if trainer.eval_dataset is None:
        return None
    return float(trainer.evaluate()["eval_loss"])


def _heldout_accuracy(cfg: DictConfig, data: SFTData, tokenizer: Any) -> Callable[[Any, bool], float | None]:
    """Greedy held-out accuracy of the trainer's model, where the held-out rows have answers."""
    rows = [ex for ex in data.eval if ex.get("answer") is not None]
    verify = data.verify or answer_verifier(cfg.data.answer_style)
    prompts = [render_sft_prompt(ex["prompt"], cfg.data, tokenizer) for ex in rows]

    def measure(trainer: Any, wanted: bool) -> float | None:
        if not rows or not wanted:
            return None
        return greedy_accuracy(
            trainer.model,
            tokenizer,
            prompts,
            [ex["answer"] for ex in rows],
            verify,
            max_new_tokens=cfg.trainer.max_completion_length,
            batch_size=cfg.trainer.eval_batch_size,
        )

    return measure


def _resume(cfg: DictConfig, run_dir: Path, trainer: Any, writer: Any, log: Log) -> dict[str, Any] | None:
    """The values measured before training, restored from the last complete checkpoint (None
    without one: the run starts again from step 0, in place)."""
    checkpoint = last_complete_checkpoint(run_dir / "checkpoints")
    is_main = int(os.environ.get("RANK", "0")) == 0
    if checkpoint is None:
        writer.resume_at(0, rewrite=is_main)
        log(f"no complete checkpoint in {run_dir}: training it again from step 0 with its saved config")
        return None
    step = int(checkpoint.name.split("-")[-1])
    writer.resume_at(step, rewrite=is_main)  # the steps after the checkpoint are run again
    trainer.resume_checkpoint = checkpoint
    log(f"resuming from {checkpoint} (step {step})")
    return dict(load_engine_state(trainer, checkpoint))


def _train(cfg: DictConfig, run_dir: Path, trainer: Any, stop: Any) -> None:
    checkpoint = getattr(trainer, "resume_checkpoint", None)
    done = int(checkpoint.name.split("-")[-1]) if checkpoint else 0
    if done >= cfg.trainer.max_steps:  # trained to the end before the interruption: HF would run one step more
        trainer._load_from_checkpoint(str(checkpoint))
        trainer.state.global_step = done
    else:
        try:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
                raise
            raise UserError(f"a write failed while training ({exc.strerror}); {_how_to_continue(run_dir)}") from None
    if stop.stopped_at is not None:
        import signal

        raise SFTInterrupted(
            f"{signal.Signals(stop.received).name}: stopped after step {stop.stopped_at} with a checkpoint; "
            f"continue with: rlrecipes sft resume=true run_dir={run_dir}",
            stop.received,
        )


def _how_to_continue(run_dir: Path) -> str:
    command = f"rlrecipes sft resume=true run_dir={run_dir}"
    kept = last_complete_checkpoint(run_dir / "checkpoints")
    if kept is None:
        return f"no checkpoint is complete yet: free space, then `{command}` starts the run again in place"
    return f"the last complete checkpoint {kept.name} is intact: free space, then `{command}` continues from it"


class SFTProgress(RichProgress):
    """The training display with SFT's numbers: loss, token accuracy, learning rate."""

    def on_train_begin(self, args, state, control, **kwargs):
        super().on_train_begin(args, state, control, **kwargs)
        if self.progress is not None:  # the bar's label
            from rich.progress import TextColumn

            self.progress.columns = (TextColumn("[bold]SFT[/]"), *self.progress.columns[1:])

    def _stats(self, row: dict[str, Any]) -> list[str]:
        parts = [f"loss {_fmt(row.get('loss'))}", f"token acc {_fmt(row.get('mean_token_accuracy'))}"]
        if row.get("learning_rate") is not None:
            parts.append(f"lr {float(row['learning_rate']):.2e}")
        parts.append(f"{_fmt(row.get('step_time'), 2)}s/step")
        return parts


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{float(value):.{digits}f}"
