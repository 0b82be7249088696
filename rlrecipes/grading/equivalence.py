"""Are two answers the same mathematical object?

``is_equivalent(pred, gold)`` compares two *answers*; ``grade(prediction, gold)``
first extracts the answer from a full response (``extract.py``). Both go, in order:

1. clean both with the MATH conventions (``normalize.py``);
2. grading policies, which decide whatever they cover (documented, tested by hand):
   - a number written with a decimal point equals another non-integer number within a
     relative ``rel_tol`` (default 1e-4, Qwen2.5-Math's ``math_equal``; the setting
     ``grading.rel_tol``); integers always compare exactly (``1000.05`` is not ``1000``);
     a percent sign on either side also accepts the value divided by 100 (``10\\%`` == ``0.1``);
   - text answers (names, words, choice letters): case-insensitive string equality,
     never symbolic (sympy would read "Evelyn" as a product of commuting symbols);
   - a bracketed tuple/interval gold needs a bracketed prediction (math-verify reads
     ``2(a, b)`` as the set {a, b});
3. fast paths, which only skip sympy and give math-verify's verdict (a test grades
   thousands of generated pairs with and without them): equal cleaned keys; exact
   rational comparison of integers and fractions; two constants whose values clearly
   differ;
4. otherwise math-verify (``parse`` with the LaTeX extractor only + ``verify``).

Safety: only math-verify's LaTeX parser (an ANTLR grammar) reads model text. Its
``ExprExtractionConfig`` is never used because it calls sympy's ``parse_expr``, which
``eval``s Python. math-verify's timeouts use ``signal.alarm``: they are armed only in
the main thread. Elsewhere (a TRL async reward, a thread pool) the comparison is sent
to a ``GradingPool`` worker process, which also hard-kills anything the alarm misses.

Failures are counted, never hidden: ``grading_counts()`` / ``take_grading_counts()``
give the math-verify timeouts and the grading errors (a crashed comparison or worker)
since the last take, in this process and in its pools' workers.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable

from rlrecipes.grading.boxes import boxes
from rlrecipes.grading.extract import extract
from rlrecipes.grading.normalize import MAX_ANSWER_CHARS, Answer, parse_answer

DEFAULT_TIMEOUT_S = 3
# Decimals are equal within a relative 1e-4, as in Qwen2.5-Math's math_equal (the grader
# behind the one-shot RLVR / TTRL numbers); integers and fractions compare exactly.
DEFAULT_REL_TOL = 1e-4


@dataclass
class GradingCounts:
    """Comparisons that did not finish normally (each was graded wrong)."""

    errors: int = 0  # an exception in a comparison, or a worker that crashed
    timeouts: int = 0  # math-verify's alarm, or a worker killed past its hard deadline

    def add(self, errors: int = 0, timeouts: int = 0) -> None:
        self.errors += errors
        self.timeouts += timeouts


_COUNTS = GradingCounts()
_COUNTS_LOCK = threading.Lock()


def count_failures(errors: int = 0, timeouts: int = 0) -> None:
    with _COUNTS_LOCK:
        _COUNTS.add(errors, timeouts)


def grading_counts() -> GradingCounts:
    """Failures counted so far (a copy)."""
    with _COUNTS_LOCK:
        return GradingCounts(_COUNTS.errors, _COUNTS.timeouts)


def take_grading_counts() -> GradingCounts:
    """Failures counted since the last take, and reset (a training step reads this)."""
    with _COUNTS_LOCK:
        out = GradingCounts(_COUNTS.errors, _COUNTS.timeouts)
        _COUNTS.errors = _COUNTS.timeouts = 0
        return out


def _numbers_equal(a: Fraction, b: Fraction, rel_tol: float, decimal: bool) -> bool:
    if a == b:
        return True
    # tolerance only between non-integers, one of them written as a decimal
    approximate = rel_tol > 0 and decimal and a.denominator != 1 and b.denominator != 1
    return approximate and abs(a - b) <= Fraction(rel_tol) * max(abs(a), abs(b))  # no abs_tol


def _numeric_equal(pred: Answer, gold: Answer, rel_tol: float) -> bool:
    assert pred.value is not None and gold.value is not None
    decimal = pred.decimal or gold.decimal
    candidates = [gold.value]
    if gold.percent:
        candidates.append(gold.value / 100)
    if pred.percent:
        candidates.append(gold.value * 100)
    return any(_numbers_equal(pred.value, c, rel_tol, decimal) for c in candidates)


class _TimeoutCounter(logging.Handler):
    """math-verify reports its own timeouts only as log lines; count them here."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Timeout during"):
            count_failures(timeouts=1)


