"""PPO with a critic (Schulman et al., 2017, arXiv 1707.06347) and GAE (Schulman et al., 2016,
arXiv 1506.02438), as verl runs it for the papers that trained with it: Search-R1 (Jin et al.
2025, arXiv 2503.09516; PeterGriffinJin/Search-R1 @ a14dc3a, train_ppo.sh) and Cognitive
Behaviors (Gandhi et al. 2025, arXiv 2503.01307; kanishkg/cognitive-behaviors @ 9c90d33,
scripts/train_tiny_zero_n4_cd.sh). Both run verl's `algorithm.adv_estimator=gae`.

Per rollout step (the engine's `critic.PPOCritic` hook, docs/methods/ppo.md):

    r_t   = score on the last token  -  kl_coef * (log pi_old - log pi_ref)_t       (KL in the reward)
    A_t   = sum_l (gamma lam)^l delta_{t+l},  delta_t = r_t + gamma V(s_{t+1}) - V(s_t),  R_t = A_t + V(s_t)
    A     <- (A - mean) / std over the batch's valid tokens
    L_V   = 0.5 mean_t max((V - R)^2, (clip(V, V_old +- c) - R)^2)         (the critic, updated first)
    L_pi  = -mean_t min(rho_t A_t, clip(rho_t, 1 +- eps) A_t) - entropy_coef H    (TRL's loss, 2-D advantages)

verl's core_algos.py (Search-R1's fork): compute_gae_advantage_return l.70-107,
compute_policy_loss l.163-194, compute_value_loss l.216-239, kl_penalty l.242-274;
ray_trainer.py apply_kl_penalty l.91-120 and the step l.772-821.

TRL's group machinery still runs (its group-normalised advantages are computed and replaced),
so TRL 1.16 needs at least 2 samples per prompt (GRPOConfig refuses num_generations=1); the
critic needs no groups. Search-R1's PPO samples 1 per prompt: its presets keep the 512
trajectories per step as 256 prompts x 2.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from omegaconf import OmegaConf

from rlrecipes.config.schema import KLPenalty, RecipeConfig
from rlrecipes.data.problems import ProblemSet
from rlrecipes.engine.estimators import check_advantage_settings
from rlrecipes.engine.grpo_args import plan_batches
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import get_recipe, register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext, RewardFn

if TYPE_CHECKING:
    from rlrecipes.engine.critic import CriticSettings


@dataclass
class CriticConfig:
    """`recipe.critic.*`: the value model and its optimiser (verl's `critic.*`; defaults: verl's
    ppo_trainer.yaml and CriticWorker in the papers' forks)."""

    # null: a copy of the policy's weights with a new value head (verl's critic.model.path = the
    # actor's model in both papers); or a model folder / hub id to start the critic from
    model: Optional[str] = None
    learning_rate: float = 1e-5  # critic.optim.lr
    # rollout steps of linear learning-rate warm-up, verl's int(lr_warmup_steps_ratio x total steps);
    # verl's schedule gives its first update factor 0 even without warm-up (docs/methods/ppo.md)
    lr_warmup_rollouts: int = 0
    # rollout steps at the start in which only the critic trains (verl's trainer.critic_warmup = c
    # gives c - 1 of them: its step count starts at 1)
    warmup_rollouts: int = 0
    weight_decay: float = 0.01  # AdamW's weight decay (CriticWorker's default 1e-2)
    max_grad_norm: float = 1.0  # critic.grad_clip
    cliprange_value: float = 0.5  # critic.cliprange_value: V within V_old +- this in the value loss
    # critic optimizer steps per rollout step (verl: the rollout over critic.ppo_mini_batch_size,
    # which is not multiplied by rollout.n as the actor's is); null: trainer.updates_per_rollout
    updates_per_rollout: Optional[int] = None
    micro_batch_size: Optional[int] = None  # completions per critic forward/backward on one device; null: trainer's


@dataclass
class PPOConfig(RecipeConfig):
    name: str = "ppo"
    gamma: float = 1.0  # GAE discount (verl algorithm.gamma)
    lam: float = 1.0  # GAE lambda (verl algorithm.lam)
    # KL penalty in the reward (verl algorithm.kl_ctrl.kl_coef, fixed): r_t -= kl_coef * KL_t on the
    # tokens the model wrote; 0 loads no reference. recipe.beta is TRL's KL *loss* (off in PPO)
    kl_coef: float = 0.001
    kl_penalty: KLPenalty = KLPenalty.kl  # verl algorithm.kl_penalty: log pi_old - log pi_ref
    whiten_advantages: bool = True  # verl whitens GAE's advantages over the batch's valid tokens
    critic: CriticConfig = field(default_factory=CriticConfig)
    # the recipe whose task PPO trains on: its problems (search_r1: QA with every gold alias, held
    # out by exact match), its toy model's warm-start and its checks (the search tool); the rewards
    # stay recipe.rewards. null: the data config's problems. Valid: TASKS below
    task: Optional[str] = None


# recipes whose task (problems, warm-start, checks) PPO can train on: their task code reads no
# setting of their own recipe config, which recipe=ppo's config does not have
TASKS = ("search_r1",)


def critic_settings(recipe: Any, seed: int) -> CriticSettings:
    from rlrecipes.engine.critic import CriticSettings

    c = recipe.critic
    return CriticSettings(
        source=c.model,
        learning_rate=float(c.learning_rate),
        lr_warmup_rollouts=int(c.lr_warmup_rollouts),
        warmup_rollouts=int(c.warmup_rollouts),
        weight_decay=float(c.weight_decay),
        max_grad_norm=float(c.max_grad_norm),
        cliprange_value=float(c.cliprange_value),
        updates_per_rollout=c.updates_per_rollout,
        micro_batch_size=c.micro_batch_size,
        gamma=float(recipe.gamma),
        lam=float(recipe.lam),
        kl_coef=float(recipe.kl_coef),
        kl_penalty=str(recipe.kl_penalty),
        whiten_advantages=bool(recipe.whiten_advantages),
        seed=int(seed),
    )


@register_recipe
class PPO(Recipe):
    name = "ppo"
    paper = "PPO (Schulman et al., 2017, arXiv 1707.06347) with GAE (arXiv 1506.02438), as verl runs it"
    idea = "A learned critic's values as the baseline: GAE token advantages, clipped value loss"
    config_cls = PPOConfig
    own_fields: ClassVar[tuple[str, ...]] = (
        "gamma",
        "lam",
        "kl_coef",
        "kl_penalty",
        "whiten_advantages",
        "critic",
        "task",
    )
    progress_keys = ("critic/vf_loss", "critic/values/mean", "critic/vf_explained_var", "critic/kl")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r, c, t = cfg.recipe, cfg.recipe.critic, cfg.trainer
        for key, value in (("recipe.gamma", r.gamma), ("recipe.lam", r.lam)):
            if not 0 <= value <= 1:
                raise ConfigError(f"{key}={value} must be in [0, 1]")
        if r.kl_coef < 0:
            raise ConfigError(f"recipe.kl_coef={r.kl_coef} must be >= 0 (0: no KL penalty in the reward)")
        if c.learning_rate <= 0:
            raise ConfigError(f"recipe.critic.learning_rate={c.learning_rate} must be > 0")
        for key in ("lr_warmup_rollouts", "warmup_rollouts"):
            if c[key] < 0:
                raise ConfigError(f"recipe.critic.{key}={c[key]} must be >= 0")
        for key, value, ok, rule in (
            ("weight_decay", c.weight_decay, c.weight_decay >= 0, ">= 0"),
            ("max_grad_norm", c.max_grad_norm, c.max_grad_norm > 0, "> 0"),
            ("cliprange_value", c.cliprange_value, c.cliprange_value > 0, "> 0"),
        ):
            if not ok:
                raise ConfigError(f"recipe.critic.{key}={value} must be {rule}")
        if r.dynamic_sampling.enabled:
            raise ConfigError(
                "recipe=ppo cannot use recipe.dynamic_sampling.enabled=true: DAPO's filter drops groups whose "
                "rewards agree, which a critic's baseline does not need, and the papers never combined them"
            )
        if r.loss_type in ("luspo", "vespo"):
            raise ConfigError(
                f"recipe.loss_type={r.loss_type} weighs whole sequences by one advantage; recipe=ppo's GAE "
                "advantages differ per token: use grpo, bnpo, dr_grpo, dapo, cispo or sapo"
            )
        check_advantage_settings(r)
        _check_critic_batches(c, t)
        _check_value_head(cfg)
        if r.task is not None:
            if r.task not in TASKS:
                raise ConfigError(
                    f"recipe.task={r.task!r} is not a task recipe=ppo can train on; valid: {', '.join(TASKS)}"
                )
            get_recipe(r.task).validate(cfg)

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        from rlrecipes.engine.critic import PPOCritic

        return [PPOCritic(critic_settings(self.cfg, ctx.seed))]

    def reward_functions(self, ctx: RewardContext) -> list[tuple[RewardFn, float]]:
        # a reward reads a setting it declares from a recipe field of that name: recipe.gamma is
        # GAE's discount, never the random reward's P(reward = 1), so PPO's own fields are hidden
        return super().reward_functions(replace(ctx, recipe=reward_settings(self.cfg)))

    # the task's own recipe decides what is trained on (recipe.task; None: the data config)
    def _task(self) -> Recipe | None:
        return get_recipe(self.cfg.task)(self.cfg) if self.cfg.task else None

    def problem_set(self, data_cfg: Any) -> ProblemSet | None:
        task = self._task()
        return task.problem_set(data_cfg) if task else None

    def warm_start_key(self, data_cfg: Any) -> Any:
        task = self._task()
        return task.warm_start_key(data_cfg) if task else super().warm_start_key(data_cfg)


def reward_settings(recipe: Any) -> Any:
    """The recipe config as the rewards see it: without recipe=ppo's own fields."""
    return OmegaConf.masked_copy(recipe, [key for key in recipe if key not in PPO.own_fields])


def _check_critic_batches(c: Any, t: Any) -> None:
    """Each process's share of a rollout must split into the critic's updates, and each update
    into its micro-batches (verl asserts ppo_mini_batch_size % ppo_micro_batch_size == 0)."""
    plan = plan_batches(t, int(os.environ.get("WORLD_SIZE", "1")))
    local = plan.per_device_batch * plan.steps_per_generation
    updates = c.updates_per_rollout or t.updates_per_rollout
    micro = c.micro_batch_size or plan.per_device_batch
    if updates < 1 or local % updates:
        raise ConfigError(
            f"recipe.critic.updates_per_rollout={updates} must divide the {local} completions each process "
            "holds of a rollout step"
        )
    if micro < 1 or (local // updates) % micro:
        raise ConfigError(
            f"recipe.critic.micro_batch_size={micro} must divide the {local // updates} completions of each "
            "critic update on one process"
        )


def _check_value_head(cfg: Any) -> None:
    """The value head needs a causal LM with a hidden size (and transformers' token-classification
    class for it), checked on the model's config.json where it can be read without loading."""
    from rlrecipes.engine.critic import stored_model_config, value_head_problem

    source = cfg.recipe.critic.model or cfg.model.name_or_path
    key = "recipe.critic.model" if cfg.recipe.critic.model else "model.name_or_path"
    if source is None:  # the built toy (Qwen3 or Llama): both have a token-classification class
        return
    config = stored_model_config(str(source))
    if config is None:  # a hub id not in the cache: checked when the critic is built
        return
    problem = value_head_problem(config)
    if problem is not None:
        raise ConfigError(f"recipe=ppo cannot put a value head on {key}={source}: {problem}")
