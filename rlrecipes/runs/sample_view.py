"""A step's stored samples (`rlrecipes.step_samples`) on the terminal: one table per group
of completions under its prompt, within the terminal's width (80 columns in a log)."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rlrecipes.step_samples import StepSamples


def render_step(found: StepSamples, source: str, console: Console) -> None:
    groups = [list(rows) for _, rows in groupby(found.rows, key=lambda row: row.get("group"))]
    console.print(
        f"[bold]step {found.step}[/] of {escape(source)}: {len(found.rows)} completions in {len(groups)} groups",
        highlight=False,
        soft_wrap=True,
    )
    for rows in groups:
        console.print(group_view(rows))
    for note in found.skipped:
        console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)


def group_view(rows: list[dict[str, Any]]) -> Group:
    first = rows[0]
    head = Text.assemble(("\ngroup ", "bold"), (str(first.get("group", "?")), "bold"), "  prompt: ")
    head.append(str(first["prompt"]).strip())
    parts: list[Any] = [head]
    if first.get("answer") is not None:
        parts.append(Text.assemble(("answer: ", "bold"), str(first["answer"])))
    table = Table(box=None, pad_edge=False, expand=True, show_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("reward", no_wrap=True)
    table.add_column("adv", justify="right", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("completion", overflow="fold", ratio=1)
    for index, row in enumerate(rows):
        table.add_row(str(index), _rewards(row), _number(row.get("advantage"), signed=True), _length(row), _text(row))
    parts.append(table)
    return Group(*parts)


def _rewards(row: dict[str, Any]) -> str:
    rewards = row.get("rewards") if isinstance(row.get("rewards"), dict) else {}
    if len(rewards) == 1:
        return _number(next(iter(rewards.values())))
    return "\n".join(f"{name} {_number(value)}" for name, value in rewards.items()) or "-"


def _length(row: dict[str, Any]) -> str:
    length = row.get("length")
    shown = str(length) if isinstance(length, int) else "-"
    return f"{shown} cut" if row.get("truncated") is True else shown


def _text(row: dict[str, Any]) -> Text:
    """The completion; in a tool rollout one line per turn, a tool's marked and dimmed, so whose
    words are whose shows at a glance."""
    turns = row.get("turns")
    if not isinstance(turns, list) or not turns:
        return Text(str(row["completion"]))
    text = Text()
    for turn in (t for t in turns if isinstance(t, dict)):
        if text:
            text.append("\n")
        if turn.get("by") == "tool":
            text.append("[tool] ", style="bold cyan")
            text.append(str(turn.get("text", "")), style="dim")
        else:
            text.append(str(turn.get("text", "")))
    return text


def _number(value: Any, signed: bool = False) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.3g}"
