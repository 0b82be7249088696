"""`trainer.preflight`: the doctor's pre-flight verdict (`rlrecipes.doctor.preflight`) on the
run's first rollout batch, taken after every hook has scored it and before the first update.

The probe is the first rollout itself, not an extra one: it costs no generation, calls no reward
twice (a stateful reward sees the calls it would see anyway) and draws nothing from the random
streams, so a run with the pre-flight trains exactly as one without it. Every value it judges is
over all processes (TRL's gathered metrics and completion log, the advantages gathered here), so
every rank reaches one verdict and a refusal ends them together. A resumed run past step 0 has
passed it already.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from rlrecipes.doctor.preflight import RESULT_FILE, Probe, ProbeSettings, empty_share, judge, readable_share
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError
from rlrecipes.rundir import write_json


class PreflightRefused(UserError):
    """The first rollout shows the run cannot learn; the message names the setting to change and
    `refused_as` the doctor's class of the cause."""

    def __init__(self, message: str, refused_as: Optional[str] = None):
        super().__init__(message)
        self.refused_as = refused_as


class Preflight(EngineHook):
    def __init__(self, settings: ProbeSettings, run_dir: Path, log: Callable[[str], None], summary: dict[str, Any]):
        self.settings, self.run_dir, self.log, self.summary = settings, run_dir, log, summary
        self.done = False

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        if self.done or not trainer.model.training:
            return batch
        self.done = True
        if trainer.state.global_step > 0:  # resumed past the first update
            return batch
        verdict = judge(read_probe(trainer, batch, self.settings.answer_style), self.settings)
        if trainer.accelerator.is_main_process:
            self.log(verdict.summary_line())
            for warning in verdict.warnings:
                self.log(f"pre-flight: {warning}")
            self.summary["preflight"] = verdict.as_json()
            write_json(self.run_dir / RESULT_FILE, verdict.as_json())
        if verdict.refusal:
            raise PreflightRefused(verdict.refusal, verdict.refused_as)
        return batch


def read_probe(trainer: Any, batch: dict[str, Any], answer_style: Optional[str]) -> Probe:
    """What the first scored batch shows, over every process."""
    metrics = trainer._metrics["train"]  # TRL's values for this round, gathered over processes

    def latest(name: str, default: float = float("nan")) -> float:
        values = metrics.get(name)
        return float(values[-1]) if values else default

    advantages = batch["advantages"]
    per_row = advantages.abs().reshape(advantages.size(0), -1).amax(dim=1)  # (B,) or per token (B, T)
    gathered = trainer.accelerator.gather(per_row)
    count = int(gathered.numel())
    logged = list(trainer._logs["completion"])[-count:]  # TRL logs every process's completions
    texts = [completion_text(c) for c in logged]
    gap = latest("vllm/logprob_gap")
    return Probe(
        completions=count,
        truncated_share=latest("completions/clipped_ratio", 0.0),
        reward_mean=latest("reward"),
        reward_std=latest("reward_std"),
        zero_std_groups=latest("frac_reward_zero_std", 0.0),
        max_abs_advantage=float(gathered.max()) if count else 0.0,
        extractable_share=readable_share(texts, answer_style),
        logprob_gap=None if gap != gap else gap,  # NaN: no vLLM rollout
        empty_share=empty_share(texts),
    )


def completion_text(completion: Any) -> str:
    """A logged completion as text: a string, or a conversation's messages (their content joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "\n".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)
