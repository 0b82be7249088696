"""How progress lines read, shared by training, eval and checkpoint sweeps: durations, the
sweep job they belong to, and fitting labelled values into a terminal's width."""

from __future__ import annotations

import shutil
import textwrap
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # the sandbox's probes import this module with the standard library alone
    from rich.console import Console

# "Most completions hit the token limit": past this share a run is warned about (progress
# line, summary.json), since its rewards or scores then measure the limit, not the model.
MOSTLY_TRUNCATED = 0.5


def format_duration(seconds: float) -> str:
    """``1h05m``, ``3m07s`` or ``42s``: elapsed times and ETAs of the progress lines."""
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def width() -> int:
    """Columns of the terminal (COLUMNS when set); 80 when output goes to a file or pipe."""
    return shutil.get_terminal_size((80, 24)).columns


def job_prefix() -> str:
    """``[job 3] `` inside job 3 of a Hydra sweep (-m), so the interleaved progress lines of
    parallel jobs (joblib) say whose they are; empty outside a sweep."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):  # no Hydra job here (a test, a script)
        return ""
    return f"[job {hc.job.num}] " if hc.mode == RunMode.MULTIRUN else ""


def pack(head: str, parts: Sequence[str], tail: str = "", columns: int | None = None, wrap: bool = False) -> str:
    """`head`, then `parts` (most important first) two spaces apart, then `tail`, within
    `columns`: parts that do not fit go to indented continuation lines (`wrap`) or are left out."""
    columns = columns or width()
    lines: list[str] = []
    line, empty = head, True  # empty: no part on this line yet
    for part in parts:
        sep = (" " if line else "") if empty else "  "
        room = columns - (len(tail) if not lines else 0)
        if len(line) + len(sep) + len(part) <= room or (empty and lines):
            line, empty = line + sep + part, False
        elif wrap:
            lines.append(line)
            line, empty = "    " + part, False
    lines.append(line)
    lines[0] += tail
    return "\n".join(lines)


def wrapped(text: str, columns: int | None = None) -> str:
    """`text` folded at word boundaries to the terminal's width, continuation lines indented."""
    return textwrap.fill(text, width=columns or width(), subsequent_indent="    ", break_on_hyphens=False)


def left_cut(text: str, cap: int) -> str:
    """A long name or path by its end, which tells runs apart (their start is shared), cut
    where a path part begins ("…/seed_1") or else where a word does ("…-learning_rate"), never
    inside a word: a last word longer than `cap` is kept whole."""
    if len(text) <= cap:
        return text
    for breaks in ("/", "/-_ "):  # whole path parts first, then whole words
        starts = [i for i, ch in enumerate(text) if ch in breaks and i > 0]
        fitting = [i for i in starts if 1 + len(text) - i <= cap]
        if fitting:
            return "…" + text[min(fitting) :]
    last = max((i for i, ch in enumerate(text) if ch in "/-_ " and i > 0), default=0)
    return "…" + text[last:] if last else text


def print_titled(out: Console, table: Any, before: str, path: Any, after: str = "") -> None:
    """`table` under the line `before PATH after`, never wrapped: a table's own title wraps at the
    table's width, splitting a run folder's name mid-word. A line wider than the terminal keeps
    the path's end, cut where a path part begins ("…/2026-12-07_06-43-30-search_r1-factbase")."""
    head = f"{before} " if before else ""
    room = out.width - len(head) - len(after)
    out.print(f"{head}{left_cut(str(path), max(room, 1))}{after}", soft_wrap=True, highlight=False, markup=False)
    out.print(table)
