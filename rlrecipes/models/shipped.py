"""Toy models that ship with the package.

A toy's warm-start takes minutes to most of an hour on 2 cores, and a build differs from one
CPU type to another (models/toy.py says why), so the toys that the quick start and the toy
experiments use are built once by `scripts/ship_toys.py` at a named commit and shipped under
`rlrecipes/models/shipped_toys/`: a fresh machine starts RL at once, from the same weights as
every other machine. `shipped_toys/index.json` lists each one: the command whose config built
it, the commit, the sha256 of its files and the digest of its build key (models/__init__.py
`toy_key`), by which `find` matches a run's config. A config that no shipped toy matches, or
`model.toy.rebuild=true`, builds one on this machine as before.

Only JSON is parsed and safetensors read: nothing shipped is unpickled or run.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rlrecipes.errors import UserError
from rlrecipes.integrity import content_digest
from rlrecipes.models.cache import CONTENT_HASH, RECORD, digest

SHIPPED_ROOT = Path(__file__).with_name("shipped_toys")
INDEX_NAME = "index.json"
# written by the build, not part of what is shipped and hashed
NOT_SHIPPED = (RECORD, CONTENT_HASH)


@dataclass(frozen=True)
class ShippedToy:
    name: str
    folder: Path
    key_digest: str
    content_sha256: str
    commit: str
    command: str


def index(root: Path | None = None) -> dict[str, ShippedToy]:
    """The shipped toys by name ({} when none ship)."""
    root = root or SHIPPED_ROOT
    path = root / INDEX_NAME
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["toys"]
        return {
            name: ShippedToy(
                name=name,
                folder=root / name,
                key_digest=entry["key_digest"],
                content_sha256=entry["content_sha256"],
                commit=entry["commit"],
                command=entry["command"],
            )
            for name, entry in entries.items()
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is not a shipped-toy index ({exc}); reinstall rlrecipes") from None


def find(key: Any, root: Path | None = None) -> ShippedToy | None:
    """The shipped toy built from `key`, if one ships."""
    wanted = digest(key)
    return next((toy for toy in index(root).values() if toy.key_digest == wanted), None)


def copy_into(toy: ShippedToy, folder: Path, log: Callable[[str], None]) -> None:
    """Copy `toy`'s files into `folder`, after checking they hash to what the index recorded."""
    if not toy.folder.is_dir() or content_digest(toy.folder, exclude=NOT_SHIPPED) != toy.content_sha256:
        raise UserError(
            f"the shipped toy model {toy.name!r} at {toy.folder} does not match the sha256 its index records "
            "(damaged or altered files); reinstall rlrecipes, or set model.toy.rebuild=true to build the toy here"
        )
    for path in sorted(toy.folder.iterdir()):
        if path.is_file() and path.name not in NOT_SHIPPED:
            shutil.copy2(path, folder / path.name)
    log(
        f"toy model: the shipped {toy.name!r} (built by `{toy.command}` at commit {toy.commit[:12]}); "
        "model.toy.rebuild=true builds it on this machine instead"
    )


def building_note(model_cfg: Any, key: Any) -> str:
    """What a build from scratch announces before its first progress line."""
    toy_cfg = model_cfg.toy
    why = (
        "model.toy.rebuild=true"
        if toy_cfg.get("rebuild")
        else f"no shipped toy matches these model.toy and data settings (shipped: {', '.join(index()) or 'none'})"
    )
    return (
        f"toy model: building one on this machine ({why}): a supervised warm-start of at most "
        f"{toy_cfg.sft_max_steps} steps, with progress and an ETA at each dev check (every "
        f"{toy_cfg.sft_eval_every} steps); cached after, as toy/{digest(key)}"
    )
