"""Pull the final answer out of a model response.

Styles, each a documented policy (all return the raw answer text, or None):

- ``auto`` (default): the *latest* explicit answer wins among the last ``\\boxed{}``
  group, the last answer line (``Answer: X``, ``**Answer:** X``, ``Answer $X$`` at a
  line start, Minerva's ``Final Answer: The final answer is X. I hope it is correct.``,
  "the answer is X") and the last ``#### X``; so a final-answer line written after an
  earlier box overrides it. Without any marker: a one-line bare answer is taken whole,
  else the last whole mathematical expression (see ``last_math``).
- ``boxed`` (Qwen2.5-Math): the last complete ``\\boxed{...}``/``\\fbox{...}``;
  boxes written side by side (``\\boxed{2}, \\boxed{3}``) form one list answer.
- ``answer_line`` (DAPO / verl ``math_dapo``): the last ``Answer:`` within the last 300
  characters, to the end of its line.
- ``gsm8k``: ``\\boxed{}`` first, then the text after the last ``####``, then the last
  whole expression (the default GSM8K prompt asks for a box).
- ``minerva``: the text of ``The final answer is X. I hope it is correct.``
- ``none``: the text is already the answer (pre-extracted answers).

The unanchored fallback follows math-verify's lowest-priority targets (the rightmost
LaTeX environment or number), but always takes a *whole* expression: ``$\\frac{1}{9}$``
is ``\\frac{1}{9}`` (never ``9``), ``7\\pi``, ``2\\sqrt3``, ``x \\geq 5``, an inline
tuple or a multi-line ``\\begin{pmatrix}`` stay whole; an equation chain
``3 + 4 = 7`` gives its last side.

``extract(text, style)`` also says how the answer was found: ``status`` is ``ok``,
``none`` (no answer) or ``ambiguous`` (several different boxed answers: the style's
rule still picks one, and samples.jsonl says so). Only regular expressions and a
bracket scanner run here: nothing is ever evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlrecipes.choice import Choice
from rlrecipes.grading.normalize import normalize_answer


class AnswerStyle(Choice):  # the policies of the module doc (`data.answer_style`, `protocol.answer_style`)
    auto = "auto"
    boxed = "boxed"
    answer_line = "answer_line"
    gsm8k = "gsm8k"
    minerva = "minerva"
    none = "none"


_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_ANSWER_LINE_RE = re.compile(r"(?i)Answer\s*:\s*([^\n]+)")
# Explicit answer markers anywhere in the text (case-insensitive); what follows is the answer.
_MARKER_RE = re.compile(
    r"(?i)(?:\bfinal\s+answer\s*(?:is\b|[:：])|\b(?:the\s+)?answer\s+(?:is|would\s+be|will\s+be)\b"
    r"|\banswer[*_ \t]*[:：])"
)
# "Answer $ 9 $" / "**Final Answer** 42": the word alone at a line start, then maths.
_LINE_MARKER_RE = re.compile(r"(?im)^[ \t#>*_]*(?:final\s+)?answer\b[*_ \t]*(?=[$\\\d(\[{+-])")
_GSM8K_RE = re.compile(r"####")
_HOPE_RE = re.compile(r"(?i)\.?\s*I\s+hope\s+it\s+is\s+correct.*$", re.S)
_MINERVA_RE = re.compile(r"(?is)final\s+answer\s+is\s*(.*?)\.?\s*I\s+hope\s+it\s+is\s+correct")
# "the answer is correct / a positive integer / as follows": prose, not an answer.
_NOT_AN_ANSWER_RE = re.compile(
    r"(?i)^(?:correct|incorrect|wrong|right|reasonable|valid|invalid|not\b|indeed|as\b|below|above|"
    r"follows|that\b|this\b|clear|obvious|consistent|positive|negative|an?\b|the\b|given|shown|"
    r"unique|undefined|none\s+of)"
)
_SENTENCE_END_RE = re.compile(r"(?<!\.)\.(?=\s|$)|;|\n|\s(?:because|since|which|where|as|so|but|for|when|if)\s", re.I)
_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_THINK_END = "</think>"

# DAPO's verifier only looks at the tail of the response.
ANSWER_LINE_WINDOW = 300
# A text answer after a marker longer than this many words is a sentence, not an answer.
_MAX_TEXT_ANSWER_WORDS = 6
_MAX_WEAK_TEXT_WORDS = 3  # after "the answer is", which prose uses too
_TAIL_CHARS = 2000  # an answer follows its marker closely; never scan a whole response per marker
_MAX_MARKERS = 32  # the last markers only: a degenerate loop of "the answer is" stays cheap


@dataclass(frozen=True)
class Extraction:
    """What a style found: the answer text, ``ok``/``none``/``ambiguous``, and where."""

    answer: str | None
    status: str
    source: str = ""  # boxed | answer_line | final_answer | #### | last_math | whole


_BRACE_TOKEN_RE = re.compile(r"\\.|[{}]", re.S)


def _brace_map(text: str, start: int = 0) -> dict[int, int]:
    """Index of every ``{`` from ``start`` on -> its closing ``}`` (unclosed ones are
    absent), in one pass: a truncated response with thousands of open braces must not
    cost quadratic time. Escaped braces (``\\{``, ``\\}``) do not count; braces before
    ``start`` cannot change how later ones pair."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACE_TOKEN_RE.finditer(text, start):
        ch = m.group(0)
        if ch == "{":
            stack.append(m.start())
        elif ch == "}" and stack:
            pairs[stack.pop()] = m.start()
    return pairs


