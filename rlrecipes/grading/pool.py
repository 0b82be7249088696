"""Grading in worker processes: throughput on several cores, and hard time limits.

Why processes and not threads: math-verify's timeouts use ``signal.alarm``, which
only works in a main thread, and sympy is GIL-bound. Each worker runs its tasks in
its own main thread, so the per-step alarms work there. Why a hand-rolled pool and
not ``ProcessPoolExecutor``: some pathological inputs spend their time inside one C
call that no signal can interrupt; the parent watches every task and, past a hard
deadline, kills that worker, grades the task False, re-queues the rest of its chunk
and starts a replacement. ``ProcessPoolExecutor`` can only break the whole pool.

Workers are started with ``spawn`` (a fresh interpreter: safe next to torch threads,
and small enough to get an address-space limit that stops runaway big-number maths).
Identical (prediction, gold) pairs are graded once.
"""

from __future__ import annotations

import atexit
import math
import multiprocessing as mp
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Sequence

from rlrecipes.grading.equivalence import (
    DEFAULT_REL_TOL,
    DEFAULT_TIMEOUT_S,
    answer_of,
    count_failures,
    grade,
    register_off_main_thread,
)
from rlrecipes.grading.vote import vote_groups
from rlrecipes.grading.workers import (
    NeedsSymbolic,
    fallback,
    quick,
    quick_or_raise,
    worker_main,
)

# Budget for one comparison: 2 parses + up to 4 verify calls, each alarm-limited.
_STEPS_PER_COMPARISON = 6
_STARTUP_GRACE_S = 60.0  # a fresh worker imports sympy before its first answer
_MAX_CHUNK = 64
_MAX_STARTUP_FAILURES = 3


@dataclass
class _Worker:
    process: Any
    conn: Connection
    started: float
    warm: bool = False
    chunk: list[int] = field(default_factory=list)
    pos: int = 0
    last: float = 0.0


