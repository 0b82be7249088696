"""The verdict parser on hand-written judge outputs: every status, whitespace, ambiguity."""

import pytest

from rlrecipes.judge.verdicts import parse, verdict_verifier


@pytest.mark.parametrize(
    "text, status, verdict",
    [
        ("<think>B adds wrong</think><answer>[[A]]</answer>", "ok", "A"),
        ("<think>x</think>\n<answer>  [[ B ]]\n</answer>  ", "ok", "B"),  # whitespace tolerated
        ("<answer>[[A]]</answer> so <answer>[[A]]</answer>", "ok", "A"),  # a restated verdict agrees
        ("<answer>[[A]] or [[B]]</answer>", "both", None),
        ("<answer>[[A]]</answer><answer>[[B]]</answer>", "both", None),
        ("I prefer [[A]]", "none", None),  # no answer tag
        ("<answer>A</answer>", "none", None),
        ("<answer>[[a]]</answer>", "none", None),  # letters are not case-folded
        ("", "none", None),
    ],
)
def test_pairwise_verdicts(text, status, verdict):
    j = parse(text, "pairwise")
    assert (j.status, j.verdict) == (status, verdict)


@pytest.mark.parametrize(
    "text, status, verdict, scores",
    [
        ("<score_A> 7.5 </score_A> <score_B>3</score_B>", "ok", "A", (7.5, 3.0)),
        ("<score_A>2</score_A><score_B>9.9</score_B>", "ok", "B", (2.0, 9.9)),
        ("<score_A>5</score_A><score_B>5.0</score_B>", "tie", None, (5.0, 5.0)),
        ("<score_A>11</score_A><score_B>3</score_B>", "out_of_range", None, None),
        ("<score_A>-1</score_A><score_B>3</score_B>", "out_of_range", None, None),
        ("<score_A>4</score_A>", "none", None, None),
        ("<score_A>4</score_A><score_A>6</score_A><score_B>1</score_B>", "both", None, None),
    ],
)
def test_pairwise_scores(text, status, verdict, scores):
    j = parse(text, "pairwise_scores")
    assert (j.status, j.verdict, j.scores) == (status, verdict, scores)


@pytest.mark.parametrize(
    "text, status, score",
    [
        ("<think>ok</think><score> 8.5 </score>", "ok", 8.5),
        ("<score>0</score>", "ok", 0.0),
        ("<score>10</score>", "ok", 10.0),
        ("<score>10.1</score>", "out_of_range", None),
        ("<score>7</score><score>3</score>", "both", None),
        ("<score>seven</score>", "none", None),
    ],
)
def test_pointwise_scores(text, status, score):
    j = parse(text, "pointwise")
    assert (j.status, j.score) == (status, score)


def test_verifier_is_right_only_for_the_gold_verdict():
    verify = verdict_verifier("pairwise")
    assert verify("<answer>[[B]]</answer>", "B") and not verify("<answer>[[B]]</answer>", "A")
    assert not verify("<answer>[[A]][[B]]</answer>", "A")
    assert verdict_verifier("pointwise")("<score>3</score>", "rejected")  # pointwise: the score parsed
    assert not verdict_verifier("pointwise")("<score>13</score>", "chosen")
