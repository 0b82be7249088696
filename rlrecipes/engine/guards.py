"""Rewards that fail, and values that must never reach the weights.

A reward function that raises, or returns NaN or ±inf for a completion, would otherwise
either stop a days-long run with a traceback or silently turn the whole group's
advantages into NaN. Instead:

- a call that raises, or runs past `timeout_s` of CPU time (a hung parser), fails every
  completion it was scoring;
- each failure gives that completion `fallback` (0.0 by default: graded wrong), and is
  counted per reward and logged per step (`reward_failures/<name>`, summed over processes);
- past `max_failure_rate` (failures / scored completions, cumulative per reward) the run
  stops with one line naming the reward and its first error;
- non-finite advantages stop the step before the loss is computed, naming the cause.

Every process takes the same decision from the same (reduced) counts, so no process
waits in a collective for one that stopped.
"""

from __future__ import annotations

import contextlib
import functools
import math
import signal
import threading
from collections import Counter
from typing import Any, Callable, Iterator

import torch

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError
from rlrecipes.grading import take_grading_counts


class RewardTimeout(Exception):
    """A reward call used up its CPU-time budget."""


class RewardGuard(EngineHook):
    # no defaults here: the settings' one home is the trainer config (trainer.reward_guard)
    def __init__(self, fallback: float, max_failure_rate: float, timeout_s: float | None):
        if not 0 <= max_failure_rate <= 1:
            raise UserError(f"trainer.reward_guard.max_failure_rate={max_failure_rate} must be between 0 and 1")
        if timeout_s is not None and timeout_s <= 0:
            raise UserError(f"trainer.reward_guard.timeout_s={timeout_s} must be positive (or null for no limit)")
        self.fallback, self.max_failure_rate, self.timeout_s = float(fallback), max_failure_rate, timeout_s
        self.calls: Counter = Counter()  # completions scored, per reward (this process, since the last step)
        self.failures: Counter = Counter()
        self.first_error: dict[str, str] = {}
        self.totals: dict[str, list[int]] = {}  # reward -> [failures, calls], all processes, whole run

    def wrap(self, fn: Callable[..., list]) -> Callable[..., list]:
        """`fn` with failures replaced by the fallback and counted (same name, for TRL's logs)."""
        name = fn.__name__

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> list:  # TRL passes keywords: prompts, completions, columns
            completions = kwargs["completions"] if "completions" in kwargs else args[1]
            values = self.protect(name, len(completions), lambda: fn(*args, **kwargs))
            return self.finite(name, values if values is not None else [self.fallback] * len(completions))

        return guarded

    def protect(self, name: str, count: int, compute: Callable[[], list]) -> list | None:
        """`compute()` under the time limit, or None when it raised or ran out of time (then
        its `count` completions are counted as failed). `count` is what this process scores:
        a group reward computed on the whole gathered batch counts only its own share."""
        self.calls[name] += count
        try:
            with cpu_time_limit(self.timeout_s):
                return compute()
        except RewardTimeout:
            self._failed(name, count, f"used more than trainer.reward_guard.timeout_s={self.timeout_s} s of CPU time")
        except Exception as exc:  # the reward's own bug or bad input: never the run's end by itself
            self._failed(name, count, f"{type(exc).__name__}: {str(exc)[:200]}")
        return None

    def finite(self, name: str, values: list) -> list:
        """`values` with NaN/inf replaced by the fallback, each one counted as a failure."""
        out = []
        for value in values:
            if value is not None and not math.isfinite(float(value)):
                self._failed(name, 1, f"returned {value}")
                value = self.fallback
            out.append(value)
        return out

    def _failed(self, name: str, count: int, error: str) -> None:
        self.failures[name] += count
        self.first_error.setdefault(name, error)

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        self._log_grading_failures(trainer)
        names = sorted(set(self.calls) | set(self.totals))
        if names:
            local = torch.tensor(
                [[self.failures[n], self.calls[n]] for n in names], dtype=torch.long, device=trainer.accelerator.device
            )
            summed = trainer.accelerator.reduce(local, reduction="sum").tolist()
            self.calls.clear()
            self.failures.clear()
            for name, (failed, called) in zip(names, summed):
                total = self.totals.setdefault(name, [0, 0])
                total[0] += failed
                total[1] += called
                trainer.log_metric(f"reward_failures/{name}", failed)
            self._check_rate()
        check_advantages(batch, trainer.state.global_step + 1)
        return batch

    @staticmethod
    def _log_grading_failures(trainer: Any) -> None:
        """The grader's timeouts and errors since the last step (a timed-out comparison grades a
        completion wrong without raising, so the reward itself never sees it fail)."""

        counts = take_grading_counts()
        local = torch.tensor([counts.errors, counts.timeouts], dtype=torch.long, device=trainer.accelerator.device)
        errors, timeouts = trainer.accelerator.reduce(local, reduction="sum").tolist()
        trainer.log_metric("grading/errors", errors)
        trainer.log_metric("grading/timeouts", timeouts)

    def _check_rate(self) -> None:
        for name, (failed, called) in self.totals.items():
            if called and failed / called > self.max_failure_rate:
                first = self.first_error.get(name, "on another process")
                raise UserError(
                    f"reward {name!r} failed on {failed} of {called} completions "
                    f"({failed / called:.1%} > trainer.reward_guard.max_failure_rate={self.max_failure_rate}); "
                    f"first failure: {first}"
                )

    def state_dict(self) -> dict[str, Any]:
        return {"totals": self.totals}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.totals = {k: list(v) for k, v in state["totals"].items()}


@contextlib.contextmanager
def cpu_time_limit(seconds: float | None) -> Iterator[None]:
    """Raise RewardTimeout in the block once it has used `seconds` of CPU time.

    CPU time (ITIMER_PROF / SIGPROF), not wall time: math-verify arms and clears
    `signal.alarm` (ITIMER_REAL) inside the rewards, which would cancel a wall-clock timer,
    and a hung parser is a busy loop. Main thread only (signals are delivered there);
    elsewhere the block runs without a limit.
    """
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise RewardTimeout

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def check_advantages(batch: dict[str, Any], step: int) -> None:
    """Stop before a non-finite advantage reaches the loss (and through it the weights)."""
    advantages = batch.get("advantages")
    if advantages is None or bool(torch.isfinite(advantages).all()):
        return
    bad = int((~torch.isfinite(advantages)).sum())
    raise UserError(
        f"step {step}: {bad} of {advantages.numel()} advantages are NaN or infinite before the "
        "update (a reward or score returned a non-finite value that no guard caught); "
        "the weights were not changed"
    )