_HANDLER = _TimeoutCounter()


def quiet_math_verify() -> None:
    """Silence math-verify's per-answer warnings (it logs every timed-out *response* in
    full, which floods an eval) while still counting its timeouts."""
    log = logging.getLogger("math_verify")
    if _HANDLER not in log.handlers:
        log.addHandler(_HANDLER)
    log.setLevel(logging.WARNING)
    log.propagate = False


# math-verify's time limit is a signal alarm, which only the main thread can set; off it,
# comparisons go to the grading pool's worker processes (hard limits there). pool.py
# builds on this module, so it registers itself here when imported, which importing
# anything under `rlrecipes.grading` does (the package's __init__ imports the pool).
OffThreadGrader = Callable[[str, str, int, float], bool]
_off_main_thread: OffThreadGrader | None = None


def register_off_main_thread(grader: OffThreadGrader) -> None:
    """Where `is_equivalent` sends a symbolic comparison made outside the main thread."""
    global _off_main_thread
    _off_main_thread = grader


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@lru_cache(maxsize=8192)
def _parse_latex(latex: str, timeout_s: int) -> tuple:
    from math_verify import LatexExtractionConfig, parse

    quiet_math_verify()
    # Boxing makes the whole (already extracted) answer the extraction target.
    config = [LatexExtractionConfig(boxed_match_priority=0)]
    return tuple(parse("\\boxed{" + latex + "}", extraction_config=config, parsing_timeout=timeout_s))


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
        from math_verify.errors import TimeoutException

        count_failures(**({"timeouts": 1} if isinstance(exc, TimeoutException) else {"errors": 1}))
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
    return bool(_BRACKETED_RE.match(g.key)) and not (_BRACKET_START_RE.match(p.key) and p.key[-1] in ")]")


# "2,74" / "1000,99" / "0,111": a decimal comma (not a digit group of three after a
# non-zero lead); read so only when the other answer is a plain number, never a list.
_DECIMAL_COMMA_RE = re.compile(r"^-?(?:0,\d+|\d+,(?:\d{1,2}|\d{4,}))$")


def policy_verdict(pred: str, gold: str, rel_tol: float = DEFAULT_REL_TOL) -> bool | None:
    """The verdict of a grading policy (decimals, percent, text answers, tuple shape), or
    None when no policy covers the pair."""
    p, g = parse_answer(pred), parse_answer(gold)
    if not p.key or not g.key:
        return False
    if _shape_mismatch(p, g):
        return False
    if p.value is None and g.value is not None and _DECIMAL_COMMA_RE.match(p.key):
        p = parse_answer(p.key.replace(",", "."))  # "2,74" against a number: a decimal comma
    elif g.value is None and p.value is not None and _DECIMAL_COMMA_RE.match(g.key):
        g = parse_answer(g.key.replace(",", "."))
    if p.value is not None and g.value is not None and (p.decimal or g.decimal or p.percent or g.percent):
        return _numeric_equal(p, g, rel_tol)
    if p.is_text or g.is_text:
        return p.key.casefold() == g.key.casefold()
    return None


def fast_verdict(pred: str, gold: str, rel_tol: float = DEFAULT_REL_TOL) -> bool | None:
    """The verdict when no symbolic work is needed (policies, then fast paths), else None."""
    verdict = policy_verdict(pred, gold, rel_tol)
    if verdict is not None:
        return verdict
    p, g = parse_answer(pred), parse_answer(gold)
    if p.key == g.key:
        return True
    if p.value is not None and g.value is not None:  # integers and fractions: exact
        return p.value == g.value
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


# an exponent that is itself a power, or has six or more digits; a factorial of a six-digit number
_EXPONENT = re.compile(r"\^\s*(\{(?:[^{}]|\{[^{}]*\})*\}|\d+)")
_HUGE_FACTORIAL = re.compile(r"(?<!\d)\d{6,}\s*!")  # anchored at a digit run's start: linear


def explosive(latex: str) -> bool:
    """Exact arithmetic on this would need gigabytes before any timeout fires: a power tower
    (`2^{2^{34}}` is a 2^34-bit integer, and sympy builds it in one C call that no signal
    interrupts) or a huge exponent or factorial; or it is nested deeper than any real answer,
    where math-verify's parser returns a fragment. Such answers are compared as text."""
    for match in _EXPONENT.finditer(latex):
        exponent = match.group(1)
        if "^" in exponent or re.search(r"\d{6,}", exponent):
            return True
    return bool(_HUGE_FACTORIAL.search(latex)) or _brace_depth(latex) > MAX_NESTING


