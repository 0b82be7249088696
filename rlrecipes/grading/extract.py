"""Pull the final answer out of a model response.

Styles (all return the raw answer text, or None when the response has none):

- ``boxed``: the content of the last *complete* ``\\boxed{...}`` / ``\\fbox{...}``
  (brace-matched; ``\\boxed 5`` without braces also counts). An unclosed box at the
  very end (a truncated response) is skipped and the previous complete one is used.
- ``answer_line``: DAPO's rule: regex ``(?i)Answer\\s*:\\s*([^\\n]+)`` on the last
  300 characters of the response, last match.
- ``gsm8k``: the text after the last ``####``, else the last number in the response.
- ``auto``: boxed -> answer_line -> "the answer is ..." -> last number, the order of
  the Qwen2.5-Math / TTRL parsers (which have no answer-line step).

Only regular expressions and brace counting run here: nothing is ever evaluated.
"""

from __future__ import annotations

import re
from typing import Literal

AnswerStyle = Literal["boxed", "answer_line", "gsm8k", "auto"]
STYLES: tuple[str, ...] = ("boxed", "answer_line", "gsm8k", "auto")

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_ANSWER_LINE_RE = re.compile(r"(?i)Answer\s*:\s*([^\n]+)")
_THE_ANSWER_RE = re.compile(r"(?i)(?:the\s+)?(?:final\s+)?answer\s+is\s*:?\s*([^\n]+)")
_GSM8K_RE = re.compile(r"####\s*([^\n]*)")
# A digit-group comma sits between a digit and exactly three digits ("1,234").
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER_RE = re.compile(r"-?\d*\.?\d+(?:/\d+)?")
_INLINE_MATH_RE = re.compile(r"\$+([^$]+)\$+|\\\((.+?)\\\)")

# DAPO's verifier only looks at the tail of the response.
ANSWER_LINE_WINDOW = 300


def _match_braces(text: str, open_idx: int) -> int | None:
    """Index of the brace closing the one at ``open_idx``, or None if unbalanced."""
    depth = 0
    i = open_idx
    while i < len(text):
        ch = text[i]
        if ch == "\\":  # an escaped brace (\{ or \}) does not count
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _box_content(text: str, start: int) -> str | None:
    """Content of the box whose command ends at ``start``; None if incomplete."""
    i = start
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "{":
        end = _match_braces(text, i)
        return None if end is None else text[i + 1 : end]
    if i > start:  # "\boxed 5": up to the next space or dollar sign
        m = re.match(r"[^\s$]+", text[i:])
        return m.group(0) if m else None
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{}``/``\\fbox{}`` in ``text``."""
    for m in reversed(list(_BOX_RE.finditer(text))):
        content = _box_content(text, m.end())
        if content is not None:
            return content.strip()
    return None


def answer_line(text: str) -> str | None:
    """DAPO: last ``Answer: ...`` match within the final 300 characters."""
    matches = _ANSWER_LINE_RE.findall(text[-ANSWER_LINE_WINDOW:])
    if not matches:
        return None
    answer = matches[-1].strip()
    return answer or None


def last_number(text: str) -> str | None:
    """The last number in ``text`` (thousands separators removed), e.g. "-3.5"."""
    found = _NUMBER_RE.findall(_THOUSANDS_RE.sub("", text))
    return found[-1] if found else None


def _the_answer_is(text: str) -> str | None:
    matches = _THE_ANSWER_RE.findall(text)
    if not matches:
        return None
    tail = matches[-1].strip()
    math = _INLINE_MATH_RE.search(tail)
    if math:  # "the answer is $\frac12$ because..." -> the math span
        return (math.group(1) or math.group(2)).strip() or None
    # Cut at the end of the sentence; a period followed by a digit is a decimal point.
    tail = re.split(r"\.(?!\d)|;|\bbecause\b|\bsince\b", tail, maxsplit=1)[0]
    return tail.strip(" .,:") or None


def _gsm8k(text: str) -> str | None:
    matches = _GSM8K_RE.findall(text)
    if matches:
        number = last_number(matches[-1])
        if number is not None:
            return number
        tail = matches[-1].strip()
        if tail:
            return tail
    return last_number(text)


def extract_answer(text: str | None, style: str = "auto") -> str | None:
    """The final answer written in ``text`` according to ``style`` (see module doc).

    >>> extract_answer("so $x=\\\\boxed{\\\\frac{1}{2}}$.")
    '\\\\frac{1}{2}'
    >>> extract_answer("work...\\nAnswer: 42", style="answer_line")
    '42'
    >>> extract_answer("She pays 3 + 4 = 7 dollars.\\n#### 7", style="gsm8k")
    '7'
    """
    if style not in STYLES:
        raise ValueError(f"unknown answer style {style!r}; valid: {', '.join(STYLES)}")
    if not text:
        return None
    if style == "boxed":
        return last_boxed(text)
    if style == "answer_line":
        return answer_line(text)
    if style == "gsm8k":
        return _gsm8k(text)
    for step in (last_boxed, answer_line, _the_answer_is, last_number):
        found = step(text)
        if found:
            return found
    return None


def has_answer_marker(text: str) -> bool:
    """True when ``text`` contains an explicit final-answer marker (box, Answer:, ####)."""
    return bool(
        _BOX_RE.search(text)
        or _ANSWER_LINE_RE.search(text[-ANSWER_LINE_WINDOW:])
        or _THE_ANSWER_RE.search(text)
        or "####" in text
    )
