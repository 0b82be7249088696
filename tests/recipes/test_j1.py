"""J1: config and choices, the verdict column on scripted judgements, multitask rows, and tiny runs
(one process and two)."""

import json
import re

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.recipes.j1 import J1
from rlrecipes.rewards import CompletionGroup
from rlrecipes.rewards.j1 import pair_reward
from tests.conftest import compose

TOY_JUDGE = [
    "recipe=j1",
    "recipe.prompt=compact",
    "model.toy.sft_max_new_tokens=24",
    "trainer.max_completion_length=24",
]


@pytest.mark.integration
def test_recipe_defaults_and_one_line_errors():
    r = compose("recipe=j1").recipe
    assert (r.judge, r.prompt, r.reward, r.wrong_reward, r.format_weight, r.pairs) == (
        "pairwise",
        "j1",
        "correctness",
        0.0,
        0.0,
        None,
    )
    assert [spec.name for spec in r.rewards] == ["verdict"] and r.loss_type == "dapo"  # registered: rewards/j1.py
    J1.validate(compose("recipe=j1", "recipe.prompt=compact"))
    for override, message in [
        ("recipe.judge=pairs", "recipe.judge='pairs'; valid: pairwise, pairwise_scores, pointwise, multitask"),
        ("recipe.prompt=fancy", "recipe.prompt='fancy'; valid: j1, rm_r1, compact"),
        ("recipe.reward=vote", "recipe.reward='vote'; valid: correctness, consistency"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            compose("recipe=j1", override)  # the choices fail at composition, before anything loads
    for overrides, message in [
        (["recipe.judge=pointwise", "recipe.reward=consistency"], "recipe.judge=pointwise has no orders"),
        (["recipe.judge=pointwise", "recipe.prompt=rm_r1"], "recipe.prompt=rm_r1 (chain of rubrics) ends in a verdict"),
        (
            ["recipe.prompt=compact", "trainer.prompts_per_rollout=5"],
            "trainer.prompts_per_rollout=5 must be a multiple of 2",
        ),
        (
            ["recipe.prompt=compact", "data.source=file", "data.path=x.jsonl"],
            "recipe.pairs=null builds pairs from the synthetic",
        ),
        ([], "recipe.prompt=j1 writes judge prompts longer than the toy model's 512-character context"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            J1.validate(compose("recipe=j1", *overrides))


def test_choices_are_the_judge_packages():
    from rlrecipes.judge import prompts
    from rlrecipes.recipes.j1 import J1Config
    from rlrecipes.rewards.j1 import VerdictReward

    assert J1Config.judge is prompts.JudgeFormat.pairwise and J1Config.prompt is prompts.PromptStyle.j1
    assert prompts.FORMATS == ("pairwise", "pairwise_scores", "pointwise")  # a judgement's formats
    assert VerdictReward.values() == ("correctness", "consistency")


def score(reward, outputs: dict[str, list[str]]):
    """The column `reward` scores for groups {row id: completions}, and what it logged."""
    logged = {}
    groups = [CompletionGroup(row, texts, {"id": [row] * len(texts)}) for row, texts in outputs.items()]
    return reward(groups, logged.__setitem__), logged


A, B = "<answer>[[A]]</answer>", "<answer>[[B]]</answer>"


def test_verdict_column_is_correctness_per_order_and_logs_the_diagnostics():
    scores, logged = score(pair_reward("pairwise", wrong=-1.0), {"p|AB": [A, B], "p|BA": [B, "?"]})
    assert scores == [[1.0, -1.0], [1.0, -1.0]]  # the unparseable verdict is wrong too
    assert logged["j1/consistent"] == 0.5 and logged["j1/parse_none"] == 1 / 4
    assert logged["j1/first_position_share"] == 1 / 3


def test_consistency_column_from_both_orders_of_each_pair():
    outputs = {"p|AB": [A, A], "q|AB": [B, A], "p|BA": [B, A], "q|BA": [B, B]}
    scores, logged = score(pair_reward("pairwise", consistency=True, wrong=-1.0), outputs)
    # p: index 0 right in both orders, index 1 wrong in BA; q: index 0 wrong in AB, index 1 right in both
    assert scores == [[1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]]
    assert logged["j1/consistent"] == 0.5 and logged["j1/first_position_share"] == 4 / 8
    assert logged["j1/parse_ok"] == 1


def test_pointwise_pairs_and_a_missing_partner():
    outputs = {
        "p|chosen": ["<score>8</score>", "<score>5</score>"],
        "p|rejected": ["<score>3</score>", "<score>5</score>"],
    }
    scores, logged = score(pair_reward("pointwise"), outputs)
    assert scores == [[1.0, 0.0], [1.0, 0.0]]  # the 5-5 tie is wrong
    assert logged["j1/pointwise_right"] == 0.5
    with pytest.raises(RuntimeError, match="not kept together"):
        score(pair_reward("pointwise"), {"p|chosen": ["x", "y"]})


def test_toy_problem_set_is_both_orders_and_keyed_apart_from_the_arithmetic_toy():
    cfg = compose(*TOY_JUDGE, "recipe.max_pairs=10")
    recipe = J1(cfg.recipe)
    problems = recipe.problem_set(cfg.data)
    assert len(problems.train) == 20 and [r["answer"] for r in problems.train[:2]] == ["A", "B"]
    assert problems.train[0]["id"].endswith("|AB") and problems.train[1]["id"].endswith("|BA")
    assert problems.verify("<answer>[[A]]</answer>", "A")
    assert recipe.warm_start_key(cfg.data) != cfg.data.synthetic


# A scripted judge (tests/helpers/scripted_model.py, its tokenizer with the verdict's tags as
# tokens) that answers <answer>[[A]]</answer> to every judge prompt: it prefers whatever is shown
# first, the position bias J1 trains against.
VERDICT_TAGS = ("<answer>", "</answer>", "[[A]]")


@pytest.mark.integration
def test_tiny_judge_run_logs_verdicts_and_diagnostics(tmp_path):
    from rlrecipes.training.job import train
    from tests.helpers.scripted_model import ASSISTANT, tagged_chain, tagged_model

    script = tagged_chain(ASSISTANT, "<answer>[[A]]</answer>", VERDICT_TAGS)
    judge = tagged_model(tmp_path / "judge", script, VERDICT_TAGS)
    cfg = compose(*TOY_JUDGE, f"model.name_or_path={judge}", "recipe.reward=consistency", "recipe.max_eval_pairs=8")
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "j1/consistent" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    for r in steps:
        # a step: 2 pairs, each in both orders, 4 judgements per row: 16 verdicts, all [[A]] and parsed
        assert r["j1/parse_ok"] == 1.0 and r["j1/first_position_share"] == 16 / 16
        # rollout i of order AB (gold A: right) is paired with rollout i of order BA (gold B:
        # wrong): right in both orders in 0 of the 8 index pairs
        assert r["j1/consistent"] == 0 / 8 and "rewards/verdict/mean" in r
        assert r["rewards/verdict/mean"] == pytest.approx(r["j1/consistent"])  # the column is the consistency
        assert r["accuracy"] == 8 / 16  # the correctness monitor: right in the 8 AB judgements
    # held-out verdict accuracy over both orders: the 8 pairs' AB rows right, their BA rows wrong
    assert summary["accuracy_before"] == 8 / 16 and summary["accuracy_after"] == 8 / 16


@pytest.mark.integration
def test_multitask_rows_and_their_column():
    cfg = compose(*TOY_JUDGE, "recipe.judge=multitask", "recipe.max_pairs=3", "trainer.prompts_per_rollout=8")
    J1.validate(cfg)
    recipe = J1(cfg.recipe)
    problems = recipe.problem_set(cfg.data)
    assert [r["id"].split("|")[1] for r in problems.train[:4]] == ["AB", "BA", "chosen", "rejected"]
    assert "<score_A>" in problems.task.solution(problems.train[0]) and "<score>" in problems.task.solution(
        problems.train[2]
    )
    from rlrecipes.training.plan import reward_context

    fns = recipe.reward_functions(reward_context(cfg, problems.verify))
    assert [fn.__name__ for fn, _ in fns] == ["verdict"]
    with pytest.raises(ConfigError, match="must be a multiple of 4"):
        J1.validate(compose("recipe=j1", "recipe.judge=multitask", "trainer.prompts_per_rollout=6"))
    pas = "<score_A>9</score_A><score_B>2</score_B>"
    outputs = {
        "p|AB": [pas, pas],
        "p|BA": [pas, pas],
        "p|chosen": ["<score>8</score>"] * 2,
        "p|rejected": ["<score>8</score>", "<score>1</score>"],
    }
    column, logged = score(pair_reward("multitask"), outputs)
    assert column == [[1.0, 1.0], [0.0, 0.0], [0.0, 1.0], [0.0, 1.0]]  # PaS correctness; PoS: a tie, then 8 > 1
    assert logged["j1/consistent"] == 0.0 and logged["j1/pointwise_right"] == 0.5


@pytest.mark.integration
def test_both_orders_share_a_batch_on_two_processes(tmp_path):
    """A real 2-process launch: the consistency column needs both orders of every pair in the
    gathered batch (it raises otherwise), and every step logs it."""
    from tests.test_train_multiprocess import launch, metrics

    out = launch(
        2,
        *TOY_JUDGE,
        "recipe.reward=consistency",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        "trainer.preflight=false",  # what is checked is the batch, not learning: a cut first rollout would be refused
        f"run_dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["world_size"] == 2
    rows = metrics(tmp_path / "run")
    assert len(rows) == 2 and all("j1/consistent" in r and "rewards/verdict/mean" in r for r in rows)
