"""The fast paths only skip sympy: on generated pairs they give math-verify's verdicts."""

import pytest

from rlrecipes.grading import is_equivalent
from tests.grading.pair_generator import generated_pairs


@pytest.mark.integration
def test_fast_paths_give_math_verifys_verdicts_on_generated_pairs():
    pairs = generated_pairs(2000, seed=0)
    fast = [is_equivalent(p, g) for p, g in pairs]
    slow = [is_equivalent(p, g, fast=False) for p, g in pairs]
    differ = [(p, g, f) for (p, g), f, s in zip(pairs, fast, slow) if f != s]
    assert not differ, differ[:10]
    # the sample covers both verdicts, each in quantity
    assert 500 < sum(fast) < 1500


def test_without_fast_paths_sympy_decides():
    # equal keys, exact fractions and clearly different constants are decided by math-verify
    # when the fast paths are off, with the same verdicts
    for pred, gold, expected in [
        ("\\frac{2}{4}", "0.5", True),
        ("025", "25", True),
        ("3\\sqrt{2}", "\\sqrt{18}", True),
        ("3\\pi", "9", False),
        ("\\frac{1}{9}", "9", False),
    ]:
        assert is_equivalent(pred, gold, fast=False) is expected
        assert is_equivalent(pred, gold) is expected
