"""A run's verdict: every check in order, and what each could not look at."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from rlrecipes.doctor import learning_checks, stability_checks
from rlrecipes.doctor.findings import Check, Finding, NotChecked, level_steps, prompts_per_rollout
from rlrecipes.doctor.reading import Record, RunRecord, Unreadable, _invocation, by_step
from rlrecipes.doctor.thresholds import LEVEL_MIN_GROUPS, MIN_TREND_STEPS

BY_KIND = {check.kind: check for check in (*stability_checks.CHECKS, *learning_checks.CHECKS)}
# the order of a verdict: broken numbers and rollouts first, then steps too large for the policy
# (which garble or collapse it), then what stops learning, then what spoils it. A policy that collapsed or garbled comes before truncation, a flat reward and empty
# groups: a degenerate policy causes those (text that never ends, completions all alike), they do
# not cause it.
ORDER = (
    "numeric",
    "rollout-mismatch",
    "tool-loop",
    "step-size",
    "entropy-collapse",
    "entropy-blowup",
    "truncation",
    "reward-flat",
    "no-signal",
    "reward-hacking",
    "drift",
)
CHECKS: list[Check] = [BY_KIND[kind] for kind in ORDER]


@dataclass
class Verdict:
    path: Path
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)  # it applies, but the run lacks what it reads
    not_applicable: list[NotChecked] = field(default_factory=list)  # the run's settings rule it out
    notes: list[str] = field(default_factory=list)
    steps: Optional[tuple[int, int]] = None
    unreadable: Optional[str] = None  # why the run could not be checked at all
    skipped: Optional[str] = None  # why the run is not one to check (eval, SFT)

    @property
    def state(self) -> str:
        if self.unreadable:
            return "unreadable"
        if self.skipped:
            return "skipped"
        return "findings" if self.findings else "healthy"


def diagnose(record: Record) -> Verdict:
    if isinstance(record, Unreadable):
        if record.skipped:
            return Verdict(record.path, skipped=record.reason)
        return Verdict(record.path, unreadable=record.reason)
    verdict = Verdict(record.path, steps=record.steps)
    found: dict[str, Finding] = {}
    for check in CHECKS:
        reason = check.applies(record)
        if reason:
            verdict.not_applicable.append(NotChecked(check.kind, check.title, reason))
            continue
        reason = _cannot_run(check, record)
        if reason:
            verdict.not_checked.append(NotChecked(check.kind, check.title, reason))
            continue
        result = check.find(record)
        if result is not None:
            result.kind, result.title = check.kind, check.title
            found[check.kind] = result
    verdict.findings = [f for kind, f in found.items() if not _explained(BY_KIND[kind], record, found)]
    verdict.notes = list(record.notes)  # after the checks: reading the samples may have added some
    verdict.notes += said_live_only(record.summary.get("doctor"), found)
    return verdict


def said_live_only(live: Any, found: dict[str, Finding]) -> list[str]:
    """A note for each class the live doctor (trainer.doctor, summary.json's `doctor` list) said
    during training that no check over the whole run finds, not even as a symptom: a phase that
    passed (groups all alike for a few early steps), a cause the end's windows miss (a gap that
    rose early and stayed; a collapse's entropy signs after a learning rate broke the policy) or
    a check the whole run could not make. The run's own log said it, so its verdict says it too."""
    if not isinstance(live, list):
        return []
    notes = []
    for entry in live:
        kind = entry.get("class") if isinstance(entry, dict) else None
        if not isinstance(kind, str) or kind not in BY_KIND or kind in found:
            continue
        step = entry.get("step")
        evidence = entry.get("evidence", "")
        evidence = "; ".join(map(str, evidence)) if isinstance(evidence, list) else str(evidence)
        notes.append(
            f"the live doctor said at step {step if isinstance(step, int) else '?'}: {BY_KIND[kind].title} "
            f"({kind}): {evidence}; over the whole run it is not found"
        )
    return notes


def diagnose_rows(path: Path, rows: list[dict[str, Any]], config: dict[str, Any]) -> Verdict:
    """The verdict on the steps a run being trained has logged so far (`trainer.doctor`), from its
    metrics rows and resolved config (flattened to dotted keys) rather than its folder. Its stored
    samples are not read: that would be every one of them each step; the verdict quotes none."""
    command, overrides = _invocation(path)
    # the rows as `rlrecipes doctor` reads them (a resumed run's log may have been joined by hand)
    return diagnose(RunRecord(path, by_step(rows)[0], config, {}, command, overrides, _samples=[]))


def _explained(check: Check, record: RunRecord, found: dict[str, Finding]) -> bool:
    """Whether another finding of the run explains this one (it is then a symptom, left out)."""
    return any(kind in found for kind in (*check.superseded_by, *check.symptom_of(record)))


def _cannot_run(check: Check, record: RunRecord) -> Optional[str]:
    missing = [metric for metric in check.needs if not record.has(metric)]
    if missing and (not check.any_of or len(missing) == len(check.needs)):
        listed = " or ".join(missing) if check.any_of else ", ".join(missing)
        why = "a run from an older version, or a recipe that does not log it"
        return f"metrics.jsonl has no {listed} ({why if record.config else 'no config.yaml says if it applies'})"
    logged = max(len(record.series(metric)) for metric in check.needs)
    if check.trend and logged < MIN_TREND_STEPS:
        return f"{logged} logged steps; comparing the end with the start needs {MIN_TREND_STEPS}"
    if check.groups and logged < level_steps(record):
        return (
            f"{logged} logged rollouts of {prompts_per_rollout(record)} groups (trainer.prompts_per_rollout); "
            f"a share of the groups is judged over {LEVEL_MIN_GROUPS}"
        )
    return None


def exit_code(verdicts: list[Verdict]) -> int:
    """1 when any run has findings; else 2 when any could not be read; else 0."""
    if any(v.findings for v in verdicts):
        return 1
    return 2 if any(v.unreadable for v in verdicts) else 0
