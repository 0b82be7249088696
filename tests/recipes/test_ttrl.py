"""TTRL: the recipe's config and paper presets, its vote hook on a scripted rollout, and a
tiny label-free run that logs the paper's diagnostics."""

import json
from types import SimpleNamespace

import pytest

from rlrecipes.data.problems import answer_verifier
from rlrecipes.errors import UserError
from rlrecipes.recipes.ttrl import TTRL
from rlrecipes.rewards import RewardContext
from tests.conftest import compose
from tests.helpers.scripted_model import answering, scripted_model


def test_recipe_is_grpo_with_the_vote_reward():
    r = compose("recipe=ttrl").recipe
    assert [(x.name, x.weight) for x in r.rewards] == [("majority_vote", 1.0)]
    # bnpo: the v1 code's token mean per packed micro-batch; exact: the authors' string Counter
    assert (r.loss_type, r.beta, r.epsilon, r.epsilon_high, r.entropy_coef) == ("bnpo", 0.001, 0.2, None, 0.0)
    assert (r.n_train, r.train_fraction, r.vote) == (None, 0.5, "exact")  # verl: 32 of 64 votes train


@pytest.mark.integration
@pytest.mark.parametrize(
    "preset, model, data, votes, train, prompts, updates, steps, beta, loss, beta2",
    [
        # verl code (examples/ttrl/aime.sh, amc.sh; MATH-500 with the paper's 10 episodes)
        (
            "ttrl_aime24_qwen2_5_math_1_5b",
            "Qwen/Qwen2.5-Math-1.5B",
            "aime24_ttrl",
            64,
            32,
            8,
            8,
            1920,
            0.001,
            "bnpo",
            0.999,
        ),
        ("ttrl_amc_qwen2_5_math_1_5b", "Qwen/Qwen2.5-Math-1.5B", "amc_ttrl", 64, 32, 8, 8, 2400, 0.001, "bnpo", 0.999),
        (
            "ttrl_math500_qwen2_5_math_1_5b",
            "Qwen/Qwen2.5-Math-1.5B",
            "math500_ttrl",
            64,
            32,
            8,
            8,
            4960,
            0.001,
            "bnpo",
            0.999,
        ),
        # v1 preview code (OpenRLHF, commit 1d2ec3d): 16 samples vote and train (the other
        # generated votes only feed logs; tests/recipes/test_presets_authors.py cites the code)
        (
            "ttrl_v1_aime24_qwen2_5_math_7b",
            "Qwen/Qwen2.5-Math-7B",
            "aime24_ttrl",
            16,
            16,
            16,
            16,
            960,
            0.0,
            "bnpo",
            0.95,
        ),
        ("ttrl_v1_amc_qwen2_5_math_7b", "Qwen/Qwen2.5-Math-7B", "amc_ttrl", 16, 16, 64, 64, 3200, 0.0, "bnpo", 0.95),
        (
            "ttrl_v1_math500_qwen2_5_math_7b",
            "Qwen/Qwen2.5-Math-7B",
            "math500_ttrl",
            16,
            16,
            128,
            128,
            15360,
            0.0,
            "bnpo",
            0.95,
        ),
    ],
)
def test_presets_carry_the_papers_numbers(
    preset, model, data, votes, train, prompts, updates, steps, beta, loss, beta2
):
    from rlrecipes.compose import compose_config
    from rlrecipes.engine.grpo_args import plan_batches

    cfg = compose_config("train", [f"experiment={preset}"])
    r, t = cfg.recipe, cfg.trainer
    assert (cfg.recipe.name, cfg.model.name_or_path, cfg.data.name) == ("ttrl", model, data)
    assert (t.num_generations, r.n_train) == (votes, train)
    assert (t.prompts_per_rollout, t.updates_per_rollout) == (prompts, updates)
    assert (t.max_steps, r.beta, r.loss_type, t.adam_beta2) == (steps, beta, loss, beta2)
    # the verl code decays to 0, OpenRLHF's v1 code to a floor of 0.1 x lr
    schedule = ("cosine_with_min_lr", {"min_lr_rate": 0.1}) if "_v1_" in preset else ("cosine", {})
    assert (t.lr_scheduler_type, dict(t.lr_scheduler_kwargs)) == schedule
    assert (t.learning_rate, t.warmup_ratio, t.temperature) == (5e-7, 0.03, 1.0)
    assert (r.epsilon, t.max_completion_length, cfg.rollout.importance_sampling.enabled) == (0.2, 3072, False)
    assert cfg.data.eval_path == cfg.data.path  # evaluated on the questions it trained on
    # every optimizer step trains the responses of prompts_per_rollout * n_train / updates
    plan = plan_batches(t)
    assert plan.completions_per_update * train // votes == prompts * train // updates


@pytest.mark.integration
def test_local_ttrl_files_load_through_data_path(shared_data):
    from rlrecipes.data.problems import load_problem_set

    for data, folder, count in [
        ("aime24_ttrl", "aime24", 30),
        ("amc_ttrl", "amc_ttrl", 83),
        ("math500_ttrl", "math500", 500),
    ]:
        path = shared_data / folder / "TTRL" / "test.json"
        problems = load_problem_set(compose(f"data={data}", f"data.path={path}", "data.problem_field=prompt").data)
        assert len(problems.train) == len(problems.eval) == count
        assert problems.train[0]["problem"] == problems.eval[0]["problem"]


