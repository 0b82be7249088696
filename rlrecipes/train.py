"""`train(cfg, run_dir)`: one RL run, from a resolved config to a finished run directory.

The training job sits above the recipes and the engine and wires them together, in
four phases: `setup` (every check, then data, recipe, rewards, model), `build_trainer`,
`run` (held-out accuracy before, RL, held-out accuracy after) and `finish` (model,
summary, final evaluation).

`check_run(cfg)` is the one validation of a train config: every check that needs no model
and no data, ending with the `trl.GRPOConfig` the run trains with. `rlrecipes train` runs it
on every job of a sweep before the first starts, `setup` first thing, and `--dry-run`
stops after it.

Every process of a multi-process launch runs this same function on the same run
directory (created once by the CLI). Work that is per-run rather than per-rank —
writing files, logging, the final evaluation — happens on the main process only;
everything that touches the model happens on all of them, because under DDP, ZeRO or
FSDP those calls are collective.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig

from rlrecipes.config.checks import check_train_values
from rlrecipes.data.problems import ProblemSet, data_label, load_problem_set
from rlrecipes.data.templates import render_prompt
from rlrecipes.engine.checkpoints import (
    CheckpointKeeper,
    GracefulStop,
    last_complete_checkpoint,
    load_engine_state,
)
from rlrecipes.engine.dynamic_sampling import DynamicSamplingSettings
from rlrecipes.engine.group_rewards import GatheredGroupReward
from rlrecipes.engine.grpo_args import build_grpo_config, plan_batches, rollout_steps
from rlrecipes.engine.guards import RewardGuard
from rlrecipes.engine.heldout import HeldOutAccuracy
from rlrecipes.engine.history import AccuracyHistory
from rlrecipes.engine.progress import MetricsWriter, RichProgress, TrackerConfig
from rlrecipes.engine.tool_setup import check_tool_rollout, rollout_kwargs
from rlrecipes.engine.trainer import RecipeGRPOTrainer
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.eval.checkpoints import eval_config_for
from rlrecipes.models import load_model, lora, resolve_model_path
from rlrecipes.models.lora import peft_config
from rlrecipes.recipes import get_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import GroupReward, RewardContext, Verifier, build_reward, needs_answer, reward_names
from rlrecipes.rundir import write_json, write_manifest

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
    args: Any  # trl.GRPOConfig
    model_path: str = ""
    model: Any = None
    tokenizer: Any = None
    final_eval: DictConfig | None = None
    lora: Any = None  # peft's LoraConfig, or None for full fine-tuning
    summary: dict[str, Any] = field(default_factory=dict)


class TrainingInterrupted(Exception):
    """SIGINT/SIGTERM stopped the run after saving a checkpoint; `signal` is the signal number."""

    def __init__(self, message: str, signal: int):
        super().__init__(message)
        self.signal = signal


def train(cfg: DictConfig, run_dir: Path, log: Log = print) -> dict[str, Any]:
    import torch

    started = time.time()
    job = setup(cfg, run_dir, log)
    trainer, writer, heldout, stop = build_trainer(job)
    run(job, trainer, writer, heldout, stop)
    finish(job, trainer, writer, started)
    if job.final_eval is not None:
        evaluate_final_model(job, trainer, started)
    torch.set_grad_enabled(True)
    return job.summary


# --------------------------------------------------------------------------- validate
def check_run(cfg: DictConfig, run_dir: Path | None = None, hardware: bool = True) -> Any:
    """Validate `cfg` without loading a model, a tokenizer or any data, and return the
    `trl.GRPOConfig` the run trains with; the first mistake is a one-line `UserError`.

    In order: the config's value rules (`rlrecipes.config.checks`), the reward names, the
    recipe's own rules (`Recipe.validate`), the LoRA settings, the reward functions and
    their weights, the batch plan and TRL's own checks. `run_dir` only names the output
    folders in the GRPOConfig (nothing is created); `hardware=False` skips what depends on
    this machine, not on the config (vLLM installed, bf16 on a GPU).
    """
    return plan_run(cfg, run_dir, hardware)[0]


def plan_run(
    cfg: DictConfig, run_dir: Path | None = None, hardware: bool = True
) -> tuple[Any, list[tuple[str, float]]]:
    """`check_run`'s work: the GRPOConfig and the run's (reward name, weight) pairs."""
    check_train_values(cfg)
    recipe_cls = get_recipe(cfg.recipe.name)
    _check_reward_names(cfg.recipe)
    recipe_cls.validate(cfg)
    check_tool_rollout(cfg)
    peft_config(cfg.model)
    recipe = recipe_cls(cfg.recipe)
    rewards = planned_rewards(recipe, reward_context(cfg, _not_scoring))
    if cfg.recipe.dynamic_sampling and cfg.recipe.dynamic_sampling_filter not in [fn.__name__ for fn, _ in rewards]:
        raise ConfigError(
            f"recipe.dynamic_sampling_filter={cfg.recipe.dynamic_sampling_filter!r} is not one of this run's "
            f"rewards; valid: {', '.join(fn.__name__ for fn, _ in rewards)}"
        )
    if run_dir is None:  # named in the GRPOConfig only: a dry run creates nothing
        run_dir = Path(cfg.run_dir or Path(cfg.output_root) / f"{cfg.recipe.name}-{data_label(cfg.data)}")
    args = build_grpo_config(cfg, run_dir, recipe.grpo_overrides(), [w for _, w in rewards], hardware=hardware)
    return args, [(fn.__name__, w) for fn, w in rewards]


def dry_run(cfg: DictConfig) -> list[tuple[str, str]]:
    """`rlrecipes train --dry-run`: every check of `check_run`, then what the run would train
    with, as (what, value) rows. Loads and writes nothing; the machine's own capabilities
    (CUDA, bf16, vLLM) are left to the real run, so a GPU preset can be checked anywhere."""
    args, rewards = plan_run(cfg, hardware=False)
    t, world = cfg.trainer, args.world_size
    plan = plan_batches(t, world)
    clip = f"{args.epsilon}" if args.epsilon_high in (None, args.epsilon) else f"{args.epsilon} / {args.epsilon_high}"
    kwargs = ", ".join(f"{k}={v}" for k, v in dict(args.lr_scheduler_kwargs or {}).items())
    return [
        ("recipe", cfg.recipe.name),
        ("model", str(cfg.model.name_or_path or f"{cfg.model.name} (built: {cfg.model.builder})")),
        ("data", data_label(cfg.data)),
        ("loss", f"loss_type={args.loss_type} beta={args.beta} epsilon={clip} scale_rewards={args.scale_rewards}"),
        ("rewards", ", ".join(f"{name}={weight:g}" for name, weight in rewards)),
        (
            "optimizer",
            f"learning_rate={args.learning_rate:g} weight_decay={args.weight_decay:g} "
            f"max_grad_norm={args.max_grad_norm:g}",
        ),
        (
            "scheduler",
            f"{t.lr_scheduler_type}{f' ({kwargs})' if kwargs else ''} over "
            f"{getattr(args, 'scheduler_steps', None) or args.max_steps} steps, warmup_steps={t.warmup_steps} "
            f"warmup_ratio={t.warmup_ratio:g}",
        ),
        (
            "batch",
            f"{t.prompts_per_rollout} prompts x {t.num_generations} completions = {plan.completions_per_rollout} per "
            f"rollout step; {t.updates_per_rollout} update(s) of {plan.completions_per_update} "
            f"({plan.per_device_batch} per device x {plan.grad_accum} accumulation x {world} process(es), WORLD_SIZE)",
        ),
        ("steps", f"max_steps={args.max_steps} (optimizer steps) num_iterations={args.num_iterations}"),
        (
            "generation",
            f"max_completion_length={args.max_completion_length} temperature={args.temperature} "
            f"rollout={cfg.rollout.backend}",
        ),
        ("precision", f"bf16={args.bf16} use_cpu={args.use_cpu} (CUDA, bf16 and vLLM are checked when the run starts)"),
    ]


def _check_reward_names(recipe_cfg: Any) -> None:
    known = reward_names()
    for spec in recipe_cfg.rewards:
        if spec.name not in known:
            raise ConfigError(f"unknown reward {spec.name!r} (recipe.rewards); valid: {', '.join(known)}")


def _not_scoring(completion: str, gold: Any) -> bool:
    raise RuntimeError("check_run builds the reward functions to check them; they score nothing")


def reward_context(cfg: DictConfig, verify: Verifier, run_dir: Path | None = None) -> RewardContext:
    """What the reward functions know of the run; `verify` comes with the data (its task's checker)."""
    return RewardContext(
        verify=verify,
        answer_style=cfg.data.answer_style,
        max_completion_length=cfg.trainer.max_completion_length,
        seed=cfg.seed,
        recipe=cfg.recipe,
        run_dir=run_dir,
    )


def planned_rewards(recipe: Recipe, ctx: RewardContext) -> list:
    """The recipe's reward functions with their weights, plus the accuracy monitor."""
    return _with_accuracy_monitor(recipe.reward_functions(ctx), ctx)


# ------------------------------------------------------------------------------ setup
def setup(cfg: DictConfig, run_dir: Path, log: Log) -> TrainingJob:
    """Every check (`check_run`), then the data, recipe, rewards and the model."""
    import warnings

    import torch
    from transformers.utils import logging as hf_logging

    # Built before anything loads: a setting TRL rejects fails at once, and under ZeRO-3 the
    # config's DeepSpeed settings must exist for from_pretrained to load sharded.
    args = check_run(cfg, run_dir)
    hf_logging.disable_progress_bar()  # our own display reports progress
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
    is_main = int(os.environ.get("RANK", "0")) == 0
    log = log if is_main else _silent
    if cfg.trainer.cpu_threads:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    _seed_everything(cfg.seed)
    recipe = get_recipe(cfg.recipe.name)(cfg.recipe)
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
        args=args,
        final_eval=_final_eval_config(cfg, run_dir),  # a mistake in it fails now, not after training
        lora=peft_config(cfg.model),
    )  # LoRA settings are checked before the model loads
    _load_model(job)
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


