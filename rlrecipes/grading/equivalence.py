"""Are two answers the same mathematical object?

``is_equivalent(pred, gold)`` compares two *answers*; ``grade(prediction, gold)``
first extracts the answer from a full response. Both go, in order:

1. clean both with the MATH conventions (``normalize.py``); equal keys -> True;
2. plain numbers, integer fractions, scientific notation: exact rational comparison,
   except that a number written with a decimal point may differ by a relative 1e-4
   (Qwen2.5-Math's ``math_equal`` tolerance); a percent sign on either side also
   accepts the value divided by 100 (``10\\%`` == ``0.1``);
3. text answers (names, words, choice letters): case-insensitive string equality,
   never symbolic (sympy would read "Evelyn" as a product of commuting symbols);
4. otherwise math-verify (``parse`` with the LaTeX extractor only + ``verify``), after a
   cheap check that rejects two constants whose values clearly differ.

Safety: only math-verify's LaTeX parser (an ANTLR grammar) reads model text. Its
``ExprExtractionConfig`` is never used because it calls sympy's ``parse_expr``, which
``eval``s Python. math-verify's timeouts use ``signal.alarm``: they are armed only in
the main thread. Elsewhere (a TRL async reward, a thread pool) the comparison is sent
to a ``GradingPool`` worker process, which also hard-kills anything the alarm misses.
"""

from __future__ import annotations

import logging
import re
import threading
from fractions import Fraction
from functools import lru_cache

from rlrecipes.grading.extract import extract_answer, has_answer_marker
from rlrecipes.grading.normalize import Answer, parse_answer

DEFAULT_TIMEOUT_S = 3
# Decimals are equal within a relative 1e-4, as in Qwen2.5-Math's math_equal (the grader
# behind the one-shot RLVR / TTRL numbers); integers and fractions compare exactly.
_REL_TOL = Fraction(1, 10**4)


def _numbers_equal(a: Fraction, b: Fraction, approximate: bool) -> bool:
    if a == b:
        return True
    return approximate and abs(a - b) <= _REL_TOL * max(abs(a), abs(b))  # math.isclose, no abs_tol


def _numeric_equal(pred: Answer, gold: Answer) -> bool:
    assert pred.value is not None and gold.value is not None
    approximate = pred.decimal or gold.decimal
    candidates = [gold.value]
    if gold.percent:
        candidates.append(gold.value / 100)
    if pred.percent:
        candidates.append(gold.value * 100)
    return any(_numbers_equal(pred.value, c, approximate) for c in candidates)


def quiet_math_verify() -> None:
    """Silence math-verify's per-answer warnings: it logs every timed-out *response*
    in full at WARNING level, which floods an eval; a timeout is simply graded False."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@lru_cache(maxsize=8192)
def _parse_latex(latex: str, timeout_s: int) -> tuple:
    from math_verify import LatexExtractionConfig, parse

    quiet_math_verify()
    # Boxing makes the whole (already extracted) answer the extraction target.
    config = [LatexExtractionConfig(boxed_match_priority=0)]
    return tuple(parse("\\boxed{" + latex + "}", extraction_config=config,
                       parsing_timeout=timeout_s))


def symbolic_equal(pred_latex: str, gold_latex: str, timeout_s: int = DEFAULT_TIMEOUT_S) -> bool:
    """math-verify's verdict, main thread only (its timeouts need ``signal.alarm``)."""
    from math_verify import verify

    if not _in_main_thread():
        raise RuntimeError("symbolic_equal needs the main thread; use grade()/GradingPool")
    try:
        gold = list(_parse_latex(gold_latex, timeout_s))
        pred = list(_parse_latex(pred_latex, timeout_s))
        if not gold or not pred:
            return False
        return bool(verify(gold, pred, timeout_seconds=timeout_s))
    except BaseException as exc:  # math-verify's TimeoutException is a BaseException
        if isinstance(exc, KeyboardInterrupt):
            raise
        logging.getLogger(__name__).debug("symbolic comparison failed: %r", exc)
        return False


