"""Preference pairs with a known winner, and the judge rows made from them.

A pair is (prompt, chosen, rejected[, category]). Files are local jsonl/json/parquet or
hub ids, read through the training data's reader with a field mapping (dotted names reach
into nested records; chat messages become their last user text). Rows without a prompt,
chosen or rejected text are counted and listed, never used.

Every pair is judged in **both orders** (J1 §2: (x, a, b) and (x, b, a)); the two rows of a
pair are consecutive, which the engine's `KeepRowsTogether` turns into "in the same
batch". Row ids say what a row is: `<pair id>|AB` (chosen shown first, gold verdict A),
`<pair id>|BA` (gold B), and for pointwise judging `<pair id>|chosen` / `<pair id>|rejected`.

RM-R1 (arXiv 2505.02387) judges each pair **once** (`PairOrders.one`): its data script puts the
chosen response first in every other pair and second in the rest (RM-R1-UIUC/RM-R1
rm_r1/dataset/mix_data/mix_data.py:146-153, by a running count), so here pair i keeps its AB
row when i is even and its BA row when i is odd. Its released RL data holds the judge prompts
already written, both responses in place (`context_messages`) with the winner named
(`winner`: model_a / model_b, mix_data.py:185-188): `load_prepared` reads such rows, one
judge row each, in the order the file gives.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rlrecipes.choice import Choice
from rlrecipes.data.loader import get_field, read_records
from rlrecipes.errors import ConfigError, DataError, UserError
from rlrecipes.judge.prompts import pairwise_prompt, pointwise_prompt

ORDERS = ("AB", "BA")
ROLES = ("chosen", "rejected")


class PairOrders(Choice):  # `recipe.pair_orders` of recipe=j1 (the module doc)
    both = "both"  # J1 §2: every pair in both orders, the two rows in one batch
    one = "one"  # RM-R1: each pair once, the chosen response first in every other pair


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
    chosen: str | None = "chosen"  # None with rejected None: `prompt` is a written judge prompt
    rejected: str | None = "rejected"
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
        return f"{len(self.pairs)} pairs from {self.source}" + _left_out(self.skipped)


def _left_out(skipped: list[tuple[int, str]]) -> str:
    if not skipped:
        return ""
    rows = ", ".join(f"row {i} ({why})" for i, why in skipped[:5])
    more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    return f"; {len(skipped)} rows left out: {rows}{more}"


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


def judge_rows(pairs: Sequence[Pair], judge: str, style: str, orders: str = PairOrders.both) -> list[dict[str, Any]]:
    """Consecutive rows per pair, each `{"id", "problem", "answer"}` with the judge prompt as
    the problem: both orders (pairwise formats), both responses (pointwise), or the
    pairwise_scores orders then the pointwise responses (multitask: four rows). With
    `orders=one`, one row per pair (pairwise formats only): see `one_order`."""
    if orders == PairOrders.one:
        if judge not in ("pairwise", "pairwise_scores"):
            raise UserError(f"one order per pair is a pairwise judgement; recipe.judge={judge} has no order")
        return one_order(judge_rows(pairs, judge, style))
    if orders != PairOrders.both:
        raise UserError(f"recipe.pair_orders={orders!r}; valid: {PairOrders.valid()}")
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


def one_order(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """From both-order rows (AB, BA consecutive per pair), the AB row of every even pair and
    the BA row of every odd one: RM-R1's alternation (mix_data.py:146-153)."""
    kinds = [split_row_id(row["id"])[1] for row in rows]
    if kinds != list(ORDERS) * (len(rows) // 2):
        raise ValueError("one_order takes both-order rows: AB then BA for every pair")
    return [rows[2 * i + i % 2] for i in range(len(rows) // 2)]


def split_row_id(row_id: str) -> tuple[str, str]:
    """`("pair id", "AB" | "BA" | "chosen" | "rejected")` from a judge row's id."""
    pair, sep, kind = str(row_id).rpartition("|")
    if not sep or kind not in ORDERS + ROLES:
        raise ValueError(f"{row_id!r} is not a judge row id (<pair>|AB, |BA, |chosen or |rejected)")
    return pair, kind


def check_pair_source(r: Any, rewards: Sequence[str]) -> None:
    """One-line errors for recipe=j1's pair order or written judge prompts (`r`: its recipe
    config, `rewards`: the names in recipe.rewards) that its other settings cannot serve."""
    written = r.chosen_field is None, r.rejected_field is None
    if any(written) and not all(written):
        raise ConfigError(
            f"recipe.chosen_field={r.chosen_field or 'null'} and recipe.rejected_field={r.rejected_field or 'null'}: "
            "set both to null (recipe.prompt_field holds written judge prompts) or both to the response columns"
        )
    if all(written):
        if not r.label_field:
            raise ConfigError(
                "written judge prompts (recipe.chosen_field=null, recipe.rejected_field=null) need "
                "recipe.label_field, the column naming the winner (model_a/A or model_b/B)"
            )
        if r.pair_orders != PairOrders.one:
            raise ConfigError(
                "written judge prompts hold each pair in the one order the file gives: set recipe.pair_orders=one"
            )
        if r.pairs is None:
            raise ConfigError("written judge prompts are read from recipe.pairs=FILE_OR_HUB_ID, which is null")
    if r.pair_orders != PairOrders.one:
        return
    if r.judge != "pairwise":
        raise ConfigError(
            f"recipe.pair_orders=one judges each pair once by a verdict: it needs recipe.judge=pairwise, not {r.judge}"
        )
    if "verdict" in rewards:
        raise ConfigError(
            "recipe.pair_orders=one judges each pair once, but the 'verdict' reward scores both orders of a pair "
            "together: use {name: rm_r1_verdict} in recipe.rewards (RM-R1's per-row reward)"
        )


# ------------------------------------------------------------- written judge prompts
@dataclass
class LoadedPrompts:
    """Judge rows read from a file of written judge prompts (`PairFields` with no response columns)."""

    rows: list[dict[str, Any]]
    source: str
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def report(self) -> str:
        return f"{len(self.rows)} judge prompts from {self.source}" + _left_out(self.skipped)


def to_prepared(rows: Iterable[dict], source: str, fields: PairFields, limit: int | None = None) -> LoadedPrompts:
    """One pairwise judge row per record: the judge prompt as written (the last user message
    of a chat, `get_field`), the gold verdict from the label (A for the first response, B
    for the second), the id `<id>|AB` or `<id>|BA` accordingly."""
    rows = list(rows)
    if not fields.label:
        raise UserError("written judge prompts (no response columns) need the label column naming the winner")
    for name in (fields.prompt, fields.label):
        if rows and all(get_field(r, name) is None for r in rows):
            raise DataError(f"{source}: no row has field {name!r}; columns are: {', '.join(sorted(rows[0]))}")
    out = LoadedPrompts([], source)
    for index, row in enumerate(rows):
        prompt, label = get_field(row, fields.prompt), str(get_field(row, fields.label)).strip()
        gold = "A" if label in FIRST_WINS else "B" if label in SECOND_WINS else None
        if gold is None:
            out.skipped.append((index, f"{fields.label}={label!r} names no winner"))
            continue
        if not isinstance(prompt, str) or not prompt.strip():
            out.skipped.append((index, f"no {fields.prompt}"))
            continue
        ident = get_field(row, fields.id) if fields.id else None
        ident = str(ident if ident is not None else index)
        out.rows.append({"id": f"{ident}|{'AB' if gold == 'A' else 'BA'}", "problem": prompt, "answer": gold})
        if limit is not None and len(out.rows) >= limit:
            break
    return out


def load_prepared(
    path: str, fields: PairFields, subset: str | None = None, split: str = "train", limit: int | None = None
) -> LoadedPrompts:
    records, source = read_records(path, subset, split)
    loaded = to_prepared(records, source, fields, limit)
    if not loaded.rows:
        raise DataError(f"{loaded.report()}: no usable judge prompt (fields {fields.prompt}/{fields.label})")
    return loaded


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
