"""`trainer.doctor`: `rlrecipes doctor`'s checks during `rlrecipes train`, on the steps logged so far.

After each logged step the doctor's verdict is taken on the metrics rows in memory. Each class of
finding is reported once, the first time it shows: `warn` prints one line (class, evidence, fix),
appends it to RUN/doctor.log and adds {step, class, evidence, fix} to the summary's `doctor` list;
`stop` then ends the run as SIGTERM would (GracefulStop: a checkpoint at the rollout boundary, and
the resume command). A check whose trend needs more steps finds nothing until the run has them, and
a share of the groups (truncation, no-signal, tool-loop) waits for the rollouts that hold 16 groups.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from omegaconf import OmegaConf
from transformers import TrainerCallback

from rlrecipes.config.schema import DoctorMode
from rlrecipes.doctor.diagnose import diagnose_rows
from rlrecipes.doctor.findings import Finding
from rlrecipes.rundir import append_line, flatten_config

LOG_FILE = "doctor.log"


def live_doctor(job: Any, writer: Any, stop: Any) -> LiveDoctor | None:
    """The callback `job`'s trainer.doctor asks for (None when it is off)."""
    mode = DoctorMode(job.cfg.trainer.doctor)
    if mode == DoctorMode.off:
        return None
    config = flatten_config(OmegaConf.to_container(job.cfg, resolve=True, enum_to_str=True))
    return LiveDoctor(job.run_dir, config, writer, job.summary, job.log, stop if mode == DoctorMode.stop else None)


class LiveDoctor(TrainerCallback):
    """Reads `writer.rows` (the MetricsWriter, which the main process alone fills) after each log
    event; `stop` (GracefulStop) is asked to end the run at the first finding, None: warn only."""

    def __init__(
        self,
        run_dir: Path,
        config: dict[str, Any],
        writer: Any,
        summary: dict[str, Any],
        log: Callable[[str], None],
        stop: Any = None,
    ):
        self.run_dir, self.config, self.writer = run_dir, config, writer
        self.summary, self.log, self.stop = summary, log, stop
        self.reported: set[str] = set()  # the classes already said

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.writer is None or not state.is_world_process_zero or not self.writer.rows:
            return
        if logs and "train_runtime" in logs:  # the end-of-training summary, not a step
            return
        step = state.global_step
        try:
            findings = diagnose_rows(self.run_dir, self.writer.rows, self.config).findings
        except Exception as exc:  # a check that cannot read these rows must not end the training it watches
            self.log(f"doctor: step {step}: the live checks stopped ({type(exc).__name__}: {exc}); the run goes on")
            self.writer = None  # no more live checks in this run
            return
        for found in findings:
            if found.kind in self.reported:
                continue
            self.reported.add(found.kind)
            self._report(step, found)
            if self.stop is not None:
                self.stop.request(f"trainer.doctor=stop: {found.title} ({found.kind}) at step {step}, fix: {found.fix}")

    def _report(self, step: int, found: Finding) -> None:
        evidence = "; ".join(found.evidence)
        line = f"doctor: step {step}: {found.title} ({found.kind}): {evidence}; fix: {found.fix}"
        self.log(line)
        append_line(self.run_dir / LOG_FILE, line)
        entry = {"step": step, "class": found.kind, "evidence": evidence, "fix": found.fix}
        self.summary.setdefault("doctor", []).append(entry)
