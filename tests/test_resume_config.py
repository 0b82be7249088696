"""What a resume runs with (`rlrecipes.training.resume.resumed_config`): the run's saved config,
with only the keys the command line names taken from it. No model is loaded."""

import pytest
from omegaconf import OmegaConf

from rlrecipes.errors import UserError
from rlrecipes.rundir import write_manifest
from rlrecipes.training.resume import explicit_keys, reopen_run_dir, resumed_config
from tests.conftest import compose


@pytest.fixture
def saved_run(tmp_path):
    """A run started as DAPO with max_steps=7 and a non-default learning rate."""
    run = tmp_path / "run"
    run.mkdir()
    write_manifest(run, compose("recipe=dapo", "trainer.max_steps=7", "trainer.learning_rate=3e-5"))
    return run


@pytest.mark.integration
def test_a_resume_takes_every_setting_from_the_run_not_from_the_defaults(saved_run):
    overrides = ["resume=true", f"run_dir={saved_run}"]
    cfg, changes = resumed_config(compose(*overrides), overrides)
    assert cfg.recipe.name == "dapo" and cfg.trainer.max_steps == 7 and cfg.trainer.learning_rate == 3e-5
    assert cfg.resume is True and changes == []
    assert OmegaConf.is_missing(cfg, "recipe") is False and type(cfg.trainer.max_steps) is int  # typed, not raw YAML


@pytest.mark.integration
def test_keys_named_on_the_command_line_override_the_saved_ones(saved_run):
    overrides = ["resume=true", f"run_dir={saved_run}", "trainer.max_steps=9", "trainer.progress=true"]
    cfg, changes = resumed_config(compose(*overrides), overrides)
    assert cfg.trainer.max_steps == 9 and cfg.trainer.learning_rate == 3e-5
    assert changes == [("trainer.max_steps", 7, 9), ("trainer.progress", False, True)]


@pytest.mark.integration
def test_a_moved_run_takes_its_new_path(saved_run, tmp_path):
    moved = tmp_path / "moved"
    saved_run.rename(moved)
    overrides = ["resume=true", f"run_dir={moved}"]
    cfg, _ = resumed_config(compose(*overrides), overrides)
    assert cfg.run_dir == str(moved)


@pytest.mark.parametrize("override", ["hydra/launcher=joblib", "hydra.run.dir=x", "~trainer.max_steps"])
def test_launchers_and_deletions_are_refused_in_one_line(override):
    with pytest.raises(UserError, match=r"^[^\n]*resume=true") as err:
        explicit_keys(["resume=true", override])
    assert override in str(err.value)


@pytest.mark.integration
def test_the_start_command_repeated_with_resume_true_continues_the_run(saved_run):
    """A Slurm script repeats its command with resume=true: the same groups and keys."""
    overrides = [
        "recipe=dapo",
        "trainer.max_steps=7",
        "trainer.learning_rate=3e-5",
        "resume=true",
        f"run_dir={saved_run}",
    ]
    cfg, changes = resumed_config(compose(*overrides), overrides)
    assert cfg.recipe.name == "dapo" and cfg.trainer.max_steps == 7 and changes == []


@pytest.mark.integration
@pytest.mark.parametrize(
    "overrides, shown",
    [
        (["recipe=grpo"], "recipe=grpo on a resume gives other settings than the run's (recipe."),
        # the group again without the key the run was started with: max_steps would fall back
        # to the default silently, which is what a resume must never do
        (
            ["recipe=dapo", "trainer=cpu"],
            "trainer=cpu on a resume gives other settings than the run's (trainer.learning_rate 3e-05 -> ",
        ),
    ],
)
def test_a_group_that_would_change_the_runs_settings_is_refused(saved_run, overrides, shown):
    overrides = [*overrides, "resume=true", f"run_dir={saved_run}"]
    with pytest.raises(UserError) as err:
        resumed_config(compose(*overrides), overrides)
    assert shown in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.integration
def test_a_torn_or_missing_config_is_one_line(saved_run, tmp_path):
    (saved_run / "config.yaml").write_text("recipe:\n  name: [dapo\n")  # torn mid-write
    overrides = ["resume=true", f"run_dir={saved_run}"]
    with pytest.raises(UserError, match=r"config.yaml cannot be read \(") as err:
        resumed_config(compose(*overrides), overrides)
    assert "\n" not in str(err.value)
    overrides = ["resume=true", f"run_dir={tmp_path / 'nothing'}"]
    with pytest.raises(UserError, match="holds no run"):
        resumed_config(compose(*overrides), overrides)


