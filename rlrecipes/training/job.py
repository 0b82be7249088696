"""`train(cfg, run_dir)`: one RL run, from a resolved config to a finished run directory.

The training job sits above the recipes and the engine and wires them together, in
four phases: `setup` (the run plan, then data, rewards, model), `build_trainer`, `run`
(held-out accuracy before, RL, held-out accuracy after) and `finish` (model, summary),
then the final evaluation (`rlrecipes.training.final_eval`).

Every process of a multi-process launch runs this same function on the same run
directory (created once by the CLI). Work that is per-run rather than per-rank —
writing files, logging, the final evaluation — happens on the main process only;
everything that touches the model happens on all of them, because under DDP, ZeRO or
FSDP those calls are collective.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import random
import shutil
import signal
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from rlrecipes.data.problems import ProblemSet, data_label, load_problem_set
from rlrecipes.data.templates import render_prompt
from rlrecipes.doctor.preflight import ProbeSettings
from rlrecipes.engine.checkpoints import (
    CheckpointKeeper,
    GracefulStop,
    TrainingTimeBudget,
    last_complete_checkpoint,
    load_engine_state,
)
from rlrecipes.engine.dynamic_sampling import DynamicSamplingSettings
from rlrecipes.engine.group_rewards import GatheredGroupReward
from rlrecipes.engine.grpo_args import rollout_steps
from rlrecipes.engine.guards import RewardGuard
from rlrecipes.engine.heldout import HeldOutAccuracy
from rlrecipes.engine.history import AccuracyHistory
from rlrecipes.engine.progress import MetricsWriter, RichProgress, TrackerConfig
from rlrecipes.engine.replay import ExperienceReplay, ReplaySettings
from rlrecipes.engine.trainer import RecipeGRPOTrainer
from rlrecipes.errors import RunInterrupted, UserError
from rlrecipes.eval.job_size import VLLM_CPU_START_S
from rlrecipes.generation import on_vllm_cpu
from rlrecipes.models import load_model, lora, resolve_model_path
from rlrecipes.models.lora import peft_config
from rlrecipes.phase import Phase
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import GroupReward, RewardContext, needs_answer
from rlrecipes.rundir import is_main_process, write_json
from rlrecipes.tool_loop.build import retrieve_once, rollout_kwargs
from rlrecipes.training.final_eval import evaluate_final_model
from rlrecipes.training.live_doctor import live_doctor
from rlrecipes.training.plan import RunPlan, plan_run, planned_rewards, reward_context
from rlrecipes.training.preflight import Preflight
from rlrecipes.training.sample_log import SampleLog

Log = Callable[[str], None]


@dataclass
class TrainingJob:
    """Everything `setup` prepares before a trainer exists."""

    cfg: DictConfig
    run_dir: Path
    log: Log
    is_main: bool
    problems: ProblemSet
    recipe: Recipe
    reward_context: RewardContext
    reward_fns: list
    train_rows: list[dict[str, Any]]
    plan: RunPlan
    args: Any  # trl.GRPOConfig (the plan's)
    model_path: str = ""
    model: Any = None
    tokenizer: Any = None
    lora: Any = None  # peft's LoraConfig, or None for full fine-tuning
    retrieve: Any = None  # rollout.tool_mode=rag_once: (prompt, question) -> prompt with the tool's result
    summary: dict[str, Any] = field(default_factory=dict)


class TrainingInterrupted(RunInterrupted):
    """SIGINT/SIGTERM stopped the run after saving a checkpoint; `signal` is the signal number."""


def train(cfg: DictConfig, run_dir: Path, log: Log = print, plan: RunPlan | None = None) -> dict[str, Any]:
    """Train as `cfg` says into `run_dir`; `plan` is the run's plan when the caller has it
    (`rlrecipes train`'s sweep check made it in this process), else `setup` makes it."""
    import torch

    started = time.time()
    job = setup(cfg, run_dir, log, plan)
    trainer, writer, heldout, stop = build_trainer(job)
    run(job, trainer, writer, heldout, stop)
    finish(job, trainer, writer, started)
    if job.plan.final_eval is not None:
        evaluate_final_model(job, trainer, started)
    torch.set_grad_enabled(True)
    return job.summary


def setup(cfg: DictConfig, run_dir: Path, log: Log, plan: RunPlan | None = None) -> TrainingJob:
    """The run plan (every check), then the data, the rewards and the model."""
    import torch
    from transformers.utils import logging as hf_logging

    # Planned before anything loads: a setting TRL rejects fails at once, and under ZeRO-3 the
    # config's DeepSpeed settings must exist for from_pretrained to load sharded.
    plan = plan_run(cfg, run_dir) if plan is None else plan.at(run_dir)
    args, recipe = plan.args, plan.recipe
    hf_logging.disable_progress_bar()  # our own display reports progress
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
    is_main = is_main_process()
    log = log if is_main else _silent
    if cfg.trainer.cpu_threads:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    _seed_everything(cfg.seed)
    problems = recipe.problem_set(cfg.data) or load_problem_set(cfg.data)
    log(f"data: {problems.report}")
    ctx = reward_context(cfg, problems.verify, run_dir)
    reward_fns = planned_rewards(recipe, ctx)
    job = TrainingJob(
        cfg=cfg,
        run_dir=run_dir,
        log=log,
        is_main=is_main,
        problems=problems,
        recipe=recipe,
        reward_context=ctx,
        reward_fns=reward_fns,
        train_rows=[],
        plan=plan,
        args=args,
        lora=peft_config(cfg.model),
    )  # LoRA settings are checked before the model loads
    _load_model(job)
    job.retrieve = retrieve_once(cfg.rollout, job.tokenizer)
    job.train_rows = recipe.training_rows(
        [{"prompt": _prompt(job, it), "answer": it["answer"], "id": it["id"]} for it in problems.train]
    )
    _require_answers_if_graded(job.train_rows, cfg.recipe.rewards)
    if len(job.train_rows) < cfg.trainer.prompts_per_rollout:  # TRL would train 0 steps and "succeed"
        raise UserError(
            f"{len(job.train_rows)} training problems are fewer than one rollout step's "
            f"trainer.prompts_per_rollout={cfg.trainer.prompts_per_rollout}; use more data or fewer prompts"
        )
    job.summary = {
        "recipe": cfg.recipe.name,
        "model": job.model_path,
        "data": data_label(cfg.data),
        "seed": cfg.seed,
        "world_size": args.world_size,
        "num_train_problems": len(job.train_rows),
        "num_heldout_problems": len(problems.eval),
    }
    if is_main:
        inputs = _keep_inputs(recipe.input_files(), run_dir)
        if inputs:
            job.summary["inputs"] = inputs
    return job


def starting_model_path(cfg: Any, recipe: Any, problems: ProblemSet, log: Callable[[str], None] = print) -> str:
    """The folder or hub id a run of `cfg` starts from: the recipe's warm-start key picks the toy
    (J1's judge toy, TIR's tool toy), which is built into cfg.cache_dir on first use."""
    return resolve_model_path(cfg.model, problems.task, recipe.warm_start_key(cfg.data), cfg.cache_dir, log)


def _load_model(job: TrainingJob) -> None:
    from accelerate import PartialState

    cfg = job.cfg
    # the main process builds (toy warm-start, GGUF conversion) while the others wait, then they read its cache
    with PartialState().main_process_first():
        job.model_path = starting_model_path(cfg, job.recipe, job.problems, job.log)
    job.model, job.tokenizer = load_model(job.model_path, cfg.model)
    job.log(f"model: {job.model_path}")


def _prompt(job: TrainingJob, item: dict[str, Any]) -> str:
    data = job.cfg.data
    prompt = render_prompt(item["problem"], data.template, job.tokenizer, data.system_prompt)
    return job.retrieve(prompt, item["problem"]) if job.retrieve else prompt


def build_trainer(job: TrainingJob) -> tuple[Any, Any, Any, Any]:
    """The RecipeGRPOTrainer with the metrics writer, progress display, held-out accuracy,
    checkpoint and graceful-stop callbacks."""
    from datasets import Dataset
    from transformers import PrinterCallback

    cfg, t = job.cfg, job.cfg.trainer
    writer = MetricsWriter(job.run_dir / "metrics.jsonl")
    callbacks: list[Any] = [writer]
    if t.progress:
        callbacks.append(RichProgress(writer, extra_keys=getattr(job.recipe, "progress_keys", ())))
    if cfg.get("report_to"):  # the trackers get the whole resolved config, not only TRL's GRPOConfig
        callbacks.append(
            TrackerConfig(
                OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
                list(cfg.report_to),
                job.run_dir / "tensorboard",
            )
        )
    heldout = HeldOutAccuracy(
        [_prompt(job, it) for it in job.problems.eval],
        [it["answer"] for it in job.problems.eval],
        job.problems.verify,
        job.tokenizer,
        max_new_tokens=t.max_completion_length,
        batch_size=t.eval.batch_size,
        before=t.eval.before,
        after=t.eval.after,
        every=t.eval.every,
        log=job.log,
    )
    hooks = job.recipe.hooks(job.reward_context)
    replay = ReplaySettings.from_recipe(cfg.recipe, cfg.seed)
    if replay is not None:  # first: later hooks and dynamic sampling see the swapped rewards
        hooks.insert(0, ExperienceReplay(replay))
    if t.record_accuracy_history:
        hooks.append(AccuracyHistory(job.run_dir / "accuracy_history.json"))
    guard = RewardGuard(t.reward_guard.fallback, t.reward_guard.max_failure_rate, t.reward_guard.timeout_s)
    hooks.append(guard)  # last: it checks the advantages every other hook has written
    if t.log_samples_every:  # after it: the stored advantages are the ones the update uses
        hooks.append(SampleLog(job.run_dir, t.log_samples_every))
    keeper = CheckpointKeeper(
        job.run_dir / "checkpoints",
        lambda: {"accuracy_before": heldout.before, "heldout_seconds": heldout.seconds},
        keep_last=t.checkpoints.keep_last,
        best_metric=t.checkpoints.best_metric,
        latest_metrics=lambda: writer.rows[-1] if writer.rows else {},
    )
    stop = GracefulStop(rollout_steps(t), notify=job.log)
    doctor = live_doctor(job, writer, stop)  # after the writer: it reads each step's row
    if doctor is not None:
        callbacks.append(doctor)
    if t.max_train_seconds is not None:  # seconds of RL: the held-out measurements are not counted
        callbacks.append(TrainingTimeBudget(t.max_train_seconds, rollout_steps(t), excluded=lambda: heldout.seconds))
    with _engine_start(cfg, job.log):  # colocated vLLM starts inside TRL's trainer: minutes on a CPU
        trainer = RecipeGRPOTrainer(
            model=job.model,
            reward_funcs=[as_trl_reward(fn, guard) for fn, _ in job.reward_fns],
            args=job.args,
            peft_config=job.lora,  # LoRA: TRL wraps the model; only the adapters train
            train_dataset=Dataset.from_list(job.train_rows),
            processing_class=job.tokenizer,
            callbacks=[*callbacks, heldout, stop, keeper],
            hooks=hooks,
            dynamic_sampling=DynamicSamplingSettings.from_recipe(cfg.recipe),
            init_optimizer_from=t.checkpoints.init_optimizer_from,  # checked by the plan before the model loaded
            **rollout_kwargs(cfg, job.tokenizer),  # rollout.tools: the multi-turn tool rollout
        )
    if t.preflight:  # after the engine's own hooks: it reads the scored batch's log-prob gap
        preflight = Preflight(_probe_settings(job), job.run_dir, job.log, job.summary)
        preflight.bind(trainer)
        trainer.hooks.append(preflight)
    trainer.remove_callback(PrinterCallback)  # the rich display replaces raw log dicts
    for callback in (heldout, keeper, stop, *callbacks):  # the callbacks that act through the trainer
        if hasattr(callback, "trainer"):
            callback.trainer = trainer
    return trainer, writer, heldout, stop


def _probe_settings(job: TrainingJob) -> ProbeSettings:
    cfg = job.cfg
    return ProbeSettings(
        max_completion_length=int(cfg.trainer.max_completion_length),
        answer_style=job.problems.answer_style,
        answer_graded=bool(_graded_rewards(cfg.recipe.rewards)),
        template=str(cfg.data.template),
        multi_turn=str(cfg.rollout.tool_mode) == "loop" and bool(cfg.rollout.tools),
    )


def _engine_start(cfg: DictConfig, log: Log) -> Any:
    """A Phase announcing the colocated vLLM engine's start (nothing else prints meanwhile)."""
    if cfg.rollout.backend != "vllm" or cfg.rollout.vllm_mode != "colocate":
        return contextlib.nullcontext()
    return Phase("starting the vLLM engine", log, expect_s=VLLM_CPU_START_S if on_vllm_cpu() else None)


def run(job: TrainingJob, trainer: Any, writer: Any, heldout: Any, stop: Any) -> None:
    """RL (from the last complete checkpoint when resuming), with held-out accuracy measured by
    `heldout` at its start and end. A SIGINT/SIGTERM ends it with a checkpoint: TrainingInterrupted."""
    cfg = job.cfg
    if not job.problems.eval and (cfg.trainer.eval.before or cfg.trainer.eval.after):
        job.log("no held-out problems (set data.eval_path): accuracy_before/after are not measured (null)")
    _say_if_sharding_is_ignored(trainer, job.log)
    checkpoint = _resume(job, trainer, writer, heldout) if cfg.resume else None
    started = time.time()
    done = int(checkpoint.name.split("-")[-1]) if checkpoint else 0
    if done >= cfg.trainer.max_steps:
        # trained to the end before the interruption (e.g. the final save failed): HF would run
        # one step more when resuming there, so the checkpoint's weights are loaded instead
        trainer._load_from_checkpoint(str(checkpoint))
        trainer.state.global_step = done
        if heldout.measure_after:
            heldout.after = heldout.measure()
    else:
        try:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        except Exception as exc:  # a checkpoint or a log that cannot be written: say how to go on
            if not _is_storage_error(exc):
                raise
            raise UserError(
                f"a write failed while training ({_storage_reason(exc)}); {_how_to_continue(job)}"
            ) from None
    if stop.stopped_at is not None:
        command = f"rlrecipes train resume=true run_dir={job.run_dir}"
        command += " trainer.doctor=warn" if stop.reason else ""  # =stop would stop again at once
        raise TrainingInterrupted(
            f"{stop.reason or signal.Signals(stop.received).name}: stopped after step {stop.stopped_at} with "
            f"a checkpoint; continue with: {command}",
            stop.received,
        )
    job.summary["train_seconds"] = round(time.time() - started - heldout.seconds, 2)
    job.summary["heldout_seconds"] = round(heldout.seconds, 2)
    job.summary["steps"] = trainer.state.global_step
    budget = next((c for c in trainer.callback_handler.callbacks if isinstance(c, TrainingTimeBudget)), None)
    if budget is not None and budget.stopped_at is not None:
        job.summary["stopped_by"] = f"trainer.max_train_seconds={budget.seconds:g} after step {budget.stopped_at}"
        job.log(f"stopped after step {budget.stopped_at}: trainer.max_train_seconds={budget.seconds:g} reached")
    job.summary["accuracy_before"], job.summary["accuracy_after"] = heldout.before, heldout.after
    job.summary["distributed"] = trainer.accelerator.distributed_type.value
    if heldout.before is not None:
        job.log(f"held-out accuracy before RL: {heldout.before:.3f}")
    if heldout.after is not None:
        job.log(f"held-out accuracy after RL:  {heldout.after:.3f}")


def _resume(job: TrainingJob, trainer: Any, writer: Any, heldout: Any) -> Path | None:
    """Restore the engine's state and the metrics log to the last usable checkpoint; None
    (the run starts again from step 0, in place) when there is none."""
    checkpoint = last_complete_checkpoint(job.run_dir / "checkpoints")  # reopen_run_dir set damaged ones aside
    if checkpoint is None:
        writer.resume_at(0, rewrite=job.is_main)
        job.log(f"no complete checkpoint in {job.run_dir}: training it again from step 0 with its saved config")
        return None
    values = load_engine_state(trainer, checkpoint)
    heldout.before, heldout.seconds = values["accuracy_before"], values["heldout_seconds"]
    heldout.measure_before = False  # measured before the interruption, on the initial model
    step = int(checkpoint.name.split("-")[-1])
    writer.resume_at(step, rewrite=job.is_main)  # the steps after the checkpoint are run again
    job.log(f"resuming from {checkpoint} (step {step})")
    return checkpoint


def _say_if_sharding_is_ignored(trainer: Any, log: Log) -> None:
    """accelerate applies FSDP and DeepSpeed on accelerators only: a CPU launch with such a
    config trains plain data-parallel, which the user should hear about."""
    asked = [
        name
        for name, var in (("FSDP", "ACCELERATE_USE_FSDP"), ("DeepSpeed", "ACCELERATE_USE_DEEPSPEED"))
        if os.environ.get(var, "false").lower() == "true"
    ]
    kind = trainer.accelerator.distributed_type.value
    if asked and kind in ("MULTI_CPU", "NO"):
        log(
            f"note: the launch config asks for {asked[0]}, which accelerate does not apply on CPUs; "
            f"this run is {kind} (every process holds the whole model)"
        )


def finish(job: TrainingJob, trainer: Any, writer: Any, started: float) -> None:
    """The model (every process takes part: ZeRO-3 gathers its shards to save) and summary.json."""

    # with LoRA: the adapter (RUN/model) and, on request, a merged copy (RUN/model_merged)
    out = job.run_dir / "model"
    try:
        job.summary["saved_model"] = lora.save_trained_model(trainer, job.tokenizer, out, job.cfg.model)
    except Exception as exc:  # disk full, quota, a vanished mount: say what survived and how to finish
        if not _is_storage_error(exc):
            raise

        raise UserError(
            f"cannot write the trained model to {out}: {_storage_reason(exc)}; {_how_to_continue(job)}"
        ) from None
    trainer.accelerator.wait_for_everyone()
    job.summary["final_metrics"] = writer.rows[-1] if writer.rows else {}
    job.summary["wall_seconds"] = round(time.time() - started, 2)
    if job.is_main:
        write_json(job.run_dir / "summary.json", job.summary)  # the training's result, whatever the evaluation does


def _is_storage_error(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
        return True
    return "No space left" in str(exc) or "Disk quota" in str(exc)  # safetensors' own error type


def _how_to_continue(job: TrainingJob) -> str:
    """After a storage failure: what survived, and the command that continues the run."""
    command = f"rlrecipes train resume=true run_dir={job.run_dir}"
    kept = last_complete_checkpoint(job.run_dir / "checkpoints")
    if kept is None:
        return f"no checkpoint is complete yet: free space, then `{command}` starts the run again in place"
    return f"the last complete checkpoint {kept.name} is intact: free space, then `{command}` continues from it"


def _storage_reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]


def _keep_inputs(files: list[str], run_dir: Path) -> dict[str, str]:
    """Copy the recipe's input files into `run_dir/inputs/` (a rerun must not depend on a
    file that may change); returns {file name: sha256}."""
    kept = {}
    for name in files:
        source = Path(name).expanduser()
        target = run_dir / "inputs" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        kept[source.name] = hashlib.sha256(target.read_bytes()).hexdigest()
    return kept


def _require_answers_if_graded(rows: list[dict[str, Any]], reward_specs: Any) -> None:
    """Unlabelled data (data.answer_field=null) trains only with rewards that need no answer."""
    if any(row["answer"] is not None for row in rows):
        return
    graded = _graded_rewards(reward_specs)
    if graded:
        raise UserError(
            f"the training data has no answers (data.answer_field=null) but reward "
            f"{', '.join(graded)} grades against them; label-free choices: recipe=ttrl, "
            "recipe=intuitor, reward=format|random"
        )


def as_trl_reward(fn: Any, guard: Any) -> Any:
    """What TRL is given for a reward: a group reward scored on the gathered batch, any
    other behind the guard (both count failures and never stop the run by themselves)."""
    return GatheredGroupReward(fn, guard) if isinstance(fn, GroupReward) else guard.wrap(fn)


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _silent(message: str) -> None:
    """The log of a non-main process: one process reports for the run."""


def _graded_rewards(reward_specs: Any) -> list[str]:
    """The rewards (weight != 0) that grade against the gold answer."""
    return [spec.name for spec in reward_specs if float(spec.weight) != 0 and needs_answer(spec.name)]
