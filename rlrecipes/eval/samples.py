"""Per-problem sample records: ``samples.jsonl`` (write, resume) and generations files.

One line of ``samples.jsonl`` per problem, written as soon as its chunk is generated
and graded, so an interrupted eval resumes without regenerating finished problems:

    {"benchmark", "id", "problem", "prompt", "gold", "subject", "level",
     "completions": [...], "answers": [extracted or null, ...], "correct": [bool, ...],
     "num_tokens": [int or null, ...], "finish_reasons": ["stop" | "length" | null, ...]}

A *generations file* (``generations=FILE.jsonl``) holds completions made elsewhere:
one object per line, ``{"gold": "...", "completions": ["...", ...]}``, optionally
with ``"id"`` and ``"problem"``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from rlrecipes.data.files import iter_jsonl
from rlrecipes.errors import DataError as BenchmarkError

GENERATION_KEYS = ("gold", "completions", "id", "problem")


@dataclass
class ProblemRecord:
    benchmark: str
    id: str
    problem: str
    prompt: str
    gold: str
    completions: list[str]
    subject: str | None = None
    level: str | None = None
    answers: list[str | None] = field(default_factory=list)
    correct: list[bool] = field(default_factory=list)
    num_tokens: list[int | None] = field(default_factory=list)
    finish_reasons: list[str | None] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


def read_samples(path: Path) -> list[ProblemRecord]:
    """Finished records of an earlier (maybe interrupted) run; a torn last line is dropped."""
    if not path.is_file():
        return []
    records = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(ProblemRecord(**json.loads(line)))
        except (json.JSONDecodeError, TypeError) as exc:
            if lineno == len(lines):  # killed mid-write: regenerate that problem
                break
            raise BenchmarkError(f"{path}:{lineno}: not a samples record ({exc}); "
                                 "delete the file to start the eval afresh") from None
    return records


class SampleWriter:
    """Appends records to ``samples.jsonl``, one flushed line per problem."""

    def __init__(self, path: Path, keep: list[ProblemRecord]) -> None:
        self.path = path
        # Rewrite what is kept, so a torn last line never sits before new records.
        with path.open("w", encoding="utf-8") as f:
            for rec in keep:
                f.write(rec.to_json() + "\n")

    def write(self, records: list[ProblemRecord]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            for rec in records:
                f.write(rec.to_json() + "\n")
            f.flush()


def _str_or_none(value: Any) -> str | None:
    if value is None:
        return None
    from rlrecipes.eval.items import gold_to_str

    return gold_to_str(value)


def read_generations(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` for each line of a generations file, checked."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise BenchmarkError(f"generations file {str(path)!r} does not exist")
    for lineno, row in iter_jsonl(path):
        unknown = sorted(set(row) - set(GENERATION_KEYS))
        if unknown:
            raise BenchmarkError(f"{path}:{lineno}: unknown key {unknown[0]!r}; valid keys: "
                                 f"{', '.join(GENERATION_KEYS)}")
        comps = row.get("completions")
        if not isinstance(comps, list) or not comps or not all(isinstance(c, str) for c in comps):
            raise BenchmarkError(f"{path}:{lineno}: key 'completions' must be a non-empty "
                                 "list of strings")
        row["gold"] = _str_or_none(row.get("gold"))
        if row.get("id") is not None:
            row["id"] = str(row["id"])
        yield lineno, row
