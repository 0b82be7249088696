"""Search-R1's exact match (qa_em.py), hand-checked: normalisation, the last answer block,
several gold answers, the substring variant, and no credit without an answer block."""

import pytest

from rlrecipes.grading.exact_match import exact_match, last_answer, normalize_qa
from rlrecipes.rewards import RewardContext, build_reward


def test_normalisation_is_squads():
    # lower case, punctuation out, then the articles, then whitespace squashed
    assert normalize_qa("  The  Eiffel-Tower, Paris! ") == "eiffeltower paris"
    assert normalize_qa("A cat and an owl") == "cat and owl"
    assert normalize_qa("Theatre") == "theatre"  # "the" only as a word


def test_the_last_complete_answer_block_is_read():
    assert last_answer("<answer> Rome </answer> then <answer>Paris</answer>") == "Paris"
    assert last_answer("<answer>Paris") is None
    assert last_answer("no answer") is None
    assert last_answer("<answer>\nNew\nYork\n</answer>") == "New\nYork"


@pytest.mark.parametrize(
    "text, gold, substring, expected",
    [
        ("<answer>the Pelimon.</answer>", "Pelimon", False, True),
        ("<answer>Pelimon city</answer>", "Pelimon", False, False),
        ("<answer>Pelimon city</answer>", "Pelimon", True, True),
        ("<answer>Rome</answer>", ["Paris", "rome"], False, True),  # any gold answer
        ("<answer>Rome</answer><answer>Oslo</answer>", "Rome", False, False),  # the last block counts
        ("Pelimon", "Pelimon", True, False),  # no answer block: no credit
        ("<answer>x</answer>", "", True, False),  # an empty gold answer is inside nothing
    ],
)
def test_exact_match_by_hand(text, gold, substring, expected):
    assert exact_match(text, gold, substring) is expected


def test_the_reward_is_one_or_zero_and_none_without_gold():
    em = build_reward("exact_match", RewardContext(verify=lambda c, g: False))
    texts = ["<answer>Pelimon</answer>", "<answer>Vipanan</answer>", "<answer>Pelimon</answer>"]
    assert em(completions=texts, answer=["Pelimon", "Pelimon", None]) == [1.0, 0.0, None]
    subem = build_reward("exact_match", RewardContext(verify=lambda c, g: False, options={"subem": True}))
    assert subem(completions=["<answer>in Pelimon</answer>"], answer=["Pelimon"]) == [1.0]
