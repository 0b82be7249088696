"""MATH-convention clean-up of an answer string, before any symbolic comparison.

``clean_answer`` turns what a model (or a dataset) wrote into a canonical LaTeX
string; ``Answer`` adds what the fast paths of the grader need: a whitespace-free
comparison key, the exact rational value of plain numbers, and whether the answer is
a text answer. The rules follow the MATH / Qwen2.5-Math conventions:

- wrappers go: ``$..$``, ``\\(..\\)``, ``\\[..\\]``, a whole-answer ``\\boxed{}``,
  ``\\text{}``/``\\mathrm{}``/``\\mbox{}`` (unwrapped), ``\\left``/``\\right``, spacing;
- ``\\dfrac``/``\\tfrac`` -> ``\\frac``; ``\\frac12`` -> ``\\frac{1}{2}``; ``\\sqrt2`` -> ``\\sqrt{2}``;
- degrees (``^\\circ``, ``°``), percent signs (remembered, see ``Answer.percent``) and
  trailing units (``\\mathrm{cm}``, ``\\text{ inches}``, ``5 cm``) are dropped;
- numbers: thousands separators go (``1,234``, ``10,\\!080``; never a list: ``32, 349``), ``025`` -> ``25``, ``27.0`` -> ``27``, ``.5`` -> ``0.5``;
- a short variable prefix goes (``x = 5`` -> ``5``), as in the MATH grader;
- a lone choice letter loses its parentheses (``(C)`` -> ``C``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

_UNITS = frozenset(
    """
    m cm mm km nm um dm inch inches in ft foot feet yd yard yards mi mile miles
    g kg mg lb lbs pound pounds oz ounce ounces ton tons
    s sec secs second seconds min mins minute minutes h hr hrs hour hours day days
    week weeks month months year years
    l ml liter liters litre litres gallon gallons cup cups
    mph kmh kph km/h m/s cm/s
    dollar dollars cent cents euro euros
    degree degrees deg radian radians rad
    unit units square sq squared cubic meter meters metre metres centimeter centimeters
    millimeter millimeters kilometer kilometers gram grams kilogram kilograms
    n newton newtons j joule joules w watt watts v volt volts a amp amps ohm ohms
    k kelvin pa hz ev kev mev gev au ly pc kpc mpc
    """.split()
)

_TEXT_CMD = r"\\(?:text|textrm|textbf|textit|mathrm|mathbf|mathit|mbox|textnormal|operatorname\*?)"
_TEXT_RE = re.compile(_TEXT_CMD + r"\s*\{([^{}]*)\}")
# Units are only recognised inside text-like commands or as a bare word of 2+ letters:
# a bare single letter after a number ("3 n") is far more often a variable.
_UNIT_CMD = r"\\(?:text|textrm|mathrm|mbox)"
_TRAILING_TEXT_UNIT_RE = re.compile(_UNIT_CMD + r"\s*\{([^{}]*)\}\s*(\^\s*\{?\s*[23]\s*\}?)?\s*$")
_TRAILING_WORD_UNIT_RE = re.compile(r"\s+([A-Za-z]{2,}(?:/[A-Za-z]+)?)\s*(\^\s*\{?\s*[23]\s*\}?)?\s*$")
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\^\s*\{?\s*\\degree\s*\}?|\\circ|\\degree|°")
# "\\ " after another backslash is a LaTeX row break followed by a space, not spacing.
_SPACING_RE = re.compile(r"(?<!\\)\\[!,;:> ]|\\q?quad(?![A-Za-z])|\\displaystyle(?![A-Za-z])")
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])\s*")
_VAR_PREFIX_RE = re.compile(r"^\s*[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*=\s*(?!=)")
_CHOICE_RE = re.compile(r"\(?\s*([A-E])\s*\)?")
_THOUSANDS_RE = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_DECIMAL_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)$")
_FRACTION_RE = re.compile(r"^([+-]?)\\frac\{([+-]?\d+)\}\{([+-]?\d+)\}$")
_SLASH_RE = re.compile(r"^([+-]?\d+)\s*/\s*([+-]?\d+)$")
# Scientific notation (Minerva writes "4.5e33"; models write "4.5 \\times 10^{33}").
_SCI_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]|\\times10\^|\\cdot10\^|\*10\^)\{?([+-]?\d{1,4})\}?$")
_TEXT_ANSWER_RE = re.compile(r"[A-Za-z][A-Za-z' \-]*")
# Numbers this long are pathological; leave them to the (time-limited) symbolic path.
_MAX_DIGITS = 200


_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}


def _strip_outer_box(s: str) -> str:
    m = re.match(r"^\\(?:boxed|fbox)\s*\{", s)
    if not m:
        return s
    depth = 0
    for i in range(m.end() - 1, len(s)):
        if s[i] == "{":
            depth += 1
        elif s[i] == "}":
            depth -= 1
            if depth == 0:
                return s[m.end() : i] if s[i + 1 :].strip() == "" else s
    return s


def _fix_fracs_and_roots(s: str) -> str:
    s = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", s)
    s = re.sub(r"\\frac\s*(\d)\s*(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\s*(\d)\s*\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\frac\s*(\{[^{}]*\})\s*(\d)", r"\\frac\1{\2}", s)
    return re.sub(r"\\sqrt\s*(\d|[A-Za-z](?![A-Za-z]))", r"\\sqrt{\1}", s)


def _is_unit(text: str) -> bool:
    words = [w for w in re.split(r"[\s~/\\^{}0-9.·*-]+", text.lower()) if w]
    return bool(words) and all(w in _UNITS for w in words)


def _strip_units(s: str) -> str:
    """Drop one trailing unit, only when what precedes it contains a digit."""
    for pattern in (_TRAILING_TEXT_UNIT_RE, _TRAILING_WORD_UNIT_RE):
        m = pattern.search(s)
        if m and _is_unit(m.group(1)) and re.search(r"\d", s[: m.start()]):
            return s[: m.start()].rstrip()
    return s


def _canonical_number(s: str) -> str:
    """``025`` -> ``25``, ``27.0`` -> ``27``, ``.50`` -> ``0.5``, ``+3`` -> ``3``."""
    if len(s) > _MAX_DIGITS or not _DECIMAL_RE.match(s):
        return s
    try:
        d = Decimal(s)
    except InvalidOperation:
        return s
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


def clean_answer(answer: str) -> tuple[str, bool]:
    """``(canonical LaTeX, had a percent sign)`` for a raw answer string."""
    s = answer.strip().replace("\n", " ")
    s = s.replace("\\$", "").replace("$", "")
    s = re.sub(r"[€£¥₹]", "", s).replace("²", "^2").replace("³", "^3")
    s = re.sub(r"^\\\(|\\\)$|^\\\[|\\\]$", "", s).strip()
    for _ in range(3):  # nested wrappers, e.g. \boxed{\text{(C)}}
        prev = s
        s = _strip_outer_box(s).strip()
        s = _LEFT_RIGHT_RE.sub("", s)
        s = re.sub(r",\\!\s*", ",", s)  # "11,\\! 111": MATH's digit-group comma
        s = _SPACING_RE.sub(lambda m: "" if m.group(0) == "\\!" else " ", s).replace("~", " ")
        s = _DEGREE_RE.sub("", s)
        s = re.sub(r"\s*(?:degrees?)\s*$", "", s) if re.search(r"\d", s) else s
        s = _strip_units(s)
        s = _TEXT_RE.sub(lambda m: m.group(1), s)
        if s == prev:
            break
    s = re.sub(r"(?<=\d)\s*(?:percent(?:age)?|pct)\b", "%", s, flags=re.I)  # "28 percent"
    percent = bool(re.search(r"\\?%", s))
    s = re.sub(r"\\?%", "", s)
    s = _fix_fracs_and_roots(s)
    s = s.strip().rstrip(".").strip()
    if "=" in s and s.count("=") == 1:
        s = _VAR_PREFIX_RE.sub("", s)
    s = s.replace("{,}", "")
    # Digit groups: "1,234" and "10,\\!080" (MATH's explicit thousands marker, already
    # reduced to "," above) merge; a comma followed by a space separates a list ("32, 349").
    if _THOUSANDS_RE.match(s.strip()):
        s = s.replace(",", "")
    choice = _CHOICE_RE.fullmatch(s)
    if choice:
        s = choice.group(1)
    s = _NUMBER_WORDS.get(s.strip().casefold(), s)  # "six" -> 6: a whole answer written in words
    return _canonical_number(s.strip()), percent


def _exact_value(s: str) -> tuple[Fraction | None, bool]:
    """Exact value of a plain number / integer fraction, and whether it was a decimal."""
    if len(s) > _MAX_DIGITS:
        return None, False
    if _DECIMAL_RE.match(s):
        return Fraction(Decimal(s)), "." in s
    m = _SCI_RE.match(s)
    if m:
        return Fraction(Decimal(m.group(1))) * Fraction(10) ** int(m.group(2)), True
    m = _FRACTION_RE.match(s)
    if m:
        num, den = int(m.group(2)), int(m.group(3))
        sign = -1 if m.group(1) == "-" else 1
        return (Fraction(sign * num, den) if den else None), False
    m = _SLASH_RE.match(s)
    if m:
        num, den = int(m.group(1)), int(m.group(2))
        return (Fraction(num, den) if den else None), False
    return None, False


@dataclass(frozen=True)
class Answer:
    """A cleaned answer plus what the fast comparison paths need."""

    raw: str
    latex: str  # canonical LaTeX, spaces kept (they separate commands such as `\pi r`)
    key: str  # latex without whitespace: string-equality key
    value: Fraction | None  # exact value when the answer is a plain number or a/b
    decimal: bool  # written with a decimal point (so equality is up to rounding)
    percent: bool  # a percent sign was dropped
    is_text: bool  # only letters / spaces: a word, a name or a choice letter


# Longer than any real final answer (a big matrix or a long list is a few hundred characters):
# such text is a degenerate output, kept as it is (whitespace collapsed) instead of going
# through the cleaning regexes, several of which backtrack quadratically on long runs.
MAX_ANSWER_CHARS = 2000


@lru_cache(maxsize=65536)
def parse_answer(raw: str) -> Answer:
    """Clean ``raw`` once and cache it (the same gold is compared against many samples)."""
    if len(raw) > MAX_ANSWER_CHARS:
        latex = re.sub(r"\s+", " ", raw).strip()
        return Answer(raw, latex, latex.replace(" ", ""), None, False, False, False)
    latex, percent = clean_answer(raw)
    key = re.sub(r"\s+", "", latex)
    value, decimal = _exact_value(key)
    is_text = value is None and bool(_TEXT_ANSWER_RE.fullmatch(latex)) and "\\" not in latex
    return Answer(raw, latex, key, value, decimal, percent, is_text)


def normalize_answer(raw: str) -> str:
    """The comparison key of ``raw``: canonical LaTeX without whitespace."""
    return parse_answer(raw).key