# A bracketed pair/tuple/interval gold, and a prediction that is one (maybe after "x \in").
_BRACKETED_RE = re.compile(r"^[\(\[].*,.*[\)\]]$")
_BRACKET_START_RE = re.compile(r"^(?:[A-Za-z](?:_\{?\w+\}?)?\\in)?[\(\[]")


def _shape_mismatch(p: Answer, g: Answer) -> bool:
    """A tuple/interval gold against something that is not bracketed as a whole.

    math-verify reads "2(a, b)" and "(a, b)+1" as the set {a, b} and then equals the
    interval (a, b); require the prediction to open and close with a bracket too.
    """
    return bool(_BRACKETED_RE.match(g.key)) and not (
        _BRACKET_START_RE.match(p.key) and p.key[-1] in ")]")


def fast_verdict(pred: str, gold: str) -> bool | None:
    """The verdict when no symbolic work is needed, else None."""
    p, g = parse_answer(pred), parse_answer(gold)
    if not p.key or not g.key:
        return False
    if p.key == g.key:
        return True
    if _shape_mismatch(p, g):
        return False
    if p.value is not None and g.value is not None:
        return _numeric_equal(p, g)
    if p.is_text or g.is_text:
        return p.key.casefold() == g.key.casefold()
    return None


# Two constant expressions whose values differ by more than this (relative) cannot be
# equal for math-verify, which compares numbers to 6 decimals; rejecting them before its
# symbolic simplification is what keeps a vote over many distinct answers fast (a
# majority vote compares each new answer with every earlier one).
_CLEARLY_DIFFERENT = 1e-3


class _EvaluationTimeout(Exception):
    pass


@lru_cache(maxsize=8192)
def _constant_value(latex: str, timeout_s: int) -> complex | None:
    """The value of a variable-free expression (not a set, tuple or equation), else None.
    Main thread only: the evaluation is cut off by ``signal.setitimer``."""
    import math
    import signal

    import sympy

    try:
        parsed = _parse_latex(latex, timeout_s)
    except BaseException as exc:  # math-verify's TimeoutException is a BaseException
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None
    if not parsed or not isinstance(parsed[0], sympy.Expr) or parsed[0].free_symbols:
        return None

    def stop(signum, frame):
        raise _EvaluationTimeout

    previous = signal.signal(signal.SIGALRM, stop)
    outer = signal.setitimer(signal.ITIMER_REAL, timeout_s)  # (remaining, interval) of any outer timer
    try:
        try:
            value = complex(parsed[0].evalf(20))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Exception:  # no numeric value (infinity, undefined), too slow, or the alarm just after
        return None
    finally:
        signal.signal(signal.SIGALRM, previous)
        if outer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *outer)
    return value if math.isfinite(value.real) and math.isfinite(value.imag) else None


def _clearly_different(pred_latex: str, gold_latex: str, timeout_s: int) -> bool:
    a, b = _constant_value(pred_latex, timeout_s), _constant_value(gold_latex, timeout_s)
    if a is None or b is None:
        return False
    return abs(a - b) > _CLEARLY_DIFFERENT * max(abs(a), abs(b))


def _equivalent_here(pred: str, gold: str, timeout_s: int) -> bool:
    verdict = fast_verdict(pred, gold)
    if verdict is not None:
        return verdict
    pred_latex, gold_latex = parse_answer(pred).latex, parse_answer(gold).latex
    if _clearly_different(pred_latex, gold_latex, timeout_s):
        return False
    return symbolic_equal(pred_latex, gold_latex, timeout_s)


