"""Load problem/answer datasets from the hub or local jsonl/json/parquet files.

Field names differ between sources (`problem` vs `prompt` vs `question`, answers nested
under `reward_model.ground_truth`, prompts stored as chat messages), so a config maps
them; a dotted field name reaches into nested records. Rows without a usable problem
or answer are counted and reported, never silently dropped or trained on.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from rlrecipes.data.files import read_rows
from rlrecipes.errors import DataError
from rlrecipes.hub import offline_reason

DATA_SUFFIXES = (".jsonl", ".json", ".parquet")


@dataclass
class LoadedProblems:
    items: list[dict[str, Any]]
    source: str
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (row index, reason)
    duplicates_removed: int = 0

    def report(self) -> str:
        text = f"{len(self.items)} problems from {self.source}"
        if self.duplicates_removed:
            text += f", {self.duplicates_removed} duplicates removed"
        if self.skipped:
            rows = ", ".join(f"row {i} ({why})" for i, why in self.skipped[:5])
            more = f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            text += f"; {len(self.skipped)} rows left out: {rows}{more}"
        return text


def read_records(path: str, subset: str | None = None, split: str = "train") -> tuple[list[dict], str]:
    """Rows of a local file/folder, or of a hub dataset split (`datasets.load_dataset`)."""
    local = Path(path).expanduser()
    if local.exists():
        file = _pick_file(local, split)
        return read_rows(file), str(file)
    if path.startswith((".", "/", "~")) or Path(path).suffix in DATA_SUFFIXES:
        raise DataError(f"data file {path} does not exist")
    offline = offline_reason()  # no network: the cache only, no retries
    from datasets import load_dataset  # the real hub path

    try:
        ds = load_dataset(path, subset, split=split)
    except Exception as exc:  # network, unknown id, unknown split...
        why = (
            f"not in the local cache and the hub cannot be reached ({offline})" if offline else str(exc).splitlines()[0]
        )
        raise DataError(f"could not load hub dataset {path!r} (split {split!r}): {why}") from None
    return [dict(r) for r in ds], f"{path}:{split}"


def _pick_file(folder: Path, split: str) -> Path:
    if folder.is_file():
        return folder
    files = sorted(p for p in folder.rglob("*") if p.suffix in DATA_SUFFIXES)
    preferred = [p for p in files if p.stem.startswith(split)] or files
    if not preferred:
        raise DataError(f"no {'/'.join(DATA_SUFFIXES)} file under {folder}")
    return preferred[0]


def get_field(row: dict, name: str) -> Any:
    """`row[name]`, following dots into nested dicts; chat messages become their last user text."""
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, list) and value and isinstance(value[0], dict) and "content" in value[0]:
        users = [m["content"] for m in value if m.get("role") == "user"] or [value[-1]["content"]]
        return users[-1]
    return value


def gold_aliases(value: Any) -> str | None:
    """A gold answer that lists aliases, any of which is right (the QA sets' `golden_answers`),
    as a JSON list of strings: joined with ", " they would be one answer no model writes.
    `rlrecipes.grading.exact_match.gold_answers` reads the list back."""
    values = value if isinstance(value, (list, tuple)) else [value]
    aliases = [text for text in (gold_text(v) for v in values) if text]
    return json.dumps(aliases, ensure_ascii=False) if aliases else None


def gold_text(value: Any) -> str | None:
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
        parts = [p for p in (gold_text(v) for v in value) if p]
        return ", ".join(p.strip().strip("$").strip() for p in parts) or None
    text = str(value).strip()
    return text or None


def to_problems(
    rows: Iterable[dict],
    source: str,
    problem_field: str,
    answer_field: str | None,
    id_field: str | None = None,
    dedup: bool = False,
    limit: int | None = None,
    aliases: bool = False,
) -> LoadedProblems:
    """Problems with their gold answers; `answer_field=None` reads unlabelled questions
    (every answer None), for rewards that need no labels. `aliases`: the answer field lists
    aliases, kept as a JSON list (`gold_aliases`) rather than joined."""
    rows = list(rows)
    if rows:
        for fname in (problem_field, answer_field) if answer_field else (problem_field,):
            if all(get_field(r, fname) is None for r in rows):
                keys = ", ".join(sorted(rows[0].keys()))
                raise DataError(f"{source}: no row has field {fname!r}; columns are: {keys}")
    out = LoadedProblems([], source)
    seen: set[str] = set()
    for index, row in enumerate(rows):
        problem = get_field(row, problem_field)
        gold = gold_aliases if aliases else gold_text
        answer = gold(get_field(row, answer_field)) if answer_field else None
        if not isinstance(problem, str) or not problem.strip():
            out.skipped.append((index, f"no {problem_field}"))
            continue
        if answer is None and answer_field:
            out.skipped.append((index, f"no {answer_field}"))
            continue
        if dedup:
            if problem in seen:
                out.duplicates_removed += 1
                continue
            seen.add(problem)
        ident = get_field(row, id_field) if id_field else None
        out.items.append({"id": str(ident if ident is not None else index), "problem": problem, "answer": answer})
        if limit is not None and len(out.items) >= limit:
            break
    return out