class GradingPool:
    """A pool of grading worker processes with per-task hard deadlines.

    >>> with GradingPool(workers=2) as pool:               # doctest: +SKIP
    ...     pool.grade_many(["... \\\\boxed{2}", "3"], ["2", "4"])
    [True, False]
    """

    def __init__(
        self,
        workers: int | None = None,
        *,
        timeout_s: int = DEFAULT_TIMEOUT_S,
        hard_timeout_s: float | None = None,
        memory_limit_mb: int = 4096,
        start_method: str = "spawn",
        rel_tol: float = DEFAULT_REL_TOL,
    ) -> None:
        self.workers = max(1, workers or _cpu_count())
        self.timeout_s = max(1, int(timeout_s))
        self.hard_timeout_s = hard_timeout_s or (_STEPS_PER_COMPARISON * self.timeout_s + 2)
        self.memory_limit_mb = memory_limit_mb
        self.rel_tol = rel_tol
        self._ctx = mp.get_context(start_method)
        self._pool: list[_Worker] = []
        self.killed = 0  # workers killed for overrunning a hard deadline (or crashing)
        self._startup_failures = 0

    # -- public API ---------------------------------------------------------------
    def equivalent_many(self, preds: Sequence[str | None], golds: Sequence[str | None]) -> list[bool]:
        """``is_equivalent`` for each (answer, gold) pair.

        The cheap verdicts (equal keys, plain numbers, text answers) are reached here;
        only pairs that need sympy travel to the workers.
        """
        verdicts = [quick(p, g, self.rel_tol) for p, g in zip(preds, golds, strict=True)]
        pending = [i for i, v in enumerate(verdicts) if v is None]
        for i, v in zip(pending, self._map_unique("eq", [(preds[i], golds[i]) for i in pending])):
            verdicts[i] = v
        return [bool(v) for v in verdicts]

    def grade_many(
        self, predictions: Sequence[str | None], golds: Sequence[str | None], *, style: str = "auto"
    ) -> list[bool]:
        """``grade`` for each (response, gold) pair."""
        return self.equivalent_many([answer_of(p, style) for p in predictions], golds)

    def vote_many(self, answer_lists: Sequence[Sequence[str | None]]) -> list[list[tuple[str, int]]]:
        """``vote.vote_groups`` (grouping by equivalence) for each list of answers."""
        out: list[list[tuple[str, int]] | None] = []
        for answers in answer_lists:
            try:  # most votes need no sympy: settle them here
                out.append(vote_groups(list(answers), equivalent=lambda p, g: quick_or_raise(p, g, self.rel_tol)))
            except NeedsSymbolic:
                out.append(None)
        pending = [i for i, v in enumerate(out) if v is None]
        tasks = [(tuple(answer_lists[i]),) for i in pending]
        for i, v in zip(pending, self._map_unique("vote", tasks)):
            out[i] = v
        return out  # type: ignore[return-value]

    def start(self) -> GradingPool:
        """Start the workers now and wait until each has answered (imports done)."""
        self._run("eq", [("\\frac{1}{2}", "0.5x")] * self.workers)
        return self

    def close(self) -> None:
        for w in self._pool:
            self._stop(w, graceful=True)
        self._pool = []

    def __enter__(self) -> GradingPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------
    def _map_unique(self, kind: str, items: list[tuple]) -> list[Any]:
        index: dict[tuple, int] = {}
        unique: list[tuple] = []
        slots = []
        for item in items:
            if item not in index:
                index[item] = len(unique)
                unique.append(item)
            slots.append(index[item])
        # Neighbouring tasks share a gold, so each gold is parsed in as few workers as possible.
        order = sorted(range(len(unique)), key=lambda i: str(unique[i][-1]))
        ordered = self._run(kind, [unique[i] for i in order])
        results: list[Any] = [None] * len(unique)
        for pos, i in enumerate(order):
            results[i] = ordered[pos]
        return [results[i] for i in slots]

    def _run(self, kind: str, tasks: list[tuple]) -> list[Any]:
        results: list[Any] = [None] * len(tasks)
        if not tasks:
            return results
        size = max(1, min(_MAX_CHUNK, math.ceil(len(tasks) / (self.workers * 4))))
        todo: deque[list[int]] = deque(list(range(i, min(i + size, len(tasks)))) for i in range(0, len(tasks), size))
        try:
            self._ensure_workers()
            busy: dict[int, _Worker] = {}
            while todo or busy:
                for w in list(self._pool):
                    if id(w) not in busy and todo:
                        busy[id(w)] = w
                        try:
                            self._dispatch(w, todo.popleft(), kind, tasks)
                        except OSError:  # BrokenPipeError: it died before reading
                            self._abandon(w, kind, tasks, results, todo, busy, died=True)
                if not busy:
                    continue
                deadline = min(self._deadline(w, kind, tasks) for w in busy.values())
                ready = wait([w.conn for w in busy.values()], max(0.0, deadline - time.monotonic()))
                for w in [w for w in busy.values() if w.conn in ready]:
                    self._receive(w, kind, tasks, results, todo, busy)
                now = time.monotonic()
                for w in [w for w in busy.values() if now > self._deadline(w, kind, tasks)]:
                    self._abandon(w, kind, tasks, results, todo, busy)
        except BaseException:
            self.close()  # a Ctrl-C must not leave workers behind
            raise
        return [(fallback(kind, tasks[i]) if r is None else r) for i, r in enumerate(results)]

    def _dispatch(self, w: _Worker, chunk: list[int], kind: str, tasks: list[tuple]) -> None:
        w.chunk, w.pos, w.last = chunk, 0, time.monotonic()
        w.conn.send([(i, kind, tasks[i]) for i in chunk])

    def _deadline(self, w: _Worker, kind: str, tasks: list[tuple]) -> float:
        budget = self.hard_timeout_s
        if kind == "vote":  # one comparison per pair of distinct answers, at worst
            distinct = len(set(tasks[w.chunk[w.pos]][0])) if w.pos < len(w.chunk) else 1
            budget *= max(1, distinct * (distinct - 1) // 2)
        start = w.last if w.warm else max(w.last, w.started + _STARTUP_GRACE_S)
        return start + budget

    def _receive(
        self,
        w: _Worker,
        kind: str,
        tasks: list[tuple],
        results: list[Any],
        todo: deque[list[int]],
        busy: dict[int, _Worker],
    ) -> None:
        try:
            idx, result, errors, timeouts = w.conn.recv()
        except (EOFError, OSError):  # the worker died (e.g. the memory limit)
            self._abandon(w, kind, tasks, results, todo, busy, died=True)
            return
        count_failures(errors + (result is None), timeouts)
        results[idx] = result
        self._startup_failures = 0
        w.warm, w.pos, w.last = True, w.pos + 1, time.monotonic()
        if w.pos >= len(w.chunk):
            busy.pop(id(w))

    def _abandon(
        self,
        w: _Worker,
        kind: str,
        tasks: list[tuple],
        results: list[Any],
        todo: deque[list[int]],
        busy: dict[int, _Worker],
        died: bool = False,
    ) -> None:
        """Kill an overrunning/dead worker: its current task fails, the rest re-queue."""
        if died and not w.warm:  # it never answered: it cannot start, do not grade all False
            self._startup_failures += 1
            if self._startup_failures >= _MAX_STARTUP_FAILURES:
                code = w.process.exitcode
                self.close()
                raise RuntimeError(
                    f"grading worker processes exit before answering (exit code "
                    f"{code}); grade in-process with workers=0 to see why"
                )
        busy.pop(id(w), None)
        if died and not w.warm:  # nothing was attempted for sure: retry the whole chunk
            todo.appendleft(w.chunk[w.pos :])
        elif w.pos < len(w.chunk):
            results[w.chunk[w.pos]] = fallback(kind, tasks[w.chunk[w.pos]])
            count_failures(**({"errors": 1} if died else {"timeouts": 1}))
            rest = w.chunk[w.pos + 1 :]
            if rest:
                todo.appendleft(rest)
        self.killed += 1
        self._stop(w, graceful=False)
        self._pool[self._pool.index(w)] = self._spawn()

    def _ensure_workers(self) -> None:
        self._pool = [w for w in self._pool if w.process.is_alive()]
        while len(self._pool) < self.workers:
            self._pool.append(self._spawn())

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=worker_main,
            daemon=True,
            name="rlrecipes-grader",
            args=(child, self.timeout_s, self.memory_limit_mb, self.rel_tol),
        )
        proc.start()
        child.close()
        return _Worker(proc, parent, time.monotonic())

    @staticmethod
    def _stop(w: _Worker, graceful: bool) -> None:
        try:
            if graceful and w.process.is_alive():
                w.conn.send(None)
                w.process.join(timeout=2)
        except (OSError, BrokenPipeError):
            pass
        if w.process.is_alive():
            w.process.kill()
            w.process.join(timeout=5)
        w.conn.close()


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


