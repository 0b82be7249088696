"""INTUITOR / RLIF (Zhao, Kang, Feng, Levine, Song, 2025, arXiv 2505.19590), paper §3;
the authors' open-r1 fork (sunblaze-ucb/Intuitor).

GRPO whose only reward is the policy's own confidence: the self-certainty of each
response, the mean over its tokens of KL(Uniform || p(. | prompt, previous tokens)),
computed from full-vocabulary logits (`rlrecipes.rewards.certainty.self_certainty`), then
group-normalised into advantages:

    A_i = (SC_i - mean_group SC) / (std_group SC + 1e-4)   [+ the advantage of any reward
                                                            with a non-zero weight]

The accuracy reward stays at weight 0 (the paper's config), so correctness is only
logged. `recipe.scorer=online` scores with the current policy (the paper; with one
PPO epoch per rollout it is the policy that sampled the batch); `offline` with a
frozen copy of the initial model, the ablation the paper shows being reward-hacked.

Where this differs from the paper's TRL fork, on purpose: the
fork took the logits without the one-position shift and without dividing by the
sampling temperature; here self-certainty uses exactly the distributions TRL's
log-probs use (shifted, divided by trainer.temperature), as the verl variant does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.engine.policy_score import PolicyScoreAdvantage, Scorer, sharded
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe, refuse_gdpo
from rlrecipes.rewards import RewardContext


@dataclass
class IntuitorConfig(RecipeConfig):
    name: str = "intuitor"
    scorer: Scorer = Scorer.online
    # Memory knobs of the self-certainty pass (results do not depend on them): completions
    # per forward pass, and completion positions per LM-head chunk ([chunk, vocab] floats).
    score_batch_size: int = 8
    score_chunk_tokens: int = 1024


def batch_self_certainty(model: Any, batch: dict[str, Any], trainer: Any, batch_size: int, chunk_tokens: int) -> Any:
    """Self-certainty of each completion of TRL's scored batch (see rewards/certainty.py);
    through the model's own forward when the trainer shards it (FSDP, ZeRO-3)."""
    from rlrecipes.rewards.certainty import policy_self_certainty

    mask = batch["completion_mask"]
    if "tool_mask" in batch:
        mask = mask * batch["tool_mask"]
    return policy_self_certainty(
        model,
        batch["prompt_ids"],
        batch["prompt_mask"],
        batch["completion_ids"],
        mask,
        temperature=trainer.temperature,
        batch_size=batch_size,
        chunk_tokens=chunk_tokens,
        sharded=sharded(trainer),
    )


@register_recipe
class Intuitor(Recipe):
    name = "intuitor"
    paper = "INTUITOR / RLIF (Zhao et al., 2025, arXiv 2505.19590)"
    idea = "No external reward: the policy's self-certainty (KL from uniform) is the reward"
    config_cls = IntuitorConfig
    own_fields = ("scorer", "score_batch_size", "score_chunk_tokens")
    progress_keys = ("self_certainty/mean",)

    @classmethod
    def validate(cls, cfg: Any) -> None:
        refuse_gdpo(
            cfg, "intuitor", "replaces the advantage by the group-normalised self-certainty (engine/policy_score.py)"
        )
        for key in ("score_batch_size", "score_chunk_tokens"):
            if cfg.recipe[key] < 1:
                raise ConfigError(f"recipe.{key}={cfg.recipe[key]} must be at least 1")

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        size, chunk = int(self.cfg.score_batch_size), int(self.cfg.score_chunk_tokens)

        def score(model: Any, batch: dict[str, Any], trainer: Any) -> Any:
            return batch_self_certainty(model, batch, trainer, size, chunk)

        return [PolicyScoreAdvantage(score, "self_certainty", scorer=self.cfg.scorer)]
