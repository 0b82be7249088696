"""The model cache: folders built once (toy models, converted GGUF, merged adapters), keyed
by what built them, safe under concurrent builders."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable


def cache_root(cache_dir: str | None = None) -> Path:
    root = cache_dir or os.environ.get("RLRECIPES_CACHE") or Path.home() / ".cache" / "rlrecipes"
    return Path(root).expanduser()


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def cached_folder(folder: Path, key: Any, build: Callable[[Path], None], log: Callable[[str], None]) -> Path:
    """`folder` if already built from `key`; otherwise build into a temp dir and move it in atomically.

    A lock file serialises concurrent builders (parallel tests, sweeps): the second one
    waits and then finds the finished folder instead of training the same model again.
    A folder whose recorded key differs (an older builder version) is rebuilt, so a
    fixed builder reaches caches made before the fix.
    """
    if _is_current(folder, key):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_current(folder, key):
            return folder
        if folder.exists():
            log(f"rebuilding {folder}: it was built by an older version of its builder, or its weights are damaged")
            stale = Path(tempfile.mkdtemp(prefix=folder.name + ".stale.", dir=folder.parent))
            folder.rename(stale / folder.name)  # out of the way at once; deleted below
            shutil.rmtree(stale, ignore_errors=True)
        return _build(folder, key, build, log)


def _is_current(folder: Path, key: Any) -> bool:
    record = folder / "rlrecipes_build.json"
    if not (folder / "config.json").is_file() or not record.is_file():
        return False
    try:
        same = json.loads(record.read_text()) == json.loads(json.dumps(key, default=str))
    except ValueError:  # a torn record: rebuild
        return False
    return same and _weights_readable(folder)


def _weights_readable(folder: Path) -> bool:
    """Every safetensors file's header parses and the file is as long as the header says: a
    truncated or overwritten cache entry is rebuilt instead of breaking every later run."""
    files = list(folder.glob("*.safetensors"))
    try:
        for path in files:
            with open(path, "rb") as f:
                header_size = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(header_size))
            data_end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
            if path.stat().st_size != 8 + header_size + data_end:
                return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not a safetensors file any more
        return False
    return True  # (a folder with other weight files is not checked here)


def _build(folder: Path, key: Any, build: Callable[[Path], None], log: Callable[[str], None]) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        build(tmp)
        (tmp / "rlrecipes_build.json").write_text(json.dumps(key, indent=2, default=str))
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"cached model at {folder}")
    return folder
