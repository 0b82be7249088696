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

from rlrecipes.integrity import content_digest
from rlrecipes.storage import writing

RECORD = "rlrecipes_build.json"  # the key the folder was built from
CONTENT_HASH = "rlrecipes_content.sha256"  # sha256 of every other file, written when built
UNWRITABLE = "set RLRECIPES_CACHE (or cache_dir=) to a writable folder"


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
    fixed builder reaches caches made before the fix; so is one whose files no longer hash
    to what was recorded when it was built (flipped bytes, a truncated or planted file).
    An unwritable cache is one line naming it, never a traceback.
    """
    if _stale_reason(folder, key) is None:
        return folder
    with writing(folder.parent, UNWRITABLE):
        folder.parent.mkdir(parents=True, exist_ok=True)
        lock = open(folder.parent / f"{folder.name}.lock", "w")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reason = _stale_reason(folder, key)
        if reason is None:
            return folder
        if folder.exists():
            log(f"rebuilding {folder}: {reason}")
            stale = Path(tempfile.mkdtemp(prefix=folder.name + ".stale.", dir=folder.parent))
            folder.rename(stale / folder.name)  # out of the way at once; deleted below
            shutil.rmtree(stale, ignore_errors=True)
        return _build(folder, key, build, log)


def _stale_reason(folder: Path, key: Any) -> str | None:
    """Why `folder` cannot be used as the build of `key` (None: it can).

    Only JSON is parsed and the other files are hashed as bytes: nothing in the cache is
    unpickled or run to decide whether it is sound."""
    record = folder / RECORD
    if not folder.exists():
        return "not built"
    if not (folder / "config.json").is_file() or not record.is_file():
        return f"it has no config.json or no {RECORD} (a build that did not finish)"
    try:
        same = json.loads(record.read_text(encoding="utf-8")) == json.loads(json.dumps(key, default=str))
    except ValueError:  # a torn record
        same = False
    if not same:
        return "it was built by an older version of its builder"
    try:
        recorded = (folder / CONTENT_HASH).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return f"it has no readable {CONTENT_HASH} (built before rlrecipes recorded one)"
    if content_digest(folder, exclude=(CONTENT_HASH,)) != recorded:
        return "its files differ from what was built (content hash mismatch: damaged, truncated or altered weights)"
    return None


def _build(folder: Path, key: Any, build: Callable[[Path], None], log: Callable[[str], None]) -> Path:
    with writing(folder.parent, UNWRITABLE):
        tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        build(tmp)
        (tmp / RECORD).write_text(json.dumps(key, indent=2, default=str))
        (tmp / CONTENT_HASH).write_text(content_digest(tmp, exclude=(CONTENT_HASH,)) + "\n", encoding="ascii")
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"cached model at {folder}")
    return folder
