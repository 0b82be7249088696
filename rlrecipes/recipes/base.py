"""What a recipe is: typed knobs, reward functions, and optional engine hooks.

The engine (`rlrecipes.engine`) knows nothing about any particular recipe. A recipe
is one module (a `Recipe` subclass with `@register_recipe`) plus one YAML file in
`conf/recipe/`; it states only how it differs from plain GRPO.

Every recipe module is imported whenever the recipes are listed or a config is composed
(`rlrecipes recipes`, `rlrecipes config show`: well under a second), so none imports torch,
transformers or TRL at its top: an engine hook, a warm-start or a model check that needs them
is imported inside the method that uses it (tests/test_import_weight.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.data.problems import ProblemSet
from rlrecipes.engine.grpo_args import check_recipe_fields
from rlrecipes.errors import ConfigError
from rlrecipes.rewards import RewardContext, RewardFn, build_reward

if TYPE_CHECKING:
    from rlrecipes.engine.hooks import EngineHook


class Recipe:
    name: ClassVar[str]
    paper: ClassVar[str]  # short citation, e.g. "DeepSeekMath (Shao et al., 2024)"
    idea: ClassVar[str]  # one line shown by `rlrecipes recipes`
    # what has been verified: "cpu-tested" (unit tests + toy runs); "reproduced" once a
    # paper's headline number has been reached with this code on its full setup
    status: ClassVar[str] = "cpu-tested"
    config_cls: ClassVar[type[RecipeConfig]] = RecipeConfig
    # the fields of `config_cls` beyond RecipeConfig's that this module reads (its rewards, hooks,
    # validate, grpo_overrides); any other field must be a TRL setting or read by the engine
    # (engine/grpo_args.py), else the class is refused when it is defined
    own_fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        check_recipe_fields(cls.__name__, cls.config_cls, cls.own_fields)

    def __init__(self, cfg: Any):
        self.cfg = cfg  # the resolved `recipe` config node

    @classmethod
    def validate(cls, cfg: Any) -> None:
        """Refuse, with a one-line `ConfigError`, settings this recipe cannot train with.

        `cfg` is the whole train config (recipe, trainer, data, ...); nothing has been loaded.
        `rlrecipes.training.check_run` calls it with every other check before a run starts, so
        a recipe's own rules (TTRL: the vote reward; one-shot: rows per example) fail at once.
        """

    def reward_functions(self, ctx: RewardContext) -> list[tuple[RewardFn, float]]:
        """Reward functions with their weights, from `recipe.rewards` by default."""
        return [
            (build_reward(spec.name, replace(ctx, options=spec.get("options") or {})), float(spec.weight))
            for spec in self.cfg.rewards
        ]

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        """Engine hooks this recipe needs (group-aware rewards, advantage edits...)."""
        return []

    def grpo_overrides(self) -> dict[str, Any]:
        """Extra `trl.GRPOConfig` fields beyond the shared `RecipeConfig` mapping."""
        return {}

    def input_files(self) -> list[str]:
        """Files besides the data that the run's result depends on (copied into the run directory)."""
        return []

    def problem_set(self, data_cfg: Any) -> ProblemSet | None:
        """The problems to train and evaluate on when the recipe makes them itself (J1's
        judge prompts from preference pairs); None: the `data` config's problems."""
        return None

    def warm_start_key(self, data_cfg: Any) -> Any:
        """What the toy model's warm-start depends on besides the model config (its cache key)."""
        return data_cfg.synthetic

    def training_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows TRL trains on, from the loaded ones (one-shot RLVR duplicates a few)."""
        return rows


def refuse_gdpo(cfg: Any, recipe: str, how: str) -> None:
    """ConfigError when GDPO's aggregation is set on a recipe whose hook recomputes the advantage
    from one score (`how`): TRL's per-reward normalisation would be replaced without a word."""
    if str(cfg.recipe.get("multi_objective_aggregation", "sum_then_normalize")) != "sum_then_normalize":
        raise ConfigError(
            f"recipe.multi_objective_aggregation={cfg.recipe.multi_objective_aggregation}: recipe={recipe} {how}, "
            "so GDPO's per-reward normalisation would not reach the loss; leave it at sum_then_normalize"
        )
