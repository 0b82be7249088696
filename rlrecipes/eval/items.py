"""Benchmark items, specs, and turning raw dataset rows into items.

Field names differ per source (``problem`` / ``question`` / ``prompt`` as chat
messages / ``extra_info.raw_problem``; ``answer`` / ``final_answer`` as a list /
``reward_model.ground_truth``; Minerva has only a ``solution``); a spec lists where to
look, first match wins. Rows without a problem or a usable gold are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from rlrecipes.data.loader import get_field, gold_aliases, gold_text
from rlrecipes.grading.boxes import last_boxed


@dataclass(frozen=True)
class BenchmarkItem:
    """One problem: what the model is asked and what it must answer."""

    id: str
    problem: str
    gold: str
    subject: str | None = None
    level: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class SkippedRow:
    row: int  # 0-based row index in the source
    reason: str


class BenchmarkItems(list):
    """``list[BenchmarkItem]`` plus where it came from and what was left out.

    ``verify(completion, gold)``, when set (synthetic tasks), decides correctness
    instead of extracting an answer and grading it against ``gold``.
    """

    def __init__(
        self,
        items: Iterable[BenchmarkItem],
        *,
        name: str,
        source: str,
        skipped: list[SkippedRow] | None = None,
        duplicates: int = 0,
        verify: Callable[[str, str], bool] | None = None,
    ) -> None:
        super().__init__(items)
        self.name, self.source = name, source
        self.skipped = skipped or []
        self.duplicates = duplicates
        self.verify = verify

    def head(self, limit: int | None) -> BenchmarkItems:
        """The first ``limit`` items, keeping the provenance."""
        items = self if limit is None or limit < 0 else self[:limit]
        return BenchmarkItems(
            items,
            name=self.name,
            source=self.source,
            skipped=self.skipped,
            duplicates=self.duplicates,
            verify=self.verify,
        )

    def report(self) -> str:
        """One line: how many problems, from where, and what was skipped or merged."""
        line = f"{self.name}: {len(self)} problems from {self.source}"
        if self.duplicates:
            line += f"; {self.duplicates} duplicate rows merged"
        if self.skipped:
            reasons = sorted({s.reason for s in self.skipped})
            rows = ", ".join(str(s.row) for s in self.skipped[:5])
            more = "" if len(self.skipped) <= 5 else ", ..."
            line += f"; {len(self.skipped)} rows skipped (rows {rows}{more}: {'; '.join(reasons)})"
        return line


@dataclass(frozen=True)
class BenchmarkSpec:
    """Where a benchmark lives and how to read it."""

    name: str
    hub_id: str
    split: str
    size: int | None  # the expected number of problems (a sanity note, not enforced)
    answer_style: str = "auto"
    hub_config: str | None = None
    local_files: tuple[str, ...] = ()  # relative to data_dir, preferred first
    problem_fields: tuple[str, ...] = ("problem", "question", "extra_info.raw_problem", "prompt")
    gold_fields: tuple[str, ...] = ("answer", "final_answer", "gold", "reward_model.ground_truth")
    # "field" | "solution_boxed" (Minerva) | "gsm8k" ("... #### 42") | "answer_list" (every
    # gold answer kept, as a JSON list: QA sets list aliases, any of which is right)
    gold_from: str = "field"
    id_fields: tuple[str, ...] = ("unique_id", "id", "idx")
    subject_fields: tuple[str, ...] = ()
    level_fields: tuple[str, ...] = ()
    description: str = ""
    # A synthetic task of rlrecipes.data (its held-out split, built in code, no files).
    synthetic: bool = False
    # Your own test set: read through the `data` config (path, split, field mapping,
    # template and answer style), as training data is.
    from_data: bool = False
    # Decides correctness from (completion, gold) instead of extracting and comparing maths
    # (the QA sets: Search-R1's exact match on the last <answer>)
    verify: Callable[[str, str], bool] | None = None
    # Defaults a protocol may leave open (null): prompt template and new-token budget.
    template: str = "qwen_math_cot"
    max_new_tokens: int = 3072

    @property
    def breakdowns(self) -> tuple[str, ...]:
        return tuple(k for k, f in (("subject", self.subject_fields), ("level", self.level_fields)) if f)


def _first(row: dict[str, Any], fields: Iterable[str]) -> Any:
    for f in fields:
        v = get_field(row, f)
        if v is not None and not (isinstance(v, str) and not v.strip()):
            return v
    return None


def _as_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (list, tuple)):  # chat messages: the last user turn
        users = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        return _as_problem(users[-1]) if users else None
    return None


def _gold(spec: BenchmarkSpec, row: dict[str, Any]) -> tuple[str | None, str]:
    if spec.gold_from == "solution_boxed":
        gold = gold_text(_first(row, spec.gold_fields))
        if gold:
            return gold, ""
        solution = get_field(row, "solution")
        if not isinstance(solution, str):
            return None, "no answer field and no 'solution' to take the last \\boxed{} from"
        boxed = last_boxed(solution)
        return (boxed, "") if boxed else (None, "no \\boxed{} answer in 'solution'")
    raw = _first(row, spec.gold_fields)
    if spec.gold_from == "answer_list":
        gold = gold_aliases(raw)
        return (gold, "") if gold else (None, f"no gold answer (looked for {', '.join(spec.gold_fields)})")
    if spec.gold_from == "gsm8k" and isinstance(raw, str):
        m = re.search(r"####\s*(.+)\s*$", raw)
        if m:
            raw = m.group(1).replace(",", "")
        elif len(raw.split()) > 1:  # a solution text without its "#### answer" line, not an answer
            return None, "no '#### answer' line in the answer field"
    gold = gold_text(raw)
    if gold is None:
        return None, f"no gold answer (looked for {', '.join(spec.gold_fields)})"
    return gold, ""


def items_from_rows(spec: BenchmarkSpec, rows: Iterable[dict[str, Any]], source: str) -> BenchmarkItems:
    """Turn raw rows into items; rows without a problem or gold are reported, not dropped."""
    items: list[BenchmarkItem] = []
    skipped: list[SkippedRow] = []
    seen: set[tuple[str, str]] = set()
    duplicates = 0
    for i, row in enumerate(rows):
        problem = _as_problem(_first(row, spec.problem_fields))
        if problem is None:
            skipped.append(SkippedRow(i, f"no problem text (looked for {', '.join(spec.problem_fields)})"))
            continue
        gold, why = _gold(spec, row)
        if gold is None:
            skipped.append(SkippedRow(i, why))
            continue
        if (problem, gold) in seen:
            duplicates += 1
            continue
        seen.add((problem, gold))
        rid = _first(row, spec.id_fields)
        subject, level = _first(row, spec.subject_fields), _first(row, spec.level_fields)
        items.append(
            BenchmarkItem(
                id=str(rid) if rid is not None else f"{spec.name}-{i}",
                problem=problem,
                gold=gold,
                subject=None if subject is None else str(subject),
                level=None if level is None else str(level),
                meta={"row": i},
            )
        )
    _dedupe_ids(items, spec.name)
    return BenchmarkItems(
        items, name=spec.name, source=source, skipped=skipped, duplicates=duplicates, verify=spec.verify
    )


def _dedupe_ids(items: list[BenchmarkItem], name: str) -> None:
    """Ids must be unique (they key resumable samples); fall back to row numbers."""
    if len({it.id for it in items}) != len(items):
        for k, it in enumerate(items):
            items[k] = BenchmarkItem(f"{name}-{it.meta['row']}", it.problem, it.gold, it.subject, it.level, it.meta)