_DEFAULT: GradingPool | None = None


def default_pool(
    workers: int | None = None, *, timeout_s: int = DEFAULT_TIMEOUT_S, rel_tol: float = DEFAULT_REL_TOL
) -> GradingPool:
    """A process-wide pool, created on first use and closed at exit."""
    global _DEFAULT
    wanted = max(1, workers or _cpu_count())
    if (
        _DEFAULT is None
        or _DEFAULT.workers != wanted
        or _DEFAULT.timeout_s != max(1, int(timeout_s))
        or _DEFAULT.rel_tol != rel_tol
    ):
        if _DEFAULT is not None:
            _DEFAULT.close()
        _DEFAULT = GradingPool(wanted, timeout_s=timeout_s, rel_tol=rel_tol)
    return _DEFAULT


def _equivalent_in_pool(pred: str, gold: str, timeout_s: int, rel_tol: float) -> bool:
    return default_pool(timeout_s=timeout_s, rel_tol=rel_tol).equivalent_many([pred], [gold])[0]


register_off_main_thread(_equivalent_in_pool)


@atexit.register
def _close_default() -> None:
    if _DEFAULT is not None:
        _DEFAULT.close()


def grade_many(
    predictions: Sequence[str | None],
    golds: Sequence[str | None],
    *,
    style: str = "auto",
    workers: int | None = None,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    pool: GradingPool | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
) -> list[bool]:
    """``grade`` over many (response, gold) pairs; ``workers=0`` grades in this process.

    In-process grading is only safe in the main thread (math-verify's alarms), so a
    call from another thread always uses a pool.
    """
    if workers == 0 and threading.current_thread() is threading.main_thread():
        cache: dict[tuple, bool] = {}
        out = []
        for p, g in zip(predictions, golds, strict=True):
            if (p, g) not in cache:
                cache[(p, g)] = grade(p, g, style=style, timeout_s=timeout_s, rel_tol=rel_tol)
            out.append(cache[(p, g)])
        return out
    return (pool or default_pool(workers, timeout_s=timeout_s, rel_tol=rel_tol)).grade_many(
        predictions, golds, style=style
    )
