"""Where commands write: a location that cannot be written (read-only or full filesystem, no
permission) is one line naming it and what to do, never an OSError traceback."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rlrecipes.errors import StorageError


def storage_error(path: object, exc: OSError, then: str = "") -> StorageError:
    """`exc`, raised while writing `path`, as one line naming the file and the reason."""
    text = str(exc).strip()
    reason = exc.strerror or (text.splitlines()[0] if text else type(exc).__name__)
    where = str(path)  # what the user asked for, not our temporary file beside it
    if exc.filename is not None and Path(str(exc.filename)) in Path(where).parents:
        where += f" (creating {exc.filename})"
    return StorageError(f"cannot write {where}: {reason}" + (f"; {then}" if then else ""))


@contextmanager
def writing(path: object, then: str = "") -> Iterator[None]:
    """Writes in this block that fail become one `StorageError` line naming the file."""
    try:
        yield
    except OSError as exc:
        raise storage_error(path, exc, then) from None


def check_writable(path: Path, then: str = "") -> None:
    """Fail now, before any work, if `path` (a file or folder to be made) could not be created:
    a file is made and removed in its nearest existing folder (permission bits alone do not
    say it: root passes them on a read-only filesystem). Creates no folder."""
    folder = Path(path).expanduser().absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise StorageError(f"cannot write {path}: {folder} is a file, not a folder" + (f"; {then}" if then else ""))
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".rlrecipes-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise StorageError(f"cannot write {path}: {reason} in {folder}" + (f"; {then}" if then else "")) from None
