"""The unanchored fallback of answer extraction: the last *whole* mathematical expression
of a response (``last_math``), after math-verify's lowest-priority targets (the rightmost
LaTeX environment or number) but never a fragment: ``$\\frac{1}{9}$`` is ``\\frac{1}{9}``
(never ``9``), ``7\\pi``, ``2\\sqrt3``, ``x \\geq 5``, an inline tuple or a multi-line
``\\begin{pmatrix}`` stay whole; an equation chain ``3 + 4 = 7`` gives its last side.
Only regular expressions and the brace scanner run here: nothing is evaluated."""

from __future__ import annotations

import re

from rlrecipes.grading.boxes import brace_map

_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")

ENV_RE = re.compile(
    r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\\\[(.+?)\\\]|(?<![\\\d])\$((?:\\\$|[^\n$])+?)(?<!\\)\$"
    r"|(?<!\\)\\\((.+?)\\\)",
    re.S,
)
CMD_RE = re.compile(r"\\[A-Za-z]+\*?")
_BEGIN_RE = re.compile(r"\\begin\s*\{([A-Za-z*]+)\}")
WORD_RE = re.compile(r"[A-Za-z]+'[A-Za-z]+|[A-Za-z]{2,}")  # words and contractions
# Commands that make a span mathematical on their own (\text alone does not).
_MATH_CMD_RE = re.compile(r"\\(?!text|mathrm|mbox|textbf|quad|qquad|left|right)[A-Za-z]+")
_OPEN, _CLOSE = "([", ")]"
_MATH_SYMBOLS = frozenset("×÷±∓−≤≥≠≈π√∞·°∈∪∩⁻")


def is_math(span: str) -> bool:
    return bool(re.search(r"\d", span) or _MATH_CMD_RE.search(span))


def _balance(span: str) -> str:
    """Drop unmatched closing brackets at the end / opening ones at the start."""
    span = span.strip()
    while span and span[-1] in _CLOSE and _depth(span) < 0:
        span = span[:-1].rstrip()
    while span and span[0] in _OPEN and _depth(span) > 0:
        span = span[1:].lstrip()
    return span


def _depth(span: str) -> int:
    return sum(span.count(c) for c in _OPEN) - sum(span.count(c) for c in _CLOSE)


