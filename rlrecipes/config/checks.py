"""Value rules of a train config that the types cannot express (part of
`rlrecipes.training.check_run`, which runs before anything loads).

A bad value (`trainer.temperature=0`, `recipe.epsilon_high` below `recipe.epsilon`) would
otherwise surface as a traceback from deep inside TRL, often after the model has loaded;
here it fails at start-up with one line naming the key and what is valid. Values outside
a fixed set (`recipe.loss_type=foo`) are refused earlier, by the schema's `Choice` types.
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import OmegaConf

from rlrecipes.errors import ConfigError

NEEDS_MIN_LR = ("cosine_with_min_lr", "cosine_warmup_with_min_lr")
# the clip ranges may be infinite: `recipe.epsilon=inf` is the unclipped objective (Spurious
# Rewards' "no clipping" ablation); every other number must be finite
MAY_BE_INFINITE = ("recipe.epsilon", "recipe.epsilon_high")


def scheduler_types() -> list[str]:
    from transformers.trainer_utils import SchedulerType

    return [s.value for s in SchedulerType]


def check_train_values(cfg: Any) -> None:
    """Raise `ConfigError` for the first value of `cfg` that cannot work."""
    check_numbers_are_finite(cfg)
    t, r = cfg.trainer, cfg.recipe
    if t.lr_scheduler_type not in scheduler_types():  # transformers' list, too slow to import for the schema
        raise ConfigError(f"trainer.lr_scheduler_type={t.lr_scheduler_type!r}; valid: {', '.join(scheduler_types())}")
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
        ("trainer.eval.batch_size", t.eval.batch_size, 1),
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
    if t.checkpoints.keep_last is not None and t.checkpoints.keep_last < 1:
        raise ConfigError(
            f"trainer.checkpoints.keep_last={t.checkpoints.keep_last} must be at least 1 (or null to keep every "
            "checkpoint): a resume needs the last one"
        )
    if t.checkpoints.every is not None and t.checkpoints.every < 1:
        raise ConfigError(
            f"trainer.checkpoints.every={t.checkpoints.every} must be at least 1 (or null for no checkpoints)"
        )
    if t.eval.every is not None and t.eval.every < 1:
        raise ConfigError(f"trainer.eval.every={t.eval.every} must be at least 1 (or null: before and after only)")
    ds = r.dynamic_sampling
    if ds.enabled and ds.max_rounds < 1:
        raise ConfigError(f"recipe.dynamic_sampling.max_rounds={ds.max_rounds} must be at least 1")
    if ds.enabled and ds.prompts_per_round is not None and ds.prompts_per_round < 1:
        raise ConfigError(
            f"recipe.dynamic_sampling.prompts_per_round={ds.prompts_per_round} must be at least 1 (or null)"
        )
    longest = cfg.rollout.vllm_max_model_length
    if cfg.rollout.backend == "vllm" and longest is not None and longest <= t.max_completion_length:
        raise ConfigError(
            f"rollout.vllm_max_model_length={longest} leaves no room for a prompt before "
            f"trainer.max_completion_length={t.max_completion_length} tokens; raise it (or null: the model's own)"
        )
    check_ranges(cfg)
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


def check_numbers_are_finite(cfg: Any) -> None:
    """NaN anywhere, or an infinity outside `MAY_BE_INFINITE`, would reach the optimizer or the
    sampler and fail (or train on garbage) only after the model has loaded."""
    for key, value in _numbers(OmegaConf.to_container(cfg, resolve=True)):
        if math.isnan(value) or (math.isinf(value) and key not in MAY_BE_INFINITE):
            raise ConfigError(f"{key}={value} must be a finite number")


def check_ranges(cfg: Any) -> None:
    """Each bounded float in its interval (both ends named in the message)."""
    t = cfg.trainer
    intervals = [  # key, value, low, high, low included, high included
        ("trainer.top_p", t.top_p, 0, 1, False, True),
        ("trainer.adam_beta1", t.adam_beta1, 0, 1, True, False),
        ("trainer.adam_beta2", t.adam_beta2, 0, 1, True, False),
        ("trainer.warmup_ratio", t.warmup_ratio, 0, 1, True, True),
        ("trainer.weight_decay", t.weight_decay, 0, math.inf, True, False),
        ("trainer.max_grad_norm", t.max_grad_norm, 0, math.inf, True, False),
        ("trainer.reward_guard.max_failure_rate", t.reward_guard.max_failure_rate, 0, 1, True, True),
        ("rollout.vllm_gpu_memory_utilization", cfg.rollout.vllm_gpu_memory_utilization, 0, 1, False, True),
    ]
    if t.max_train_seconds is not None:
        intervals.append(("trainer.max_train_seconds", t.max_train_seconds, 0, math.inf, False, False))
    if t.reward_guard.timeout_s is not None:
        intervals.append(("trainer.reward_guard.timeout_s", t.reward_guard.timeout_s, 0, math.inf, False, False))
    for key, value, low, high, low_in, high_in in intervals:
        above = value >= low if low_in else value > low
        below = value <= high if high_in else value < high
        if not (above and below):
            shown = f"{'[' if low_in else '('}{low}, {high}{']' if high_in else ')'}".replace("inf", "infinity")
            raise ConfigError(f"{key}={value} must be in {shown}")
    if t.cpu_threads is not None and t.cpu_threads < 1:
        raise ConfigError(f"trainer.cpu_threads={t.cpu_threads} must be at least 1 (or null: torch's default)")


def _numbers(node: Any, prefix: str = "") -> list[tuple[str, float]]:
    """(dotted key, value) of every float in a plain container, lists included (`rewards.0.weight`)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    out = []
    for key, value in items:
        if isinstance(value, (dict, list)):
            out.extend(_numbers(value, f"{prefix}{key}."))
        elif isinstance(value, float):
            out.append((f"{prefix}{key}", value))
    return out
