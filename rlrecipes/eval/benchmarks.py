"""Evaluation benchmarks: a registry of specs and one loader for hub ids and local files.

Each ``BenchmarkSpec`` says where the benchmark lives on the Hugging Face Hub, which
local files hold it in the ``shared/data`` layout (``<bench>/<source repo>/<file>``),
how to read the problem / gold / id / subject / level out of a row (field names differ
per source), and how answers are written (the extraction style).

``load_benchmark(name, data_dir=None)`` returns ``BenchmarkItems`` (a list of
``BenchmarkItem``) that also carries ``source`` and ``skipped``: rows without a problem
or a usable gold answer are never dropped silently, they are listed there with the
reason, and ``report()`` prints one line about them. Exact duplicate rows (e.g. the
DAPO AIME parquet, 30 problems x 32 copies for avg@32) are merged and counted.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from rlrecipes.eval.readers import BenchmarkError, read_rows
from rlrecipes.grading.extract import last_boxed


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
    """``list[BenchmarkItem]`` plus where it came from and what was left out."""

    def __init__(self, items: Iterable[BenchmarkItem], *, name: str, source: str,
                 skipped: list[SkippedRow] | None = None, duplicates: int = 0) -> None:
        super().__init__(items)
        self.name, self.source = name, source
        self.skipped = skipped or []
        self.duplicates = duplicates

    def report(self) -> str:
        """One line: how many problems, from where, and what was skipped or merged."""
        line = f"{self.name}: {len(self)} problems from {self.source}"
        if self.duplicates:
            line += f"; {self.duplicates} duplicate rows merged"
        if self.skipped:
            reasons = sorted({s.reason for s in self.skipped})
            rows = ", ".join(str(s.row) for s in self.skipped[:5])
            more = "" if len(self.skipped) <= 5 else ", ..."
            line += (f"; {len(self.skipped)} rows skipped (rows {rows}{more}: "
                     f"{'; '.join(reasons)})")
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
    gold_from: str = "field"  # "field" | "solution_boxed" (Minerva) | "gsm8k" ("... #### 42")
    id_fields: tuple[str, ...] = ("unique_id", "id", "idx")
    subject_fields: tuple[str, ...] = ()
    level_fields: tuple[str, ...] = ()
    description: str = ""
    # Synthetic tasks (registered by rlrecipes.data) build their items in code.
    builder: Callable[[], list[BenchmarkItem]] | None = field(default=None, compare=False)

    @property
    def breakdowns(self) -> tuple[str, ...]:
        return tuple(k for k, f in (("subject", self.subject_fields),
                                    ("level", self.level_fields)) if f)


BENCHMARKS: dict[str, BenchmarkSpec] = {}
SUITES: dict[str, tuple[str, ...]] = {
    # The six benchmarks of one-shot RLVR's average (paper Tab. 8).
    "paper_suite": ("math500", "aime24", "amc23", "minerva_math", "olympiadbench", "aime25"),
    # TTRL's three (AMC here is the 83-problem set).
    "ttrl_suite": ("aime24", "amc", "math500"),
}


def register_benchmark(spec: BenchmarkSpec) -> BenchmarkSpec:
    BENCHMARKS[spec.name] = spec
    return spec


for _spec in (
    BenchmarkSpec("math500", "HuggingFaceH4/MATH-500", "test", 500,
                  local_files=("math500/One-Shot-RLVR/test.jsonl", "math500/TTRL/test.json",
                               "math500/One-Shot-RLVR/math500.parquet"),
                  subject_fields=("subject",), level_fields=("level", "extra_info.level"),
                  description="MATH-500 (PRM800K test subset)"),
    BenchmarkSpec("aime24", "HuggingFaceH4/aime_2024", "train", 30,
                  local_files=("aime24/One-Shot-RLVR/test.jsonl", "aime24/TTRL/test.json",
                               "aime24/DAPO/aime-2024.parquet"),
                  description="AIME 2024 (I and II)"),
    BenchmarkSpec("aime25", "math-ai/aime25", "test", 30,
                  local_files=("aime25/One-Shot-RLVR/test.jsonl", "aime25/Spurious_Rewards/test.json"),
                  description="AIME 2025 (I and II)"),
    BenchmarkSpec("amc23", "math-ai/amc23", "test", 40,
                  local_files=("amc23/One-Shot-RLVR/test.jsonl",),
                  description="AMC 2023 (12A/12B), 40 problems"),
    BenchmarkSpec("amc", "AI-MO/aimo-validation-amc", "train", 83,
                  local_files=("amc_ttrl/TTRL/test.json",),
                  description="AMC 2022-23, the 83 problems of TTRL / Spurious Rewards"),
    BenchmarkSpec("minerva_math", "math-ai/minervamath", "test", 272,
                  local_files=("minerva_math/One-Shot-RLVR/test.jsonl",),
                  gold_fields=("answer",), gold_from="solution_boxed",
                  subject_fields=("type",), description="Minerva OCW courses"),
    BenchmarkSpec("olympiadbench", "Hothan/OlympiadBench", "train", 675,
                  hub_config="OE_TO_maths_en_COMP",
                  local_files=("olympiadbench/One-Shot-RLVR/test.jsonl",),
                  subject_fields=("subfield",),
                  description="OlympiadBench, English text-only open-ended maths"),
    BenchmarkSpec("gsm8k", "openai/gsm8k", "test", 1319, hub_config="main",
                  answer_style="gsm8k", gold_from="gsm8k", local_files=("gsm8k/test.jsonl",),
                  description="GSM8K grade-school maths"),
):
    register_benchmark(_spec)


def benchmark_names() -> list[str]:
    return sorted(BENCHMARKS)


def resolve_benchmarks(names: str | Iterable[str]) -> list[str]:
    """Expand a comma list / suite name into benchmark names, checking each one."""
    raw = names.split(",") if isinstance(names, str) else list(names)
    out: list[str] = []
    for name in (n.strip() for n in raw):
        if not name:
            continue
        for member in SUITES.get(name, (name,)):
            if member not in BENCHMARKS:
                valid = ", ".join(benchmark_names() + sorted(SUITES))
                raise BenchmarkError(f"unknown benchmark {member!r}; valid: {valid}")
            if member not in out:
                out.append(member)
    return out


# -- row parsing ---------------------------------------------------------------------
def _get(row: dict[str, Any], dotted: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _first(row: dict[str, Any], fields: Iterable[str]) -> Any:
    for f in fields:
        v = _get(row, f)
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


def gold_to_str(value: Any) -> str | None:
    """A dataset gold answer as a string: floats like 27.0 -> "27", lists joined.

    OlympiadBench stores ``final_answer`` as a list (sometimes a stringified one,
    "['2']"); several answers are joined with ", ".
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\[.*\]\s*", value, re.S):
        try:  # a repr()'d list of strings; literal_eval reads literals only, runs nothing
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            value = parsed
    if isinstance(value, (list, tuple)):
        parts = [p for p in (gold_to_str(v) for v in value) if p]
        return ", ".join(p.strip().strip("$").strip() for p in parts) or None
    text = str(value).strip()
    return text or None


