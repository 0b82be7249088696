"""Whole responses: each class of extraction bug from issue 12, with hand-written cases."""

import pytest

from rlrecipes.grading import extract, extract_answer, grade, is_equivalent

# GSM8K: the default prompt asks for a box; "####" next; then the final expression.
GSM8K = [
    ("Claire will eat $\\boxed{7}$ dozens of eggs in 4 weeks.", "7"),
    ("3 * 4 = 12 eggs a day.\n#### 12", "12"),
    ("So #### 5 is wrong; the answer is \\boxed{6} and 7 is not.", "6"),  # box before ####
    ("She has 5 apples, then 7 apples.", "7"),
    ("The total is $1,234.50 for 3 shirts.", "3"),  # the last number, never a merged list
    ("She paid $18 in total.", "18"),
]


@pytest.mark.parametrize("text, expected", GSM8K)
def test_gsm8k_style(text, expected):
    assert extract_answer(text, "gsm8k") == expected


# The unanchored fallback takes whole expressions, never a digit run cut out of one.
WHOLE = [
    ("the probability is $\\frac{1}{9}$", "\\frac{1}{9}"),
    ("the probability is \\frac{1}{9}.", "\\frac{1}{9}"),
    ("so the area is $7\\pi$ square units.", "7\\pi"),
    ("so the side is 2\\sqrt3", "2\\sqrt3"),
    ("Therefore $x \\geq 5$", "x \\geq 5"),
    ("Therefore x \\geq 5.", "x \\geq 5"),
    ("The point is (1, 2).", "(1, 2)"),
    ("so the matrix is $\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}$.", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"),
    (
        "The matrix is\n\\begin{pmatrix} 1 & 2 \\\\\n 3 & 4 \\end{pmatrix}\n",
        "\\begin{pmatrix} 1 & 2 \\\\\n 3 & 4 \\end{pmatrix}",
    ),
    ("The interval is [2, 5).", "[2, 5)"),
    ("Adding, 3 + 4 = 7 apples.", "7"),  # a worked calculation: its result
    ("We get 32, 349 as the two numbers", "349"),  # a list is not a thousands number
    ("The solutions are $x=2$ and $x=3$.", "x=2, x=3"),  # listed answers are one answer
    ("The roots are $2$, $3$, and $5$.", "2, 3, 5"),
    ("Then $c = 14,$ and $a_1 = 14 \\cdot 6^2 = 504.$", "504"),  # two statements are not a list
    ("\\begin{align*} A &= 2 + 3 \\\\\n &= 5.\n\\end{align*}", "5"),  # a derivation's last row
    (
        "\\begin{align*} M &= \\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}\n\\end{align*}",
        "M = \\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}",
    ),  # a matrix row is not a derivation row
]


@pytest.mark.parametrize("text, expected", WHOLE)
def test_fallback_takes_a_whole_expression(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "response, gold, expected",
    [
        ("the probability is $\\frac{1}{9}$", "9", False),
        ("the probability is $\\frac{1}{9}$", "1/9", True),
        ("so the area is $7\\pi$.", "7", False),
        ("so the side is $2\\sqrt3$.", "3", False),
        ("Therefore $x \\geq 5$", "5", False),
        ("The point is $(1, 2)$.", "2", False),
        ("The point is $(1, 2)$.", "(1,2)", True),
    ],
)
def test_fallback_verdicts(response, gold, expected):
    assert grade(response, gold) is expected


ANSWER_LINES = [
    ("Final Answer: The final answer is 7.78. I hope it is correct.", "7.78"),
    ("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct.", "\\frac{3}{4}"),
    ("work\n**Answer:** 42", "42"),
    ("work\n**Answer**: 42", "42"),
    ("work\nAnswer $ 9 $", "9"),
    ("work\n### Final Answer\n$\\boxed{12}$", "12"),
    ("first $\\boxed{3}$, then checking again...\nAnswer: 4", "4"),  # a later line beats a box
    ("Answer: 4. Let me double check: $\\boxed{5}$", "5"),  # and a later box beats a line
    ("The answer is $2$ and $3$.", "2, 3"),
    ("\\boxed{5}. I hope the answer is correct.", "5"),  # prose after "answer is" is no answer
]


@pytest.mark.parametrize("text, expected", ANSWER_LINES)
def test_answer_lines(text, expected):
    assert extract_answer(text) == expected


def test_minerva_style_reads_the_final_answer_sentence():
    text = "... so $v = 7.78$ km/s.\nFinal Answer: The final answer is 7.78. I hope it is correct."
    assert extract_answer(text, "minerva") == "7.78"
    assert extract_answer("no final sentence: 7.78", "minerva") is None
    assert grade(text, "7.78")


def test_answer_status_reports_several_boxes_and_no_answer():
    several = extract("first $\\boxed{3}$ and later $\\boxed{4}$")
    assert (several.answer, several.status) == ("4", "ambiguous")  # Qwen's rule, reported
    same = extract("$\\boxed{4}$ so again $\\boxed{4.0}$")
    assert same.status == "ok"  # the same answer twice is not ambiguous
    joined = extract("$x = \\boxed{2}$ or $x = \\boxed{3}$")
    assert (joined.answer, joined.status) == ("2, 3", "ok")  # boxes side by side: one list
    assert extract("I am not sure how to go on from here, sorry.").status == "none"
    assert extract("").status == "none"


def test_reasoning_drafts_before_think_end_do_not_count():
    assert extract_answer("<think>maybe \\boxed{3}</think>The answer is $\\boxed{4}$.") == "4"


def test_integers_compare_exactly_decimals_within_the_tolerance():
    assert not is_equivalent("1000.05", "1000")  # an integer gold: exact
    assert not is_equivalent("999.9999", "1000")
    assert is_equivalent("7.7801", "7.78")  # non-integer decimals: relative 1e-4
    assert not is_equivalent("7.7801", "7.78", rel_tol=0)
    assert is_equivalent("0.3333", "\\frac{1}{3}") and not is_equivalent("0.3333", "\\frac{1}{3}", rel_tol=0)
    assert not is_equivalent("0.33", "\\frac{1}{3}")


def test_the_thousands_rule_never_merges_a_list():
    assert not is_equivalent("32, 349", "32349")
    assert is_equivalent("32,349", "32349") and is_equivalent("11,\\! 111", "11111")
    assert is_equivalent("32, 349", "32, 349")


def test_a_gold_that_is_a_worked_solution_is_graded_by_its_box():
    assert grade("so $\\boxed{28\\%}$", "Solving, the loss is $\\boxed{28\\%}$.")
    assert grade("\\boxed{1, 2}", "\\boxed{1} papers and \\boxed{2} bins")
