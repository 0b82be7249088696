"""RM-R1's way of judging pairs (arXiv 2505.02387; RM-R1-UIUC/RM-R1 at d4c2542): each pair once,
the chosen response first in every other pair (rm_r1/dataset/mix_data/mix_data.py:146-153), its
RL data holding the judge prompts already written with the winner named (mix_data.py:185-188),
and its reward reading the output's last 80 characters (rm_r1/verl/utils/reward_score/
lm_as_judge.py:3-17)."""

from __future__ import annotations

import json
import re

import pytest

from rlrecipes.errors import ConfigError, DataError
from rlrecipes.judge.pairs import Pair, PairFields, judge_rows, one_order, to_prepared
from rlrecipes.judge.rewards import rm_r1_verdict
from rlrecipes.recipes.j1 import J1
from rlrecipes.rewards import RewardContext, build_reward
from tests.conftest import compose

A, B = "<answer>[[A]]</answer>", "<answer>[[B]]</answer>"  # 8 + 5 + 9 = 22 characters each


def test_rm_r1_reward_reads_only_the_last_80_characters():
    assert len(A) == 22
    assert rm_r1_verdict("<eval>...</eval>\n" + A, "A") == 1.0
    assert rm_r1_verdict("<eval>...</eval>\n" + A, "B") == -1.0
    assert rm_r1_verdict(B, "B") == 1.0
    assert rm_r1_verdict(A + B, "A") == -1.0  # both verdicts: wrong (lm_as_judge.py:7)
    assert rm_r1_verdict("no verdict at all", "A") == -1.0
    # 22 + 58 = 80 characters: the tag is the tail's start; one more character cuts its "<"
    assert rm_r1_verdict(A + "x" * 58, "A") == 1.0
    assert rm_r1_verdict(A + "x" * 59, "A") == -1.0
    # a verdict early in a long output, then the other at the end: only the end counts
    assert rm_r1_verdict(A + "y" * 100 + B, "A") == -1.0
    assert rm_r1_verdict("<answer> [[A]] </answer>", "A") == -1.0  # the exact tag only (J1's parser takes spaces)
    assert rm_r1_verdict("x", "A", wrong=0.0) == 0.0
    with pytest.raises(ValueError, match="model_a"):
        rm_r1_verdict(A, "model_a")


def test_the_registered_reward_takes_the_recipes_wrong_reward():
    fn = build_reward("rm_r1_verdict", RewardContext(verify=lambda c, g: False, recipe={"wrong_reward": -1.0}))
    assert fn(completions=["..." + A, "..." + A, "none"], answer=["A", "B", "A"]) == [1.0, -1.0, -1.0]
    zero = build_reward("rm_r1_verdict", RewardContext(verify=lambda c, g: False, recipe={"wrong_reward": 0.0}))
    assert zero(completions=["none"], answer=["B"]) == [0.0]


def test_one_order_keeps_ab_for_even_pairs_and_ba_for_odd_ones():
    pairs = [Pair(str(i), f"q{i}", f"good{i}", f"bad{i}") for i in range(3)]
    rows = judge_rows(pairs, "pairwise", "compact", orders="one")
    assert [(r["id"], r["answer"]) for r in rows] == [("0|AB", "A"), ("1|BA", "B"), ("2|AB", "A")]
    # the compact prompt shows A then B: the chosen response first in pairs 0 and 2 only
    assert [r["problem"] for r in rows] == [
        "q0\nA: good0\nB: bad0\nBetter?",
        "q1\nA: bad1\nB: good1\nBetter?",
        "q2\nA: good2\nB: bad2\nBetter?",
    ]
    both = judge_rows(pairs, "pairwise", "compact")
    assert len(both) == 6 and one_order(both) == rows
    with pytest.raises(ValueError, match="both-order rows"):
        one_order(rows)
    with pytest.raises(Exception, match="recipe.judge=pointwise has no order"):
        judge_rows(pairs, "pointwise", "compact", orders="one")


CHATS = [
    {"context_messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U0"}], "winner": "model_a"},
    {"context_messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "winner": "model_b"},
    {"context_messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U2"}], "winner": "tie"},
]
WRITTEN = PairFields("context_messages", None, None, label="winner")


