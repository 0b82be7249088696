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

from rlrecipes.config.schema import (
    AdaptiveEntropyConfig,
    ImportanceSamplingConfig,
    ImportanceSamplingLevel,
    RecipeConfig,
    SapoConfig,
    VespoConfig,
)
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
        ("trainer.log_samples_every", t.log_samples_every, 0),
        ("trainer.policy_shift_every", t.policy_shift_every, 0),
        ("trainer.policy_shift_rows", t.policy_shift_rows, 0),
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
    check_objective(cfg)
    check_rollout_correction(cfg)
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


# The ratio levels each TRL 1.16 loss type takes (its _compute_loss): a token-sum aggregation
# (bnpo, dr_grpo, dapo, cispo) would weigh a sequence ratio by the completion's length, VESPO
# computes its sequence weight itself, and LUSPO is GSPO's sequence loss times the length.
LOSS_LEVELS = {
    "grpo": ImportanceSamplingLevel.values(),
    "sapo": ImportanceSamplingLevel.values(),
    "luspo": ("sequence",),
    "bnpo": ("token",),
    "dr_grpo": ("token",),
    "dapo": ("token",),
    "cispo": ("token",),
    "vespo": ("token",),
}
# two-sided clipping (TRL's delta) caps the ratio of the clipped-surrogate losses only
CLIPPED_SURROGATE = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")


def check_objective(cfg: Any) -> None:
    """The loss type with the settings it needs (`LOSS_LEVELS`, and one rule per loss below),
    the entropy and multi-reward settings in range, and no setting its loss type ignores."""
    r, t = cfg.recipe, cfg.trainer
    loss, level = str(r.loss_type), str(r.importance_sampling_level)
    if level not in LOSS_LEVELS[loss]:
        raise ConfigError(
            f"recipe.loss_type={loss} needs recipe.importance_sampling_level={' or '.join(LOSS_LEVELS[loss])}, "
            f"not {level}{' (GSPO is loss_type=grpo with the sequence level)' if loss != 'luspo' else ''}"
        )
    if level != "token" and loss != "luspo" and t.updates_per_rollout == 1 and t.num_iterations == 1:
        raise ConfigError(
            f"recipe.importance_sampling_level={level} changes nothing when every update is on-policy "
            "(trainer.updates_per_rollout=1, trainer.num_iterations=1: the ratio is 1); GSPO splits each "
            "rollout into 4 updates (trainer.updates_per_rollout=4, arXiv 2507.18071 §5.1)"
        )
    if level == "sequence_token" and (r.beta or cfg.rollout.importance_sampling.off_policy_mask is not None):
        key = "recipe.beta" if r.beta else "rollout.importance_sampling.off_policy_mask"
        raise ConfigError(
            f"{key} reads the policy's log-probs, which recipe.importance_sampling_level=sequence_token rewrites "
            "for its ratio (engine/gspo_token.py); use importance_sampling_level=sequence, or leave it off"
        )
    if loss == "cispo" and not (r.epsilon_high is not None and r.epsilon_high > 1):
        raise ConfigError(
            f"recipe.loss_type=cispo caps the ratio itself at recipe.epsilon_high={r.epsilon_high} "
            "(MiniMax-M1's eps_max, arXiv 2506.13585): set it above 1 (ScaleRL: 5.0)"
        )
    if loss == "dr_grpo" and r.scale_rewards != "none":
        raise ConfigError(
            f"recipe.loss_type=dr_grpo comes with recipe.scale_rewards=none, not {r.scale_rewards}: Dr. GRPO removes "
            "the std division with the length normalisation (arXiv 2503.20783 §3.2)"
        )
    if loss == "sapo" and not (r.sapo.temperature_pos > 0 and r.sapo.temperature_neg > 0):
        raise ConfigError(
            f"recipe.sapo temperatures ({r.sapo.temperature_pos}, {r.sapo.temperature_neg}) must be positive"
        )
    v = r.vespo
    if loss == "vespo" and (min(v.k_pos, v.k_neg) < 0 or min(v.lambda_pos, v.lambda_neg) <= 0):
        raise ConfigError("recipe.vespo: k_pos and k_neg must be at least 0, lambda_pos and lambda_neg positive")
    if r.delta is not None:
        if loss not in CLIPPED_SURROGATE:
            raise ConfigError(f"recipe.delta caps the clipped surrogate's ratio; recipe.loss_type={loss} has none")
        upper = 1 + (r.epsilon if r.epsilon_high is None else r.epsilon_high)
        if not r.delta > upper:
            raise ConfigError(f"recipe.delta={r.delta} must be above 1 + the upper clip ({upper:g})")
    if loss != "sapo":
        _refuse_inert("recipe.sapo", r.sapo, vars(SapoConfig()), "it applies only with recipe.loss_type=sapo")
    if loss != "vespo":
        _refuse_inert("recipe.vespo", r.vespo, vars(VespoConfig()), "it applies only with recipe.loss_type=vespo")
    if not r.adaptive_entropy.enabled:
        why = "it applies only with recipe.adaptive_entropy.enabled=true"
        _refuse_inert("recipe.adaptive_entropy", r.adaptive_entropy, vars(AdaptiveEntropyConfig()), why)
    check_entropy(r)
    if r.multi_objective_aggregation == "normalize_then_sum":
        if r.scale_rewards != "group":
            raise ConfigError(
                f"recipe.multi_objective_aggregation=normalize_then_sum normalises each reward in its group and the "
                f"sum over the batch (GDPO); recipe.scale_rewards={r.scale_rewards} would be ignored: leave it at group"
            )
        if r.replay.enabled:
            raise ConfigError(
                "recipe.replay.enabled=true recomputes advantages from the summed reward; "
                "it cannot keep recipe.multi_objective_aggregation=normalize_then_sum"
            )


