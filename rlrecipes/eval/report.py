"""Tables of eval results: one run (printed after `eval`, and `report.md` in the run
directory) and several runs side by side (`rlrecipes report RUN_DIR...`).

`report` accepts eval runs (``summary.json`` with ``benchmarks``), train runs (held-out
accuracy before/after) and folders holding runs (e.g. a multirun sweep directory).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlrecipes.errors import UserError
from rlrecipes.eval.scoring import headline


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}"


def _largest_k(metrics: dict[str, Any], kind: str) -> str | None:
    ks = [int(k.split("@")[1]) for k in metrics if k.startswith(kind + "@")]
    return f"{kind}@{max(ks)}" if ks and max(ks) > 1 else None


def benchmark_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of one run's table: pass@1 plus, when sampled, pass@n and maj@n
    (every other k is in summary.json)."""
    benches = summary.get("benchmarks", {})
    sampled = any(m.get("samples_per_problem", 1) > 1 for m in benches.values())
    columns = ["benchmark", "problems", "n", "pass@1 %"] + (["pass@n %", "maj@n %"] if sampled else [])
    columns += ["no answer %", "truncated %", "mean length"]
    rows = []
    for name, m in benches.items():
        length = m.get("mean_completion_tokens", m.get("mean_completion_chars"))
        row = [name, str(m.get("problems", 0)), str(m.get("samples_per_problem", "-")), _pct(m.get("pass@1"))]
        if sampled:
            row += [_pct(m.get(k)) if k else "-" for k in (_largest_k(m, "pass"), _largest_k(m, "maj"))]
        row += [_pct(m.get("no_answer_fraction")), _pct(m.get("truncated_fraction")),
                "-" if length is None else f"{length:.0f}"]
        rows.append(row)
    return columns, rows


def print_eval_summary(summary: dict[str, Any], run_dir: Path, console: Console) -> None:
    title = f"{summary.get('model')}  [{summary['protocol'].get('name')}]  -> {run_dir}"
    table = Table(title=escape(title))
    columns, rows = benchmark_rows(summary)
    for col in columns:
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    for row in rows:
        table.add_row(*row)
    avg = summary.get("average", {})
    if avg.get("benchmarks", 0) > 1:
        table.add_row("average", *[""] * 2, _pct(avg.get("headline")), *[""] * (len(columns) - 4))
    console.print(table)
    for name, m in summary.get("benchmarks", {}).items():
        for attr in ("by_subject", "by_level"):
            if attr in m:
                parts = ", ".join(f"{k} {_pct(v['pass@1'])} ({v['problems']})" for k, v in m[attr].items())
                console.print(escape(f"  {name} {attr.replace('_', ' ')}: {parts}"), highlight=False)


def write_report(run_dir: Path, summary: dict[str, Any]) -> None:
    """``report.md``: the same table in Markdown."""
    columns, rows = benchmark_rows(summary)
    lines = [f"# eval: {summary.get('model')} [{summary['protocol'].get('name')}]", "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    (run_dir / "report.md").write_text("\n".join(lines) + "\n")


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Run directories (holding ``summary.json``) given as paths or found below them."""
    runs: list[Path] = []
    for p in map(Path, paths):
        if (p / "summary.json").is_file():
            runs.append(p)
        elif p.is_dir():
            found = sorted(q.parent for q in p.rglob("summary.json"))
            if not found:
                raise UserError(f"{p}: no summary.json here or below (not a finished run)")
            runs += found
        else:
            raise UserError(f"{p}: no such run directory")
    return runs


def _load(run: Path) -> dict[str, Any]:
    try:
        summary = json.loads((run / "summary.json").read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{run / 'summary.json'}: not valid JSON ({exc.msg})") from None
    if not isinstance(summary, dict):
        raise UserError(f"{run / 'summary.json'}: not a run summary (a JSON object is expected)")
    return summary


def comparison_table(paths: Sequence[str | Path]) -> Table:
    """One row per run; eval runs show each benchmark's headline metric and the average."""
    runs = [(run, _load(run)) for run in find_runs(paths)]
    bench_names: list[str] = []
    for _, s in runs:
        bench_names += [b for b in s.get("benchmarks", {}) if b not in bench_names]
    table = Table(title="rlrecipes report (accuracy %)")
    for col in ("run", "model", "protocol", *bench_names, "average", "before -> after"):
        table.add_column(col, justify="left" if col in ("run", "model", "protocol") else "right")
    for run, s in runs:
        cells = []
        for b in bench_names:
            m = s.get("benchmarks", {}).get(b)
            key, value = headline(m) if m else ("", None)
            cells.append("-" if m is None else f"{_pct(value)} ({key})")
        avg = s.get("average", {}).get("headline") if s.get("kind") == "eval" else None
        train = (f"{_pct(s['accuracy_before'])} -> {_pct(s['accuracy_after'])}"
                 if "accuracy_before" in s and "accuracy_after" in s else "-")
        protocol = s.get("protocol", {}).get("name", "-") if isinstance(s.get("protocol"), dict) else "-"
        table.add_row(escape(str(run)), escape(str(s.get("model", "-"))), escape(protocol), *cells,
                      _pct(avg), train)
    return table