def is_equivalent(pred: str | None, gold: str | None, *,
                  timeout_s: int = DEFAULT_TIMEOUT_S) -> bool:
    """True when the answers ``pred`` and ``gold`` denote the same thing.

    Not symmetric in edge cases (math-verify treats gold and prediction differently,
    e.g. for ``x = 5`` vs ``5``); pass the reference as ``gold``.
    """
    if pred is None or gold is None or not str(pred).strip() or not str(gold).strip():
        return False
    pred, gold = str(pred), str(gold)
    verdict = fast_verdict(pred, gold)
    if verdict is not None:
        return verdict
    if _in_main_thread():
        return _equivalent_here(pred, gold, timeout_s)
    from rlrecipes.grading.pool import default_pool

    return default_pool(timeout_s=timeout_s).equivalent_many([pred], [gold])[0]


def answer_of(prediction: str | None, style: str = "auto") -> str | None:
    """The answer a response gives: extracted by ``style``, or (style ``auto``) the text
    itself when it is one line without any answer marker, i.e. an already-extracted
    answer such as ``\\frac{1}{2}`` (whose "last number" would wrongly be 2)."""
    if prediction is None:
        return None
    text = str(prediction).strip()
    if not text:
        return None
    if style == "auto" and _one_unmarked_line(text) and _looks_bare(text):
        return text
    return extract_answer(text, style)


_LATEX_TEXT_RE = re.compile(r"\\(?:text|mathrm|textbf|mbox)\{[^{}]*\}|\\[A-Za-z]+")
_WORD_RE = re.compile(r"[A-Za-z]{2,}")


def _one_unmarked_line(text: str) -> bool:
    """One line with no answer marker (\\boxed, "Answer:", ####): maybe an answer written alone."""
    return "\n" not in text and not has_answer_marker(text)


def _looks_bare(text: str) -> bool:
    """An answer written alone (``\\frac{1}{2}``, ``x = 5``, ``Evelyn``, ``no solution``),
    not a sentence around a number ("So x equals 5", whose answer is extracted)."""
    words = _WORD_RE.findall(_LATEX_TEXT_RE.sub(" ", text))
    return len(words) <= 1 or not any(ch.isdigit() for ch in text)


# One pair per kind of object sympy builds for MATH answers. A fresh process pays
# ~10 ms extra on the first comparison of each kind; workers pay it once at start.
WARMUP_PAIRS: tuple[tuple[str, str], ...] = (
    ("\\frac{\\sqrt{3}}{2}", "0.5\\sqrt{3}"),
    ("(-\\infty, 3]", "(-\\infty, 3)"),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3, \\pi/2)"),
    ("\\{1, 2\\}", "\\{2, 1\\}"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 3 \\end{pmatrix}"),
    ("x^2 + 2x + 1", "(x+1)^2"),
    ("2\\pi", "6.2832"),
    ("x \\in [-2, 7]", "[-2, 7]"),
    ("y = 2x + 3", "2x+4"),
    ("3^{10}", "59049"),
)


def warm_up(timeout_s: int = DEFAULT_TIMEOUT_S) -> None:
    """Compare ``WARMUP_PAIRS`` once so sympy's caches are hot (main thread only)."""
    for pred, gold in WARMUP_PAIRS:
        is_equivalent(pred, gold, timeout_s=timeout_s)


def grade(prediction: str | None, gold: str | None, *, style: str = "auto",
          timeout_s: int = DEFAULT_TIMEOUT_S) -> bool:
    """True when the answer in ``prediction`` is equivalent to ``gold``.

    ``prediction`` may be a full response (its final answer is extracted with
    ``style``) or a bare answer such as ``"\\frac{1}{2}"``. Never raises on model text;
    anything unparsable or slower than ``timeout_s`` seconds is graded False.

    >>> grade("... so the total is $\\\\boxed{025}$.", "25")
    True
    >>> grade("27.0", "27")
    True
    """
    answer = answer_of(prediction, style)
    if is_equivalent(answer, gold, timeout_s=timeout_s):
        return True
    # a one-line answer with words ("Monday, March 15") was cut to its last number: the
    # whole line may still be the answer
    text = str(prediction or "").strip()
    return (style == "auto" and answer != text and _one_unmarked_line(text)
            and is_equivalent(text, gold, timeout_s=timeout_s))
