"""`sft(cfg, run_dir)`: one supervised fine-tuning run on TRL's `SFTTrainer`, from a resolved
`conf/sft.yaml` config to a finished run directory whose `model/` starts RL unchanged
(`rlrecipes train model.name_or_path=RUN/model`; a LoRA run's adapter included).

It shares the training job's conventions: `rlrecipes.training.sft_plan.check_sft` validates
everything that needs no model and no data and returns the `trl.SFTConfig` (`--dry-run`
stops there); the data's field mapping is read before the model loads; checkpoints are the engine's (a completion
marker, retention, a graceful stop on SIGINT/SIGTERM), so `resume=true run_dir=RUN`
continues exactly; metrics go to `metrics.jsonl`; held-out completion loss and, where the
data has answers, greedy held-out accuracy are measured before and after.
"""

from __future__ import annotations

import errno
import os
import random
import time
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig

from rlrecipes.data.problems import answer_verifier, data_label
from rlrecipes.data.sft_examples import SFTData, load_sft_data, render_sft_prompt, tokenize_examples
from rlrecipes.engine.checkpoints import CheckpointKeeper, GracefulStop, last_complete_checkpoint, load_engine_state
from rlrecipes.engine.progress import MetricsWriter, RichProgress
from rlrecipes.errors import RunInterrupted, UserError
from rlrecipes.generation import greedy_accuracy
from rlrecipes.models import load_model, lora, resolve_model_path
from rlrecipes.models.lora import peft_config
from rlrecipes.rundir import write_json
from rlrecipes.training.sft_plan import check_sft, epoch_steps

Log = Callable[[str], None]


class SFTInterrupted(RunInterrupted):
    """SIGINT/SIGTERM stopped the run after saving a checkpoint; `signal` is the signal number."""


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
    if cfg.sft.epochs is not None:  # the run's length follows the rows that train
        rows, batch = len(train.rows), cfg.sft.batch_size
        cfg.trainer.max_steps = epoch_steps(rows, batch, cfg.sft.epochs)
        args = check_sft(cfg, run_dir)  # rebuilt: the schedule spans the new length
        log(f"sft.epochs={cfg.sft.epochs:g}: {cfg.trainer.max_steps} steps ({rows} rows, {batch} per step)")
    summary: dict[str, Any] = {
        "recipe": "sft",
        "model": model_path,
        "data": data_label(cfg.data),
        "seed": cfg.seed,
        "num_train_examples": len(train.rows),
        "epochs": cfg.sft.epochs,
        "max_steps": cfg.trainer.max_steps,
        "num_heldout_examples": len(held_out.rows),
        "left_out_too_long": {"train": train.too_long, "held_out": held_out.too_long},
    }
    before: dict[str, Any] = {}  # measured before training; saved into every checkpoint
    trainer, writer, stop = build_trainer(cfg, run_dir, args, model, tokenizer, train.rows, held_out.rows, before, log)
    accuracy = _heldout_accuracy(cfg, data, tokenizer)
    checkpoint = _resume(cfg, run_dir, trainer, writer, before, log) if cfg.resume else None
    if checkpoint is None:
        before.update(loss_before=_heldout_loss(trainer), accuracy_before=accuracy(trainer, cfg.trainer.eval.before))
    _train(cfg, run_dir, trainer, stop, checkpoint)
    summary.update(before)
    summary["loss_after"] = _heldout_loss(trainer)
    summary["accuracy_after"] = accuracy(trainer, cfg.trainer.eval.after)
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


def build_trainer(
    cfg: DictConfig,
    run_dir: Path,
    args: Any,
    model: Any,
    tokenizer: Any,
    train_rows: list[dict[str, Any]],
    eval_rows: list[dict[str, Any]],
    job_values: dict[str, Any],
    log: Log,
) -> tuple[Any, Any, Any]:
    """TRL's SFTTrainer on the tokenized rows, with the metrics writer, the display and the
    engine's graceful stop and checkpoint keeper (which saves `job_values` in each checkpoint)."""
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
        lambda: job_values,
        keep_last=cfg.trainer.checkpoints.keep_last,
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
            batch_size=cfg.trainer.eval.batch_size,
        )

    return measure


def _resume(cfg: DictConfig, run_dir: Path, trainer: Any, writer: Any, before: dict[str, Any], log: Log) -> Path | None:
    """The last complete checkpoint, with `before` restored from it (None without one: the
    run starts again from step 0, in place)."""
    checkpoint = last_complete_checkpoint(run_dir / "checkpoints")
    is_main = int(os.environ.get("RANK", "0")) == 0
    if checkpoint is None:
        writer.resume_at(0, rewrite=is_main)
        log(f"no complete checkpoint in {run_dir}: training it again from step 0 with its saved config")
        return None
    step = int(checkpoint.name.split("-")[-1])
    writer.resume_at(step, rewrite=is_main)  # the steps after the checkpoint are run again
    before.update(load_engine_state(trainer, checkpoint))
    log(f"resuming from {checkpoint} (step {step})")
    return checkpoint


def _train(cfg: DictConfig, run_dir: Path, trainer: Any, stop: Any, checkpoint: Path | None) -> None:
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
