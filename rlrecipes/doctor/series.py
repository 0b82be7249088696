"""A metric's logged steps, (step, value) in order: its start, middle and end windows, and
how the checks put them into words."""

from __future__ import annotations

import statistics
from typing import Callable, Sequence

from rlrecipes.doctor.thresholds import EDGE_SHARE

Point = tuple[int, float]


def edge_size(points: Sequence[Point]) -> int:
    """Steps in the start and end windows: EDGE_SHARE of them, rounded down, at least one."""
    return max(1, int(len(points) * EDGE_SHARE))


def start(points: Sequence[Point]) -> list[Point]:
    return list(points[: edge_size(points)])


def end(points: Sequence[Point], at_least: int = 1) -> list[Point]:
    """The end window: its EDGE_SHARE of the steps, or the last `at_least` where that is more."""
    return list(points[-max(edge_size(points), at_least) :])


def middle(points: Sequence[Point]) -> list[Point]:
    """The window from 40% to 60% of the logged steps (at least one step)."""
    low = int(len(points) * 0.4)
    return list(points[low : max(low + 1, int(len(points) * 0.6))])


def mean(points: Sequence[Point]) -> float:
    values = [v for _, v in points]
    try:
        return statistics.fmean(values)
    except OverflowError:  # values near the float limit (a hand-written or broken log): scaled first
        return sum(v / len(values) for v in values)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def span(points: Sequence[Point]) -> str:
    first, last = points[0][0], points[-1][0]
    return f"step {first}" if first == last else f"steps {first}-{last}"


def share(points: Sequence[Point], test: Callable[[float], bool]) -> float:
    return sum(1 for _, v in points if test(v)) / len(points)


def longest_streak(points: Sequence[Point], test: Callable[[float], bool]) -> list[Point]:
    """The longest run of consecutive logged points that pass `test` ([] when none does)."""
    best: list[Point] = []
    current: list[Point] = []
    for point in points:
        current = current + [point] if test(point[1]) else []
        if len(current) > len(best):
            best = current
    return best


def num(value: float) -> str:
    """A metric value in a verdict: 3 significant digits, no exponent for ordinary sizes."""
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.3g}"
    return f"{value:.2e}"


def window_text(metric: str, points: Sequence[Point]) -> str:
    """`entropy 0.012 (mean of steps 91-100)`."""
    if len(points) == 1:
        return f"{metric} {num(points[0][1])} at step {points[0][0]}"
    return f"{metric} {num(mean(points))} (mean of {span(points)})"


def start_vs_end(metric: str, points: Sequence[Point], last: Sequence[Point] = (), first: Sequence[Point] = ()) -> str:
    """`entropy 0.6 (steps 1-2) -> 0.01 (steps 9-10)`: `first` (the start window) against `last` (the end window)."""
    first, last = first or start(points), last or end(points)
    return f"{metric} {num(mean(first))} ({span(first)}) -> {num(mean(last))} ({span(last)})"


def within(points: Sequence[Point], steps: Sequence[Point]) -> list[Point]:
    """The points of `points` at the steps `steps` spans (another metric's window)."""
    first, last = steps[0][0], steps[-1][0]
    return [p for p in points if first <= p[0] <= last]
