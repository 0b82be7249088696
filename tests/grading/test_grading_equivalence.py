"""Hand-labelled equivalence cases: (prediction, gold, expected verdict)."""

import pytest

from rlrecipes.grading import grade, is_equivalent, normalize_answer

CASES = {
    "integers / padding / floats": [
        ("25", "025", True),
        ("\\boxed{025}", "25", True),
        ("27", "27.0", True),
        ("142", "142.0", True),
        ("-4", "-4.0", True),
        ("26", "27.0", False),
        ("1,000", "1000", True),
        ("10,\\!080", "10080", True),
        ("+3", "3", True),
    ],
    "fractions / decimals": [
        ("\\frac{1}{2}", "0.5", True),
        ("\\dfrac{1}{2}", "\\frac12", True),
        ("1/2", "\\tfrac{1}{2}", True),
        ("\\frac{2}{4}", "\\frac{1}{2}", True),
        ("0.3333", "\\frac{1}{3}", True),
        ("0.33", "\\frac{1}{3}", False),
        ("\\frac{1}{3}", "\\frac{1}{4}", False),
        (".5", "0.5", True),
        ("\\frac{-3}{4}", "-0.75", True),
        ("0.0000704", ".0000672", False),  # relative, not absolute
        ("0.00006720001", ".0000672", True),
        ("1234.5", "1234.6", True),
        ("1234", "1235", False),
    ],
    "radicals / symbolic": [
        ("\\sqrt{8}", "2\\sqrt{2}", True),
        ("2\\sqrt{3}", "2\\sqrt{2}", False),
        ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", True),
        ("11\\sqrt2", "11\\sqrt{2}", True),
        ("(x+1)^2", "x^2+2x+1", True),
        ("x^2+1", "x^2-1", False),
        ("2\\pi", "\\pi \\cdot 2", True),
    ],
    "intervals / sets / tuples / matrices": [
        ("(-\\infty, 3]", "(-\\infty,3]", True),
        ("(-\\infty, 3)", "(-\\infty,3]", False),
        ("\\left[ 2, 5 \\right)", "[2,5)", True),
        ("\\{2, 1\\}", "\\{1,2\\}", True),
        ("\\{1, 3\\}", "\\{1,2\\}", False),
        ("(3, \\pi/2)", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        ("(\\frac{\\pi}{2}, 3)", "\\left( 3, \\frac{\\pi}{2} \\right)", False),
        ("x \\in [2, 5)", "[2,5)", True),
        ("2(-\\frac{1}{2}, \\frac{7}{2})", "(-\\frac{1}{2}, \\frac{7}{2})", False),  # math-verify: a set
        ("(-\\frac{1}{2}, \\frac{7}{2})+1", "(-\\frac{1}{2}, \\frac{7}{2})", False),
        ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", True),
        ("\\begin{pmatrix}1\\\\3\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", False),
    ],
    "units / percent / degrees": [
        ("5", "5\\mathrm{cm}", True),
        ("5 \\text{ cm}", "5", True),
        ("864", "864 \\mbox{ inches}^2", True),
        ("5.4", "5.4 \\text{ cents}", True),
        ("1.6", "1.6 \\mathrm{~cm}", True),
        ("10", "10\\%", True),
        ("0.1", "10\\%", True),
        ("10\\%", "0.1", True),
        ("100", "10\\%", False),
        ("336", "336^\\circ", True),
        ("336^{\\circ}", "336", True),
        ("90", "90^\\circ", True),
        ("\\frac{270}{7}", "\\frac{270}7\\text{ degrees}", True),
        ("\\$18.90", "18.9", True),
    ],
    "equations / variables": [
        ("x = 5", "5", True),
        ("5", "x=5", True),
        ("2x + 3", "y = 2x + 3", True),
        ("y = 2x + 4", "y = 2x + 3", False),
        ("3 n", "3n", True),
        ("2n", "3n", False),
    ],
    "scientific notation": [
        ("4.5 \\times 10^{33}", "4.5e33", True),
        ("45 \\times 10^{32}", "4.5e33", True),
        ("4.4e33", "4.5e33", False),
    ],
    "text answers / choices": [
        ("Evelyn", "\\text{Evelyn}", True),
        ("evelyn", "\\text{Evelyn}", True),
        ("Evenly", "\\text{Evelyn}", False),  # sympy would call these equal (commuting symbols)
        ("\\text{east}", "east", True),
        ("C", "\\text{(C)}", True),
        ("(C)", "C", True),
        ("B", "\\text{(C)}", False),
        ("\\textbf{(E)}", "E", True),
        ("no", "on", False),
    ],
}


@pytest.mark.integration
@pytest.mark.parametrize(
    "pred, gold, expected",
    [case for group in CASES.values() for case in group],
    ids=[f"{name}:{c[0]}|{c[1]}" for name, group in CASES.items() for c in group],
)
def test_hand_labelled(pred, gold, expected):
    assert is_equivalent(pred, gold) is expected


RESPONSES = [  # full responses: the answer is extracted first
    ("We find $x = 3$, so the answer is $\\boxed{025}$.", "25", True),
    ("Work...\nAnswer: 336", "336^\\circ", True),
    ("... hence \\boxed{\\dfrac{3}{4}}.", "0.75", True),
    ("I am not sure.", "5", False),
    ("The answer is 42.", "42", True),
    # a long, already-extracted answer is compared whole, not by its last number (2)
    ("\\frac{x^2 + 2x + 1}{x^2 - 1} + \\frac{x^2 + 4x + 4}{x^2 - 4} - \\frac{2x^2 + 6x + 4}{x^2 + x - 2}", "2", False),
    ("", "5", False),
    (None, "5", False),
]


@pytest.mark.parametrize("response, gold, expected", RESPONSES)
def test_grade_full_responses(response, gold, expected):
    assert grade(response, gold) is expected


def test_grade_answer_line_style_ignores_boxes():
    assert grade("so \\boxed{7}", "7", style="answer_line") is False
    assert grade("so\nAnswer: 7", "7", style="answer_line") is True


def test_missing_gold_is_never_correct():
    assert is_equivalent("5", None) is False
    assert is_equivalent("5", "") is False


@pytest.mark.parametrize(
    "raw, key",
    [
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})"),
        ("\\text{(C)}", "C"),
        ("336^\\circ", "336"),
        ("025", "25"),
        ("27.0", "27"),
        ("$\\dfrac{1}{2}$", "\\frac{1}{2}"),
        ("11,\\! 111,\\! 111,\\! 100", "11111111100"),
    ],
)
def test_normalize_answer(raw, key):
    assert normalize_answer(raw) == key


