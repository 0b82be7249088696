"""extract_answer: each style on hand-written responses, with exact expectations."""

import pytest

from rlrecipes.grading import extract_answer, last_boxed

BOXED = [
    ("so the answer is $\\boxed{5}$.", "5"),
    ("first \\boxed{3}, then corrected: \\boxed{4}", "4"),
    ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}"),
    ("nested \\boxed{\\{1, \\{2\\}\\}}", "\\{1, \\{2\\}\\}"),
    ("\\fbox{7} in the old style", "7"),
    ("$\\boxed 9$", "9"),
    ("\\boxed{\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"),
    ("complete \\boxed{12} then truncated \\boxed{1", "12"),  # unclosed last box skipped
    ("no box at all: 42", None),
    ("\\boxedfoo{3}", None),  # a different command, not a box
]


@pytest.mark.parametrize("text, expected", BOXED)
def test_boxed(text, expected):
    assert extract_answer(text, style="boxed") == expected
    assert last_boxed(text) == expected


ANSWER_LINE = [
    ("Solving...\nAnswer: 42", "42"),
    ("answer: 3\nmore work\nANSWER : $17$", "17"),  # last match, case-insensitive, unwrapped
    ("Answer: 1\n" + "x" * 400 + "\nno final line", None),  # outside the last 300 chars
    ("Answer: 1\n" + "x" * 400 + "\nAnswer: 2", "2"),
    ("\\boxed{5}", None),  # DAPO's checker ignores boxes
]


@pytest.mark.parametrize("text, expected", ANSWER_LINE)
def test_answer_line(text, expected):
    assert extract_answer(text, style="answer_line") == expected


GSM8K = [
    ("Natalia sold 48/2 = 24 clips in May.\n#### 72", "72"),
    ("total 1,234 apples\n#### 1,234", "1234"),
    ("she has 5 apples, then 7 apples", "7"),  # no ####: last number
    ("#### -3.5", "-3.5"),
    ("no numbers here", None),
]


@pytest.mark.parametrize("text, expected", GSM8K)
def test_gsm8k(text, expected):
    assert extract_answer(text, style="gsm8k") == expected


AUTO = [
    ("blah \\boxed{2}\nAnswer: 3", "3"),  # a later answer line beats an earlier box
    ("so \\boxed{2}; let us check our answer: 2 + 0 = 2", "2"),  # "answer:" mid-sentence does not
    ("work\nAnswer: 3", "3"),  # then the answer line
    ("So the answer is $\\frac{1}{2}$ because ...", "\\frac{1}{2}"),
    ("Thus the final answer is 3.5.", "3.5"),
    ("I computed 12 and then 13 apples", "13"),  # finally the last number
    ("", None),
    ("I am not sure how to solve this one at all", None),  # prose, not an answer
]


@pytest.mark.parametrize("text, expected", AUTO)
def test_auto(text, expected):
    assert extract_answer(text, style="auto") == expected


def test_unknown_style_names_the_valid_ones():
    with pytest.raises(ValueError, match="auto, boxed, answer_line, gsm8k, minerva, none"):
        extract_answer("x", style="latex")


def test_none_text():
    assert extract_answer(None) is None
