"""Spurious Rewards: "Rethinking Training Signals in RLVR" (Shao et al., 2025, arXiv 2506.10947;
code: github.com/ruixin31/Spurious_Rewards, an OpenRLHF fork).

Plain GRPO where only the reward changes, chosen with `reward=` (conf/reward/, which
sets `recipe.rewards`, so the same rewards also combine with any other recipe's loss):

    ground_truth  1 if the answer matches the gold label (the `accuracy` reward)
    majority      the same check against the majority answer of 64 samples of the model
                  before RL (`majority_label`; precomputed, stored with the data)
    incorrect     the same check against a wrong answer the model wrote (`incorrect_label`);
                  by default, as in the paper, only problems whose majority answer is
                  wrong are trained on, and that wrong majority is the label
    format        1 for a non-empty \\boxed{} answer, right or wrong
    random        Bernoulli(recipe.gamma) per response, seeded (rerunnable)

The paper attributes the random-reward gains to the clipped objective (§4.4.2); the
ablation is a sweep: `rlrecipes train -m recipe=spurious reward=random recipe.clip=true,false`.
`recipe.clip=false` trains the objective of the authors' flag for it,
`--use_policy_loss_wo_old_log_probs` (code/ttrl/models/loss.py, PolicyLossWoOldLogProbs):
the per-token loss -pi_theta * A, with no old log-probs and no clip, whose gradient
-pi_theta * A * grad(log pi_theta) weighs each token by its own probability. The textbook
unclipped surrogate -(pi_theta / pi_old) * A, whose gradient is 1 / pi_old times larger
per token, is `recipe.no_clip_objective=ratio`. Both set TRL's epsilon and epsilon_high
to infinity (clip(r, 1 - eps, 1 + eps) = r); `authors` also takes the old log-probs as 0
(the engine's `loss_without_old_logps`), so TRL's ratio exp(log pi - 0) is pi itself.
Labels for `majority` / `incorrect`: `rlrecipes spurious-labels labels.jsonl
[same model/data overrides]`, then `recipe.labels=labels.jsonl`; this recipe attaches
each problem's label to its training row (the `label` column the reward reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from rlrecipes.choice import Choice
from rlrecipes.config.schema import RecipeConfig
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards.spurious import LabelParams, RandomParams, load_labels

LABELLED = {"majority_label": "majority", "incorrect_label": "incorrect"}  # reward -> its label column
LABEL_BUILD = "rlrecipes spurious-labels labels.jsonl <the run's model/data overrides>"


class NoClipObjective(Choice):
    authors = "authors"  # -pi * A: the authors' --use_policy_loss_wo_old_log_probs
    ratio = "ratio"  # -(pi / pi_old) * A: the clipped surrogate without its clip


@dataclass
class SpuriousConfig(RecipeConfig):
    name: str = "spurious"
    gamma: float = RandomParams.gamma  # P(reward = 1) of the random reward
    labels: Optional[str] = LabelParams.labels  # labels file for reward=majority|incorrect (built from the base model)
    # reward=incorrect: train only on problems whose majority label is wrong (paper);
    # false: every problem where the model wrote a wrong answer, labelled with the commonest one
    incorrect_majority_only: bool = True
    clip: bool = True  # false: no PPO clipping at all (the paper's clipping ablation)
    no_clip_objective: NoClipObjective = NoClipObjective.authors  # what recipe.clip=false trains


def label_kind(recipe: Any) -> str | None:
    """Which stored label the configured rewards read ("majority" / "incorrect"), if any."""
    kinds = {LABELLED[spec.name] for spec in recipe.rewards if spec.name in LABELLED}
    if len(kinds) > 1:
        raise ConfigError("recipe.rewards mixes majority_label and incorrect_label; a problem has one label")
    if kinds and not recipe.labels:
        raise ConfigError(f"reward={next(iter(kinds))} needs recipe.labels=FILE.jsonl; build it with: {LABEL_BUILD}")
    return next(iter(kinds), None)


def attach_labels(
    rows: list[dict[str, Any]], labels: dict[str, dict[str, Any]], reward: str, majority_only: bool
) -> list[dict[str, Any]]:
    """The training rows that have a label for `reward`, each with its `label` column."""
    out = []
    for row in rows:
        entry = labels.get(str(row["id"]))
        if entry is None:
            continue
        if reward == "majority":
            label = entry["majority"]
        elif majority_only:
            label = entry["majority"] if not entry["majority_correct"] else None
        else:
            label = entry["incorrect"]
        if label is not None:
            out.append({**row, "label": label})
    return out


@register_recipe
class Spurious(Recipe):
    name = "spurious"
    paper = "Spurious Rewards (Shao et al., 2025, arXiv 2506.10947)"
    idea = "GRPO with weak or spurious rewards (majority, incorrect, format, random) vs ground truth"
    config_cls = SpuriousConfig
    own_fields = ("gamma", "labels", "incorrect_majority_only", "clip", "no_clip_objective")
    progress_keys = ("accuracy", "clip_ratio_region")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        if not cfg.recipe.rewards:
            raise ConfigError("recipe=spurious needs a reward: reward=ground_truth|majority|format|incorrect|random")
        if label_kind(cfg.recipe) and not Path(cfg.recipe.labels).expanduser().is_file():
            raise ConfigError(f"recipe.labels={cfg.recipe.labels} does not exist; build it with: {LABEL_BUILD}")

    def _labelled(self) -> str | None:
        return label_kind(self.cfg)

    def input_files(self) -> list[str]:
        return [self.cfg.labels] if self._labelled() else []

    def training_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kind = self._labelled()
        if kind is None:
            return rows

        kept = attach_labels(rows, load_labels(self.cfg.labels), kind, self.cfg.incorrect_majority_only)
        if not kept:
            raise UserError(
                f"recipe.labels={self.cfg.labels} gives a {kind} label to none of the "
                f"{len(rows)} training problems (were the labels built from this data?)"
            )
        print(f"spurious: {len(kept)} of {len(rows)} training problems have a label ({kind})")
        return kept

    def grpo_overrides(self) -> dict[str, Any]:
        if self.cfg.clip:
            return {}
        unclipped = {"epsilon": float("inf"), "epsilon_high": float("inf")}
        if self.cfg.no_clip_objective == NoClipObjective.ratio:
            return unclipped
        return {**unclipped, "loss_without_old_logps": True}
