"""What a check reports (a `Finding`, or why it could not look: `NotChecked`), what a check
is, and the quoting of a stored sample as evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from rlrecipes.config.schema import TrainerConfig
from rlrecipes.doctor.fixes import command_line, setting, value_text
from rlrecipes.doctor.reading import Point, RunRecord
from rlrecipes.doctor.series import end
from rlrecipes.doctor.thresholds import LEVEL_MIN_GROUPS

QUOTE_CHARS = 90  # a quoted completion's excerpt: most of one 80-column line


@dataclass
class Finding:
    metric: str  # the metric that shows it
    steps: tuple[int, int]  # the logged steps it shows on
    evidence: list[str]  # metric values with their steps, one line each
    cause: str
    fix: str  # the setting to change (key=value ...), or what to do where no setting is known
    command: Optional[str] = None  # the run's own command line with the fix in it
    sample: Optional[str] = None  # a stored sample that shows the cause
    kind: str = ""  # the class, e.g. "truncation" (its Check's, set when the check has run)
    title: str = ""  # e.g. "truncation near 1"

    def as_json(self) -> dict[str, Any]:
        return {
            "class": self.kind,
            "title": self.title,
            "metric": self.metric,
            "steps": list(self.steps),
            "evidence": self.evidence,
            "cause": self.cause,
            "fix": self.fix,
            "command": self.command,
            "sample": self.sample,
        }


def finding(
    record: RunRecord,
    metric: str,
    points: Sequence[Point],
    changes: dict[str, Any],
    advice: Optional[str] = None,
    **parts: Any,
) -> Finding:
    """A Finding on `points` (the steps it shows on) whose fix is `changes`, set on the run's
    own command line, and/or the `advice` where no setting says it all."""
    fix = " ".join(f"{key}={value_text(v)}" for key, v in changes.items())
    fix = f"{fix} ({advice})" if fix and advice else fix or advice or ""
    command = command_line(record, changes) if changes else None
    return Finding(metric, (points[0][0], points[-1][0]), fix=fix, command=command, **parts)


@dataclass
class NotChecked:
    kind: str
    title: str
    reason: str


@dataclass
class Check:
    """One class of failure. `applies` says why the run's settings rule it out (None: they do
    not); `needs` are metrics it reads, every one (`any_of`: at least one), whose absence from
    a run it applies to means the run predates them; `trend` checks compare the end of the run
    with its start and need MIN_TREND_STEPS logged steps; `groups` checks judge a share of the
    rollouts' groups or completions over at least LEVEL_MIN_GROUPS groups (`level_window`)."""

    kind: str
    title: str
    find: Callable[[RunRecord], Optional[Finding]]
    needs: tuple[str, ...]
    any_of: bool = False
    trend: bool = False
    groups: bool = False
    applies: Callable[[RunRecord], Optional[str]] = lambda record: None
    superseded_by: tuple[str, ...] = field(default=())  # classes whose finding explains this one's
    # classes whose finding explains this one's on this run (e.g. truncation that the run's first,
    # untrained rollout did not have is a symptom of the policy degenerating)
    symptom_of: Callable[[RunRecord], tuple[str, ...]] = lambda record: ()


def prompts_per_rollout(record: RunRecord) -> int:
    """The groups one rollout holds: the run's trainer.prompts_per_rollout (a config without it: the default)."""
    prompts = setting(record, "trainer.prompts_per_rollout", int)
    return prompts if prompts is not None and prompts > 0 else TrainerConfig.prompts_per_rollout


def level_steps(record: RunRecord) -> int:
    """The logged rollouts that hold LEVEL_MIN_GROUPS groups (rounded up)."""
    return -(-LEVEL_MIN_GROUPS // prompts_per_rollout(record))


def level_window(record: RunRecord, points: Sequence[Point]) -> list[Point]:
    """A `groups` check's end window: the end's fifth, or the last rollouts holding LEVEL_MIN_GROUPS
    groups where that is longer (diagnose judges none before the run has logged them)."""
    return end(points, at_least=level_steps(record))


Row = dict[str, Any]


def latest_sample(record: RunRecord, matches: Callable[[Row], bool]) -> Optional[Row]:
    """The latest stored sample that `matches` (None when the run stores none)."""
    for found in reversed(record.samples()):
        for row in found.rows:
            if matches(row):
                return {"step": found.step, **row}
    return None


def quote_sample(record: RunRecord, matches: Callable[[Row], bool], describe: Callable[[Row], str]) -> Optional[str]:
    """`step N, group G: <describe(row)>` for the latest stored sample that `matches`."""
    row = latest_sample(record, matches)
    return None if row is None else quote(row, describe(row))


def quote(row: Row, what: str) -> str:
    return f"step {row['step']}, group {row.get('group', '?')}: {what}"


def excerpt(text: str, tail: bool = False, chars: int = QUOTE_CHARS) -> str:
    """`text` on one line, quoted, cut to `chars` at its start (or its end: `tail`)."""
    flat = " ".join(str(text).split())
    if len(flat) > chars:
        flat = "..." + flat[-chars:] if tail else flat[:chars] + "..."
    return f'"{flat}"'
