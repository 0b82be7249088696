"""Read rows from .jsonl / .json / .parquet files, with one-line errors naming the spot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from rlrecipes.errors import DataError


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` for each non-empty line; a bad line is a one-line DataError."""
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got "
                                     f"{type(row).__name__}")
            yield lineno, row


def _json(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if isinstance(data, dict):  # {"data": [...]} / {"rows": [...]} / {"test": [...]}
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise DataError(f"{path}: expected a list of objects (or one list inside "
                                 f"an object), got keys {', '.join(map(str, data))}")
        data = lists[0]
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a list of objects, got {type(data).__name__}")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise DataError(f"{path}: item {i} is a {type(row).__name__}, not an object")
    return data


def _parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """All rows of a data file as dicts (nested columns stay nested)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return [row for _, row in iter_jsonl(path)]
    if suffix == ".json":
        return _json(path)
    if suffix == ".parquet":
        return _parquet(path)
    raise DataError(f"{path}: unsupported file type {suffix!r}; valid: .jsonl, .json, .parquet")
