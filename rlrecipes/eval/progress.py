"""Eval progress: a rich bar on a terminal (problems done, problems/s, ETA), and a plain
line every ``every`` problems when stdout is not a terminal (Slurm, ``nohup``, a pipe),
where a bar would print nothing until the end."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from rlrecipes.display import MOSTLY_TRUNCATED, format_duration, job_prefix


class RateColumn(ProgressColumn):
    """Problems per second (rich's own speed columns assume bytes)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("- problems/s" if speed is None else f"{speed:.2f} problems/s", style="cyan")


class EvalProgress:
    """One bar over all problems still to generate, labelled with the current benchmark."""

    def __init__(
        self,
        total: int,
        enabled: bool = True,
        every: int = 25,
        log: Callable[[str], None] = print,
        terminal: bool | None = None,
    ) -> None:
        self.total, self.enabled, self.every, self.log = total, enabled, max(1, every), log
        self.terminal = sys.stdout.isatty() if terminal is None else terminal
        self._progress: Progress | None = None
        self._task: Any = None
        self.done, self._last_line, self._name = 0, 0, ""
        self._truncated = self._completions = 0  # completions that hit the token limit, of all
        self._started = time.monotonic()

    def __enter__(self) -> EvalProgress:
        self._started = time.monotonic()
        if self.enabled and self.terminal:
            self._progress = Progress(
                TextColumn(f"[bold]{job_prefix()}eval[/] {{task.description}}"),
                BarColumn(),
                MofNCompleteColumn(),
                RateColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            )
            self._task = self._progress.add_task("", total=self.total)
            self._progress.start()
        return self

    def start_benchmark(self, name: str) -> None:
        self._name = name
        self._truncated = self._completions = 0
        if self._progress is not None:
            self._progress.update(self._task, description=name)

    def advance(self, n: int, truncated: int = 0, completions: int = 0) -> None:
        """A batch of `n` problems is generated, graded and saved; `truncated` of its
        `completions` hit the token limit (most of them: the line says so)."""
        self.done += n
        self._truncated += truncated
        self._completions += completions
        self._show(self.done)

    def truncated_share(self) -> float:
        return self._truncated / self._completions if self._completions else 0.0

    def within(self, k: int) -> None:
        """`k` problems of the batch being generated are finished (vLLM reports them as they
        end; a batch of hundreds of problems would otherwise show nothing until it ends)."""
        self._show(self.done + k)

    def _show(self, finished: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=finished, description=self._name + self._flag())
        elif (
            self.enabled
            and finished > self._last_line
            and (finished - self._last_line >= self.every or finished >= self.total)
        ):
            self._last_line = finished
            self.log(self.line(finished))

    def line(self, finished: int | None = None) -> str:
        """``eval math500: 50/500 problems (10%), 0.12/s, ETA 1h02m (6m58s elapsed)``"""
        finished = self.done if finished is None else finished
        elapsed = time.monotonic() - self._started
        rate = finished / elapsed if elapsed > 0 else 0.0
        eta = format_duration((self.total - finished) / rate) if rate > 0 else "-"
        pct = 100 * finished / self.total if self.total else 100.0
        return (
            f"{job_prefix()}eval {self._name}: {finished}/{self.total} problems ({pct:.0f}%){self._flag()}, "
            f"{rate:.2f}/s, ETA {eta} ({format_duration(elapsed)} elapsed)"
        )

    def _flag(self) -> str:
        """`` truncated 94%!`` while most completions so far hit the token limit."""
        share = self.truncated_share()
        return f" truncated {100 * share:.0f}%!" if share > MOSTLY_TRUNCATED else ""

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