# deeper than any real answer; a 110-deep fraction was reported read as its innermost 1/2 by
# math-verify (not reproduced with 0.9 here, where it fails to parse): compared as text either way
MAX_NESTING = 50


def _brace_depth(latex: str) -> int:
    depth = deepest = 0
    for char in latex:
        if char == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "}":
            depth = max(depth - 1, 0)
    return deepest


def _equivalent_here(pred: str, gold: str, timeout_s: int, rel_tol: float, fast: bool) -> bool:
    verdict = fast_verdict(pred, gold, rel_tol) if fast else policy_verdict(pred, gold, rel_tol)
    if verdict is not None:
        return verdict
    pred_latex, gold_latex = parse_answer(pred).latex, parse_answer(gold).latex
    if max(len(pred_latex), len(gold_latex)) > MAX_ANSWER_CHARS or explosive(pred_latex) or explosive(gold_latex):
        return re.sub(r"\s+", "", pred_latex) == re.sub(r"\s+", "", gold_latex)
    if fast and _clearly_different(pred_latex, gold_latex, timeout_s):
        return False
    return symbolic_equal(pred_latex, gold_latex, timeout_s)


def is_equivalent(
    pred: str | None,
    gold: str | None,
    *,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    rel_tol: float = DEFAULT_REL_TOL,
    fast: bool = True,
) -> bool:
    """True when the answers ``pred`` and ``gold`` denote the same thing.

    Not symmetric in edge cases (math-verify treats gold and prediction differently,
    e.g. for ``x = 5`` vs ``5``); pass the reference as ``gold``. ``fast=False`` skips
    the fast paths (not the policies): the same verdicts, slower (tests, benchmarks).
    """
    if pred is None or gold is None or not str(pred).strip() or not str(gold).strip():
        return False
    pred, gold = str(pred), str(gold)
    verdict = fast_verdict(pred, gold, rel_tol) if fast else policy_verdict(pred, gold, rel_tol)
    if verdict is not None:
        return verdict
    if _in_main_thread() or _off_main_thread is None:
        return _equivalent_here(pred, gold, timeout_s, rel_tol, fast)
    return _off_main_thread(pred, gold, timeout_s, rel_tol)


def gold_answer(gold: str | None) -> str | None:
    """The answer in a gold string: itself, or, when it is a worked solution (a box, or
    sentences around maths), the answer extracted from it."""
    if gold is None:
        return None
    text = str(gold).strip()
    if "\\boxed" in text or "\\fbox" in text:  # every box: a gold states no drafts
        found = list(dict.fromkeys(content for _, _, content in boxes(text)))
        return ", ".join(found) if found else text
    if "\n" in text or len(re.findall(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+|\\text\{[^{}]*\}", " ", text))) > 4:
        return extract(text, "auto").answer or text
    return text


def answer_of(prediction: str | None, style: str = "auto") -> str | None:
    """The answer a response gives under ``style`` (``extract.extract``): a one-line
    answer written alone (``\\frac{1}{2}``) is itself, never its last number."""
    return extract(prediction, style).answer


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


def grade(
    prediction: str | None,
    gold: str | None,
    *,
    style: str = "auto",
    timeout_s: int = DEFAULT_TIMEOUT_S,
    rel_tol: float = DEFAULT_REL_TOL,
) -> bool:
    """True when the answer in ``prediction`` is equivalent to ``gold``.

    ``prediction`` may be a full response (its final answer is extracted with
    ``style``) or a bare answer such as ``"\\frac{1}{2}"``. Never raises on model text;
    anything unparsable or slower than ``timeout_s`` seconds is graded False.

    >>> grade("... so the total is $\\\\boxed{025}$.", "25")
    True
    >>> grade("27.0", "27")
    True
    """
    found = extract(prediction, style)
    gold = gold_answer(gold)
    if is_equivalent(found.answer, gold, timeout_s=timeout_s, rel_tol=rel_tol):
        return True
    # a one-line answer with words ("Monday, March 15", "no solution") was cut to its last
    # expression or not taken at all: the whole line may still be the answer
    text = str(prediction or "").strip()
    return (
        style == "auto"
        and found.source in ("last_math", "")
        and "\n" not in text
        and is_equivalent(text, gold, timeout_s=timeout_s, rel_tol=rel_tol)
    )
