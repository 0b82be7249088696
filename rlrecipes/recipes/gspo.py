"""GSPO: Group Sequence Policy Optimization (Zheng et al., 2025, Qwen; arXiv 2507.18071).

GRPO with one ratio per completion instead of one per token:

    s_i = (pi(y_i | x) / pi_old(y_i | x)) ^ (1 / |y_i|) = exp(1/|y_i| sum_t log pi(y_t) / pi_old(y_t))   (Eq. 7)
    J = E[ 1/G sum_i min(s_i A_i, clip(s_i, 1 - eps_l, 1 + eps_h) A_i) ]                             (Eq. 5)

with GRPO's group-normalised advantage A_i (Eq. 6), the loss averaged over completions (a
completion's terms are one value, so TRL's sequence-mean `grpo` aggregation is Eq. 5), no KL
term, and a clip range three orders of magnitude tighter than PPO's (3e-4 / 4e-4, §5.1) since
s_i is a per-token geometric mean. All of it is TRL 1.16's: `importance_sampling_level=
"sequence"` with `loss_type="grpo"`, the settings TRL's paper index gives for GSPO
(docs/source/paper_index.md §GSPO). The recipe is only its YAML (conf/recipe/gspo.yaml).

The authors released no training code. verl's implementation (volcengine/verl@b178a3c
verl/trainer/ppo/core_algos.py `compute_policy_loss_gspo` l.1253-1321) computes the GSPO-token
form (§4.3): the sequence ratio's value with each token's own gradient, seq-mean-token-mean
aggregation. For a completion whose tokens share one advantage, as here, it equals GSPO in
value, clipping and gradient; `recipe.importance_sampling_level=sequence_token` runs it
(engine/gspo_token.py), which differs only under per-token advantages.

The ratio is 1 until the policy moves within a rollout step: GSPO is GRPO unless each rollout
feeds several updates (the paper: 4 mini-batches, trainer.updates_per_rollout=4), and a config
where it would be is refused (config/checks.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe


@dataclass
class GSPOConfig(RecipeConfig):
    name: str = "gspo"


@register_recipe
class GSPO(Recipe):
    name = "gspo"
    paper = "GSPO (Zheng et al., 2025, arXiv 2507.18071)"
    idea = "GRPO with one importance ratio per completion (geometric mean of its tokens'), clipped at 3e-4 / 4e-4"
    config_cls = GSPOConfig
    own_fields: ClassVar[tuple[str, ...]] = ()
    progress_keys = ("clip_ratio_region", "clip_ratio_low", "clip_ratio_high", "entropy")
