import pytest

from rlrecipes.config import ConfigError, compose_config
from rlrecipes.config.hydra_app import expand_sweep, validate


def test_default_config_is_the_quick_start():
    cfg = compose_config("train", [])
    assert cfg.recipe.name == "grpo" and cfg.model.builder == "toy" and cfg.data.name == "arithmetic"
    # the paper's settings are explicit, not TRL 1.16's defaults (dapo loss, bf16, checkpointing)
    assert cfg.recipe.loss_type == "grpo"
    assert cfg.trainer.bf16 is False and cfg.trainer.gradient_checkpointing is False


def test_overrides_apply_with_types():
    cfg = compose_config("train", ["trainer.max_steps=20", "trainer.learning_rate=1e-5", "seed=3"])
    assert cfg.trainer.max_steps == 20 and cfg.trainer.learning_rate == 1e-5 and cfg.seed == 3


@pytest.mark.parametrize(
    "override,expected",
    [
        ("trainer.lerning_rate=1", "unknown key 'trainer.lerning_rate'; valid keys here: adam_beta1"),
        ("recipe=dapoo", "unknown recipe 'dapoo'; valid: "),
        ("model=gpt5", "unknown model 'gpt5'; valid: "),
        ("experiment=dapo_papr", "unknown experiment 'dapo_papr'; valid: dapo_paper, intuitor_"),
        ("reward=randm", "unknown reward 'randm'; valid: format, ground_truth, "),
        ("seeed=1", "unknown key 'seeed'; valid keys here: cache_dir, data"),
        ("recipe.epsilonn=0.3", "unknown key 'recipe.epsilonn'; valid keys here: "),
        ("trainer.max_steps=abc", "could not be converted to Integer"),
        # values the types allow but TRL would reject (late, with a traceback)
        ("recipe.loss_type=foo", "recipe.loss_type='foo'; valid: grpo, dr_grpo, dapo, bnpo"),
        ("recipe.scale_rewards=foo", "recipe.scale_rewards='foo'; valid: group, batch, none"),
        ("trainer.lr_scheduler_type=foo", "trainer.lr_scheduler_type='foo'; valid: linear, cosine"),
        ("trainer.lr_scheduler_type=cosine_with_min_lr", "needs its floor: +trainer.lr_scheduler_kwargs.min_lr_rate"),
        ("trainer.temperature=0", "trainer.temperature=0.0 must be positive"),
        ("trainer.updates_per_rollout=0", "trainer.updates_per_rollout=0 must be at least 1"),
        ("trainer.num_generations=1", "trainer.num_generations=1 must be at least 2 (a group needs two samples"),
        ("seed=-1", "seed=-1 must be at least 0"),
        ("recipe.epsilon_high=0.1", "recipe.epsilon_high=0.1 is below recipe.epsilon=0.2"),
        ('final_eval=["benchmark=aime2x"]', "final_eval: unknown benchmark 'aime2x'; valid: aime24"),
        ("trainer.top_k=-1", "trainer.top_k=-1 must be at least 0"),
        ("trainer.eval_batch_size=0", "trainer.eval_batch_size=0 must be at least 1"),
        ("trainer.save_keep_last=0", "trainer.save_keep_last=0 must be at least 1 (or null to keep every checkpoint)"),
        ("trainer.save_steps=0", "trainer.save_steps=0 must be at least 1 (or null for no checkpoints)"),
        # a '+' would add the misspelt key silently: only *_kwargs dicts take new keys
        ("+trainer.lerning_rate=100", "unknown key 'trainer.lerning_rate' ('+' adds keys only inside *_kwargs dicts"),
    ],
)
def test_mistakes_fail_with_one_line_naming_valid_choices(override, expected):
    """(one override at a time, composed as `rlrecipes train` / `config show` do)"""
    with pytest.raises(ConfigError) as err:
        compose_config("train", [override])
    message = str(err.value)
    assert expected in message and "\n" not in message


def test_unknown_recipe_lists_every_registered_recipe():
    from rlrecipes.recipes import load_all

    with pytest.raises(ConfigError) as err:
        compose_config("train", ["recipe=nope"])
    for name in load_all():
        assert name in str(err.value)


def test_sweep_expansion_and_validation():
    jobs = expand_sweep(["a=1,2", "b=x,y"])
    assert jobs == [["a=1", "b=x"], ["a=1", "b=y"], ["a=2", "b=x"], ["a=2", "b=y"]]
    validate("train", ["seed=1,2", "trainer.max_steps=3"], multirun=True)
    with pytest.raises(ConfigError, match="unknown key 'trainer.nope'"):
        validate("train", ["seed=1,2", "trainer.nope=3,4"], multirun=True)


def test_every_group_option_composes():
    from rlrecipes.config.compose import conf_dir, group_options

    for group in ("recipe", "model", "data", "trainer", "rollout"):
        for option in group_options(group):
            compose_config("train", [f"{group}={option}"])
    for experiment in group_options("experiment"):
        compose_config("train", [f"experiment={experiment}"])
    assert (conf_dir() / "train.yaml").is_file()


@pytest.mark.parametrize(
    "name, override, expected",
    [
        ("train", "benchmark=math500", "benchmark= is not a group of the train config (valid groups: data, experiment"),
        ("eval", "recipe=dapo", "recipe= is not a group of the eval config (valid groups: benchmark"),
        ("train", "seed=0,1", "a comma list is a sweep: add -m (rlrecipes train -m ...)"),
    ],
)
def test_groups_of_the_other_command_and_sweeps_without_m_are_explained(name, override, expected):
    with pytest.raises(ConfigError) as err:
        compose_config(name, [override])
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_plus_still_adds_scheduler_arguments():
    cfg = compose_config("train", ["+trainer.lr_scheduler_kwargs.min_lr_rate=0.1"])
    assert cfg.trainer.lr_scheduler_kwargs.min_lr_rate == 0.1
