"""Verdicts as the terminal shows them (within its width, 80 columns in a log) and as JSON."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.console import Console
from rich.markup import escape

from rlrecipes.doctor.diagnose import CHECKS, Verdict, exit_code

HEADS = {"healthy": "[bold green]healthy[/]", "findings": "[bold red]{n} finding{s}[/]"}


def render(verdicts: list[Verdict], console: Console) -> None:
    for verdict in verdicts:
        for line, markup in lines(verdict, console.width):
            console.print(line if markup else escape(line), highlight=False, soft_wrap=True)
    if len(verdicts) > 1:
        states = [v.state for v in verdicts]
        counts = [
            f"{states.count(state)} {words}"
            for state, words in (
                ("healthy", "healthy"),
                ("findings", "with findings"),
                ("unreadable", "not checked"),
                ("skipped", "skipped"),
            )
            if state in states
        ]
        console.print(f"{len(verdicts)} runs: {', '.join(counts)}", highlight=False)


def lines(verdict: Verdict, columns: int) -> list[tuple[str, bool]]:
    """The verdict's lines, (text, whether it holds rich markup), wrapped to `columns`; a fix's
    command line is kept whole, so it copies and pastes as one."""
    out: list[tuple[str, bool]] = []

    def say(text: str, indent: int = 0, wrap: bool = True) -> None:
        lead = " " * indent
        if not wrap:
            out.append((lead + text, False))
            return
        folded = textwrap.fill(
            text,
            columns,
            initial_indent=lead,
            subsequent_indent=lead + "  ",
            break_on_hyphens=False,  # paths and metric names stay whole
            break_long_words=False,
        )
        out.extend((line, False) for line in folded.splitlines())

    path = escape(str(verdict.path))
    if verdict.state in ("unreadable", "skipped"):
        head = "[bold yellow]not checked[/]" if verdict.unreadable else "skipped"
        out.append((f"[bold]{path}[/]: {head}: {escape(verdict.unreadable or verdict.skipped or '')}", True))
        return out
    n = len(verdict.findings)
    head = HEADS[verdict.state].format(n=n, s="" if n == 1 else "s")
    first, last = verdict.steps or (0, 0)
    steps = f"step {first}" if first == last else f"steps {first}-{last}"
    ran = len(CHECKS) - len(verdict.not_checked) - len(verdict.not_applicable)
    out.append((f"[bold]{path}[/]: {head} ({ran} checks on {steps})", True))
    for finding in verdict.findings:
        out.append((f"  [bold red]x[/] [bold]{escape(finding.title)}[/] [dim]({finding.kind})[/]", True))
        for item in finding.evidence:
            say(item, 4)
        if finding.sample:
            say(f"sample: {finding.sample}", 4)
        say(f"cause: {finding.cause}", 4)
        say(f"fix: {finding.fix}", 4)
        if finding.command:
            say(finding.command, 6, wrap=False)
    reasons: dict[str, list[str]] = {}  # one line per reason: short runs skip every trend alike
    for skipped in verdict.not_checked:
        reasons.setdefault(skipped.reason, []).append(skipped.title)
    for reason, titles in reasons.items():
        say(f"not checked: {', '.join(titles)}: {reason}", 2)
    for note in verdict.notes:
        say(f"note: {note}", 2)
    return out


def as_json(verdicts: list[Verdict]) -> dict[str, Any]:
    return {
        "runs": [
            {
                "run": str(v.path),
                "verdict": v.state,
                "steps": list(v.steps) if v.steps else None,
                "findings": [f.as_json() for f in v.findings],
                "not_checked": [{"class": c.kind, "title": c.title, "reason": c.reason} for c in v.not_checked],
                "not_applicable": [{"class": c.kind, "title": c.title, "reason": c.reason} for c in v.not_applicable],
                "notes": v.notes,
                "reason": v.unreadable or v.skipped,
            }
            for v in verdicts
        ],
        "exit_code": exit_code(verdicts),
    }