def _math_spans(text: str) -> list[tuple[int, int]]:
    """Maximal runs of mathematical notation in plain text: numbers, single-letter
    variables, operators, LaTeX commands with their brace groups, brackets, and whole
    ``\\begin..\\end`` environments (newlines included). Words of two or more letters,
    line ends, and sentence punctuation outside brackets end a run (so ``(1, 2)`` and
    ``[2, 5)`` stay whole while ``32, 349`` is two numbers)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    depth = 0
    i, n = 0, len(text)
    braces = brace_map(text)

    def close(end: int) -> None:
        nonlocal start, depth
        if start is not None:
            spans.append((start, end))
        start, depth = None, 0

    def extend(frm: int) -> None:
        nonlocal start
        start = frm if start is None else start

    while i < n:
        ch = text[i]
        if ch == "\\":
            begin = _BEGIN_RE.match(text, i)
            if begin:  # a whole environment, e.g. a matrix over several lines
                end = text.find(f"\\end{{{begin.group(1)}}}", begin.end())
                if end < 0:
                    close(i)
                    break
                extend(i)
                i = end + len(begin.group(1)) + 6
                continue
            if text[i + 1 : i + 2] in ("{", "}"):  # set braces \{ \}
                depth += 1 if text[i + 1] == "{" else -1
                extend(i)
                i += 2
                continue
            cmd = CMD_RE.match(text, i)
            extend(i)
            i = cmd.end() if cmd else i + 2
            continue
        if ch == "{":
            end = braces.get(i)
            if end is None:
                close(i)
                i += 1
                continue
            extend(i)
            i = end + 1
            continue
        word = WORD_RE.match(text, i) if ch.isalpha() else None
        if word:
            close(i)
            i = word.end()
            continue
        ends_here = i + 1 >= n or text[i + 1].isspace()
        if ch == "!" and i > 0 and (text[i - 1].isdigit() or text[i - 1] == ")"):
            extend(i)  # a factorial
            i += 1
            continue
        if (
            ch in '\n$"`'
            or (ch in ";?!:" and ends_here)
            or (ch in ".," and ends_here and depth <= 0)
            or (ord(ch) > 127 and ch not in _MATH_SYMBOLS)  # currency, units, prose
            or (ch == "'" and 0 < i < n - 1 and text[i - 1].isalpha() and text[i + 1].isalpha())
        ):
            close(i)
            i += 1
            continue
        if ch.isspace():
            i += 1
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        extend(i)
        i += 1
    close(n)
    return spans


def _last_side(expr: str) -> str:
    """The result of a calculation written out (``3 + 4 = 7``, ``a = 2 + 3 = 5`` -> the
    last side); an equation between unknowns (``x - 2y + z = 1``, ``x = 5``) stays whole,
    and so do inequalities."""
    parts = re.split(r"(?<![<>!\\])=(?!=)", expr)
    if len(parts) > 2 or (
        len(parts) == 2 and re.search(r"\d", parts[0]) and not re.search(r"[A-Za-z]", CMD_RE.sub("", parts[0]))
    ):
        tail = parts[-1].strip()
        return tail or expr
    return expr


def clean_math(expr: str, calculation: bool = True) -> str:
    """Tidy a found expression; ``calculation`` (unmarked text only) keeps the last side
    of a worked calculation. An explicit answer is kept as written."""
    expr = _balance(_derivation_result(expr.strip()))
    expr = re.sub(r"^[\s:=]+|[\s.,;:]+$", "", expr)
    if _THOUSANDS_RE.fullmatch(expr):  # "1,234" alone; never inside a tuple or interval
        expr = expr.replace(",", "")
    return (_last_side(expr) if calculation else expr).strip()


_DERIVATION_RE = re.compile(
    r"\\begin\{(align|aligned|eqnarray|gather|gathered|equation|split|multline)\*?\}"
    r"(.*?)\\end\{\1\*?\}",
    re.S,
)


_NESTED_ENV_RE = re.compile(r"\\begin\{([A-Za-z]*matrix|array|cases)\}.*?\\end\{\1\}", re.S)


def _derivation_result(expr: str) -> str:
    """A derivation written in an align-like environment ends in its result: the last
    row (``&= 60.``), not the environment."""
    found = list(_DERIVATION_RE.finditer(expr))
    if not found:
        return expr
    body = found[-1].group(2)
    nested = [m.group(0) for m in _NESTED_ENV_RE.finditer(body)]  # matrices keep their own rows
    body = _NESTED_ENV_RE.sub(lambda m: f"\x00{nested.index(m.group(0))}\x00", body)
    rows = [r for r in re.split(r"\\\\(?:\[[^\]]*\])?", body) if r.strip()]
    last = re.sub(r"\s+", " ", rows[-1].replace("&", " ")) if rows else ""
    last = re.sub("\x00(\\d+)\x00", lambda m: nested[int(m.group(1))], last)
    return _last_side(re.sub(r"\\(?:tag|label)\{[^{}]*\}|\\(?:nonumber|notag)", "", last)).strip()


_FUNCTION_NAMES = frozenset("sin cos tan cot sec csc log ln exp max min gcd lcm mod det lim arg deg".split())


def _prose(content: str) -> bool:
    """Lowercase words in a $...$ span ("$5 for apples and $"): currency, not maths.
    Capitalised names (points AB, ABC) and function names do not count."""
    text = re.sub(r"\\(?:text|mathrm|textbf|mbox|operatorname)\{[^{}]*\}|\\[A-Za-z]+", " ", content)
    words = [w for w in re.findall(r"(?<![A-Za-z])[a-z]{2,}(?![A-Za-z])", text) if w not in _FUNCTION_NAMES]
    return len(words) >= 2


def math_candidates(text: str) -> list[tuple[int, int, str]]:
    """(start, end, expression): LaTeX environments and bare runs of maths."""
    out = []
    covered = []
    for m in ENV_RE.finditer(text):
        content = next(g for g in m.groups() if g is not None)
        if _prose(content):  # "$5 for apples and $": currency signs, not maths
            continue
        covered.append((m.start(), m.end()))
        out.append((m.start(), m.end(), content))
    plain = list(text)
    for a, b in covered:  # blank environments out so bare runs never cut into them
        plain[a:b] = "\n" * (b - a)
    bare = "".join(plain)
    for a, b in _math_spans(bare):
        out.append((a, b, bare[a:b]))
    return sorted(out, key=lambda c: (c[1], -c[0]))


_ASY_RE = re.compile(r"\[asy\].*?\[/asy\]", re.S)
_TEXT_ONLY_RE = re.compile(r"\s*\\text(?:bf)?\{[^{}]+\}\s*")


def last_math(text: str) -> str | None:
    """The last whole mathematical expression in ``text`` (rightmost end wins, as in
    math-verify's unanchored targets), never a digit run cut out of one. Asymptote
    drawing code is not maths; a ``$\\text{Evelyn}$`` span counts (it is set as maths)."""
    text = _ASY_RE.sub(" ", text)
    candidates = math_candidates(text)
    for k in range(len(candidates) - 1, -1, -1):
        start, end, expr = candidates[k]
        if _TEXT_ONLY_RE.fullmatch(expr) and text[start] in "$\\":
            return expr.strip()
        if is_math(expr):
            cleaned = clean_math(expr)
            if cleaned and is_math(cleaned):
                return ", ".join(_joined_before(text, candidates, k) + [cleaned])
    return None


_JOIN_RE = re.compile(r"\s*(?:,|,?\s*and)\s*")
_MAX_JOINED = 5  # as math-verify's "A, B and C" targets
_RELATION_RE = re.compile(r"=|<|>|\\[lg]eq?(?![A-Za-z])|\\in(?![A-Za-z])|\\neq")
_ASSIGNMENT_RE = re.compile(r"^\s*([A-Za-z](?:_\{?\w+\}?)?)\s*=(?!=)[^=]+$")


def _shape(expr: str) -> str | None:
    """ "value" for a plain expression, "x=" for an assignment to x, None otherwise."""
    if not _RELATION_RE.search(expr):
        return "value"
    m = _ASSIGNMENT_RE.match(expr)
    return f"{m.group(1)}=" if m else None


def _joined_before(text: str, candidates: list[tuple[int, int, str]], k: int) -> list[str]:
    """Inline maths listed right before candidate ``k`` as one answer: "$2$, $3$, and $5$",
    "$x=2$ and $x=3$". Only parts of one shape are joined (all values, or all the same
    variable), so "$c = 14,$ and $a_1 = 504$" or "$X$, or $Y$" (a restatement) are not."""

    def inline(c: tuple[int, int, str]) -> bool:
        return text[c[0]] == "$" and text[c[0] + 1 : c[0] + 2] != "$"

    last = clean_math(candidates[k][2])
    shape = _shape(last)
    if not inline(candidates[k]) or shape is None:
        return []
    out: list[str] = []
    while k > 0 and len(out) < _MAX_JOINED - 1:
        prev = candidates[k - 1]
        if not inline(prev) or not _JOIN_RE.fullmatch(text[prev[1] : candidates[k][0]]):
            break
        cleaned = clean_math(prev[2])
        if not (cleaned and is_math(cleaned)) or _shape(cleaned) != shape:
            break
        out.insert(0, cleaned)
        k -= 1
    return out
