"""docs/atlas.md's results, rendered from the atlas's stored records (bench_atlas.py): one table per
task, every arm a row, and the claims' verdicts, each between markers `<!-- atlas:KEY -->` and
`<!-- /atlas -->` (KEY: a task of bench_atlas.TASKS or `claims`), plus one figure per task
(docs/atlas/<task>.png) drawn from the task's stored cells. A task without a stored full result
keeps its table of arms and settings with "not yet measured" in place of figures, so every arm's
row (and its anchor, `arm-NAME`, which the method cards and the README link to) is there from the
start. benchmarks/readme_figures.py --check / --write call this module.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any, Optional

from bench_atlas import ARM, CLAIMS, CPU_TASKS, TASKS, arm_settings, read_store
from benchkit import REPO, RESULTS_DIR, UNMEASURED, load_result, provenance

ATLAS_PAGE = REPO / "docs" / "atlas.md"
FIGURES_DIR = REPO / "docs" / "atlas"
MARKED = re.compile(r"<!-- atlas:([a-z0-9_]+) -->\n(.*?)<!-- /atlas -->", re.S)
DASH = "–"
COLLAPSES = ("collapses", "entropy_collapses")  # bench_atlas.task_figures' counts


def first_task(arm: str) -> Optional[str]:
    """The first CPU task whose table lists `arm`: its row there carries the anchor `arm-NAME`."""
    return next((t for t in CPU_TASKS if arm in TASKS[t].arms), None)


def anchors(task: str, arm: str) -> str:
    own = f'<a id="{task}-{arm}"></a>'
    return own + (f'<a id="arm-{arm}"></a>' if first_task(arm) == task else "")


def points(value: float) -> str:
    shown = round(100 * value, 1)
    return f"{shown + 0.0:+.1f}"  # + 0.0: a mean of -0.0001 (or -0.0) prints +0.0, not -0.0


def difference(found: dict[str, Any]) -> str:
    """A paired difference's mean and 95 % interval in points: "+3.1 [−1.2, +7.4] (3 seeds)"."""
    if not found or found.get("mean") is None:
        return DASH
    low, high = found["interval"]
    return f"{points(found['mean'])} [{points(low)}, {points(high)}] ({found['n']} seeds)"


def spread(stats: Optional[dict[str, Any]]) -> str:
    return DASH if not stats else f"{stats['mean']:.3f} ± {stats['stdev']:.3f}"