def _box_span(text: str, start: int, braces: dict[int, int]) -> tuple[str, int] | None:
    """(content, end) of the box whose command ends at ``start``; None if incomplete."""
    i = start
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "{":
        end = braces.get(i)
        return None if end is None else (text[i + 1 : end], end + 1)
    if i > start:  # "\boxed 5": up to the next space or dollar sign
        m = re.match(r"[^\s$]+", text[i : i + 200])
        return (m.group(0), i + m.end()) if m else None
    return None


def boxes(text: str) -> list[tuple[int, int, str]]:
    """Every complete box as ``(start, end, content)``, in order."""
    found = list(_BOX_RE.finditer(text))
    braces = _brace_map(text, found[0].end()) if found else {}
    out = []
    for m in found:
        span = _box_span(text, m.end(), braces)
        if span is not None and span[0].strip():
            out.append((m.start(), span[1], span[0].strip()))
    return out


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{}``/``\\fbox{}`` in ``text``."""
    found = boxes(text)
    return found[-1][2] if found else None


# What may stand between boxes that form one answer: delimiters, commas, "and"/"or", a
# short \text{...} ("for part (a) and") and the next part's name ("y_2 =").
_BOX_SEPARATOR_RE = re.compile(
    r"^(?:\s|\$|\\\)|\\\(|\\\[|\\\]|,|;|\\text\{[^{}]{0,40}\}|\band\b|\bor\b|\\q?quad"
    r"|[A-Za-z](?:_\{?\w+\}?)?\s*=)*$"
)


def _box_group(text: str) -> tuple[int, str, str] | None:
    """(start, answer, status) of the last box, joined with the boxes written right before
    it (``\\boxed{2}, \\boxed{3}``: one list answer); ambiguous when other boxes differ."""
    found = boxes(text)
    if not found:
        return None
    group = [found[-1]]
    for prev in reversed(found[:-1]):
        if not _BOX_SEPARATOR_RE.match(text[prev[1] : group[0][0]]):
            break
        group.insert(0, prev)
    answer = ", ".join(b[2] for b in group) if len(group) > 1 else group[0][2]
    final = {normalize_answer(b[2]) for b in group}
    others = {normalize_answer(b[2]) for b in found[: len(found) - len(group)]}
    return group[0][0], answer, ("ambiguous" if others - final else "ok")


# -- whole mathematical expressions ------------------------------------------------
_ENV_RE = re.compile(
    r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\\\[(.+?)\\\]|(?<![\\\d])\$((?:\\\$|[^\n$])+?)(?<!\\)\$"
    r"|(?<!\\)\\\((.+?)\\\)",
    re.S,
)
_CMD_RE = re.compile(r"\\[A-Za-z]+\*?")
_BEGIN_RE = re.compile(r"\\begin\s*\{([A-Za-z*]+)\}")
_WORD_RE = re.compile(r"[A-Za-z]+'[A-Za-z]+|[A-Za-z]{2,}")  # words and contractions
# Commands that make a span mathematical on their own (\text alone does not).
_MATH_CMD_RE = re.compile(r"\\(?!text|mathrm|mbox|textbf|quad|qquad|left|right)[A-Za-z]+")
_OPEN, _CLOSE = "([", ")]"
_MATH_SYMBOLS = frozenset("×÷±∓−≤≥≠≈π√∞·°∈∪∩⁻")


def _is_math(span: str) -> bool:
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
    braces = _brace_map(text)

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
            cmd = _CMD_RE.match(text, i)
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
        word = _WORD_RE.match(text, i) if ch.isalpha() else None
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
        len(parts) == 2 and re.search(r"\d", parts[0]) and not re.search(r"[A-Za-z]", _CMD_RE.sub("", parts[0]))
    ):
        tail = parts[-1].strip()
        return tail or expr
    return expr


def _clean_math(expr: str, calculation: bool = True) -> str:
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


def _math_candidates(text: str) -> list[tuple[int, int, str]]:
    """(start, end, expression): LaTeX environments and bare runs of maths."""
    out = []
    covered = []
    for m in _ENV_RE.finditer(text):
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
    candidates = _math_candidates(text)
    for k in range(len(candidates) - 1, -1, -1):
        start, end, expr = candidates[k]
        if _TEXT_ONLY_RE.fullmatch(expr) and text[start] in "$\\":
            return expr.strip()
        if _is_math(expr):
            cleaned = _clean_math(expr)
            if cleaned and _is_math(cleaned):
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

    last = _clean_math(candidates[k][2])
    shape = _shape(last)
    if not inline(candidates[k]) or shape is None:
        return []
    out: list[str] = []
    while k > 0 and len(out) < _MAX_JOINED - 1:
        prev = candidates[k - 1]
        if not inline(prev) or not _JOIN_RE.fullmatch(text[prev[1] : candidates[k][0]]):
            break
        cleaned = _clean_math(prev[2])
        if not (cleaned and _is_math(cleaned)) or _shape(cleaned) != shape:
            break
        out.insert(0, cleaned)
        k -= 1
    return out


# -- answer lines ----------------------------------------------------------------------
def _first_env(tail: str) -> tuple[str, int] | None:
    m = _ENV_RE.match(tail)
    if not m:
        return None
    return next(g for g in m.groups() if g is not None), m.end()


def _answer_from_tail(tail: str, strict: bool) -> str | None:
    """The answer written right after a marker: a math environment (joined with the next
    ones: ``$2$ and $3$``), else the sentence up to its end, else its first expression.
    ``strict`` (weak markers such as "the answer is") refuses prose tails."""
    tail = _HOPE_RE.sub("", tail)
    tail = re.sub(r"^[\s*_:：=]+", "", tail)
    tail = re.sub(r"^(?:the\s+)?final\s+answer\s+is\s*:?\s*", "", tail, flags=re.I)
    if not tail:
        return None
    env = _first_env(tail)
    if env is not None:
        parts, rest = [env[0]], tail[env[1] :]
        while True:
            m = re.match(r"\s*(?:,|and|or|,\s*and)\s*", rest)
            nxt = _first_env(rest[m.end() :]) if m else None
            if nxt is None:
                break
            parts.append(nxt[0])
            rest = rest[m.end() + nxt[1] :]
        return ", ".join(_clean_math(p, calculation=False) for p in parts if p.strip()) or None
    line = _SENTENCE_END_RE.split(tail, maxsplit=1)[0]
    line = re.sub(r"[*_\s]+$", "", line).rstrip(".,;: ").strip()
    line = re.sub(r"^[*_\s]+", "", line)
    if not line:
        return None
    if strict and _NOT_AN_ANSWER_RE.match(line):
        return None
    words = _WORD_RE.findall(_CMD_RE.sub(" ", re.sub(r"\\text\{[^{}]*\}", " ", line)))
    inner = line.replace("$", "")
    if not words:
        return _clean_math(inner, calculation=False) or None
    if _is_math(inner):
        bare = [m for m in _math_candidates(inner) if _is_math(m[2])]
        if bare:  # "12 ways", "x = 5 cm": the first expression after the marker
            return _clean_math(min(bare)[2]) or None
    if len(inner.split()) > (_MAX_WEAK_TEXT_WORDS if strict else _MAX_TEXT_ANSWER_WORDS):
        return None
    return inner.strip() or None


def _final_line(text: str, start: int, end: int) -> bool:
    """A marker that states the final answer: "final answer", or an answer line
    ("Answer: 4", "**Answer:** 4") that starts its line, not "check our answer: ..."."""
    if re.search(r"(?i)final", text[start:end]):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    return not text[line_start:start].strip(" \t#>*_")


def _markers(text: str) -> list[tuple[int, int, bool]]:
    """(marker start, answer start, is strong) for every answer marker."""
    found = [
        (m.start(), m.end(), not re.match(r"(?i)(?:the\s+)?answer\s+(?:is|would|will)", m.group(0)))
        for m in _MARKER_RE.finditer(text)
    ]
    found += [(m.start(), m.end(), True) for m in _LINE_MARKER_RE.finditer(text)]
    return sorted(set(found))


def raw_answer_line(text: str) -> str | None:
    """DAPO's parser (verl ``math_dapo``): the text after the last ``Answer:`` within the
    final 300 characters, up to the line end, untouched; None without one."""
    matches = _ANSWER_LINE_RE.findall(text[-ANSWER_LINE_WINDOW:])
    return matches[-1] if matches else None


def answer_line(text: str) -> str | None:
    """``raw_answer_line`` without markdown emphasis or a wrapping maths environment."""
    raw = raw_answer_line(text)
    if raw is None:
        return None
    answer = re.sub(r"^[*_\s]+|[*_\s]+$", "", raw).strip()
    env = _first_env(answer)
    if env is not None and not answer[env[1] :].strip(" ."):
        answer = env[0].strip()
    return answer or None


def minerva_answer(text: str) -> str | None:
    """Minerva: the X of the last ``The final answer is X. I hope it is correct.``"""
    found = _MINERVA_RE.findall(text)
    return _answer_from_tail(found[-1], strict=False) if found else None


def _gsm8k_marker(text: str) -> tuple[int, str] | None:
    found = list(_GSM8K_RE.finditer(text))
    if not found:
        return None
    m = found[-1]
    line = text[m.end() :].split("\n", 1)[0]
    answer = last_math(line) if _is_math(line) else line.strip() or None
    return (m.start(), answer) if answer else None


def _after_thinking(text: str) -> str:
    """A reasoning model's answer follows its last ``</think>``; drafts inside do not count."""
    if _THINK_END in text:
        after = text.rsplit(_THINK_END, 1)[1]
        if after.strip():
            return after
    return text


