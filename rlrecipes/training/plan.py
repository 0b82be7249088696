"""The run plan: everything decided about a training run before anything loads.

`plan_run(cfg, run_dir)` is the one validation of a train config — the config's value rules
(`rlrecipes.config.checks`), the reward names, the recipe's own rules (`Recipe.validate`), the
LoRA settings, the reward functions and their weights, the batch plan, TRL's own checks and the
final evaluation's config — and returns a frozen `RunPlan`. `rlrecipes train` builds it for every
job of a sweep before the first starts and hands it to an in-process job, whose `setup` uses it
as it is (a job launched elsewhere, by a Slurm launcher, plans once in `setup`); `--dry-run`
prints it (`dry_run`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlrecipes.compose import conf_dir, eval_config_for
from rlrecipes.config.checks import check_train_values, check_unread_clip
from rlrecipes.data.problems import data_label
from rlrecipes.engine.checkpoints import CHECKPOINT_MARKER, OPTIMIZER_FILE
from rlrecipes.engine.grpo_args import BatchPlan, build_grpo_config, objective_rows, plan_batches
from rlrecipes.engine.replay import check_replay
from rlrecipes.errors import ConfigError
from rlrecipes.integrity import file_problem
from rlrecipes.models.lora import peft_config
from rlrecipes.recipes import get_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext, Verifier, build_reward, reward_names
from rlrecipes.tool_loop.build import check_tool_rollout


@dataclass(frozen=True)
class RunPlan:
    """A checked training run: what it trains, with what, for how long, and how it ends."""

    cfg: DictConfig
    run_dir: Path  # names the GRPOConfig's folders; nothing is created by planning
    recipe: Recipe
    rewards: tuple[tuple[str, float], ...]  # (reward, weight), the accuracy monitor included
    args: Any  # the trl.GRPOConfig the run trains with
    batches: BatchPlan
    final_eval: DictConfig | None  # `final_eval=[...]`'s eval config, on run_dir/model
    label: str  # `<recipe>-<data>`, the default run directory's suffix
    hardware: bool  # whether this machine's checks ran (CUDA, bf16, vLLM installed)

    def at(self, run_dir: Path, hardware: bool = True) -> RunPlan:
        """This plan for the run directory the job got (a sweep's check names a default one):
        the checks stand; the GRPOConfig and the final evaluation are named after `run_dir`."""
        if run_dir == self.run_dir and (self.hardware or not hardware):
            return self
        weights = [weight for _, weight in self.rewards]
        return replace(
            self,
            run_dir=run_dir,
            args=build_grpo_config(self.cfg, run_dir, self.recipe.grpo_overrides(), weights, hardware=hardware),
            final_eval=_final_eval_config(self.cfg, run_dir),
            hardware=hardware,
        )


def run_label(cfg: DictConfig) -> str:
    return f"{cfg.recipe.name}-{data_label(cfg.data)}"


def check_run(cfg: DictConfig, run_dir: Path | None = None, hardware: bool = True) -> Any:
    """`plan_run`'s checks alone: the `trl.GRPOConfig` the run trains with, or the first
    mistake as a one-line `UserError`."""
    return plan_run(cfg, run_dir, hardware).args


def plan_run(cfg: DictConfig, run_dir: Path | None = None, hardware: bool = True) -> RunPlan:
    """Validate `cfg` without loading a model, a tokenizer or any data, and plan the run.

    `run_dir` only names the output folders (None: the default name, for a dry run);
    `hardware=False` skips what depends on this machine, not on the config (vLLM installed,
    bf16 on a GPU), so a GPU preset can be checked anywhere."""
    check_train_values(cfg)
    check_optimizer_source(cfg.trainer.checkpoints.init_optimizer_from)
    recipe_cls = get_recipe(cfg.recipe.name)
    check_experiment_recipe(cfg)
    _check_reward_names(cfg.recipe)
    recipe_cls.validate(cfg)
    check_unread_clip(cfg.recipe)
    check_tool_rollout(cfg)
    peft_config(cfg.model)
    recipe = recipe_cls(cfg.recipe)
    rewards = planned_rewards(recipe, reward_context(cfg, _not_scoring))
    ds = cfg.recipe.dynamic_sampling
    if ds.enabled and ds.filter not in [fn.__name__ for fn, _ in rewards]:
        raise ConfigError(
            f"recipe.dynamic_sampling.filter={ds.filter!r} is not one of this run's "
            f"rewards; valid: {', '.join(fn.__name__ for fn, _ in rewards)}"
        )
    check_replay(cfg.recipe, [(fn.__name__, w) for fn, w in rewards])
    label = run_label(cfg)
    run_dir = Path(run_dir or cfg.run_dir or Path(cfg.output_root) / label)
    args = build_grpo_config(cfg, run_dir, recipe.grpo_overrides(), [w for _, w in rewards], hardware=hardware)
    return RunPlan(
        cfg=cfg,
        run_dir=run_dir,
        recipe=recipe,
        rewards=tuple((fn.__name__, w) for fn, w in rewards),
        args=args,
        batches=plan_batches(cfg.trainer, args.world_size),
        final_eval=_final_eval_config(cfg, run_dir),
        label=label,
        hardware=hardware,
    )


def check_experiment_recipe(cfg: DictConfig) -> None:
    """An experiment whose recipe builds its problems (the fact base of recipe=search_r1, J1's
    judge prompts, TIR's big arithmetic) with another recipe would train the `data` config's plain
    synthetic task under the experiment's name instead: refused, naming the recipe to keep."""
    built_by = _experiment_recipe(cfg.get("experiment"))
    if built_by is None or built_by == cfg.recipe.name:
        return
    if get_recipe(built_by).problem_set is Recipe.problem_set:
        return  # the experiment's problems come from its data config: any recipe trains them
    raise ConfigError(
        f"recipe={cfg.recipe.name} with experiment={cfg.experiment}: the experiment's problems are built by "
        f"recipe={built_by}, so recipe={cfg.recipe.name} would train data.synthetic.task="
        f"{cfg.data.synthetic.task} instead; keep recipe={built_by} and change its settings (recipe.loss_type=..., "
        "recipe.epsilon_high=...)"
    )


def _experiment_recipe(experiment: Any) -> str | None:
    """The recipe conf/experiment/<experiment>.yaml selects (`override /recipe: NAME`), or None."""
    path = conf_dir() / "experiment" / f"{experiment}.yaml"
    if not experiment or not path.is_file():
        return None
    for entry in OmegaConf.to_container(OmegaConf.load(path)).get("defaults", []):
        if isinstance(entry, dict) and "override /recipe" in entry:
            return str(entry["override /recipe"])
    return None


def check_optimizer_source(source: Any) -> None:
    """`trainer.checkpoints.init_optimizer_from`: a complete checkpoint (its marker written last) whose
    optimizer.pt reads back with `weights_only=True`; checked before any model loads."""
    if not source:
        return
    folder = Path(str(source)).expanduser()
    where = f"trainer.checkpoints.init_optimizer_from={source}"
    if not (folder / OPTIMIZER_FILE).is_file():
        raise ConfigError(
            f"{where}: no {OPTIMIZER_FILE} there; give a checkpoint folder of an earlier run "
            "(RUN/checkpoints/checkpoint-N, saved with trainer.checkpoints.every set)"
        )
    if not (folder / CHECKPOINT_MARKER).is_file():
        raise ConfigError(
            f"{where}: not a complete checkpoint (no {CHECKPOINT_MARKER}: its run stopped while saving it, "
            "or another program wrote it)"
        )
    problem = file_problem(folder / OPTIMIZER_FILE)
    if problem is not None:
        raise ConfigError(f"{where}: {OPTIMIZER_FILE} is damaged ({problem})")


def _final_eval_config(cfg: DictConfig, run_dir: Path) -> DictConfig | None:
    """`final_eval=[...]` composed now: a mistake in it fails before training, not after."""
    if not cfg.final_eval:
        return None
    try:
        return eval_config_for(cfg, str(run_dir / "model"), list(cfg.final_eval))
    except ConfigError as exc:
        raise ConfigError(f"final_eval: {exc}") from None


def dry_run(cfg: DictConfig) -> list[tuple[str, str]]:
    """`rlrecipes train --dry-run`: every check of `check_run`, then what the run would train
    with, as (what, value) rows. Loads and writes nothing; the machine's own capabilities
    (CUDA, bf16, vLLM) are left to the real run, so a GPU preset can be checked anywhere."""
    planned = plan_run(cfg, hardware=False)
    args, rewards, plan = planned.args, planned.rewards, planned.batches
    t, world = cfg.trainer, args.world_size
    clip = f"{args.epsilon}" if args.epsilon_high in (None, args.epsilon) else f"{args.epsilon} / {args.epsilon_high}"
    kwargs = ", ".join(f"{k}={v}" for k, v in dict(args.lr_scheduler_kwargs or {}).items())
    return [
        ("recipe", cfg.recipe.name),
        ("model", str(cfg.model.name_or_path or f"{cfg.model.name} (built: {cfg.model.builder})")),
        ("data", data_label(cfg.data)),
        ("loss", f"loss_type={args.loss_type} beta={args.beta} epsilon={clip} scale_rewards={args.scale_rewards}"),
        *objective_rows(args, cfg.rollout.backend),  # ratio level, entropy, reward aggregation, rollout correction
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


def _with_accuracy_monitor(reward_fns: list, ctx: RewardContext) -> list:
    """Always log correctness: add the accuracy reward with weight 0 if the recipe lacks it.

    Label-free recipes (TTRL, INTUITOR) train without it; the paper's diagnostics and
    our progress display still need it, as INTUITOR's own config does (weight 0.0).
    """
    if any(fn.__name__ == "accuracy" for fn, _ in reward_fns):
        return reward_fns
    return [*reward_fns, (build_reward("accuracy", ctx), 0.0)]