# the clip range's settings TRL 1.16's loss never reads under these loss types (grpo_trainer.py
# _compute_loss: CISPO clamps its weight only above, at epsilon_high; SAPO's gate and VESPO's
# weights replace the clip)
UNREAD_CLIP = {
    "cispo": ("epsilon",),
    "sapo": ("epsilon", "epsilon_high"),
    "vespo": ("epsilon", "epsilon_high"),
}


def check_unread_clip(r: Any) -> None:
    """A clip bound changed from its default under a loss type that has no such bound: one line.
    (training/plan.py calls it after the recipe's own checks: a recipe with a policy loss of its own
    sets the bounds it reads, and refuses a TRL loss type itself, in its own words.)"""
    loss = r.loss_type
    for key in UNREAD_CLIP.get(loss, ()):
        if r[key] != getattr(RecipeConfig, key):
            raise ConfigError(
                f"recipe.{key}={r[key]} has no effect: recipe.loss_type={loss} has no such clip bound "
                + (
                    "(it caps its weight only above, at recipe.epsilon_high)"
                    if loss == "cispo"
                    else f"(recipe.{loss}.* shape its weights)"
                )
            )


def _refuse_inert(prefix: str, values: Any, defaults: dict[str, Any], why: str) -> None:
    """A setting of node `prefix` changed from its default while nothing reads it: one line."""
    for key, default in defaults.items():
        if key != "enabled" and values[key] != default:
            raise ConfigError(f"{prefix}.{key}={values[key]} has no effect: {why}")


def check_entropy(r: Any) -> None:
    """80/20 token selection and Skywork-OR1's adaptive coefficient (recipe.top_entropy_quantile,
    recipe.adaptive_entropy.*)."""
    if not 0 < r.top_entropy_quantile <= 1:
        raise ConfigError(
            f"recipe.top_entropy_quantile={r.top_entropy_quantile} must be in (0, 1]: the share of tokens, by entropy, "
            "that train (arXiv 2506.01939: 0.2; 1 = all)"
        )
    a = r.adaptive_entropy
    if not a.enabled:
        return
    if a.target < 0 or a.delta <= 0:
        raise ConfigError(
            f"recipe.adaptive_entropy needs target >= 0 and delta > 0 (got target={a.target}, delta={a.delta})"
        )
    if not 0 <= a.coef_min <= r.entropy_coef <= a.coef_max:
        raise ConfigError(
            f"recipe.adaptive_entropy: 0 <= coef_min ({a.coef_min}) <= recipe.entropy_coef, the starting "
            f"coefficient ({r.entropy_coef}), <= coef_max ({a.coef_max}) must hold"
        )


def check_rollout_correction(cfg: Any) -> None:
    """`rollout.importance_sampling.*`: on only where there is a mismatch to correct (vLLM),
    bounds in order around 1, and nothing set that the mode leaves unread."""
    ro, t = cfg.rollout, cfg.trainer
    s = ro.importance_sampling
    if s.off_policy_mask is not None:
        if not s.off_policy_mask > 0:
            raise ConfigError(f"rollout.importance_sampling.off_policy_mask={s.off_policy_mask} must be positive")
        if ro.backend != "vllm" and t.updates_per_rollout == 1 and t.num_iterations == 1:
            raise ConfigError(
                "rollout.importance_sampling.off_policy_mask never masks with transformers rollouts and on-policy "
                "updates (its KL is 0): use rollout=vllm, or trainer.updates_per_rollout or num_iterations above 1"
            )
    if not s.enabled:
        defaults = {k: v for k, v in vars(ImportanceSamplingConfig()).items() if k != "off_policy_mask"}
        _refuse_inert("rollout.importance_sampling", s, defaults, "set rollout.importance_sampling.enabled=true")
        return
    if ro.backend != "vllm":
        raise ConfigError(
            "rollout.importance_sampling.enabled=true corrects vLLM's sampling log-probs; with "
            f"rollout.backend={ro.backend} the trained model samples itself (use rollout=vllm)"
        )
    low, high = s.clip_min, s.clip_max
    if low is not None and high is not None and low >= high:
        raise ConfigError(
            f"rollout.importance_sampling.clip_min={low} is not below clip_max={high}: the ratio is kept in [clip_min, clip_max]"
        )
    if low is None and high is None:
        raise ConfigError(f"rollout.importance_sampling.mode={s.mode} needs clip_min or clip_max (or both)")
    if low is not None and not 0 <= low < 1:
        raise ConfigError(f"rollout.importance_sampling.clip_min={low} must be in [0, 1) (a ratio of 1 is on-policy)")
    if high is not None and not high > 1:
        raise ConfigError(f"rollout.importance_sampling.clip_max={high} must be above 1 (a ratio of 1 is on-policy)")
    if cfg.recipe.loss_type == "vespo" and str(s.mode).startswith("sequence"):
        raise ConfigError(
            f"recipe.loss_type=vespo weighs sequences itself from token ratios: rollout.importance_sampling.mode="
            f"{s.mode} must be token_truncate or token_mask"
        )


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
