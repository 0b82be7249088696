"""A rich progress bar for evals: problems done, problems/s, ETA."""

from __future__ import annotations

from typing import Any

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


class RateColumn(ProgressColumn):
    """Problems per second (rich's own speed columns assume bytes)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("- problems/s" if speed is None else f"{speed:.2f} problems/s", style="cyan")


class EvalProgress:
    """One bar over all problems still to generate, labelled with the current benchmark."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total, self.enabled = total, enabled
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> "EvalProgress":
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]eval[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                RateColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            )
            self._task = self._progress.add_task("", total=self.total)
            self._progress.start()
        return self

    def start_benchmark(self, name: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=name)

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
