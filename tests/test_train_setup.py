"""The training job checks everything that needs no model or data (`check_run`) before any
model is built or loaded and before any data is read: each mistake is one line, fast."""

import time

import pytest

from rlrecipes.errors import UserError
from tests.conftest import compose


@pytest.fixture(scope="module")
def warm():
    """Import TRL and transformers once, so each case times the checks alone."""
    from rlrecipes.training.plan import check_run

    check_run(compose())


@pytest.fixture
def nothing_loads(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model or dataset was loaded before the mistake was reported")

    monkeypatch.setattr("rlrecipes.training.job.resolve_model_path", refuse)
    monkeypatch.setattr("rlrecipes.training.job.load_model", refuse)
    monkeypatch.setattr("rlrecipes.training.job.load_problem_set", refuse)


MISTAKES = [
    # the config's value rules (rlrecipes/config/checks.py)
    (["trainer.lr_scheduler_type=foo"], "trainer.lr_scheduler_type='foo'; valid: linear, cosine"),
    (["trainer.lr_scheduler_type=cosine_with_min_lr"], "needs its floor: +trainer.lr_scheduler_kwargs.min_lr_rate"),
    (["trainer.temperature=0"], "trainer.temperature=0.0 must be positive"),
    (["trainer.updates_per_rollout=0"], "trainer.updates_per_rollout=0 must be at least 1"),
    (["trainer.num_generations=1"], "trainer.num_generations=1 must be at least 2 (a group needs two samples"),
    (["seed=-1"], "seed=-1 must be at least 0"),
    (["recipe.epsilon_high=0.1"], "recipe.epsilon_high=0.1 is below recipe.epsilon=0.2"),
    (['final_eval=["benchmark=aime2x"]'], "final_eval: unknown benchmark 'aime2x'; valid: aime24"),
    (["trainer.top_k=-1"], "trainer.top_k=-1 must be at least 0"),
    (["trainer.eval.batch_size=0"], "trainer.eval.batch_size=0 must be at least 1"),
    (["trainer.eval.every=0"], "trainer.eval.every=0 must be at least 1"),
    (
        ["trainer.checkpoints.keep_last=0"],
        "trainer.checkpoints.keep_last=0 must be at least 1 (or null to keep every checkpoint)",
    ),
    (["trainer.checkpoints.every=0"], "trainer.checkpoints.every=0 must be at least 1 (or null for no checkpoints)"),
    (
        ["recipe=dapo", "recipe.dynamic_sampling.max_rounds=0"],
        "recipe.dynamic_sampling.max_rounds=0 must be at least 1",
    ),
    (
        ["rollout.backend=vllm", "rollout.vllm_max_model_length=16"],
        "rollout.vllm_max_model_length=16 leaves no room for a prompt before trainer.max_completion_length=16",
    ),
    # every number finite and each bounded one in its interval (--dry-run catches them too)
    (["trainer.learning_rate=nan"], "trainer.learning_rate=nan must be a finite number"),
    (["trainer.learning_rate=inf"], "trainer.learning_rate=inf must be a finite number"),
    (["recipe.rewards=[{name: accuracy, weight: nan}]"], "recipe.rewards.0.weight=nan must be a finite number"),
    (["trainer.temperature=inf"], "trainer.temperature=inf must be a finite number"),
    (["recipe.epsilon_high=nan"], "recipe.epsilon_high=nan must be a finite number"),
    (["trainer.adam_beta2=1"], "trainer.adam_beta2=1.0 must be in [0, 1)"),
    (["trainer.top_p=0"], "trainer.top_p=0.0 must be in (0, 1]"),
    (["trainer.warmup_ratio=1.5"], "trainer.warmup_ratio=1.5 must be in [0, 1]"),
    (["trainer.max_grad_norm=-1"], "trainer.max_grad_norm=-1.0 must be in [0, infinity)"),
    (["trainer.reward_guard.max_failure_rate=2"], "trainer.reward_guard.max_failure_rate=2.0 must be in [0, 1]"),
    (["trainer.reward_guard.timeout_s=0"], "trainer.reward_guard.timeout_s=0.0 must be in (0, infinity)"),
    (["rollout.vllm_gpu_memory_utilization=0"], "rollout.vllm_gpu_memory_utilization=0.0 must be in (0, 1]"),
    (["trainer.cpu_threads=-2"], "trainer.cpu_threads=-2 must be at least 1 (or null: torch's default)"),
    # reward names, before the recipe builds anything
    (["recipe.rewards=[{name: acuracy, weight: 1.0}]"], "unknown reward 'acuracy' (recipe.rewards); valid: accuracy"),
    (
        ["recipe=dapo", "recipe.dynamic_sampling.filter=acc"],
        "recipe.dynamic_sampling.filter='acc' is not one of this run's rewards; valid: dapo_answer, overlong, accuracy",
    ),
    # a reward's own settings, checked when it is built
    (
        ["recipe=dapo", "recipe.overlong_buffer_length=20"],
        "recipe.overlong_buffer_length=20 must lie in [0, trainer.max_completion_length=16]",
    ),
    # rules each recipe declares (Recipe.validate)
    (
        ["recipe=ttrl", "recipe.rewards=[{name: majority_vote}, {name: accuracy, weight: 1}]"],
        "recipe=ttrl trains without labels: give the accuracy reward weight 0",
    ),
    (["recipe=ttrl", "recipe.rewards=[{name: accuracy, weight: 0}]"], "recipe=ttrl needs the 'majority_vote' reward"),
    (["recipe=ttrl", "recipe.n_train=9"], "recipe.n_train=9 must be between 1 and trainer.num_generations=4"),
    (
        ["recipe=ttrl", "recipe.dynamic_sampling.enabled=true"],
        "cannot be combined with recipe.dynamic_sampling.enabled=true",
    ),
    (
        ["recipe=ttrl", "trainer.micro_batch_size=2", "recipe.n_train=1"],
        "recipe.n_train=1 leaves 4 completions per process, which do not split into the 8 micro-steps",
    ),
    (["recipe=one_shot", "recipe.examples=[1,2,3]"], "recipe.rows=128 must be a positive multiple of the 3 chosen"),
    (["recipe=one_shot", "recipe.examples=[5,5]"], "recipe.examples=['5', '5'] names an example twice"),
    (["recipe=intuitor", "recipe.score_batch_size=0"], "recipe.score_batch_size=0 must be at least 1"),
    (["recipe=spurious", "reward=majority"], "reward=majority needs recipe.labels=FILE.jsonl"),
    (["recipe=spurious", "reward=majority", "recipe.labels=/no/such/labels.jsonl"], "does not exist"),
    (["recipe=spurious", "recipe.rewards=[]"], "recipe=spurious needs a reward: reward=ground_truth|"),
    # LoRA, the batch plan, the trackers and TRL's own checks
    (["model.lora.r=8", "model.lora.dropout=1.5"], "model.lora.dropout=1.5 must be in [0, 1)"),
    (["trainer.micro_batch_size=3"], "trainer.micro_batch_size=3 x 1 processes must divide"),
    (["trainer.updates_per_rollout=3"], "trainer.updates_per_rollout=3 must divide the 16 completions"),
    # an experiment whose recipe builds its problems, run with another recipe
    (
        ["experiment=search_r1_toy", "recipe=grpo"],
        "the experiment's problems are built by recipe=search_r1, so recipe=grpo would train "
        "data.synthetic.task=arithmetic instead; keep recipe=search_r1",
    ),
    (["experiment=tir_toy", "recipe=grpo"], "the experiment's problems are built by recipe=tir"),
    (["report_to=[mlflow]"], "report_to='mlflow' is unknown; valid: tensorboard, wandb, trackio"),
]


@pytest.mark.integration
@pytest.mark.parametrize("overrides, message", MISTAKES, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_mistakes_fail_at_once_before_anything_loads(overrides, message, warm, nothing_loads, tmp_path):
    from rlrecipes.training.job import train

    cfg = compose(*overrides)
    start = time.perf_counter()
    with pytest.raises(UserError) as err:
        train(cfg, tmp_path, log=lambda _: None)
    seconds = time.perf_counter() - start
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert seconds < 1.0, f"{seconds:.2f} s"
    assert not any(tmp_path.iterdir())  # nothing written either


def test_check_run_returns_the_grpo_config_the_job_trains_with(warm, nothing_loads):
    from rlrecipes.training.plan import check_run

    args = check_run(compose("recipe=dapo"))
    assert (args.loss_type, args.epsilon, args.epsilon_high, args.beta) == ("dapo", 0.2, 0.28, 0.0)
    assert type(args.loss_type) is str  # the schema's Choice reaches TRL as a plain string
    assert list(args.reward_weights) == [1.0, 1.0, 0.0]  # dapo_answer, overlong, the accuracy monitor
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (16, 1)


def test_an_experiment_keeps_its_recipe_or_takes_one_whose_problems_come_from_data(warm, nothing_loads):
    from rlrecipes.training.plan import plan_run

    assert plan_run(compose("experiment=search_r1_toy"), None, hardware=False).recipe.name == "search_r1"
    # the SmolLM2 preset trains its data config's word problems: another recipe on it is a comparison
    plan = plan_run(compose("experiment=real_model_smollm2", "recipe=rloo"), None, hardware=False)
    assert plan.recipe.name == "rloo"


def test_a_gpu_preset_is_checked_on_a_cpu_machine(warm, nothing_loads):
    """`--dry-run` checks the config, not this machine: a bf16 GPU preset builds here."""
    from rlrecipes.compose import compose_config
    from rlrecipes.training.plan import dry_run

    rows = dict(dry_run(compose_config("train", ["experiment=dapo_paper"])))
    assert rows["recipe"] == "dapo" and rows["model"] == "Qwen/Qwen2.5-32B"
    assert "loss_type=dapo beta=0.0 epsilon=0.2 / 0.28" in rows["loss"]
    assert rows["rewards"] == "dapo_answer=1, overlong=1, accuracy=0"
    assert rows["precision"].startswith("bf16=True use_cpu=False")


def test_the_quick_start_plan_is_printed_as_it_will_run(warm, nothing_loads):
    from rlrecipes.compose import compose_config
    from rlrecipes.training.plan import dry_run

    rows = dict(dry_run(compose_config("train", [])))
    assert rows["loss"] == "loss_type=grpo beta=0.0 epsilon=0.2 scale_rewards=group"
    assert rows["rewards"] == "accuracy=1"
    assert rows["batch"].startswith("8 prompts x 8 completions = 64 per rollout step; 1 update(s) of 64")
    assert rows["steps"].startswith("max_steps=120")
    assert rows["scheduler"] == "constant over 120 steps, warmup_steps=0 warmup_ratio=0"


@pytest.mark.integration
def test_fewer_problems_than_one_rollout_step_is_refused(toy_model_dir, tmp_path):
    from rlrecipes.training.job import train

    with pytest.raises(
        UserError, match="3 training problems are fewer than one rollout step's trainer.prompts_per_rollout=4"
    ):
        train(compose("data.max_examples=3"), tmp_path, log=lambda _: None)


def _cli(capsys, *args: str) -> tuple[int, str]:
    from rlrecipes.cli import main

    with pytest.raises(SystemExit) as exit:
        main(list(args))
    out = capsys.readouterr()
    return exit.value.code or 0, out.out + out.err


@pytest.mark.integration
def test_dry_run_prints_the_plan_and_writes_nothing(warm, nothing_loads, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    code, out = _cli(capsys, "train", "--dry-run", "recipe=dapo", *TINY_CLI)
    assert code == 0, out
    assert "loss_type=dapo beta=0.0 epsilon=0.2 / 0.28" in out and "dapo_answer=1, overlong=1, accuracy=0" in out
    assert "4 prompts x 4 completions = 16 per rollout step" in out
    assert list(tmp_path.iterdir()) == []  # no run directory, no outputs/
    code, out = _cli(capsys, "train", "--dry-run", "-m", "seed=0,1", *TINY_CLI)
    assert code == 0 and out.count("loss_type=grpo") == 2, out
    code, out = _cli(capsys, "train", "--dry-run", "trainer.temperature=0")
    assert code == 2 and out.strip() == "error: trainer.temperature=0.0 must be positive (sampling needs it; " + (
        "greedy rollouts would make every group's rewards equal)"
    )
    assert list(tmp_path.iterdir()) == []


TINY_CLI = ["trainer.prompts_per_rollout=4", "trainer.num_generations=4", "trainer.micro_batch_size=16"]


@pytest.mark.integration
def test_a_sweep_stops_before_its_first_job_when_any_job_is_wrong(warm, nothing_loads, capsys, tmp_path):
    code, out = _cli(capsys, "train", "-m", "trainer.temperature=1.0,0", f"output_root={tmp_path}")
    assert code == 2 and out.strip().startswith("error: trainer.temperature=0: trainer.temperature=0.0 must be")
    assert list(tmp_path.iterdir()) == []  # the good job did not start either


def test_an_infinite_clip_range_is_the_unclipped_objective_and_allowed(warm, nothing_loads):
    from rlrecipes.training.plan import check_run

    args = check_run(compose("recipe.epsilon=inf", "recipe.epsilon_high=inf"))
    assert args.epsilon == float("inf") and args.epsilon_high == float("inf")


@pytest.mark.integration
def test_dry_run_refuses_a_nan_learning_rate_in_one_line(warm, nothing_loads, capsys):
    code, out = _cli(capsys, "train", "--dry-run", "trainer.learning_rate=nan")
    assert code == 2 and out.strip() == "error: trainer.learning_rate=nan must be a finite number"


def test_a_plan_is_made_once_and_named_after_the_run_directory(warm, nothing_loads, tmp_path, monkeypatch):
    from rlrecipes.training import job
    from rlrecipes.training.plan import plan_run

    cfg = compose("recipe=dapo", 'final_eval=["benchmark=arithmetic"]')
    plan = plan_run(cfg, hardware=False)  # what the sweep check makes, before the run directory exists
    moved = plan.at(tmp_path / "run")
    assert moved.recipe is plan.recipe and moved.rewards == plan.rewards and moved.hardware
    assert moved.args.output_dir == str(tmp_path / "run" / "checkpoints")
    assert moved.final_eval.model.name_or_path == str(tmp_path / "run" / "model")
    assert moved.at(tmp_path / "run") is moved  # planned for this directory, with this machine's checks

    def planned_again(*args, **kwargs):
        raise AssertionError("setup planned the run again")

    monkeypatch.setattr(job, "plan_run", planned_again)
    with pytest.raises(AssertionError, match="a model or dataset was loaded"):  # got past planning
        job.setup(cfg, tmp_path / "run", lambda _: None, plan=moved)