def _explicit(text: str) -> Extraction | None:
    """The latest explicit answer: box group, answer marker or ``####``."""
    found: list[tuple[int, Extraction]] = []
    group = _box_group(text)
    if group is not None:
        found.append((group[0], Extraction(group[1], group[2], "boxed")))
    gsm = _gsm8k_marker(text)
    if gsm is not None:
        found.append((gsm[0], Extraction(gsm[1], "ok", "####")))
    latest = max((f[0] for f in found), default=-1)
    # from the last marker backwards, so a response that repeats "Answer:" a thousand
    # times costs one look, not a thousand
    for start, end, strong in reversed(_markers(text)[-_MAX_MARKERS:]):
        if start < latest:
            break
        if group is not None and not _final_line(text, start, end):
            continue  # "check our answer: ..." in a sentence does not override a box
        answer = _answer_from_tail(text[end : end + _TAIL_CHARS], strict=not strong)
        if answer:
            found.append((start, Extraction(answer, "ok", "answer_line")))
            break
    return max(found, key=lambda f: f[0])[1] if found else None


def _one_bare_line(text: str) -> bool:
    """One line that is an answer written alone (``\\frac{1}{2}``, ``x = 5``, ``5 cm``,
    ``Evelyn``), not a sentence around maths ("Therefore x = 5")."""
    if "\n" in text or (text.count("$") and not (text.startswith("$") and text.endswith("$"))):
        return False
    plain = re.sub(r"\\(?:text|mathrm|textbf|mbox)\{[^{}]*\}|\\[A-Za-z]+", " ", text)
    words = list(_WORD_RE.finditer(plain))
    if not words:
        return True
    if not _is_math(text):  # one word ("Evelyn"); more ("no idea") is prose, not an answer
        return len(words) == 1 and len(text.split()) == 1
    # one trailing word after the maths is a unit ("5 cm", "12 apples")
    return len(words) == 1 and not re.search(r"\d", plain[words[0].end() :])