def test_written_judge_prompts_are_one_row_each_in_the_files_order():
    loaded = to_prepared(CHATS, "rm_r1.jsonl", WRITTEN)
    assert loaded.rows == [
        {"id": "0|AB", "problem": "U0", "answer": "A"},  # the user turn; the system turn is data.system_prompt
        {"id": "1|BA", "problem": "U1", "answer": "B"},
    ]
    assert loaded.report() == "2 judge prompts from rm_r1.jsonl; 1 rows left out: row 2 (winner='tie' names no winner)"
    assert len(to_prepared(CHATS, "f", WRITTEN, limit=1).rows) == 1
    with pytest.raises(DataError, match="no row has field 'verdict'"):
        to_prepared(CHATS, "f", PairFields("context_messages", None, None, label="verdict"))


def test_the_recipe_reads_written_prompts_from_a_file(tmp_path):
    path = tmp_path / "rlvr.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in CHATS))
    cfg = compose(*RM_R1_LIKE, f"recipe.pairs={path}")
    J1.validate(cfg)
    problems = J1(cfg.recipe).problem_set(cfg.data)
    assert [(r["id"], r["answer"]) for r in problems.train] == [("0|AB", "A"), ("1|BA", "B")]
    assert problems.verify("... " + B, "B") and not problems.verify("... " + B, "A")
    assert J1(cfg.recipe).hooks(None) == []  # one row per pair: nothing to keep together


RM_R1_LIKE = [
    "recipe=j1",
    "recipe.prompt=compact",
    "recipe.pair_orders=one",
    "recipe.prompt_field=context_messages",
    "recipe.chosen_field=null",
    "recipe.rejected_field=null",
    "recipe.label_field=winner",
    "recipe.rewards=[{name: rm_r1_verdict, weight: 1.0}]",
    "data.source=file",
    "data.path=unused.jsonl",
]


def test_bad_order_settings_are_one_line():
    for overrides, message in [
        (["recipe.rejected_field=rejected"], "recipe.chosen_field=null and recipe.rejected_field=rejected: set both"),
        (
            ["recipe.label_field=null"],
            "written judge prompts (recipe.chosen_field=null, recipe.rejected_field=null) need",
        ),
        (["recipe.pair_orders=both"], "written judge prompts hold each pair in the one order the file gives"),
        (["recipe.rewards=[{name: verdict}]"], "the 'verdict' reward scores both orders of a pair together"),
        (["recipe.judge=pairwise_scores"], "recipe.pair_orders=one judges each pair once by a verdict"),
        (["recipe.reward=consistency"], "recipe.reward=consistency is a setting of the 'verdict' reward"),
        (["recipe.rewards=[{name: accuracy}]"], "recipe=j1 trains on a verdict reward"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            J1.validate(compose(*RM_R1_LIKE, "recipe.pairs=x.jsonl", *overrides))
    with pytest.raises(ConfigError, match=re.escape("recipe.pair_orders='three'; valid: both, one")):
        compose("recipe=j1", "recipe.pair_orders=three")  # at composition, before anything loads


def test_synthetic_pairs_train_in_one_order_too():
    cfg = compose(
        "recipe=j1",
        "recipe.prompt=compact",
        "recipe.pair_orders=one",
        "recipe.rewards=[{name: rm_r1_verdict, weight: 1.0}]",
        "recipe.max_pairs=4",
        "recipe.max_eval_pairs=3",
    )
    J1.validate(cfg)
    problems = J1(cfg.recipe).problem_set(cfg.data)
    # pair i keeps AB when i is even, BA when odd; one row per pair, so max_pairs rows of 4 pairs
    assert [r["id"].rpartition("|")[2] for r in problems.train] == ["AB", "BA", "AB", "BA"]
    assert len({r["id"].rpartition("|")[0] for r in problems.train}) == 4
    assert [r["answer"] for r in problems.eval] == ["A", "B", "A"]
    assert len(problems.task.train) > 2 * len(problems.train)  # the warm-start still imitates both orders
