"""``\\boxed{}`` answers: a brace scanner that respects escapes, every complete box of a
text, and the last group of boxes written side by side (``\\boxed{2}, \\boxed{3}``), which
`extract` reads as one list answer. Only a scanner runs here: nothing is evaluated."""

from __future__ import annotations

import re

from rlrecipes.grading.normalize import normalize_answer

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")

_BRACE_TOKEN_RE = re.compile(r"\\.|[{}]", re.S)


def brace_map(text: str, start: int = 0) -> dict[int, int]:
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
    braces = brace_map(text, found[0].end()) if found else {}
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


def box_group(text: str) -> tuple[int, str, str] | None:
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
