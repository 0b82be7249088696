"""Preference pairs with a known winner, and the judge rows made from them.

A pair is (prompt, chosen, rejected[, category]). Files are local jsonl/json/parquet or
hub ids, read through the training data's reader with a field mapping (dotted names reach
into nested records; chat messages become their last user text). Rows without a prompt,
chosen or rejected text are counted and listed, never used.

Every pair is judged in **both orders** (J1 §2: (x, a, b) and (x, b, a)); the two rows of a
pair are consecutive, which the engine's `KeepRowsTogether` turns into "in the same
batch". Row ids say what a row is: `<pair id>|AB` (chosen shown first, gold verdict A),
`<pair id>|BA` (gold B), and for pointwise judging `<pair id>|chosen` / `<pair id>|rejected`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rlrecipes.data.loader import get_field, read_records
from rlrecipes.errors import DataError
from rlrecipes.judge.prompts import pairwise_prompt, pointwise_prompt

ORDERS = ("AB", "BA")
ROLES = ("chosen", "rejected")


@dataclass(frozen=True)
class Pair:
    id: str
    prompt: str
    chosen: str
    rejected: str
    category: str | None = None


@dataclass(frozen=True)
class PairFields:
    """Which columns of a pair file hold what (dotted names reach into nested records).

    With `label`, `chosen` and `rejected` name the two responses as the file orders them
    (response A, response B) and the label column says which one wins: "A>B" / "A" /
    "model_a" / 1 for the first, "B>A" / "B" / "model_b" / 2 for the second (JudgeBench,
    PPE); any other value (a tie) leaves the row out, counted. When both response columns
    hold lists of texts (RM-Bench's three styles), every (chosen i, rejected j) combination
    is a pair, with id `<row>:<i><j>`.
    """

    prompt: str = "prompt"
    chosen: str = "chosen"
    rejected: str = "rejected"
    category: str | None = None
    id: str | None = None
    label: str | None = None


FIRST_WINS = {"A>B", "A", "model_a", "1", "a", "response_a"}
SECOND_WINS = {"B>A", "B", "model_b", "2", "b", "response_b"}


@dataclass
class LoadedPairs:
    pairs: list[Pair]
    source: str
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def report(self) -> str:
        text = f"{len(self.pairs)} pairs from {self.source}"
        if self.skipped:
            rows = ", ".join(f"row {i} ({why})" for i, why in self.skipped[:5])
            more = f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            text += f"; {len(self.skipped)} rows left out: {rows}{more}"
        return text


def to_pairs(rows: Iterable[dict], source: str, fields: PairFields, limit: int | None = None) -> LoadedPairs:
    rows = list(rows)
    for name in (fields.prompt, fields.chosen, fields.rejected):
        if rows and all(get_field(r, name) is None for r in rows):
            raise DataError(f"{source}: no row has field {name!r}; columns are: {', '.join(sorted(rows[0]))}")
    out = LoadedPairs([], source)
    for index, row in enumerate(rows):
        prompt, chosen, rejected = (get_field(row, name) for name in (fields.prompt, fields.chosen, fields.rejected))
        if fields.label:
            label = str(get_field(row, fields.label)).strip()
            if label in SECOND_WINS:
                chosen, rejected = rejected, chosen
            elif label not in FIRST_WINS:
                out.skipped.append((index, f"{fields.label}={label!r} names no winner"))
                continue
        ident = get_field(row, fields.id) if fields.id else None
        ident = str(ident if ident is not None else index)
        category = get_field(row, fields.category) if fields.category else None
        category = None if category is None else str(category)
        if isinstance(chosen, list) and isinstance(rejected, list):
            combos = [(f"{ident}:{i}{j}", c, r) for i, c in enumerate(chosen) for j, r in enumerate(rejected)]
        else:
            combos = [(ident, chosen, rejected)]
        for pair_id, c, r in combos:
            texts = {fields.prompt: prompt, fields.chosen: c, fields.rejected: r}
            missing = [name for name, value in texts.items() if not isinstance(value, str) or not value.strip()]
            if missing:
                out.skipped.append((index, f"no {missing[0]}"))
                continue
            out.pairs.append(Pair(pair_id, prompt, c, r, category))
        if limit is not None and len(out.pairs) >= limit:
            out.pairs = out.pairs[:limit]
            break
    return out


def load_pairs(
    path: str,
    fields: PairFields = PairFields(),
    subset: str | None = None,
    split: str = "train",
    limit: int | None = None,
) -> LoadedPairs:
    rows, source = read_records(path, subset, split)
    loaded = to_pairs(rows, source, fields, limit)
    if not loaded.pairs:
        raise DataError(f"{loaded.report()}: no usable pair (fields {fields.prompt}/{fields.chosen}/{fields.rejected})")
    return loaded


def judge_rows(pairs: Sequence[Pair], judge: str, style: str) -> list[dict[str, Any]]:
    """Consecutive rows per pair, each `{"id", "problem", "answer"}` with the judge prompt as
    the problem: both orders (pairwise formats), both responses (pointwise), or the
    pairwise_scores orders then the pointwise responses (multitask: four rows)."""
    rows: list[dict[str, Any]] = []
    for pair in pairs:
        if judge == "multitask":
            rows += _order_rows(pair, "pairwise_scores", style)
        if judge in ("pointwise", "multitask"):
            for role, text in zip(ROLES, (pair.chosen, pair.rejected)):
                rows.append(
                    {"id": f"{pair.id}|{role}", "problem": pointwise_prompt(pair.prompt, text, style), "answer": role}
                )
        else:
            rows += _order_rows(pair, judge, style)
    return rows


def _order_rows(pair: Pair, judge: str, style: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{pair.id}|AB",
            "problem": pairwise_prompt(pair.prompt, pair.chosen, pair.rejected, judge, style),
            "answer": "A",
        },
        {
            "id": f"{pair.id}|BA",
            "problem": pairwise_prompt(pair.prompt, pair.rejected, pair.chosen, judge, style),
            "answer": "B",
        },
    ]


def split_row_id(row_id: str) -> tuple[str, str]:
    """`("pair id", "AB" | "BA" | "chosen" | "rejected")` from a judge row's id."""
    pair, sep, kind = str(row_id).rpartition("|")
    if not sep or kind not in ORDERS + ROLES:
        raise ValueError(f"{row_id!r} is not a judge row id (<pair>|AB, |BA, |chosen or |rejected)")
    return pair, kind


# ------------------------------------------------------------------- pairs from samples
@dataclass
class PairBuild:
    """Pairs built from graded samples, and what happened to every problem."""

    pairs: list[Pair]
    problems: int
    all_correct: int = 0  # no rejected response available
    all_wrong: int = 0  # no chosen response available

    def counts(self) -> dict[str, int]:
        return {
            "problems": self.problems,
            "pairs": len(self.pairs),
            "all_correct": self.all_correct,
            "all_wrong": self.all_wrong,
        }


def pairs_from_graded(
    problems: Sequence[dict[str, Any]],
    samples: Sequence[Sequence[str]],
    correct: Sequence[Sequence[bool]],
    seed: int = 0,
) -> PairBuild:
    """One pair per problem with at least one correct and one incorrect sample (J1's MATH
    half: chosen = a correct sample, rejected = a sample whose answer differs from the gold).
    The two are drawn at random among the correct / incorrect samples (seeded); problems
    whose samples are all right or all wrong give no pair and are counted."""
    rng = random.Random(seed)
    build = PairBuild([], len(problems))
    for item, texts, verdicts in zip(problems, samples, correct):
        right = [t for t, ok in zip(texts, verdicts) if ok]
        wrong = [t for t, ok in zip(texts, verdicts) if not ok]
        if not wrong:
            build.all_correct += 1
            continue
        if not right:
            build.all_wrong += 1
            continue
        build.pairs.append(Pair(str(item["id"]), str(item["problem"]), rng.choice(right), rng.choice(wrong)))
    return build