# A run's config.yaml as versions before the `recipe.dynamic_sampling` node wrote it: flat keys.
OLD_DYNAMIC_SAMPLING = """\
  dynamic_sampling: true
  dynamic_sampling_filter: dapo_answer
  max_generation_rounds: 7
  prompts_per_generation_round: 8
  max_generation_batches: 5
"""


@pytest.mark.integration
def test_a_run_written_before_the_dynamic_sampling_keys_moved_resumes_with_its_values(saved_run):
    text = (saved_run / "config.yaml").read_text()
    node = "  dynamic_sampling:\n    enabled: true\n    filter: dapo_answer\n    max_rounds: 10\n"
    node += "    prompts_per_round: null\n    max_batches: null\n"
    assert node in text  # the layout this test rewrites into the old one
    (saved_run / "config.yaml").write_text(text.replace(node, OLD_DYNAMIC_SAMPLING))
    overrides = ["resume=true", f"run_dir={saved_run}"]
    cfg, changes = resumed_config(compose(*overrides), overrides)
    ds = cfg.recipe.dynamic_sampling
    got = (ds.enabled, ds.filter, ds.max_rounds, ds.prompts_per_round, ds.max_batches)
    assert got == (True, "dapo_answer", 7, 8, 5)
    assert changes == [] and cfg.trainer.max_steps == 7
    reopen_run_dir(cfg, log=lambda _: None)  # the saved settings, compared after the same move: no change
    assert OLD_DYNAMIC_SAMPLING in (saved_run / "config.yaml").read_text()  # the file itself is kept


def old_trainer_layout(text: str) -> str:
    """A config.yaml as versions before the trainer's nodes wrote it: the `trainer.eval`,
    `trainer.checkpoints` and `trainer.reward_guard` nodes' values as flat `trainer.*` keys."""
    saved = OmegaConf.create(text)
    t = saved.trainer
    eval_, ckpt, guard = t.pop("eval"), t.pop("checkpoints"), t.pop("reward_guard")
    t.eval_before, t.eval_after, t.eval_every, t.eval_batch_size = False, eval_.after, 5, 32
    t.save_steps, t.save_keep_last, t.save_best_metric = 3, None, "heldout_accuracy"
    t.init_optimizer_from = ckpt.init_optimizer_from
    t.reward_fallback, t.reward_max_failure_rate, t.reward_timeout_s = -1.0, 0.5, 60.0
    assert guard.fallback == 0.0 and ckpt.every != 3  # the values above differ from the run's own
    return OmegaConf.to_yaml(saved)


def test_a_config_written_before_the_trainer_keys_moved_reads_as_the_new_nodes():
    from rlrecipes.training.resume import with_moved_keys

    old = OmegaConf.create({"trainer": {"save_steps": 3, "eval_every": 5, "reward_timeout_s": 60.0, "max_steps": 7}})
    assert OmegaConf.to_container(with_moved_keys(old)) == {
        "trainer": {
            "max_steps": 7,
            "checkpoints": {"every": 3},
            "eval": {"every": 5},
            "reward_guard": {"timeout_s": 60.0},
        }
    }


@pytest.mark.integration
def test_a_run_written_before_the_trainer_keys_moved_resumes_with_its_values(saved_run):
    (saved_run / "config.yaml").write_text(old_trainer_layout((saved_run / "config.yaml").read_text()))
    kept = (saved_run / "config.yaml").read_text()
    overrides = ["resume=true", f"run_dir={saved_run}"]
    cfg, changes = resumed_config(compose(*overrides), overrides)
    t = cfg.trainer
    assert (t.eval.before, t.eval.after, t.eval.every, t.eval.batch_size) == (False, True, 5, 32)
    assert (t.checkpoints.every, t.checkpoints.keep_last, t.checkpoints.best_metric) == (3, None, "heldout_accuracy")
    assert (t.reward_guard.fallback, t.reward_guard.max_failure_rate, t.reward_guard.timeout_s) == (-1.0, 0.5, 60.0)
    assert changes == [] and "eval_before" not in t
    reopen_run_dir(cfg, log=lambda _: None)  # the saved settings, compared after the same move: no change
    assert (saved_run / "config.yaml").read_text() == kept  # the file itself is kept