def _load_model(job: TrainingJob) -> None:
    from accelerate import PartialState

    cfg = job.cfg
    # the main process builds (toy warm-start, GGUF conversion) while the others wait, then they read its cache
    with PartialState().main_process_first():
        job.model_path = resolve_model_path(
            cfg.model, job.problems.task, job.recipe.warm_start_key(cfg.data), cfg.cache_dir, job.log
        )
    job.model, job.tokenizer = load_model(job.model_path, cfg.model)
    job.log(f"model: {job.model_path}")


def _prompt(job: TrainingJob, item: dict[str, Any]) -> str:
    data = job.cfg.data
    return render_prompt(item["problem"], data.template, job.tokenizer, data.system_prompt)


# ---------------------------------------------------------------------------- trainer
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
        from omegaconf import OmegaConf

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
        batch_size=t.eval_batch_size,
        before=t.eval_before,
        after=t.eval_after,
        every=t.eval_every,
    )
    hooks = job.recipe.hooks(job.reward_context)
    if t.record_accuracy_history:
        hooks.append(AccuracyHistory(job.run_dir / "accuracy_history.json"))
    guard = RewardGuard(t.reward_fallback, t.reward_max_failure_rate, t.reward_timeout_s)
    hooks.append(guard)  # last: it checks the advantages every other hook has written
    keeper = CheckpointKeeper(
        job.run_dir / "checkpoints",
        lambda: {"accuracy_before": heldout.before, "heldout_seconds": heldout.seconds},
        keep_last=t.save_keep_last,
        best_metric=t.save_best_metric,
        latest_metrics=lambda: writer.rows[-1] if writer.rows else {},
    )
    stop = GracefulStop(rollout_steps(t), notify=job.log)
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
        **rollout_kwargs(cfg, job.tokenizer),  # rollout.tools: the multi-turn tool rollout
    )
    trainer.remove_callback(PrinterCallback)  # the rich display replaces raw log dicts
    heldout.trainer = keeper.trainer = stop.trainer = trainer
    return trainer, writer, heldout, stop


