"""Value checks the types cannot express, run when a train config is composed.

A bad value (`recipe.loss_type=foo`, `trainer.temperature=0`) would otherwise surface as
a traceback from deep inside TRL, often after the model has loaded; here it fails at
start-up with one line naming the key and what is valid.
"""

from __future__ import annotations

from typing import Any

from rlrecipes.config.compose import ConfigError

# TRL 1.16's GRPOConfig.loss_type values
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")
NEEDS_MIN_LR = ("cosine_with_min_lr", "cosine_warmup_with_min_lr")


def scheduler_types() -> list[str]:
    from transformers.trainer_utils import SchedulerType

    return [s.value for s in SchedulerType]


def check_train_values(cfg: Any) -> None:
    """Raise `ConfigError` for the first value of `cfg` that cannot work."""
    t, r = cfg.trainer, cfg.recipe
    choices = [
        ("recipe.loss_type", r.loss_type, LOSS_TYPES),
        ("recipe.scale_rewards", r.scale_rewards, SCALE_REWARDS),
        ("trainer.lr_scheduler_type", t.lr_scheduler_type, scheduler_types()),
    ]
    for key, value, valid in choices:
        if value not in valid:
            raise ConfigError(f"{key}={value!r}; valid: {', '.join(valid)}")
    at_least = [
        ("trainer.max_steps", t.max_steps, 1),
        ("trainer.prompts_per_rollout", t.prompts_per_rollout, 1),
        ("trainer.num_generations", t.num_generations, 2),
        ("trainer.updates_per_rollout", t.updates_per_rollout, 1),
        ("trainer.micro_batch_size", t.micro_batch_size, 1),
        ("trainer.num_iterations", t.num_iterations, 1),
        ("trainer.max_completion_length", t.max_completion_length, 1),
        ("seed", cfg.seed, 0),
        ("trainer.learning_rate", t.learning_rate, 0),
        ("recipe.beta", r.beta, 0),
        ("recipe.epsilon", r.epsilon, 0),
        ("trainer.top_k", t.top_k, 0),
        ("trainer.eval_batch_size", t.eval_batch_size, 1),
        ("trainer.logging_steps", t.logging_steps, 1),
    ]
    for key, value, low in at_least:
        if value < low:
            why = " (a group needs two samples to compare)" if key == "trainer.num_generations" else ""
            raise ConfigError(f"{key}={value} must be at least {low}{why}")
    if not t.temperature > 0:
        raise ConfigError(
            f"trainer.temperature={t.temperature} must be positive (sampling needs it; "
            "greedy rollouts would make every group's rewards equal)"
        )
    if t.save_keep_last is not None and t.save_keep_last < 1:
        raise ConfigError(
            f"trainer.save_keep_last={t.save_keep_last} must be at least 1 (or null to keep every "
            "checkpoint): a resume needs the last one"
        )
    if t.save_steps is not None and t.save_steps < 1:
        raise ConfigError(f"trainer.save_steps={t.save_steps} must be at least 1 (or null for no checkpoints)")
    if not 0 < t.top_p <= 1:
        raise ConfigError(f"trainer.top_p={t.top_p} must be in (0, 1]")
    if r.epsilon_high is not None and r.epsilon_high < r.epsilon:
        raise ConfigError(
            f"recipe.epsilon_high={r.epsilon_high} is below recipe.epsilon={r.epsilon}; "
            "clip-higher needs epsilon_high >= epsilon"
        )
    kwargs = t.lr_scheduler_kwargs or {}
    if t.lr_scheduler_type in NEEDS_MIN_LR and not ({"min_lr", "min_lr_rate"} & set(kwargs)):
        raise ConfigError(
            f"trainer.lr_scheduler_type={t.lr_scheduler_type} needs its floor: "
            "+trainer.lr_scheduler_kwargs.min_lr_rate=0.1 (a fraction of the peak lr) or "
            "+trainer.lr_scheduler_kwargs.min_lr=..."
        )
    if cfg.final_eval:
        from rlrecipes.config.compose import compose_config

        try:
            compose_config("eval", list(cfg.final_eval))
        except ConfigError as exc:
            raise ConfigError(f"final_eval: {exc}") from None
