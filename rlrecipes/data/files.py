"""Read rows from .jsonl / .json / .parquet files, with one-line errors naming the spot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from rlrecipes.errors import DataError


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` for each non-empty line; a bad line is a one-line DataError."""
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = _decode(raw, path, lineno)
            if not line.strip():
                continue
            row = _loads(line, path, lineno)
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield lineno, row


def _decode(raw: bytes, path: Path, lineno: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "re-encode the file as UTF-8"
        ) from None


def _loads(text: str, path: Path, lineno: int | None) -> Any:
    where = f"{path}:{lineno}" if lineno else str(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{lineno or exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:  # a value nested thousands of levels deep: no data set looks like that
        raise DataError(f"{where}: JSON nested too deeply to read") from None


def _json(path: Path) -> list[dict[str, Any]]:
    data = _loads(_decode(path.read_bytes(), path, 1), path, None)
    if isinstance(data, dict):  # {"data": [...]} / {"rows": [...]} / {"test": [...]}
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise DataError(
                f"{path}: expected a list of objects (or one list inside "
                f"an object), got keys {', '.join(map(str, data))}"
            )
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
