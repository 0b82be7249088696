"""What runs inside a grading worker process, and the verdicts used when one fails.

A worker answers tasks in its own main thread, so math-verify's ``signal.alarm``
timeouts work; it ignores Ctrl-C (the parent owns it) and caps its address space so a
runaway big-number computation dies with MemoryError instead of exhausting the host.
"""

from __future__ import annotations

import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from rlrecipes.grading.equivalence import (
    DEFAULT_REL_TOL,
    fast_verdict,
    grading_counts,
    is_equivalent,
    quiet_math_verify,
    warm_up,
)
from rlrecipes.grading.normalize import normalize_answer
from rlrecipes.grading.vote import vote_groups


def _current_vm_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def limit_memory(limit_mb: int) -> None:
    """Allow ``limit_mb`` more address space than the worker already uses (the spawn
    bootstrap may have imported a heavy ``__main__``, e.g. one that imports torch)."""
    if limit_mb <= 0:
        return
    try:
        import resource

        limit = _current_vm_bytes() + limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: rely on the kill
        pass


class NeedsSymbolic(Exception):
    """Raised by ``quick_or_raise`` when only sympy can decide."""


def quick(pred: str | None, gold: str | None, rel_tol: float = DEFAULT_REL_TOL) -> bool | None:
    """The verdict reachable without sympy (missing answers are wrong), else None."""
    if pred is None or gold is None or not str(pred).strip() or not str(gold).strip():
        return False
    return fast_verdict(str(pred), str(gold), rel_tol)


def quick_or_raise(pred: str, gold: str, rel_tol: float = DEFAULT_REL_TOL) -> bool:
    verdict = quick(pred, gold, rel_tol)
    if verdict is None:
        raise NeedsSymbolic
    return verdict


def run_task(kind: str, args: tuple, timeout_s: int, rel_tol: float = DEFAULT_REL_TOL) -> Any:
    if kind == "eq":
        return is_equivalent(args[0], args[1], timeout_s=timeout_s, rel_tol=rel_tol)
    if kind == "vote":
        return vote_groups(
            list(args[0]), equivalent=lambda p, g: is_equivalent(p, g, timeout_s=timeout_s, rel_tol=rel_tol)
        )
    raise ValueError(f"unknown grading task {kind!r}")


def worker_main(conn: Connection, timeout_s: int, memory_limit_mb: int, rel_tol: float = DEFAULT_REL_TOL) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    limit_memory(memory_limit_mb)
    quiet_math_verify()
    warm_up(timeout_s)
    while True:
        try:
            chunk = conn.recv()
        except (EOFError, OSError):
            return
        if chunk is None:
            return
        for idx, kind, args in chunk:
            before = grading_counts()
            try:
                result = run_task(kind, args, timeout_s, rel_tol)
            except BaseException:  # MemoryError, math-verify's TimeoutException, ...
                result = None
            after = grading_counts()
            # the parent adds these to its own counts (the worker's are lost with it)
            conn.send((idx, result, after.errors - before.errors, after.timeouts - before.timeouts))


def fallback(kind: str, args: tuple) -> Any:
    """The verdict for a task that crashed or ran out of time."""
    if kind == "vote":  # vote by exact cleaned string only: no symbolic work at all
        return vote_groups(list(args[0]), equivalent=lambda p, g: normalize_answer(p) == normalize_answer(g))
    return False
