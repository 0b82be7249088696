"""One mapping to TRL (engine/grpo_args.py): every GRPOConfig field a user may set has one home in
the schema, every recipe config field reaches TRL, the engine or its recipe's own code (or the
recipe class is refused when it is defined), each `recipe.*` setting arrives in its GRPOConfig
field, and the settings a loss type needs (or ignores) are one-line refusals before anything loads."""

from dataclasses import dataclass, fields

import pytest
from transformers import TrainingArguments
from trl import GRPOConfig

from rlrecipes.config.checks import check_train_values
from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine import grpo_args
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import load_all
from rlrecipes.recipes.base import Recipe
from tests.conftest import cli, compose, one_error_line


def test_every_registered_recipes_fields_reach_trl_the_engine_or_its_module():
    for name, cls in load_all().items():
        homes = grpo_args.recipe_field_homes() | set(cls.own_fields)
        assert [f.name for f in fields(cls.config_cls) if f.name not in homes] == [], name


@dataclass
class LeakyConfig(RecipeConfig):
    name: str = "leaky"
    sapo_temperature: float = 2.0  # named like a TRL setting, mapped nowhere


def test_an_unmapped_recipe_field_is_refused_when_the_recipe_is_defined():
    with pytest.raises(ConfigError, match=r"^LeakyConfig.sapo_temperature reaches no TRL field and no engine code"):

        class Leaky(Recipe):
            config_cls = LeakyConfig

    class Declared(Recipe):  # its own module reads the field: fine
        config_cls = LeakyConfig
        own_fields = ("sapo_temperature",)

    with pytest.raises(ConfigError, match=r"^Stale.own_fields names 'gone', which LeakyConfig does not have"):

        class Stale(Recipe):
            config_cls = LeakyConfig
            own_fields = ("sapo_temperature", "gone")


def grpo_fields() -> set[str]:
    """GRPOConfig's own fields (TrainingArguments' are `training_arguments`' business)."""
    return {f.name for f in fields(GRPOConfig)} - {f.name for f in fields(TrainingArguments)}


def test_every_grpo_field_is_set_from_one_key_or_left_to_trl_with_a_reason(tmp_path):
    set_here = set(grpo_args.grpo_config_fields(compose(), tmp_path, [1.0]))
    left = set(grpo_args.LEFT_TO_TRL)
    assert grpo_fields() - set_here - left == set()  # a new TRL field: decide its home
    assert grpo_fields() & set_here & left == set()
    assert left <= grpo_fields()
    assert all(grpo_args.LEFT_TO_TRL.values())
    # one schema key per TRL field: no field is the target of two keys
    targets = list(grpo_args.RECIPE_TO_TRL.values()) + list(grpo_args.ROLLOUT_CORRECTION_TO_TRL.values())
    targets += [trl for keys in grpo_args.RECIPE_NODES_TO_TRL.values() for trl in keys.values()]
    assert len(targets) == len(set(targets))


def test_each_recipe_node_maps_every_key_it_has():
    cfg = compose().recipe
    for node, keys in grpo_args.RECIPE_NODES_TO_TRL.items():
        assert set(keys) == set(cfg[node]), node
    assert set(grpo_args.ROLLOUT_CORRECTION_TO_TRL) == set(compose().rollout.importance_sampling)


