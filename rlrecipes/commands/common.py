"""What every command shares: the console, one-line errors, and the Hydra job wrapper."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from rich.console import Console
from rich.markup import escape

from rlrecipes.errors import UserError
from rlrecipes.quiet import quiet
from rlrecipes.rundir import is_main_process

# Every command imports this module: a process that runs a command without `rlrecipes.cli.main`
# (a joblib sweep's worker) is quietened too.
quiet()
console = Console(log_path=False)  # the source file:line column would take 15 of 80 columns
# commands that take Hydra overrides (key=value ...) after their own options
OVERRIDES = {"allow_extra_args": True, "ignore_unknown_options": True}


def fail(message: str) -> None:
    """Print `error: message` once and exit with status 2 (a user mistake, not a crash)."""
    if is_main_process():  # every rank of a multi-process launch meets the same mistake: say it once
        console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise SystemExit(2)


def run_job(body: Callable[[], Any], discard: Callable[[], Optional[Path]]) -> Any:
    """Run one Hydra job's body: a `UserError` becomes one line and exit status 2, and any
    failure first calls `discard`, which removes what the job created if it holds no
    results yet (a crash before the first step or sample leaves nothing behind).

    Hydra would print its own multi-line report for an exception a job raises, which is
    why train and eval jobs both go through here.
    """
    try:
        return body()
    except SystemExit:
        raise
    except BaseException as exc:
        discard()
        if isinstance(exc, UserError):
            fail(str(exc))
        raise
