"""A long step that is never silent: announced when it starts (a step known to be long) or once
it has run `quiet_s` seconds (one that usually is not: a held-out pass of 300 toy problems takes
2 s, of 500 SmolLM2 problems minutes), then its elapsed time (and what is left of a measured
expectation) every `every_s` seconds, and its duration when done. A short step prints nothing.

For the steps that print nothing of their own for minutes: vLLM's engine start (a CPU build
compiles for minutes), a held-out pass, a corpus index. Where a step reports its own progress
(the toy's warm-start, training, eval), its own lines say more and this is not used.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from rlrecipes.display import format_duration, job_prefix


class Phase:
    """``with Phase("starting the vLLM engine", log, expect_s=248):`` prints

        starting the vLLM engine (about 4m08s measured on 2 CPU cores) ...
        starting the vLLM engine: 30s elapsed, ETA ~3m38s
        starting the vLLM engine: done in 3m12s

    `expect_s` is a measured duration, not a bound: past it the ticks say so instead of
    counting down below zero; without it the step is announced only once it has run `quiet_s`
    seconds. A step that fails prints nothing more (its error says why)."""

    def __init__(
        self,
        what: str,
        log: Callable[[str], None],
        expect_s: Optional[float] = None,
        every_s: float = 30.0,
        expect_where: str = "on 2 CPU cores",
        quiet_s: float = 10.0,
    ):
        self.what, self.log, self.expect_s, self.every_s = what, log, expect_s, every_s
        self.expect_where, self.quiet_s = expect_where, quiet_s
        self.announced = False
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None
        self._started = 0.0

    def __enter__(self) -> Phase:
        self._started = time.monotonic()
        if self.expect_s is not None:
            self.log(
                f"{job_prefix()}{self.what} (about {format_duration(self.expect_s)} measured {self.expect_where}) ..."
            )
            self.announced = True
        self._ticker = threading.Thread(target=self._tick, name=f"phase: {self.what}", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if exc_type is None and self.announced:
            self.log(f"{job_prefix()}{self.what}: done in {format_duration(self.elapsed())}")

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def tick_line(self, elapsed: float) -> str:
        """The line printed `elapsed` seconds in."""
        line = f"{job_prefix()}{self.what}: {format_duration(elapsed)} elapsed"
        if self.expect_s is None:
            return line
        if elapsed < self.expect_s:
            return f"{line}, ETA ~{format_duration(self.expect_s - elapsed)}"
        return f"{line}, longer than the {format_duration(self.expect_s)} measured"

    def _tick(self) -> None:
        if not self.announced:
            if self._stop.wait(self.quiet_s):
                return  # done before it was worth a line
            self.announced = True
            self.log(self.tick_line(self.elapsed()))
        while not self._stop.wait(self.every_s):
            self.log(self.tick_line(self.elapsed()))
