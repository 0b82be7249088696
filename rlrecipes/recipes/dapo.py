"""DAPO: Decoupled Clip and Dynamic sAmpling Policy Optimization (Yu et al., 2025, arXiv 2503.14476),
paper §3 and the authors' verl recipe (recipe/dapo).

GRPO without a KL term or reference model, plus five changes, each its own switch so
the paper's ablation ladder (Tab. 1) is a sweep:

- Clip-Higher: `epsilon=0.2`, `epsilon_high=0.28` (TRL's decoupled clip).
- Token-level loss: `loss_type=dapo`, the sum over every token of the batch divided by
  the number of tokens, so long answers weigh per token, not per sequence.
- Overlong filtering: `mask_truncated_completions` (TRL) drops truncated completions
  from the loss. Off, as in the authors' verl recipe: their best run did without it.
- Soft overlong punishment: `soft_overlong_punishment` adds `rewards.overlong.overlong_penalty`
  (Eq. 13) with window `overlong_buffer_length`, times `overlong_penalty_factor`.
- Dynamic sampling: the engine's generate-filter-refill loop
  (`rlrecipes.engine.dynamic_sampling`), filtering on the ±1 correctness reward.

Reward: +1 / -1 from the "Answer: ..." line (`rewards.dapo`), the paper's Eq. 7.

Where TRL and verl differ (what this recipe cannot match exactly):

- Token mean: TRL's `dapo` loss divides by the active tokens of the whole generation
  batch across processes; verl's `token-mean` divides per micro-batch and weights the
  micro-batches. Equal when one micro-batch holds the whole mini-batch.
- Dual clip: verl also bounds the loss of negative-advantage tokens at
  `clip_ratio_c=10` times the advantage; TRL has no dual clip, so ratios above 10 on
  negative-advantage tokens are unbounded here (rare right after a rollout).
- Refill stream: verl keeps drawing generation batches from its one dataloader; here
  the first round is TRL's batch and refills come from a second shuffled stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext, RewardFn, build_reward
from rlrecipes.rewards.dapo import DapoAnswerParams, DapoVerifier


@dataclass
class DAPOConfig(RecipeConfig):
    name: str = "dapo"
    # Soft overlong punishment (Eq. 13), added to the reward: 0 up to max_completion_length -
    # overlong_buffer_length tokens, then linear to -1 at max_completion_length.
    soft_overlong_punishment: bool = True
    # L_cache, a share of the budget, so set per scale. Paper: 4096 of 20480 tokens
    # (experiment=dapo_paper). CPU quick-start: 4 of trainer.max_completion_length=16, so the
    # ramp covers tokens 13-16 and never touches a correct answer (the longest, "Answer: 198"
    # + EOS, is 12 tokens).
    overlong_buffer_length: int = 4
    overlong_penalty_factor: float = 1.0  # verl overlong_buffer.penalty_factor
    verifier: DapoVerifier = DapoAnswerParams.verifier


@register_recipe
class DAPO(Recipe):
    name = "dapo"
    paper = "DAPO (Yu et al., 2025, arXiv 2503.14476)"
    idea = "GRPO + clip-higher, token-level loss, soft overlong penalty, dynamic sampling; no KL"
    config_cls = DAPOConfig
    # its rewards read them: the overlong penalty and dapo_answer
    own_fields = ("soft_overlong_punishment", "overlong_buffer_length", "overlong_penalty_factor", "verifier")
    # the paper's diagnostics (Figs. 2-7): refill cost, clipping on each side, length, entropy
    progress_keys = (
        "dynamic_sampling/rounds",
        "dynamic_sampling/prompts_generated",
        "dynamic_sampling/prompts_kept",
        "dynamic_sampling/filtered_fraction",
        "clip_ratio_low",
        "clip_ratio_high",
        "truncated_fraction",
        "completion_length_mean",
        "entropy",
    )

    def reward_functions(self, ctx: RewardContext) -> list[tuple[RewardFn, float]]:
        rewards = super().reward_functions(ctx)
        if self.cfg.soft_overlong_punishment:
            rewards.append((build_reward("overlong", ctx), float(self.cfg.overlong_penalty_factor)))
        return rewards
