"""The accelerate config files rlrecipes ships, by name (ddp, zero2, zero3, fsdp, multinode).

rlrecipes launches nothing itself: `accelerate launch --config_file $(rlrecipes
launch-config NAME) -m rlrecipes.cli train ...` starts one process per GPU, and every
process runs the same training job (see `rlrecipes.training`). Each file's header says
when to use it.
"""

from __future__ import annotations

from pathlib import Path

from rlrecipes.errors import UserError

FOLDER = Path(__file__).resolve().parent


def config_names() -> list[str]:
    return sorted(p.stem for p in FOLDER.glob("*.yaml"))


def config_path(name: str) -> Path:
    """The shipped accelerate config called `name`."""
    path = FOLDER / f"{name}.yaml"
    if not path.is_file():
        raise UserError(f"no accelerate config {name!r}; shipped: {', '.join(config_names())}")
    return path