# override -> (GRPOConfig field, value): each recipe.* setting, changed from its default
SETTINGS = {
    "recipe.loss_type=sapo": ("loss_type", "sapo"),
    "recipe.beta=0.04": ("beta", 0.04),
    "recipe.epsilon=0.1": ("epsilon", 0.1),
    "recipe.epsilon_high=0.3": ("epsilon_high", 0.3),
    "recipe.delta=4.0": ("delta", 4.0),
    "recipe.importance_sampling_level=sequence": ("importance_sampling_level", "sequence"),
    "recipe.scale_rewards=batch": ("scale_rewards", "batch"),
    "recipe.mask_truncated_completions=true": ("mask_truncated_completions", True),
    "recipe.entropy_coef=0.002": ("entropy_coef", 0.002),
    "recipe.top_entropy_quantile=0.2": ("top_entropy_quantile", 0.2),
    "recipe.multi_objective_aggregation=normalize_then_sum": ("multi_objective_aggregation", "normalize_then_sum"),
    "recipe.sapo.temperature_pos=0.5": ("sapo_temperature_pos", 0.5),
    "recipe.sapo.temperature_neg=2.0": ("sapo_temperature_neg", 2.0),
    "recipe.vespo.k_pos=1.5": ("vespo_k_pos", 1.5),
    "recipe.vespo.lambda_pos=2.5": ("vespo_lambda_pos", 2.5),
    "recipe.vespo.k_neg=3.5": ("vespo_k_neg", 3.5),
    "recipe.vespo.lambda_neg=1.5": ("vespo_lambda_neg", 1.5),
    "recipe.adaptive_entropy.enabled=true": ("use_adaptive_entropy", True),
    "recipe.adaptive_entropy.target=0.5": ("entropy_target", 0.5),
    "recipe.adaptive_entropy.delta=0.01": ("entropy_coef_delta", 0.01),
    "recipe.adaptive_entropy.coef_min=0.001": ("entropy_coef_min", 0.001),
    "recipe.adaptive_entropy.coef_max=0.1": ("entropy_coef_max", 0.1),
}


def test_each_recipe_setting_reaches_its_grpo_field(tmp_path):
    args = grpo_args.grpo_config_fields(compose(*SETTINGS), tmp_path, [1.0])
    for override, (field, value) in SETTINGS.items():
        assert args[field] == value and type(args[field]) is type(value), override  # a Choice arrives as str
    # the defaults are this project's GRPO, not TRL's own (TRL: dapo loss, IS correction on)
    defaults = grpo_args.grpo_config_fields(compose(), tmp_path, [1.0])
    assert (defaults["loss_type"], defaults["vllm_importance_sampling_correction"]) == ("grpo", False)
    assert (defaults["entropy_coef_delta"], defaults["entropy_coef_max"]) == (1e-4, 0.005)  # Skywork-OR1's script


# ---------------------------------------------------------------- what a loss type needs
OFF_POLICY = "trainer.updates_per_rollout=2"


@pytest.mark.parametrize(
    "overrides, message",
    [
        # loss types and their ratio level
        (
            ("recipe.loss_type=luspo",),
            "recipe.loss_type=luspo needs recipe.importance_sampling_level=sequence, not token",
        ),
        (
            ("recipe.loss_type=bnpo", "recipe.importance_sampling_level=sequence", OFF_POLICY),
            "recipe.loss_type=bnpo needs recipe.importance_sampling_level=token, not sequence",
        ),
        (
            ("recipe.loss_type=vespo", "recipe.importance_sampling_level=sequence", OFF_POLICY),
            "recipe.loss_type=vespo needs recipe.importance_sampling_level=token",
        ),
        (
            ("recipe.importance_sampling_level=sequence_token", "recipe.loss_type=dapo", OFF_POLICY),
            "recipe.loss_type=dapo needs recipe.importance_sampling_level=token, not sequence_token",
        ),
        # each loss type's own companion
        (("recipe.loss_type=cispo",), r"recipe.loss_type=cispo caps the ratio itself at recipe.epsilon_high=None"),
        (("recipe.loss_type=cispo", "recipe.epsilon_high=0.28"), "set it above 1"),
        (("recipe.loss_type=dr_grpo",), "recipe.loss_type=dr_grpo comes with recipe.scale_rewards=none, not group"),
        (("recipe.loss_type=sapo", "recipe.sapo.temperature_neg=0"), r"recipe.sapo temperatures \(1.0, 0.0\)"),
        (("recipe.loss_type=vespo", "recipe.vespo.lambda_pos=0"), "lambda_pos and lambda_neg positive"),
        (("recipe.delta=1.1",), r"recipe.delta=1.1 must be above 1 \+ the upper clip \(1.2\)"),
        (("recipe.loss_type=sapo", "recipe.delta=4"), "recipe.loss_type=sapo has none"),
        # settings their loss type or switch never reads
        (("recipe.sapo.temperature_pos=2",), "recipe.sapo.temperature_pos=2.0 has no effect: it applies only with"),
        (("recipe.vespo.k_neg=1",), "recipe.vespo.k_neg=1.0 has no effect"),
        (("recipe.adaptive_entropy.target=0.5",), "recipe.adaptive_entropy.target=0.5 has no effect"),
        # entropy
        (("recipe.top_entropy_quantile=0",), r"recipe.top_entropy_quantile=0.0 must be in \(0, 1\]"),
        (("recipe.top_entropy_quantile=1.5",), r"recipe.top_entropy_quantile=1.5 must be in \(0, 1\]"),
        (
            ("recipe.adaptive_entropy.enabled=true", "recipe.adaptive_entropy.delta=0"),
            "needs target >= 0 and delta > 0",
        ),
        (
            ("recipe.adaptive_entropy.enabled=true", "recipe.entropy_coef=0.01"),
            r"recipe.entropy_coef, the starting coefficient \(0.01\), <= coef_max \(0.005\)",
        ),
        # GDPO
        (
            ("recipe.multi_objective_aggregation=normalize_then_sum", "recipe.scale_rewards=none"),
            "recipe.scale_rewards=none would be ignored",
        ),
        (
            ("recipe.multi_objective_aggregation=normalize_then_sum", "recipe.replay.enabled=true"),
            "recipe.replay.enabled=true recomputes advantages",
        ),
    ],
)
def test_settings_a_loss_needs_or_ignores_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        check_train_values(compose(*overrides))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ("recipe.loss_type=cispo", "recipe.epsilon_high=5", "recipe.epsilon=0.1"),
            r"recipe.epsilon=0.1 has no effect: recipe.loss_type=cispo has no such clip bound \(it caps its weight only",
        ),
        (
            ("recipe.loss_type=sapo", "recipe.epsilon_high=0.28"),
            "recipe.epsilon_high=0.28 has no effect: recipe.loss_type=sapo",
        ),
        (
            ("recipe.loss_type=vespo", "recipe.epsilon=0.3"),
            r"recipe.epsilon=0.3 has no effect: .* \(recipe.vespo.\* shape",
        ),
    ],
)
def test_a_clip_bound_the_loss_type_never_reads_is_refused_before_anything_loads(overrides, message):
    from rlrecipes.training.plan import plan_run

    with pytest.raises(ConfigError, match=message):
        plan_run(compose(*overrides), hardware=False)


