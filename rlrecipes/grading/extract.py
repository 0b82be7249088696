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

This module holds the styles' policies (markers, answer lines, dispatch); the boxes are
found by ``grading/boxes.py`` and the unanchored fallback is ``grading/bare_math.py``.

``extract(text, style)`` also says how the answer was found: ``status`` is ``ok``,
``none`` (no answer) or ``ambiguous`` (several different boxed answers: the style's
rule still picks one, and samples.jsonl says so). Only regular expressions and a
bracket scanner run here: nothing is ever evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlrecipes.choice import Choice
from rlrecipes.grading.bare_math import CMD_RE, ENV_RE, WORD_RE, clean_math, is_math, last_math, math_candidates
from rlrecipes.grading.boxes import box_group


class AnswerStyle(Choice):  # the policies of the module doc (`data.answer_style`, `protocol.answer_style`)
    auto = "auto"
    boxed = "boxed"
    answer_line = "answer_line"
    gsm8k = "gsm8k"
    minerva = "minerva"
    none = "none"


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


# -- answer lines ----------------------------------------------------------------------
def _first_env(tail: str) -> tuple[str, int] | None:
    m = ENV_RE.match(tail)
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
        return ", ".join(clean_math(p, calculation=False) for p in parts if p.strip()) or None
    line = _SENTENCE_END_RE.split(tail, maxsplit=1)[0]
    line = re.sub(r"[*_\s]+$", "", line).rstrip(".,;: ").strip()
    line = re.sub(r"^[*_\s]+", "", line)
    if not line:
        return None
    if strict and _NOT_AN_ANSWER_RE.match(line):
        return None
    words = WORD_RE.findall(CMD_RE.sub(" ", re.sub(r"\\text\{[^{}]*\}", " ", line)))
    inner = line.replace("$", "")
    if not words:
        return clean_math(inner, calculation=False) or None
    if is_math(inner):
        bare = [m for m in math_candidates(inner) if is_math(m[2])]
        if bare:  # "12 ways", "x = 5 cm": the first expression after the marker
            return clean_math(min(bare)[2]) or None
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
    answer = last_math(line) if is_math(line) else line.strip() or None
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
    group = box_group(text)
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
    words = list(WORD_RE.finditer(plain))
    if not words:
        return True
    if not is_math(text):  # one word ("Evelyn"); more ("no idea") is prose, not an answer
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
        group = box_group(text)
        return Extraction(group[1], group[2], "boxed") if group else Extraction(None, "none")
    if style == "answer_line":
        return _found(answer_line(text), "answer_line")
    if style == "minerva":
        return _found(minerva_answer(text), "final_answer")
    if style == "gsm8k":
        group = box_group(text)
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
