"""`train(cfg)`: one RL run from a resolved config to a finished run directory.

Steps: data -> model (built/cached if needed) -> prompts -> held-out accuracy before
-> RecipeGRPOTrainer.train() -> held-out accuracy after -> model + summary on disk.
"""

from __future__ import annotations

import random
import time
import warnings
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from rlrecipes.data.problems import ProblemSet, data_label, load_problem_set
from rlrecipes.errors import UserError
from rlrecipes.rewards import RewardContext
from rlrecipes.rundir import write_json


def train(cfg: DictConfig, run_dir: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
    import torch
    from datasets import Dataset

    from rlrecipes.data.templates import render_prompt
    from rlrecipes.engine.grpo_args import build_grpo_config
    from transformers import PrinterCallback

    from rlrecipes.engine.dynamic_sampling import DynamicSamplingSettings
    from rlrecipes.engine.progress import HeldOutEvaluator, MetricsWriter, RichProgress
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.generation import greedy_accuracy
    from rlrecipes.models import load_model, resolve_model_path
    from rlrecipes.recipes import get_recipe

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own display reports progress
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
    started = time.time()
    if cfg.trainer.cpu_threads:
        torch.set_num_threads(cfg.trainer.cpu_threads)
    _seed_everything(cfg.seed)
    problems = load_problem_set(cfg.data)
    log(f"data: {problems.report}")
    path = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, cfg.cache_dir, log)
    model, tokenizer = load_model(path, cfg.model)
    log(f"model: {path}")

    def prompt_of(item: dict[str, Any]) -> str:
        return render_prompt(item["problem"], cfg.data.template, tokenizer, cfg.data.system_prompt)

    recipe = get_recipe(cfg.recipe.name)(cfg.recipe)
    final_eval = _final_eval_config(cfg, run_dir)  # a mistake in it fails now, not after training
    ctx = RewardContext(verify=problems.verify, answer_style=cfg.data.answer_style,
                        max_completion_length=cfg.trainer.max_completion_length, seed=cfg.seed,
                        params=cfg.recipe)
    reward_fns = recipe.reward_functions(ctx)
    reward_fns = _with_accuracy_monitor(reward_fns, ctx)
    train_rows = [{"prompt": prompt_of(it), "answer": it["answer"], "id": it["id"]} for it in problems.train]
    train_rows = recipe.training_rows(train_rows)
    inputs = _keep_inputs(recipe.input_files(), run_dir)
    _require_answers_if_graded(train_rows, cfg.recipe.rewards)
    eval_prompts = [prompt_of(it) for it in problems.eval]
    eval_answers = [it["answer"] for it in problems.eval]

    def held_out_accuracy() -> float:
        return greedy_accuracy(model, tokenizer, eval_prompts, eval_answers, problems.verify,
                               max_new_tokens=cfg.trainer.max_completion_length,
                               batch_size=cfg.trainer.eval_batch_size)

    summary: dict[str, Any] = {"recipe": cfg.recipe.name, "model": path, "data": data_label(cfg.data),
                               "seed": cfg.seed, "num_train_problems": len(train_rows),
                               "num_heldout_problems": len(eval_prompts)}
    if inputs:
        summary["inputs"] = inputs
    args = build_grpo_config(cfg, run_dir, recipe.grpo_overrides(), [w for _, w in reward_fns])
    writer = MetricsWriter(run_dir / "metrics.jsonl")
    callbacks: list[Any] = [writer]
    if cfg.trainer.progress:
        callbacks.append(RichProgress(writer, extra_keys=getattr(recipe, "progress_keys", ())))
    evaluator = HeldOutEvaluator(cfg.trainer.eval_every, held_out_accuracy) if cfg.trainer.eval_every else None
    hooks = recipe.hooks(ctx)
    if cfg.trainer.record_accuracy_history:
        from rlrecipes.engine.history import AccuracyHistory

        hooks.append(AccuracyHistory(run_dir / "accuracy_history.json"))
    trainer = RecipeGRPOTrainer(
        model=model, reward_funcs=[fn for fn, _ in reward_fns], args=args,
        train_dataset=Dataset.from_list(train_rows), processing_class=tokenizer, callbacks=callbacks,
        hooks=hooks, dynamic_sampling=DynamicSamplingSettings.from_recipe(cfg.recipe),
    )
    trainer.remove_callback(PrinterCallback)  # the rich display replaces raw log dicts
    if evaluator is not None:
        evaluator.trainer = trainer
        trainer.add_callback(evaluator)
    if not eval_prompts and (cfg.trainer.eval_before or cfg.trainer.eval_after):
        log("no held-out problems (set data.eval_path): accuracy_before/after are not measured (null)")
        summary["accuracy_before"] = summary["accuracy_after"] = None
    # after the trainer is built, so a configuration it rejects fails before this evaluation
    if cfg.trainer.eval_before and eval_prompts:
        summary["accuracy_before"] = held_out_accuracy()
        log(f"held-out accuracy before RL: {summary['accuracy_before']:.3f}")
    train_started = time.time()
    trainer.train()
    summary["train_seconds"] = round(time.time() - train_started, 2)
    summary["steps"] = trainer.state.global_step

    if cfg.trainer.eval_after and eval_prompts:
        summary["accuracy_after"] = held_out_accuracy()
        log(f"held-out accuracy after RL:  {summary['accuracy_after']:.3f}")
    trainer.save_model(str(run_dir / "model"))
    tokenizer.save_pretrained(str(run_dir / "model"))
    summary["final_metrics"] = writer.rows[-1] if writer.rows else {}
    summary["wall_seconds"] = round(time.time() - started, 2)
    write_json(run_dir / "summary.json", summary)  # the training's result, whatever the evaluation does
    if final_eval is not None:
        trainer.accelerator.wait_for_everyone()
        main_process = trainer.accelerator.is_main_process
        del trainer, model, evaluator  # it loads the saved model (on GPU: frees the training copy)
        if main_process:  # one evaluation (its own vLLM engine), not one per rank
            try:
                summary["final_eval"] = _run_final_eval(final_eval, run_dir / "eval", log)
            except Exception as exc:
                summary["final_eval_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                write_json(run_dir / "summary.json", summary)
                raise
            summary["wall_seconds"] = round(time.time() - started, 2)
            write_json(run_dir / "summary.json", summary)
    torch.set_grad_enabled(True)
    return summary


def _final_eval_config(cfg: DictConfig, run_dir: Path) -> DictConfig | None:
    if not cfg.final_eval:
        return None
    from rlrecipes.eval.checkpoints import eval_config_for

    return eval_config_for(cfg, str(run_dir / "model"), list(cfg.final_eval))


def _run_final_eval(eval_cfg: DictConfig, out_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Evaluate the saved model; returns each benchmark's headline metric."""
    import gc

    import torch

    from rlrecipes.eval.runner import run_eval
    from rlrecipes.eval.scoring import headline
    from rlrecipes.rundir import write_manifest

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    out_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(out_dir, eval_cfg)
    done = run_eval(eval_cfg, out_dir, log=log)
    return {name: dict(zip(("metric", "value"), headline(m))) for name, m in done["benchmarks"].items()}


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
    from rlrecipes.rewards import needs_answer

    if any(row["answer"] is not None for row in rows):
        return
    graded = [spec.name for spec in reward_specs if float(spec.weight) != 0 and needs_answer(spec.name)]
    if graded:
        raise UserError(f"the training data has no answers (data.answer_field=null) but reward "
                        f"{', '.join(graded)} grades against them; label-free choices: recipe=ttrl, "
                        "recipe=intuitor, reward=format|random")


def _with_accuracy_monitor(reward_fns: list, ctx: RewardContext) -> list:
    """Always log correctness: add the accuracy reward with weight 0 if the recipe lacks it.

    Label-free recipes (TTRL, INTUITOR) train without it; the paper's diagnostics and
    our progress display still need it, as INTUITOR's own config does (weight 0.0).
    """
    from rlrecipes.rewards import build_reward

    if any(fn.__name__ == "accuracy" for fn, _ in reward_fns):
        return reward_fns
    return [*reward_fns, (build_reward("accuracy", ctx), 0.0)]


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def describe(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)


__all__ = ["train", "ProblemSet"]
