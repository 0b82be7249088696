"""Reading files the project wrote, without trusting them: nothing in a run directory or the
model cache can execute code, and a damaged file is named instead of crashing a run.

The rule (CONTRIBUTING.md, checked by tests/unit/test_structure.py): state is stored as JSON,
safetensors, or torch files read with `weights_only=True` — never `pickle.load`, never
`torch.load(..., weights_only=False)`. A pickle can run any code when it is loaded, and a
run directory may come from a colleague, a shared filesystem or a download.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

from rlrecipes.errors import UserError

# torch files HF's Trainer and accelerate write into a checkpoint and read back on resume
# (weights_only=True): `.bin` too (pytorch_model.bin, FSDP's pytorch_model_fsdp.bin and
# optimizer.bin), so a planted pickle there sets the checkpoint aside instead of failing every
# resume. training_args.bin is a full pickle that neither HF nor rlrecipes ever loads: not read.
TORCH_SUFFIXES = (".pt", ".pth", ".bin")
NEVER_LOADED = ("training_args.bin",)


class DamagedFile(UserError):
    """A file the project wrote cannot be read back safely (torn, truncated, or not what it claims)."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path} is damaged or not a file rlrecipes wrote ({reason})")
        self.path, self.reason = Path(path), reason


def load_torch_state(path: Path) -> Any:
    """A torch file written by `torch.save` of tensors and plain containers, read with
    `weights_only=True` (a pickled object that would run code is refused, not executed)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError (a planted object), RuntimeError/EOFError (truncated)
        raise DamagedFile(path, _torch_reason(exc)) from None


def safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file cannot be loaded (None: its header parses and its length matches)."""
    try:
        with open(path, "rb") as f:
            header_size = int.from_bytes(f.read(8), "little")
            if header_size <= 0 or header_size > 100_000_000:
                return "no safetensors header"
            header = json.loads(f.read(header_size))
        data_end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        return f"unreadable safetensors header: {_first_line(exc)}"
    size = path.stat().st_size
    if size != 8 + header_size + data_end:
        return f"{size} bytes where its header promises {8 + header_size + data_end}"
    return None


def file_problem(path: Path) -> str | None:
    """Why `path` (a file of a checkpoint or a cached model) cannot be read back, or None.

    Torch files are opened the way they will be loaded (`weights_only=True`, memory-mapped so a
    large optimizer state costs no RAM), safetensors by header and length, JSON by parsing."""
    import torch

    name = path.name
    if name in NEVER_LOADED:
        return None
    if name.endswith(".safetensors"):
        return safetensors_problem(path)
    if name.endswith(".json"):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return f"unreadable JSON: {_first_line(exc)}"
        return None
    if name.endswith(TORCH_SUFFIXES):
        from transformers.trainer_pt_utils import safe_globals  # the numpy RNG state HF allows itself

        try:  # memory-mapped unless an old-format (pre-zip) file, which torch cannot map
            with safe_globals():
                torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
        except Exception as exc:
            return _torch_reason(exc)
    return None


def folder_problem(folder: Path) -> tuple[Path, str] | None:
    """The first file of `folder` (recursively, by name) that cannot be read back, with why."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        problem = file_problem(path)
        if problem is not None:
            return path, problem
    return None


def content_digest(folder: Path, exclude: tuple[str, ...] = ()) -> str:
    """sha256 over every file's relative name and bytes (sorted), to notice flipped bytes."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in exclude):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def _torch_reason(exc: BaseException) -> str:
    import pickle

    if isinstance(exc, pickle.UnpicklingError):  # what weights_only refuses: objects that could run code
        return "it holds pickled Python objects beyond tensors and plain values, which are never loaded"
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