def test_labels_never_weigh_in_and_bad_switches_are_one_line():
    ctx = RewardContext(verify=answer_verifier("boxed"))
    with pytest.raises(UserError, match="give the accuracy reward weight 0"):
        TTRL.validate(compose("recipe=ttrl", "recipe.rewards=[{name: majority_vote}, {name: accuracy, weight: 1}]"))
    with pytest.raises(UserError, match="needs the 'majority_vote' reward"):
        TTRL.validate(compose("recipe=ttrl", "recipe.rewards=[{name: accuracy, weight: 0}]"))
    hooks = TTRL(compose("recipe=ttrl", "recipe.n_train=2").recipe).hooks(ctx)
    assert [type(h).__name__ for h in hooks] == ["GroupSubset"]


def test_vote_reward_scores_whole_groups_and_logs_diagnostics():
    """Two groups of 3 (boxed answers), gold 4 and 9, as TRL hands them to one process:
    group 0: 4, 4, 5 -> label 4 (right), rewards 1 1 0 = true rewards; ratio 2/3
    group 1: 7, 7, 9 -> label 7 (wrong), rewards 1 1 0, true 0 0 1: 0 of 3 agree; ratio 2/3"""
    from rlrecipes.engine.group_rewards import GatheredGroupReward
    from rlrecipes.rewards import build_reward

    texts = ["\\boxed{4}", "\\boxed{4.0}", "\\boxed{5}", "\\boxed{7}", "\\boxed{7}", "\\boxed{9}"]
    logged = {}
    trainer = SimpleNamespace(
        model=SimpleNamespace(training=True),
        log_metric=logged.__setitem__,
        num_generations=3,
        accelerator=SimpleNamespace(num_processes=1, process_index=0),
    )
    for vote in ("equivalence", "exact"):  # "4" and "4.0" normalise to the same string
        ctx = RewardContext(verify=answer_verifier("boxed"), answer_style="boxed", recipe={"vote": vote})
        reward = GatheredGroupReward(build_reward("majority_vote", ctx))
        reward.bind(trainer)
        out = reward(["p"] * 6, texts, answer=["4"] * 3 + ["9"] * 3, id=["a"] * 3 + ["b"] * 3, trainer_state=None)
        assert out == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert logged == {
        "ttrl/majority_ratio": pytest.approx(2 / 3),
        "ttrl/label_accuracy": 0.5,
        "ttrl/reward_accuracy": pytest.approx(3 / 6),
    }


@pytest.mark.integration
def test_tiny_label_free_run_logs_the_diagnostics(tmp_path):
    """A scripted policy (tests/helpers/scripted_model.py) answers 142 to every problem, so which label
    is right is known before the run, whatever machine runs it: the TINY data's first four
    problems are 68+42, 75+67, 6+27 and 91+33 (golds 110, 142, 33, 124), each step votes on all
    four (4 prompts a step), and only 75+67's label is right. Every group is unanimous."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.training.job import train

    model = scripted_model(tmp_path / "model", answering("142"))
    cfg = compose(
        f"model.name_or_path={model}",
        "data.max_examples=4",
        "recipe=ttrl",
        "recipe.n_train=2",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    assert [it["answer"] for it in load_problem_set(cfg.data).train] == ["110", "142", "33", "124"]
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "ttrl/majority_ratio" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    for r in steps:
        assert r["ttrl/majority_ratio"] == 1.0  # 4 of 4 votes for the label
        # the diagnostics compare each label with the gold answers: 1 label of 4 is right, and
        # 4 of the 16 vote rewards equal the gold reward (a gold-blind diagnostic reads 0 or 1)
        assert r["ttrl/label_accuracy"] == 0.25 and r["ttrl/reward_accuracy"] == 0.25
        # the vote rewards agreement with the label, not gold accuracy: 1 against 4 right of 16
        assert r["rewards/majority_vote/mean"] == 1.0 and r["accuracy"] == 0.25
        # the gold answers feed the monitor (weight 0) and the diagnostics only: TRL's reward is the vote's
        assert r["reward_mean"] == 1.0


def unlabelled_questions(path, count=16):
    """Toy-task questions without their answers, the way TTRL meets a test set."""
    from rlrecipes.data.synthetic import make_task

    task = make_task(compose().data.synthetic)
    path.write_text("".join(json.dumps({"problem": it["problem"]}) + "\n" for it in task.eval[:count]))
    return path


def unlabelled_run(toy_model_dir, data_file, *overrides):
    return compose(
        f"model.name_or_path={toy_model_dir}",
        "data.source=file",
        f"data.path={data_file}",
        "data.answer_field=null",
        *overrides,
    )


@pytest.mark.integration
def test_ttrl_trains_on_questions_without_answers(toy_model_dir, tmp_path):
    from rlrecipes.training.job import train

    data = unlabelled_questions(tmp_path / "questions.jsonl")
    cfg = unlabelled_run(toy_model_dir, data, "recipe=ttrl", "recipe.n_train=2")
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert summary["steps"] == 2 and summary["num_train_problems"] == 16
    assert summary["accuracy_before"] is None and summary["accuracy_after"] is None  # no held-out set given
    assert summary["data"] == "questions"  # named after the file, not the default synthetic group
    assert all(0 < r["ttrl/majority_ratio"] <= 1 for r in rows if "ttrl/majority_ratio" in r)
    # without gold there is nothing to compare the label with
    assert not any("ttrl/label_accuracy" in r for r in rows)


@pytest.mark.integration
def test_graded_rewards_refuse_unlabelled_data_naming_the_alternatives(toy_model_dir, tmp_path):
    from rlrecipes.errors import UserError
    from rlrecipes.training.job import train

    data = unlabelled_questions(tmp_path / "questions.jsonl")
    with pytest.raises(UserError, match="no answers .* reward accuracy grades against them; label-free choices"):
        train(unlabelled_run(toy_model_dir, data, "recipe=grpo"), tmp_path / "run", log=lambda _: None)
