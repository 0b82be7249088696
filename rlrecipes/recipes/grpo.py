"""GRPO baseline (DeepSeekMath; DeepSeek-R1-Zero style): DeepSeekMath
(Shao et al., 2024, arXiv 2402.03300) §4.1.

Everything GRPO needs is the shared `RecipeConfig` mapped onto TRL: group-normalised
advantages, clipped surrogate, optional k3 KL (`beta`), and `loss_type: grpo`, the
paper's per-sequence mean. The YAML states each value explicitly because TRL 1.16's
defaults (token-level `dapo` loss) are not the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe


@dataclass
class GRPOConfig(RecipeConfig):
    name: str = "grpo"


@register_recipe
class GRPO(Recipe):
    name = "grpo"
    paper = "DeepSeekMath (Shao et al., 2024); DeepSeek-R1 (2025)"
    idea = "Group-normalised rewards as advantages; clipped policy gradient; no critic"
    config_cls = GRPOConfig
