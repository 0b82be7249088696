"""How durations read in progress lines, shared by training, eval and checkpoint sweeps."""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """``1h05m``, ``3m07s`` or ``42s``: elapsed times and ETAs of the progress lines."""
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")