def task_table(name: str, record: Optional[dict[str, Any]]) -> list[str]:
    """The task's markdown: what was measured and where, a row per arm, the arms' notes."""
    task = TASKS[name]
    result = record["result"] if record else None
    ks = [f"pass@{k}" for k in task.ks]
    if result is None:
        head = f"*{UNMEASURED}* (`python benchmarks/bench_atlas.py --tasks {name}`)."
        arms = list(task.arms)
    else:
        pk = result["pass_at_k"]
        sampled = f"{pk['problems']} problems" if pk.get("problems") else "every held-out problem"
        head = (
            f"{result['steps']} optimiser steps per arm; held-out greedy accuracy on {result['heldout']} problems, "
            f"{'/'.join(ks)} from {pk['samples']} sample{'s' if pk['samples'] != 1 else ''} on {sampled}; seeds {', '.join(map(str, record['seeds']))}; "
            f"cells at {', '.join(f'`{c[:7]}`' for c in result['commits'])}; stored {provenance(record)}."
        )
        arms = list(result["arms"])
    lines = [
        head,
        "",
        f"| arm | setting | greedy | {' / '.join(ks)} | Δ greedy, points (95 % CI) | collapses | entropy collapses |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes = []
    for arm in arms:
        setting = " ".join(arm_settings(task, arm))
        cell = (
            f"`{setting}`"
            if setting
            else ("the starting model, not trained" if arm == "untrained" else "the task's own")
        )
        cell += f" *(no signal: {task.no_signal[arm]})*" if arm in task.no_signal else ""
        # an arm's note is about its own settings: not where the task runs it with others (the fact base's DAPO)
        if ARM[arm].note and set(ARM[arm].overrides) <= set(arm_settings(task, arm)):
            notes.append(f"- `{arm}`: {ARM[arm].note}.")
        figures = result["arms"].get(arm) if result else None
        if figures is None:
            lines.append(f"| {anchors(name, arm)}{arm} | {cell} | {DASH} | {DASH} | {DASH} | {DASH} | {DASH} |")
            continue
        for ref in figures.get("identical_to", []):
            notes.append(
                f"- `{arm}`: identical to `{ref}` on every seed (its scores and its reward, entropy and loss at "
                "every step): its setting changed no update in these runs."
            )
        passes = " / ".join(f"{figures[k]['mean']:.3f}" if k in figures else DASH for k in ks)
        deltas = "; ".join(f"vs {ref} {difference(pair['greedy'])}" for ref, pair in figures["paired"].items())
        trained = figures["cells"] - len(figures["errors"])
        failed = f" ({len(figures['errors'])} ended in an error)" if figures["errors"] else ""
        # the starting model has no training run to collapse in
        collapses = [DASH, DASH] if arm == "untrained" else [f"{figures[k]} of {trained}" for k in COLLAPSES]
        lines.append(
            f"| {anchors(name, arm)}{arm} | {cell} | {spread(figures.get('greedy'))}{failed} | {passes} | "
            f"{deltas or DASH} | {' | '.join(collapses)} |"
        )
    if result is not None and (FIGURES_DIR / f"{name}.png").is_file():
        lines += ["", f"![{name}: held-out accuracy and entropy per arm](atlas/{name}.png)"]
    return [*lines, *([""] + notes if notes else [])]


def claims_table(record: Optional[dict[str, Any]]) -> list[str]:
    if record is None:
        rows = [f"| {n} | {claim} | {UNMEASURED} | {DASH} |" for n, claim in CLAIMS.items()]
        head = f"*{UNMEASURED}*."
    else:
        rows = [
            f"| {n} | {claim['claim']} | **{claim['verdict']}** | {evidence(claim)} |"
            for n, claim in record["result"].items()
        ]
        head = (
            f"From the complete tasks' stored cells ({', '.join(record['settings']['tasks'])}); {provenance(record)}."
        )
    return [head, "", "| # | claim | verdict | evidence |", "| --- | --- | --- | --- |", *rows]


def evidence(claim: dict[str, Any]) -> str:
    """The figures a verdict rests on, in words: paired differences in points with their interval,
    collapse counts, the sub-verdicts of a claim with parts, what a claim still waits for."""
    parts = []
    for key, value in claim.items():
        if key in ("claim", "verdict"):
            continue
        if key == "waiting_for":
            parts.append(f"waits for {', '.join(value)}")
        elif key == "tasks":
            parts.append(f"tasks {', '.join(value) or 'none'}")
        elif isinstance(value, dict) and "interval" in value:
            parts.append(
                f"{key.replace('_', ' ')} {difference(value)}" + (f" ({value['why']})" if "why" in value else "")
            )
        elif isinstance(value, str):
            parts.append(f"{key.replace('_', ' ')}: {value}")
        elif isinstance(value, dict):  # a part with its own verdict (claim 3's two arms)
            parts.append(f"{key}: {value['verdict']} ({evidence(value)})")
        else:
            parts.append(f"{key.replace('_', ' ')} {value}")
    return "; ".join(parts)


def blocks(results_dir: Path = RESULTS_DIR) -> dict[str, list[str]]:
    """Every marker's rendered lines."""
    out = {name: task_table(name, load_result(f"atlas_{name}", results_dir)) for name in CPU_TASKS}
    out["claims"] = claims_table(load_result("atlas_claims", results_dir))
    return out


def with_results(text: str, results_dir: Path = RESULTS_DIR) -> str:
    """`text` (docs/atlas.md) with every marked block rendered anew; an unknown marker is refused."""
    rendered = blocks(results_dir)

    def fill(match: re.Match) -> str:
        if match[1] not in rendered:
            raise SystemExit(f"docs/atlas.md: <!-- atlas:{match[1]} --> names no block; valid: {', '.join(rendered)}")
        return f"<!-- atlas:{match[1]} -->\n" + "\n".join(rendered[match[1]]) + "\n<!-- /atlas -->"

    return MARKED.sub(fill, text)


def page_differences(text: str, results_dir: Path = RESULTS_DIR) -> list[str]:
    """The blocks of docs/atlas.md that are not the rendered ones, and the blocks it lacks."""
    have = dict(MARKED.findall(text))
    want = dict(MARKED.findall(with_results(text, results_dir)))
    problems = [f"docs/atlas.md: no <!-- atlas:{key} --> block" for key in blocks(results_dir) if key not in have]
    return problems + [
        f"docs/atlas.md {key}: differs from the stored results" for key in have if have[key] != want[key]
    ]


# ------------------------------------------------------------------------------------- the figures
def write_figures(results_dir: Path = RESULTS_DIR, out_dir: Path = FIGURES_DIR) -> list[Path]:
    """One PNG per task with a stored full result, from its stored cells: held-out greedy accuracy
    per arm (mean, and each seed as a dot) beside the mean entropy per optimiser step."""
    written = []
    for name in CPU_TASKS:
        if load_result(f"atlas_{name}", results_dir) is None:
            continue
        _, cells = read_store(results_dir / f"atlas_{name}.cells.jsonl")
        if cells:
            out_dir.mkdir(parents=True, exist_ok=True)
            written.append(task_figure(name, cells, out_dir / f"{name}.png"))
    return written


def task_figure(name: str, cells: list[dict[str, Any]], path: Path) -> Path:
    from matplotlib.figure import Figure

    arms = [a for a in TASKS[name].arms if any(c["arm"] == a and not c.get("error") for c in cells)]
    figure = Figure(figsize=(11, 0.35 * len(arms) + 1.8))
    accuracy, entropy = figure.subplots(1, 2)
    for row, arm in enumerate(arms):
        done = [c for c in cells if c["arm"] == arm and not c.get("error")]
        values = [c["greedy"] for c in done if c.get("greedy") is not None]
        if values:
            accuracy.scatter(values, [row] * len(values), s=12, color="0.6")
            accuracy.scatter([statistics.mean(values)], [row], s=40, color="C0")
        curves = [c["entropy"] for c in done if c.get("entropy")]
        if curves:
            steps = min(len(curve) for curve in curves)
            mean = [statistics.mean(curve[i] for curve in curves) for i in range(steps)]
            # matplotlib's 10 colours repeat: past them a line is told apart by its dash
            style = ("-", "--", ":")[(row // 10) % 3]
            entropy.plot(range(1, steps + 1), mean, label=arm, linewidth=1, color=f"C{row % 10}", linestyle=style)
    accuracy.set_yticks(range(len(arms)), arms)
    accuracy.invert_yaxis()
    accuracy.set_xlabel("held-out greedy accuracy (dots: seeds; blue: mean)")
    entropy.set_xlabel("optimiser step")
    entropy.set_ylabel("mean token entropy of the rollouts (seeds' mean)")
    entropy.legend(fontsize=6, ncol=2)
    figure.suptitle(f"atlas, {name}")
    figure.tight_layout()
    figure.savefig(path, dpi=110, metadata={"Software": None})
    return path
