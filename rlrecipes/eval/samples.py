"""Per-problem sample records: ``samples.jsonl`` (write, resume) and generations files.

One line of ``samples.jsonl`` per problem, written as soon as its chunk is generated
and graded, so an interrupted eval resumes without regenerating finished problems:

    {"benchmark", "id", "problem", "prompt", "gold", "subject", "level",
     "completions": [...], "answers": [extracted or null, ...], "correct": [bool, ...],
     "answer_status": ["ok" | "none" | "ambiguous", ...],
     "num_tokens": [int or null, ...], "finish_reasons": ["stop" | "length" | null, ...],
     "tool_stats": [{"rollouts", "turns", "calls", ...}, ...]}  (only with rollout.tools)

``answer_status`` says how each answer was found: ``none`` (no answer in the
completion), ``ambiguous`` (several different boxed answers; the answer style's rule
picked one) or ``ok``.

A *generations file* (``generations=FILE.jsonl``) holds completions made elsewhere:
one object per line, ``{"gold": "...", "completions": ["...", ...]}``, optionally
with ``"answers"`` (already-extracted answers, one per completion, or instead of
completions), ``"id"`` and ``"problem"``. The field names of Qwen2.5-Math's evaluation
output are read too (``gt``, ``code``, ``pred``, ``idx``, ``question``); other fields
(scores, reports) are ignored and listed once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from rlrecipes.data.files import iter_jsonl
from rlrecipes.data.loader import gold_text
from rlrecipes.errors import DataError
from rlrecipes.rundir import write_lines
from rlrecipes.storage import writing

# Our name -> the names other harnesses write (first found wins).
# A single string (e.g. "response") is one completion.
GENERATION_FIELDS: dict[str, tuple[str, ...]] = {
    "gold": ("gold", "gt", "ground_truth", "answer", "target"),
    "completions": (
        "completions",
        "code",
        "responses",
        "outputs",
        "generations",
        "completion",
        "response",
        "output",
        "generation",
        "model_output",
    ),
    "answers": ("answers", "pred", "preds", "predictions", "extracted_answers", "prediction", "extracted_answer"),
    "id": ("id", "idx", "unique_id"),
    "problem": ("problem", "question", "prompt"),
}
GENERATION_KEYS = tuple(GENERATION_FIELDS)


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
    answer_status: list[str] = field(default_factory=list)
    num_tokens: list[int | None] = field(default_factory=list)
    finish_reasons: list[str | None] = field(default_factory=list)
    # with rollout.tools: each completion's tool-loop counts (`Completion.tool_stats`), kept
    # here so a resumed eval's tool metrics cover every problem, not only the ones left
    tool_stats: list[dict[str, int]] | None = None

    def to_json(self) -> str:
        row = asdict(self)
        if row["tool_stats"] is None:  # an eval without tools writes the records it always wrote
            del row["tool_stats"]
        # a lone surrogate (from a model's output or a benchmark row) cannot be written as UTF-8:
        # it becomes "?" in this record instead of failing the whole batch at write time
        return json.dumps(row, ensure_ascii=False).encode("utf-8", "replace").decode("utf-8")


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
            raise DataError(
                f"{path}:{lineno}: not a samples record ({exc}); delete the file to start the eval afresh"
            ) from None
    return records


class SampleWriter:
    """Appends records to ``samples.jsonl``, one flushed line per problem.

    A write that fails (disk full, read-only) is one line saying how to continue: the
    records already written stay, and ``resume=true`` drops a torn last line."""

    def __init__(self, path: Path, keep: list[ProblemRecord]) -> None:
        self.path = path
        self.then = f"free space and rerun the same command with resume=true run_dir={path.parent}"
        # Rewrite what is kept, so a torn last line never sits before new records; atomically,
        # so a kill or a full disk during the rewrite leaves the old file whole and no temporary file
        with writing(path, self.then):
            write_lines(path, [rec.to_json() for rec in keep])

    def write(self, records: list[ProblemRecord]) -> None:
        with writing(self.path, self.then), self.path.open("a", encoding="utf-8") as f:
            for rec in records:
                f.write(rec.to_json() + "\n")
            f.flush()


def _str_or_none(value: Any) -> str | None:
    if value is None:
        return None

    return gold_text(value)


def _as_list(value: Any) -> list | None:
    if value is None:
        return None
    return list(value) if isinstance(value, (list, tuple)) else [value]


def read_generations(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` for each line of a generations file, checked and mapped to
    our field names (``row["ignored"]`` lists the fields that were not read)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"generations file {str(path)!r} does not exist")
    known = {name for names in GENERATION_FIELDS.values() for name in names}
    for lineno, raw in iter_jsonl(path):
        row: dict[str, Any] = {"ignored": sorted(set(raw) - known)}
        for ours, names in GENERATION_FIELDS.items():
            row[ours] = next((raw[n] for n in names if raw.get(n) is not None), None)
        comps, answers = _as_list(row["completions"]), _as_list(row["answers"])
        if comps is None and answers is None:
            raise DataError(
                f"{path}:{lineno}: no completions or answers (keys here: "
                f"{', '.join(sorted(raw)) or 'none'}); expected a key "
                f"'completions' (or {', '.join(GENERATION_FIELDS['completions'][1:])}) "
                f"or 'answers' (or {', '.join(GENERATION_FIELDS['answers'][1:])})"
            )
        if comps is not None and (not comps or not all(isinstance(c, str) for c in comps)):
            raise DataError(f"{path}:{lineno}: key 'completions' must be a non-empty list of strings")
        if answers is not None:
            answers = [None if a is None else _str_or_none(a) for a in answers]
            if comps is not None and len(answers) != len(comps):
                raise DataError(
                    f"{path}:{lineno}: {len(answers)} answers for {len(comps)} "
                    "completions; give one answer per completion"
                )
        row["completions"], row["answers"] = comps, answers
        row["gold"] = _str_or_none(row.get("gold"))
        if not isinstance(row["problem"], str):  # e.g. a prompt stored as chat messages
            row["problem"] = None
        if row.get("id") is not None:
            row["id"] = str(row["id"])
        yield lineno, row
