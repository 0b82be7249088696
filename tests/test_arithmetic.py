"""The shared arithmetic evaluator (rlrecipes/arithmetic.py): the three number modes, every cap,
what it refuses, and the settings each caller (synthetic tasks, calculator, Countdown reward)
evaluates with. Values by hand."""

from __future__ import annotations

import pytest

from rlrecipes.arithmetic import NotEvaluated, Numbers, evaluate_arithmetic

NO_CAPS = {"max_digits": None, "max_exponent": None, "max_length": None}


def value(text: str, **settings):
    return evaluate_arithmetic(text, **settings)


def refused(text: str, message: str, **settings) -> None:
    with pytest.raises(NotEvaluated, match=message):
        evaluate_arithmetic(text, **settings)


# ------------------------------------------------------------------------- number modes
def test_python_numbers_keep_integers_exact_and_divide_into_floats():
    assert value("(2+3)**3 - 7//2") == 125 - 3
    assert value("-2**10 % 7") == 5  # -(2**10) = -1024 = -147*7 + 5
    assert value("7/2") == 3.5
    six = value("12/2")
    assert six == 6.0 and isinstance(six, float)
    assert value("99999999999999999 - 99999999999999998") == 1  # exact: no float on the way


def test_float_numbers_turn_every_literal_into_a_float_first():
    six = value("2*3", numbers=Numbers.float)
    assert six == 6.0 and isinstance(six, float)
    # both literals round to 1e17 (floats are 16 apart there), so their difference is 0
    assert value("99999999999999999 - 99999999999999998", numbers=Numbers.float) == 0.0
    assert value("(1 + 2) / 3", numbers=Numbers.float) == 1.0
    refused("9" * 400, "result too large", numbers=Numbers.float, **NO_CAPS)  # past the largest float


def test_integer_numbers_divide_only_where_it_is_exact():
    two = value("6/3", numbers=Numbers.integer)
    assert two == 2 and isinstance(two, int)
    assert value("-7//2", numbers=Numbers.integer) == -4
    refused("7/2", "7/2 is not a whole number", numbers=Numbers.integer)
    refused("2**-1", "is not a whole number", numbers=Numbers.integer)
    refused("1.5+1", r"unsupported: '1.5' \(integers, ", numbers=Numbers.integer)


@pytest.mark.parametrize("numbers", list(Numbers))
def test_division_by_zero_is_refused_in_every_mode(numbers):
    refused("1/0", "division by zero", numbers=numbers)
    refused("5%0", "division by zero", numbers=numbers)


# ---------------------------------------------------------------------------------- caps
def test_digit_cap_covers_literals_and_every_integer_result():
    assert value("999", max_digits=3) == 999
    refused("1000", "result has more than 3 digits", max_digits=3)
    refused("999+1", "result has more than 3 digits", max_digits=3)
    assert value("9999-9999+1", max_digits=None) == 1


def test_exponent_cap_and_a_power_refused_before_it_is_computed():
    assert value("2**3", max_exponent=3) == 8
    refused("2**4", "exponent 4 is larger than 3", max_exponent=3)
    refused("9**9**9", "exponent 387420489 is larger than 64")  # 9**9 first, then refused
    # 10**3: 2 digits of base x 3 = 6 > 3 + 1, refused before any multiplication
    refused("10**3", "result would have more than 3 digits", max_digits=3)
    assert value("9**2", max_digits=3) == 81  # 1 x 2 = 2 <= 4: computed, then checked


def test_length_cap():
    assert value("1+2+3", max_length=5) == 6
    refused("1+2+34", "expression longer than 5 characters", max_length=5)


def test_product_cap_covers_products_only():
    assert value("2*5", max_product=10) == 10
    refused("3*4", "product larger than 10", max_product=10)
    assert value("6+6", max_product=10) == 12


# ------------------------------------------------------------------------ what it refuses
@pytest.mark.parametrize(
    "text, message",
    [
        ("__import__('os').system('true')", "unsupported"),
        ("x + 1", "unsupported: 'x'"),
        ("True + 1", "unsupported: 'True'"),
        ("2j", "unsupported: '2j'"),
        ("[1, 2]", "unsupported"),
        ("2 +", "cannot parse '2 \\+'"),
        ("(-8) ** 0.5", "complex result"),
    ],
)
def test_anything_but_arithmetic_is_refused_with_a_reason(text, message):
    refused(text, message)


def test_operators_and_unary_signs_can_be_left_out():
    refused("2*3", r"unsupported: '2 \* 3' \(numbers, \+ - and parentheses only\)", operators=("+", "-"))
    refused("-3", "unsupported: '-3'", unary=False)
    assert value("-3") == -3
    with pytest.raises(ValueError, match=r"operators \['\^'\]"):
        evaluate_arithmetic("1", operators=("+", "^"))


# ------------------------------------------------------------ each caller's settings kept
def test_synthetic_tasks_evaluate_integers_with_their_product_cap():
    from rlrecipes.data.synthetic import evaluate

    assert evaluate("007 * 2") == 14  # leading zeros read as the tasks' tokens read them
    assert evaluate("1000000*1000000") == 10**12  # the cap is a product over 10**12
    assert evaluate("1000000*1000001") is None
    assert evaluate("1000000*1000000+1") == 10**12 + 1  # sums are not capped
    assert evaluate("-3") is None and evaluate("6/3") is None and evaluate("2**3") is None


def test_the_calculator_reads_python_numbers_and_says_why_it_refuses():
    from rlrecipes.tools import ToolFailure
    from rlrecipes.tools.calculator import evaluate

    assert evaluate(" 6/3 ") == "2.0"
    with pytest.raises(ToolFailure, match="empty expression"):
        evaluate("  ")
    with pytest.raises(ToolFailure, match="expression longer than 4 characters"):
        evaluate("1+2+3", max_length=4)


def test_the_countdown_reward_computes_in_floats():
    from rlrecipes.rewards.countdown import evaluate_equation

    assert evaluate_equation("99999999999999999 - 99999999999999998") == 0.0
    assert evaluate_equation("(7 - 1) / 4") == 1.5
    assert evaluate_equation("0x10") is None and evaluate_equation("2**8") is None  # filtered, not allowed
    assert evaluate_equation(" 1+2") is None  # as before: parsed as it stands, an indent is no expression
    assert evaluate_equation("9" * 400) is None  # was an uncaught OverflowError


def test_model_text_that_makes_the_parser_warn_prints_nothing():
    """ "1if 2 else 3" parses with a SyntaxWarning ("invalid decimal literal"); model text goes
    through the evaluator at every tool call, so the warning would fill a run's stderr."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(NotEvaluated, match="unsupported"):
            evaluate_arithmetic("1if 2 else 3")
    assert not [w for w in caught if issubclass(w.category, SyntaxWarning)]