def test_constants_that_clearly_differ_skip_the_symbolic_comparison():
    from rlrecipes.grading.equivalence import _clearly_different

    assert _clearly_different("\\sqrt{2}", "\\frac{7}{5}", 3)  # 1.414 vs 1.4
    assert _clearly_different("3\\pi", "9", 3)
    # close enough that math-verify must decide (it rounds to 6 decimals)
    assert not _clearly_different("\\frac{1}{3}", "0.3333", 3)
    assert not _clearly_different("\\frac{\\sqrt{3}}{2}", "0.5\\sqrt{3}", 3)
    # not constants: variables, sets, intervals, equations
    for pred, gold in [("x+1", "2"), ("\\{1, 2\\}", "3"), ("(-\\infty, 3]", "3"), ("x = 5", "4")]:
        assert not _clearly_different(pred, gold, 3), (pred, gold)
    # and the verdicts stay math-verify's
    assert is_equivalent("\\frac{\\sqrt{3}}{2}", "0.5\\sqrt{3}") and not is_equivalent("3\\pi", "9")


@pytest.mark.parametrize(
    "response, gold",
    [
        ("So x equals 5", "5"),
        ("The result is 7", "7"),
        ("He has 1,234 apples", "1234"),  # sentences
        ("x = 5", "5"),
        ("\\frac{1}{2}", "0.5"),
        ("Evelyn", "Evelyn"),
        ("no solution", "\\text{no solution}"),
        ("10 \\text{ cm}", "10"),  # answers written alone are compared whole
    ],
)
def test_one_line_responses_grade_by_their_answer(response, gold):
    assert grade(response, gold)


def test_a_whole_answer_in_words_is_its_number():
    assert is_equivalent("six", "6") and is_equivalent("\\text{Seven}", "7")
    assert not is_equivalent("none", "1")
