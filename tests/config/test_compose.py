import pytest

from rlrecipes.compose import compose_config
from rlrecipes.compose.hydra_app import expand_sweep, validate
from rlrecipes.errors import ConfigError


def test_default_config_is_the_quick_start():
    cfg = compose_config("train", [])
    assert cfg.recipe.name == "grpo" and cfg.model.builder == "toy" and cfg.data.name == "arithmetic"
    # the paper's settings are explicit, not TRL 1.16's defaults (dapo loss, bf16, checkpointing)
    assert cfg.recipe.loss_type == "grpo"
    assert cfg.trainer.bf16 is False and cfg.trainer.gradient_checkpointing is False


def test_overrides_apply_with_types():
    cfg = compose_config("train", ["trainer.max_steps=20", "trainer.learning_rate=1e-5", "seed=3"])
    assert cfg.trainer.max_steps == 20 and cfg.trainer.learning_rate == 1e-5 and cfg.seed == 3


@pytest.mark.integration
@pytest.mark.parametrize(
    "override,expected",
    [
        ("trainer.lerning_rate=1", "unknown key 'trainer.lerning_rate'; valid keys here: adam_beta1"),
        ("recipe=dapoo", "unknown recipe 'dapoo'; valid: "),
        ("model=gpt5", "unknown model 'gpt5'; valid: "),
        (
            "experiment=dapo_papr",
            "unknown experiment 'dapo_papr'; valid: atlas_qwen2_5_math_1_5b, clip_cov_qwen2_5_7b, ",
        ),
        ("reward=randm", "unknown reward 'randm'; valid: format, ground_truth, "),
        ("seeed=1", "unknown key 'seeed'; valid keys here: cache_dir, data"),
        ("recipe.epsilonn=0.3", "unknown key 'recipe.epsilonn'; valid keys here: "),
        ("trainer.max_steps=abc", "could not be converted to Integer"),
        # a string with a fixed set of values (a schema `Choice`): Hydra refuses the others
        ("recipe.loss_type=foo", "recipe.loss_type='foo'; valid: grpo, dr_grpo, dapo, bnpo, cispo"),
        ("recipe.scale_rewards=foo", "recipe.scale_rewards='foo'; valid: group, batch, none"),
        ("rollout.backend=vlm", "rollout.backend='vlm'; valid: hf, vllm"),
        ("rollout.vllm_mode=remote", "rollout.vllm_mode='remote'; valid: colocate, server"),
        ("data.template=qwen", "data.template='qwen'; valid: plain, chat, qwen_math_cot, dapo"),
        ("data.answer_style=box", "data.answer_style='box'; valid: auto, boxed, answer_line, gsm8k, minerva, none"),
        ("data.source=web", "data.source='web'; valid: synthetic, hub, file"),
        ("data.synthetic.task=sudoku", "data.synthetic.task='sudoku'; valid: arithmetic, countdown"),
        ("model.dtype=fp8", "model.dtype='fp8'; valid: float32, bfloat16, float16, auto"),
        ("model.builder=gguf", "model.builder='gguf'; valid: toy, smollm2_gguf"),
        ("model.toy.architecture=qwen2", "model.toy.architecture='qwen2'; valid: qwen3, llama"),
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


@pytest.mark.integration
@pytest.mark.parametrize(
    "overrides, expected",
    [
        (["recipe=ttrl", "recipe.vote=plurality"], "recipe.vote='plurality'; valid: equivalence, exact"),
        (["recipe=intuitor", "recipe.scorer=ema"], "recipe.scorer='ema'; valid: online, offline"),
        (["recipe=dapo", "recipe.verifier=sympy"], "recipe.verifier='sympy'; valid: minerva, task"),
    ],
)
def test_a_recipes_own_choices_are_listed_too(overrides, expected):
    with pytest.raises(ConfigError) as err:
        compose_config("train", overrides)
    assert str(err.value) == expected


def test_a_choice_reads_and_prints_as_the_string_users_type():
    from omegaconf import OmegaConf

    cfg = compose_config("train", ["recipe.loss_type=bnpo", "data.template=plain"])
    assert cfg.recipe.loss_type == "bnpo" and f"{cfg.data.template}" == "plain"
    assert {"bnpo": 1}[cfg.recipe.loss_type] == 1  # hashes as the string
    assert "loss_type: bnpo" in OmegaConf.to_yaml(cfg)  # config.yaml, config show


def test_loss_types_are_trls():
    """`LossType` is TRL's set (GRPOConfig.loss_type, a plain str there): every value we
    offer is one TRL documents. The other choices have one home (tests/config/test_choices.py)."""
    from transformers.trainer_utils import SchedulerType  # noqa: F401  (TRL's config needs transformers)
    from trl import GRPOConfig

    from rlrecipes.config.schema import LossType

    loss_help = GRPOConfig.__dataclass_fields__["loss_type"].metadata["help"]
    assert all(f"'{loss}'" in loss_help for loss in LossType.values())


def test_unknown_recipe_lists_every_registered_recipe():
    from rlrecipes.recipes import load_all

    with pytest.raises(ConfigError) as err:
        compose_config("train", ["recipe=nope"])
    for name in load_all():
        assert name in str(err.value)


@pytest.mark.integration
def test_sweep_expansion_and_validation():
    jobs = expand_sweep(["a=1,2", "b=x,y"])
    assert jobs == [["a=1", "b=x"], ["a=1", "b=y"], ["a=2", "b=x"], ["a=2", "b=y"]]
    validate("train", ["seed=1,2", "trainer.max_steps=3"], multirun=True)
    with pytest.raises(ConfigError, match="unknown key 'trainer.nope'"):
        validate("train", ["seed=1,2", "trainer.nope=3,4"], multirun=True)


@pytest.mark.integration
def test_a_sweep_checks_every_job_before_the_first_starts():
    """The command's check runs on each composed job; the failing point is named."""
    seen = []

    def check(cfg):
        seen.append(cfg.trainer.temperature)
        if cfg.trainer.temperature == 0:
            raise ConfigError("trainer.temperature=0.0 must be positive")

    with pytest.raises(ConfigError) as err:
        validate("train", ["trainer.temperature=1.0,0"], multirun=True, check=check)
    assert seen == [1.0, 0.0]
    assert str(err.value) == "trainer.temperature=0: trainer.temperature=0.0 must be positive"
    with pytest.raises(ConfigError, match="^trainer.temperature=0.0 must be positive$"):
        validate("train", ["trainer.temperature=0"], multirun=False, check=check)


@pytest.mark.integration
def test_every_group_option_composes():
    from rlrecipes.compose.compose import conf_dir, group_options

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


@pytest.mark.parametrize(
    "args, expected",
    [
        (("train", "recipe.loss_type=foo"), "error: recipe.loss_type='foo'; valid: grpo, dr_grpo, dapo, bnpo, cispo"),
        (
            ("train", "recipe=ttrl", "recipe.vote=plurality"),
            "error: recipe.vote='plurality'; valid: equivalence, exact",
        ),
        (("config", "show", "data.answer_style=box"), "error: data.answer_style='box'; valid: auto, boxed"),
    ],
)
def test_the_command_line_says_a_bad_choice_in_one_line(args, expected, capsys):
    from rlrecipes.cli import main

    with pytest.raises(SystemExit) as exit:
        main(list(args))
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert exit.value.code == 2 and text.startswith(expected) and "\n" not in text, text


@pytest.mark.parametrize("override", ["report_to=tensorboard", "report_to=[tensorboard]"])
def test_a_list_setting_takes_one_bare_value(override):
    assert list(compose_config("train", [override]).report_to) == ["tensorboard"]


def test_a_comma_list_stays_a_sweep():
    from rlrecipes.compose.compose import as_lists

    assert as_lists(["report_to=tensorboard,wandb", "seed=1"]) == ["report_to=tensorboard,wandb", "seed=1"]


@pytest.mark.parametrize(
    "override, expected",
    [
        ("recipe.dynamic_sampling=true", "recipe.dynamic_sampling moved: write recipe.dynamic_sampling.enabled=true"),
        (
            "recipe.dynamic_sampling_filter=x",
            "recipe.dynamic_sampling_filter moved: write recipe.dynamic_sampling.filter=x",
        ),
        (
            "recipe.max_generation_rounds=4",
            "recipe.max_generation_rounds moved: write recipe.dynamic_sampling.max_rounds=4",
        ),
        (
            "recipe.prompts_per_generation_round=8",
            "recipe.prompts_per_generation_round moved: write recipe.dynamic_sampling.prompts_per_round=8",
        ),
        (
            "recipe.max_generation_batches=5",
            "recipe.max_generation_batches moved: write recipe.dynamic_sampling.max_batches=5",
        ),
        ("trainer.eval_before=false", "trainer.eval_before moved: write trainer.eval.before=false"),
        ("trainer.eval_after=false", "trainer.eval_after moved: write trainer.eval.after=false"),
        ("trainer.eval_every=10", "trainer.eval_every moved: write trainer.eval.every=10"),
        ("trainer.eval_batch_size=32", "trainer.eval_batch_size moved: write trainer.eval.batch_size=32"),
        ("trainer.save_steps=20", "trainer.save_steps moved: write trainer.checkpoints.every=20"),
        ("trainer.save_keep_last=null", "trainer.save_keep_last moved: write trainer.checkpoints.keep_last=null"),
        (
            "trainer.save_best_metric=heldout_accuracy",
            "trainer.save_best_metric moved: write trainer.checkpoints.best_metric=heldout_accuracy",
        ),
        (
            "trainer.init_optimizer_from=R/checkpoints/checkpoint-4",
            "trainer.init_optimizer_from moved: write trainer.checkpoints.init_optimizer_from=R/checkpoints/checkpoint-4",
        ),
        ("trainer.reward_fallback=-1", "trainer.reward_fallback moved: write trainer.reward_guard.fallback=-1"),
        (
            "trainer.reward_max_failure_rate=0.5",
            "trainer.reward_max_failure_rate moved: write trainer.reward_guard.max_failure_rate=0.5",
        ),
        ("trainer.reward_timeout_s=60", "trainer.reward_timeout_s moved: write trainer.reward_guard.timeout_s=60"),
        (
            "rollout.importance_sampling_correction=true",
            "rollout.importance_sampling_correction moved: write rollout.importance_sampling.enabled=true",
        ),
    ],
)
def test_a_moved_key_names_its_new_home(override, expected):
    with pytest.raises(ConfigError) as err:
        compose_config("train", ["recipe=dapo", override])
    assert str(err.value) == f"{expected} (see README, Changes)"


def test_every_moved_key_is_tested_above():
    """A key added to MOVED_KEYS gets its line in the table above."""
    from rlrecipes.config.schema import MOVED_KEYS

    params = test_a_moved_key_names_its_new_home.pytestmark[0].args[1]
    assert {override.split("=", 1)[0] for override, _ in params} == set(MOVED_KEYS)


def test_sft_refuses_the_trainers_moved_keys_too():
    """`rlrecipes sft` shares the trainer node, so its old keys name the same new ones."""
    with pytest.raises(ConfigError, match=r"^trainer.save_steps moved: write trainer.checkpoints.every=5 \(see README"):
        compose_config("sft", ["trainer.save_steps=5"])


def test_the_command_line_names_a_moved_key_in_one_line_in_a_sweep_too(capsys):
    from rlrecipes.cli import main

    with pytest.raises(SystemExit) as exit:
        main(["train", "-m", "recipe=dapo", "recipe.dynamic_sampling=false,true", "--dry-run"])
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert exit.value.code == 2 and "\n" not in text, text
    new = "recipe.dynamic_sampling.enabled=false,true"
    assert text == f"error: recipe.dynamic_sampling moved: write {new} (see README, Changes)"


def test_the_dynamic_sampling_node_takes_a_mapping():
    cfg = compose_config("train", ["recipe=grpo", "recipe.dynamic_sampling={enabled: true, max_rounds: 3}"])
    ds = cfg.recipe.dynamic_sampling
    assert (ds.enabled, ds.max_rounds, ds.filter) == (True, 3, "accuracy")