# -------------------------------------------------------------------------------- run
def run(job: TrainingJob, trainer: Any, writer: Any, heldout: Any, stop: Any) -> None:
    """RL (from the last complete checkpoint when resuming), with held-out accuracy measured by
    `heldout` at its start and end. A SIGINT/SIGTERM ends it with a checkpoint: TrainingInterrupted."""
    cfg = job.cfg
    if not job.problems.eval and (cfg.trainer.eval_before or cfg.trainer.eval_after):
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
        import signal

        command = f"rlrecipes train resume=true run_dir={job.run_dir}"
        raise TrainingInterrupted(
            f"{signal.Signals(stop.received).name}: stopped after step {stop.stopped_at} with "
            f"a checkpoint; continue with: {command}",
            stop.received,
        )
    job.summary["train_seconds"] = round(time.time() - started - heldout.seconds, 2)
    job.summary["heldout_seconds"] = round(heldout.seconds, 2)
    job.summary["steps"] = trainer.state.global_step
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


# ----------------------------------------------------------------------------- finish
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
    import errno

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


def evaluate_final_model(job: TrainingJob, trainer: Any, started: float) -> None:
    """`final_eval=[...]`: evaluate the saved model once, in a process of its own.

    A separate process starts from a clean slate: its vLLM engine does not share the
    training's GPU memory, nor inherit the training's torch.distributed world (which a
    second in-process vLLM engine would try to join). The training's own engine and
    model are released first.
    """
    trainer.accelerator.wait_for_everyone()
    _release_generation_memory(trainer)
    if job.is_main:
        out_dir = job.run_dir / "eval"
        try:
            job.summary["final_eval"] = _run_final_eval(job.final_eval, out_dir, job.log)
        except Exception as exc:
            job.summary["final_eval_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            write_json(job.run_dir / "summary.json", job.summary)
            raise
        job.summary["wall_seconds"] = round(time.time() - started, 2)
        write_json(job.run_dir / "summary.json", job.summary)
    trainer.accelerator.wait_for_everyone()


def _release_generation_memory(trainer: Any) -> None:
    import gc

    import torch

    generation = getattr(trainer, "vllm_generation", None)
    if generation is not None and getattr(generation, "llm", None) is not None:
        generation.llm = None  # TRL's colocated engine: its KV cache is most of a GPU's memory
    trainer.model = trainer.model_wrapped = None
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _final_eval_config(cfg: DictConfig, run_dir: Path) -> DictConfig | None:
    if not cfg.final_eval:
        return None

    return eval_config_for(cfg, str(run_dir / "model"), list(cfg.final_eval))


def _run_final_eval(eval_cfg: DictConfig, out_dir: Path, log: Log) -> dict[str, Any]:
    """Run the evaluation of `eval_cfg` (written to out_dir/config.yaml) in a child process;
    returns each benchmark's headline metric."""
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(out_dir, eval_cfg)
    log(f"final evaluation of the trained model -> {out_dir}")
    done = subprocess.run([sys.executable, "-m", "rlrecipes.eval.final", str(out_dir)], env=_single_process_env())
    if done.returncode != 0:
        raise RuntimeError(f"the final evaluation exited with status {done.returncode} (its output is above)")
    return json.loads((out_dir / "headline.json").read_text())


def _single_process_env() -> dict[str, str]:
    """This process's environment without the launcher's distributed variables, on this rank's GPU."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "RANK",
            "LOCAL_RANK",
            "WORLD_SIZE",
            "LOCAL_WORLD_SIZE",
            "GROUP_RANK",
            "ROLE_RANK",
            "ROLE_WORLD_SIZE",
            "MASTER_ADDR",
            "MASTER_PORT",
            "TORCHELASTIC_RUN_ID",
        )
        and not k.startswith(("ACCELERATE_", "TORCHELASTIC_"))
    }
    local_rank = os.environ.get("LOCAL_RANK")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if local_rank is not None and visible:
        devices = visible.split(",")
        env["CUDA_VISIBLE_DEVICES"] = devices[int(local_rank) % len(devices)]
    elif local_rank is not None:
        env["CUDA_VISIBLE_DEVICES"] = local_rank
    return env


# ---------------------------------------------------------------------------- helpers
def _keep_inputs(files: list[str], run_dir: Path) -> dict[str, str]:
    """Copy the recipe's input files into `run_dir/inputs/` (a rerun must not depend on a
    file that may change); returns {file name: sha256}."""
    import hashlib
    import shutil

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
    graded = [spec.name for spec in reward_specs if float(spec.weight) != 0 and needs_answer(spec.name)]
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


def _with_accuracy_monitor(reward_fns: list, ctx: RewardContext) -> list:
    """Always log correctness: add the accuracy reward with weight 0 if the recipe lacks it.

    Label-free recipes (TTRL, INTUITOR) train without it; the paper's diagnostics and
    our progress display still need it, as INTUITOR's own config does (weight 0.0).
    """
    if any(fn.__name__ == "accuracy" for fn, _ in reward_fns):
        return reward_fns
    return [*reward_fns, (build_reward("accuracy", ctx), 0.0)]


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _silent(message: str) -> None:
    """The log of a non-main process: one process reports for the run."""