def _gold(spec: BenchmarkSpec, row: dict[str, Any]) -> tuple[str | None, str]:
    if spec.gold_from == "solution_boxed":
        gold = gold_to_str(_first(row, spec.gold_fields))
        if gold:
            return gold, ""
        solution = _get(row, "solution")
        if not isinstance(solution, str):
            return None, "no answer field and no 'solution' to take the last \\boxed{} from"
        boxed = last_boxed(solution)
        return (boxed, "") if boxed else (None, "no \\boxed{} answer in 'solution'")
    raw = _first(row, spec.gold_fields)
    if spec.gold_from == "gsm8k" and isinstance(raw, str):
        m = re.search(r"####\s*(.+)\s*$", raw)
        raw = m.group(1).replace(",", "") if m else raw
    gold = gold_to_str(raw)
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
        items.append(BenchmarkItem(
            id=str(rid) if rid is not None else f"{spec.name}-{i}",
            problem=problem, gold=gold,
            subject=None if subject is None else str(subject),
            level=None if level is None else str(level),
            meta={"row": i},
        ))
    _dedupe_ids(items, spec.name)
    return BenchmarkItems(items, name=spec.name, source=source, skipped=skipped,
                          duplicates=duplicates)


def _dedupe_ids(items: list[BenchmarkItem], name: str) -> None:
    """Ids must be unique (they key resumable samples); fall back to row numbers."""
    if len({it.id for it in items}) != len(items):
        for k, it in enumerate(items):
            items[k] = BenchmarkItem(f"{name}-{it.meta['row']}", it.problem, it.gold,
                                     it.subject, it.level, it.meta)