@pytest.mark.parametrize(
    "overrides",
    [
        ("recipe.loss_type=luspo", "recipe.importance_sampling_level=sequence"),  # on-policy too: luspo needs it
        ("recipe.loss_type=cispo", "recipe.epsilon_high=5.0"),
        ("recipe.loss_type=dr_grpo", "recipe.scale_rewards=none"),
        ("recipe.loss_type=sapo", "recipe.sapo.temperature_neg=1.2"),
        ("recipe.loss_type=vespo", "recipe.vespo.k_pos=1.0"),
        ("recipe.delta=4.0",),
        ("recipe.importance_sampling_level=sequence_token", OFF_POLICY),
        ("recipe.top_entropy_quantile=0.2",),
        ("recipe.adaptive_entropy.enabled=true", "recipe.adaptive_entropy.target=1.5"),
        ("recipe.multi_objective_aggregation=normalize_then_sum",),
    ],
)
def test_each_loss_with_its_companions_passes(overrides):
    check_train_values(compose(*overrides))


def test_a_loss_without_its_companion_stops_the_cli_in_one_line(capsys):
    code, out = cli(capsys, "train", "--dry-run", "recipe.loss_type=luspo")
    assert code != 0
    assert one_error_line(out) == (
        "error: recipe.loss_type=luspo needs recipe.importance_sampling_level=sequence, not token"
    )


@pytest.mark.parametrize("recipe", ["ttrl", "intuitor"])
def test_gdpo_is_refused_where_a_hook_recomputes_the_advantage(recipe):
    # TTRL's vote subset and INTUITOR's self-certainty replace TRL's advantage with one score's:
    # GDPO's per-reward normalisation would never reach the loss, so it is refused, not ignored
    from rlrecipes.training.plan import check_run
    from tests.conftest import compose

    cfg = compose(f"recipe={recipe}", "recipe.multi_objective_aggregation=normalize_then_sum")
    with pytest.raises(ConfigError, match=rf"^recipe.multi_objective_aggregation=normalize_then_sum: recipe={recipe} "):
        check_run(cfg)