def extract(text: str | None, style: str = "auto") -> Extraction:
    """The answer written in ``text`` under ``style``, with its status (see module doc)."""
    if style not in AnswerStyle.values():
        raise ValueError(f"unknown answer style {style!r}; valid: {AnswerStyle.valid()}")
    if text is None or not str(text).strip():
        return Extraction(None, "none")
    text = str(text)
    if style == "none":
        return Extraction(text.strip(), "ok", "whole")
    text = _after_thinking(text)
    if style == "boxed":
        group = _box_group(text)
        return Extraction(group[1], group[2], "boxed") if group else Extraction(None, "none")
    if style == "answer_line":
        return _found(answer_line(text), "answer_line")
    if style == "minerva":
        return _found(minerva_answer(text), "final_answer")
    if style == "gsm8k":
        group = _box_group(text)
        if group is not None:
            return Extraction(group[1], group[2], "boxed")
        gsm = _gsm8k_marker(text)
        if gsm is not None:
            return Extraction(gsm[1], "ok", "####")
        return _found(last_math(text), "last_math")
    explicit = _explicit(text)
    if explicit is not None:
        return explicit
    stripped = text.strip()
    if _one_bare_line(stripped):
        return Extraction(stripped.rstrip(".").strip() or None, "ok", "whole")
    return _found(last_math(text), "last_math")


def _found(answer: str | None, source: str) -> Extraction:
    return Extraction(answer, "ok", source) if answer else Extraction(None, "none")


def extract_answer(text: str | None, style: str = "auto") -> str | None:
    """The final answer written in ``text`` according to ``style`` (see module doc).

    >>> extract_answer("so $x=\\\\boxed{\\\\frac{1}{2}}$.")
    '\\\\frac{1}{2}'
    >>> extract_answer("work...\\nAnswer: 42", style="answer_line")
    '42'
    >>> extract_answer("She pays 3 + 4 = 7 dollars.\\n#### 7", style="gsm8k")
    '7'
    """
    return extract(text, style).answer