# -- locating and loading ------------------------------------------------------------
def find_local_file(spec: BenchmarkSpec, data_dir: str | Path) -> Path:
    """The file holding ``spec`` under ``data_dir`` (a file path is returned as is).

    ``data_dir`` may be the shared root (``.../data``), the benchmark's folder
    (``.../data/math500``) or a source folder (``.../data/math500/TTRL``).
    """
    root = Path(data_dir).expanduser()
    if root.is_file():
        return root
    if not root.is_dir():
        raise BenchmarkError(f"data_dir {str(root)!r} does not exist")
    tried = []
    for rel in spec.local_files:
        parts = Path(rel).parts
        for k in range(len(parts)):  # also accept data_dir below the layout's root
            candidate = root.joinpath(*parts[k:])
            tried.append(str(candidate))
            if candidate.is_file():
                return candidate
    found = sorted(p for ext in ("jsonl", "json", "parquet") for p in root.glob(f"*.{ext}"))
    if len(found) == 1:
        return found[0]
    hint = f"; files there: {', '.join(p.name for p in found)}" if found else ""
    raise BenchmarkError(
        f"no file for benchmark {spec.name!r} under {str(root)!r} (looked for "
        f"{', '.join(spec.local_files) or 'a single .jsonl/.json/.parquet'}){hint}; "
        f"pass the file itself as data_dir=PATH")


def _load_hub(spec: BenchmarkSpec) -> Iterable[dict[str, Any]]:
    try:
        from datasets import load_dataset

        return load_dataset(spec.hub_id, spec.hub_config, split=spec.split)
    except Exception as exc:  # offline, gated, renamed: one clear line instead
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BenchmarkError(
            f"could not load benchmark {spec.name!r} from the hub ({spec.hub_id}, "
            f"split {spec.split}): {first}; pass data_dir=DIR_OR_FILE to use local files"
        ) from exc


def load_benchmark(name: str, data_dir: str | Path | None = None,
                   limit: int | None = None) -> BenchmarkItems:
    """Load benchmark ``name`` from ``data_dir`` (a directory or a file) or the hub.

    ``limit`` keeps the first ``limit`` problems (after skipping and merging).
    """
    if name not in BENCHMARKS:
        valid = ", ".join(benchmark_names())
        raise BenchmarkError(f"unknown benchmark {name!r}; valid: {valid}")
    spec = BENCHMARKS[name]
    if spec.builder is not None and data_dir is None:
        items = BenchmarkItems(spec.builder(), name=name, source="built-in synthetic task")
    elif data_dir is not None:
        path = find_local_file(spec, data_dir)
        items = items_from_rows(spec, read_rows(path), str(path))
    else:
        items = items_from_rows(spec, _load_hub(spec), f"hub:{spec.hub_id}")
    if limit is not None and limit >= 0:
        items = BenchmarkItems(items[:limit], name=items.name, source=items.source,
                               skipped=items.skipped, duplicates=items.duplicates)
    return items
