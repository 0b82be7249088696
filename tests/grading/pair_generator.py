"""Generated (prediction, gold) answer pairs over the forms MATH-style answers take:
integers (padded, signed, with digit groups, written as decimals), fractions (\\frac,
\\dfrac, a/b, unreduced, signs inside or out), terminating decimals, radicals and multiples
of pi; each paired with an equal value in another form or with a near miss."""

from __future__ import annotations

import random
from fractions import Fraction


def _int_forms(n: int) -> list[str]:
    forms = [str(n), f"\\boxed{{{n}}}", f"{n}.0", f"${n}$"]
    if n >= 0:
        forms += [f"0{n}", f"+{n}"]
    if abs(n) >= 1000:
        forms.append(f"{n:,}")
    return forms


def _decimal(v: Fraction) -> str | None:
    d = v.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d != 1:
        return None
    text = f"{float(v):.6f}".rstrip("0").rstrip(".")
    return text if Fraction(text) == v else None


def _fraction_forms(v: Fraction) -> list[str]:
    a, b = abs(v.numerator), v.denominator
    sign = "-" if v < 0 else ""
    forms = [
        f"{sign}\\frac{{{a}}}{{{b}}}",
        f"{sign}\\dfrac{{{a}}}{{{b}}}",
        f"{sign}{a}/{b}",
        f"\\frac{{{sign}{a}}}{{{b}}}",
        f"{sign}\\frac{{{2 * a}}}{{{2 * b}}}",
    ]
    if a < 10 and b < 10:
        forms.append(f"{sign}\\frac{a}{b}")
    dec = _decimal(v)
    if dec is not None:
        forms.append(dec)
    return forms


def _symbolic_forms(k: int, m: int) -> list[str]:
    """k*sqrt(m) (m square-free) in several spellings."""
    return [
        f"{k}\\sqrt{{{m}}}",
        f"\\sqrt{{{k * k * m}}}",
        f"{k}\\sqrt{m}" if m < 10 else f"{k}\\sqrt{{{m}}}",
        f"\\sqrt{{{m}}} \\cdot {k}",
    ]


def _values(rng: random.Random) -> tuple[list[str], list[str]]:
    """Forms of one random value and of a different, nearby one."""
    kind = rng.choice(["int", "int", "fraction", "radical", "pi"])
    if kind == "int":
        n = rng.choice([rng.randint(-20, 20), rng.randint(0, 999), rng.randint(1000, 10**6)])
        other = rng.choice([n + 1, n - 1, -n if n else 7, n * 10])
        return _int_forms(n), _int_forms(other)
    if kind == "fraction":
        v = Fraction(rng.randint(-30, 30) or 1, rng.randint(2, 16))
        if v.denominator == 1:
            v += Fraction(1, 3)
        other = rng.choice([1 / v, v + 1, -v, v * 2])
        return _fraction_forms(v), _fraction_forms(other)
    if kind == "radical":
        k, m = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10, 11])
        return _symbolic_forms(k, m), _symbolic_forms(k + 1, m) + [str(k * k * m)]
    k = rng.randint(2, 12)
    return [f"{k}\\pi", f"\\pi {k}", f"{k} \\pi"], [f"{k + 1}\\pi", f"{k}", f"\\frac{{{k}}}{{\\pi}}"]


def generated_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        same, other = _values(rng)
        gold = rng.choice(same)
        pred = rng.choice(same) if rng.random() < 0.5 else rng.choice(other)
        pairs.append((pred, gold))
    return pairs
