"""The table of one eval run: printed after `rlrecipes eval` and written as its report.md.
Tables across many runs are `rlrecipes.runs`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlrecipes.display import print_titled
from rlrecipes.rundir import write_text
from rlrecipes.storage import writing


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}"


def _largest_k(metrics: dict[str, Any], kind: str) -> str | None:
    ks = [int(k.split("@")[1]) for k in metrics if k.startswith(kind + "@")]
    return f"{kind}@{max(ks)}" if ks and max(ks) > 1 else None


# an eval with rollout.tools: (column, key in a benchmark's "tools", shown as a percentage)
TOOL_COLUMNS = (
    ("tool calls", "calls_per_rollout", False),
    ("tool errors %", "error_rate", True),
    ("invalid %", "invalid_action_rate", True),
    ("turns", "turns", False),
    ("answered %", "answer_rate", True),
    ("tool tokens %", "tool_token_share", True),
)


def _tool_cells(tools: dict[str, Any] | None) -> list[str]:
    if tools is None:
        return ["-"] * len(TOOL_COLUMNS)
    # calls and turns per problem; the error rate is a share of the calls, the others of
    # turns, problems and completion tokens (rlrecipes.tool_loop.rollout.rollout_metrics)
    return [_pct(tools[key]) if share else f"{tools[key]:.2f}" for _, key, share in TOOL_COLUMNS]


def benchmark_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of one run's table: pass@1 plus, when sampled, pass@n and maj@n
    (every other k is in summary.json), and with tools the tool loop's metrics."""
    benches = summary.get("benchmarks", {})
    sampled = any(m.get("samples_per_problem", 1) > 1 for m in benches.values())
    tools = any("tools" in m for m in benches.values())
    columns = ["benchmark", "problems", "n", "pass@1 %"] + (["pass@n %", "maj@n %"] if sampled else [])
    columns += ["no answer %", "truncated %", "mean length"]
    columns += [name for name, _, _ in TOOL_COLUMNS] if tools else []
    rows = []
    for name, m in benches.items():
        length = m.get("mean_completion_tokens", m.get("mean_completion_chars"))
        row = [name, str(m.get("problems", 0)), str(m.get("samples_per_problem", "-")), _pct(m.get("pass@1"))]
        if sampled:
            row += [_pct(m.get(k)) if k else "-" for k in (_largest_k(m, "pass"), _largest_k(m, "maj"))]
        row += [
            _pct(m.get("no_answer_fraction")),
            _pct(m.get("truncated_fraction")),
            "-" if length is None else f"{length:.0f}",
        ]
        row += _tool_cells(m.get("tools")) if tools else []
        rows.append(row)
    return columns, rows


def print_eval_summary(summary: dict[str, Any], run_dir: Path, console: Console) -> None:
    # no vertical rules, and each column as wide as its header's longest word: 80 columns hold
    # the nine columns of a sampled protocol with every header whole
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    columns, rows = benchmark_rows(summary)
    for col in columns:
        first = col == "benchmark"
        table.add_column(col, justify="left" if first else "right", min_width=max(map(len, col.split())), no_wrap=first)
    for row in rows:
        table.add_row(*row)
    avg = summary.get("average", {})
    if avg.get("benchmarks", 0) > 1:
        table.add_row("average", *[""] * 2, _pct(avg.get("headline")), *[""] * (len(columns) - 4))
    print_titled(console, table, f"{summary.get('model')}  [{summary['protocol'].get('name')}]  ->", run_dir)
    for warning in summary.get("warnings", []):
        console.print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False)
    for name, m in summary.get("benchmarks", {}).items():
        for attr in ("by_subject", "by_level"):
            if attr in m:
                parts = ", ".join(f"{k} {_pct(v['pass@1'])} ({v['problems']})" for k, v in m[attr].items())
                console.print(escape(f"  {name} {attr.replace('_', ' ')}: {parts}"), highlight=False)


def write_report(run_dir: Path, summary: dict[str, Any]) -> None:
    """``report.md``: the same table in Markdown."""
    columns, rows = benchmark_rows(summary)
    lines = [
        f"# eval: {summary.get('model')} [{summary['protocol'].get('name')}]",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    with writing(run_dir / "report.md", "the results are in summary.json"):
        write_text(run_dir / "report.md", "\n".join(lines) + "\n")
