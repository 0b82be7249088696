"""DAPO's answer-line reward: the last "Answer:" in the last 300 characters, Minerva
normalisation, exact equality, +1 / -1. Expected values worked out by hand from the
rules of verl's math_dapo.py, which DAPO trained with (paper Eq. 7)."""

import pytest
from omegaconf import OmegaConf

from rlrecipes.errors import UserError
from rlrecipes.grading.extract import raw_answer_line
from rlrecipes.rewards import RewardContext, build_reward
from rlrecipes.rewards.dapo import dapo_reward, dapo_score, minerva_normalize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Answer: 42", "42"),
        ("answer:7\nmore text", "7"),  # case-insensitive; stops at the line end
        ("Answer: 1\nthen\nAnswer : 2", "2"),  # the last match wins
        ("ANSWER:   x = 5 ", "x = 5 "),  # raw text; normalisation comes later
        ("The result is \\boxed{3}", None),  # no answer line: DAPO gives -1
        ("Answer:\n", None),  # nothing after the colon on that line
    ],
)
def test_answer_line_extraction(text, expected):
    assert raw_answer_line(text) == expected


def test_only_the_last_300_characters_are_read():
    early = "Answer: 12\n" + "x" * 300
    assert raw_answer_line(early) is None
    assert raw_answer_line("Answer: 12\n" + "x" * 288) == "12"  # 11 + 288 = 299 chars: in range


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("42", "42"),
        ("x = 5", "5"),  # right-hand side of the last "="
        ("$1,000$.", "1000"),  # math delimiters, a trailing period and the separator go
        ("10 degrees", "10"),  # spaces and unit words go
        ("\\boxed{17}", "17"),
        ("\\text{(B)}", "(B)"),
        ("\\frac12", "\\frac{1}{2}"),  # shorthand TeX is spelled out
        ("\\sqrt2", "\\sqrt{2}"),
        ("3^\\circ", "3"),
        ("1,2,3", "123"),  # commas go whenever what is left is all digits, even in a list
        ("1, 2", "12"),
    ],
)
def test_minerva_normalisation(raw, expected):
    assert minerva_normalize(raw) == expected


def test_score_is_plus_one_minus_one():
    assert dapo_score("work...\nAnswer: 1,000", "1000") == (1.0, True, "1000")
    assert dapo_score("Answer: 999", "1000") == (-1.0, False, "999")
    assert dapo_score("\\boxed{1000}", "1000") == (-1.0, False, None)
    # exact string equality after normalisation: equal values written differently differ
    assert dapo_score("Answer: 0.5", "\\frac{1}{2}")[0] == -1.0


def test_reward_function_skips_rows_without_gold():
    assert dapo_reward(["Answer: 3", "Answer: 3", "Answer: 4"], ["3", None, "3"]) == [1.0, None, -1.0]


def _ctx(verifier):
    return RewardContext(
        verify=lambda text, gold: text.endswith(str(gold)), recipe=OmegaConf.create({"verifier": verifier})
    )


def test_factory_verifier_switch():
    minerva = build_reward("dapo_answer", _ctx("minerva"))
    task = build_reward("dapo_answer", _ctx("task"))
    completions, golds = ["Answer: 4", "the end 4"], ["4", "4"]
    assert minerva(completions=completions, answer=golds) == [1.0, -1.0]
    assert task(completions=completions, answer=golds) == [1.0, 1.0]
    assert minerva.__name__ == "dapo_answer"
    with pytest.raises(UserError, match="recipe.verifier='sympy'; valid: minerva, task"):
        build_reward("dapo_answer", _ctx("sympy"))
