"""Exact match on the last `<answer>...</answer>`, as Search-R1 scores QA (Jin et al. 2025,
arXiv 2503.09516; `verl/utils/reward_score/qa_em.py` in PeterGriffinJin/Search-R1).

- `normalize_qa` is SQuAD's normalisation (qa_em.py:19-33): lower case, punctuation
  dropped, the articles a/an/the dropped, whitespace squashed.
- `exact_match` (qa_em.py:36-46, `em_check`): the normalised prediction equals a
  normalised gold answer; `substring=True` is `subem_check` (qa_em.py:49-59), a gold
  answer inside the prediction.
- `last_answer` reads the last answer block. Search-R1 scores the prompt and response
  together and so needs at least two blocks, the prompt's example `<answer> Beijing
  </answer>` being the first (qa_em.py:73-82); here the text scored is the model's own
  (the tool rollout's `model_text`), so the last block is the answer whatever the count.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any, Iterable

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_qa(text: str) -> str:
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def last_answer(text: str) -> str | None:
    """The text of the last complete `<answer>...</answer>` block, stripped; None if there is none."""
    blocks = _ANSWER.findall(text)
    return blocks[-1].strip() if blocks else None


def gold_answers(gold: Any) -> list[str]:
    """One gold answer or several (Search-R1's `golden_answers` is a list; loaded data keeps it
    as a JSON list string, `rlrecipes.data.loader.gold_aliases`)."""
    if gold is None:
        return []
    if isinstance(gold, str):
        return _json_aliases(gold) or [gold]
    if isinstance(gold, Iterable):
        return [str(g) for g in gold]
    return [str(gold)]


def exact_match(text: str, gold: Any, substring: bool = False) -> bool:
    """Whether the last answer block of `text` matches a gold answer after normalisation."""
    answer = last_answer(text)
    if answer is None:
        return False
    prediction = normalize_qa(answer)
    for candidate in gold_answers(gold):
        target = normalize_qa(candidate)
        if substring and not target:  # an empty gold answer is inside every prediction
            continue
        if (target in prediction) if substring else (target == prediction):
            return True
    return False


def _json_aliases(text: str) -> list[str] | None:
    """The aliases of a JSON list of strings (`gold_aliases`' encoding), else None."""
    if not text.startswith("["):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if isinstance(parsed, list) and parsed and all(isinstance(p, str) for p in parsed):
        return parsed
    return None
