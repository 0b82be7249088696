"""The pre-flight verdict: can this run learn at all, judged on its first rollout batch before any
update (`trainer.preflight`, `rlrecipes train --no-preflight` skips it).

`Probe` holds what the first batch showed; `judge` refuses only where the batch proves the run
cannot move: every advantage is zero (so the first update changes nothing, and the next batch is
drawn from the same policy) *and* a setting explains why — every completion cut at the token
limit, most completions empty (the model ends its turn at once: an instruct model prompted without
its chat template), or no completion holding an answer the grader can read. A flat batch without such a cause
may be chance (a hard dataset the model solves 2 % of) and is a warning; so is a batch that can
learn but shows a problem the doctor knows (most completions cut, most groups with one reward,
a rollout/trainer log-prob gap). Plain values in, plain values out: tested without a model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from rlrecipes.doctor import thresholds as T
from rlrecipes.grading.extract import extract


@dataclass(frozen=True)
class ProbeSettings:
    """The run's settings the verdict names in its fixes."""

    max_completion_length: int
    # the style an answer is read in (data.answer_style, or answer_line for a synthetic task graded
    # by its answer line); None: the task's own verifier reads it, so extractability is not judged
    answer_style: Optional[str]
    answer_graded: bool  # a reward with weight != 0 grades against the gold answer
    template: str  # data.template, named in the fix when no answer can be read
    # a multi-turn tool rollout: a completion also ends without an end token when its tool turns run
    # out, so a cut completion does not prove the token limit is too small (warned, never refused)
    multi_turn: bool = False


@dataclass(frozen=True)
class Probe:
    completions: int  # over every process
    truncated_share: float  # cut at max_completion_length (TRL's completions/clipped_ratio)
    reward_mean: float
    reward_std: float
    zero_std_groups: float  # groups whose completions all got one reward (TRL's frac_reward_zero_std)
    max_abs_advantage: float  # over every process, after every hook: 0 = the update changes nothing
    extractable_share: Optional[float] = None  # completions with an answer under the answer style
    logprob_gap: Optional[float] = None  # vllm/logprob_gap on this batch (vLLM rollouts only)
    empty_share: Optional[float] = None  # completions with no text but white space (None: not read)


RESULT_FILE = "preflight.json"  # RUN/preflight.json: the verdict on the first rollout, refusal or not

# The classes a refusal is counted as: the doctor's truncation, and unreadable answers (no check
# reads them from a run's metrics: a run that trains has readable answers in some batch).
REFUSAL_CLASSES = ("truncation", "format")


@dataclass
class PreflightVerdict:
    probe: Probe
    refusal: Optional[str] = None  # one line: why no update can move the policy, and the setting to change
    refused_as: Optional[str] = None  # the class of the refusal (REFUSAL_CLASSES)
    warnings: list[str] = field(default_factory=list)

    def summary_line(self) -> str:
        p = self.probe
        parts = [
            f"{p.completions} completions",
            f"{p.truncated_share:.0%} cut at the token limit",
            f"reward {p.reward_mean:.3g} ± {p.reward_std:.3g}",
            f"{p.zero_std_groups:.0%} of groups with one reward",
        ]
        if p.empty_share:
            parts.append(f"{p.empty_share:.0%} empty")
        if p.extractable_share is not None:
            parts.append(f"answers readable in {p.extractable_share:.0%}")
        if p.logprob_gap is not None:
            parts.append(f"rollout/trainer log-prob gap {p.logprob_gap:.3g}")
        state = "refused" if self.refusal else ("warnings" if self.warnings else "can learn")
        return f"pre-flight (first rollout, before any update): {', '.join(parts)}: {state}"

    def as_json(self) -> dict[str, Any]:
        return {"probe": asdict(self.probe), "refusal": self.refusal, "warnings": list(self.warnings)}


SKIP = "(or --no-preflight to train anyway)"


def judge(probe: Probe, settings: ProbeSettings) -> PreflightVerdict:
    verdict = PreflightVerdict(probe)
    limit = settings.max_completion_length
    no_signal = probe.max_abs_advantage <= T.PREFLIGHT_ADVANTAGE_ZERO
    cut = probe.truncated_share >= T.PREFLIGHT_ALL_TRUNCATED and not settings.multi_turn
    unreadable = settings.answer_graded and probe.extractable_share == 0.0
    empty = probe.empty_share is not None and probe.empty_share >= T.PREFLIGHT_EMPTY_MOST
    if no_signal and cut:
        verdict.refused_as = "truncation"
        verdict.refusal = (
            f"pre-flight: all {probe.completions} completions of the first rollout were cut at "
            f"trainer.max_completion_length={limit} and every advantage is 0, so no update can move the "
            f"policy; raise it, e.g. trainer.max_completion_length={2 * limit} {SKIP}"
        )
    elif no_signal and empty:
        # before unreadable answers: an empty completion holds none, and the template is the cause
        verdict.refused_as = "format"
        verdict.refusal = (
            f"pre-flight: {round(probe.empty_share * probe.completions)} of the first rollout's "
            f"{probe.completions} completions are empty (the model ended its turn at once), so each group's "
            f"completions scored alike and every advantage is 0; {_empty_fix(settings.template)} {SKIP}"
        )
    elif no_signal and unreadable:
        verdict.refused_as = "format"
        verdict.refusal = (
            f"pre-flight: none of the first rollout's {probe.completions} completions holds an answer the "
            f"grader reads (data.answer_style={settings.answer_style}), so every reward is "
            f"{probe.reward_mean:.3g} and every advantage 0; check data.template={settings.template} and "
            f"data.system_prompt ask for the answer in that form, or set data.answer_style {SKIP}"
        )
    if verdict.refusal:
        return verdict
    warn = verdict.warnings.append
    if no_signal:
        warn(
            f"every advantage of the first rollout is 0 (reward {probe.reward_mean:.3g} on all "
            f"{probe.completions} completions): the data may be too easy or too hard for this model, or the "
            "reward cannot vary; the live doctor watches the next steps"
        )
    elif probe.zero_std_groups >= T.ZERO_STD_GROUPS_MAX:
        warn(
            f"{probe.zero_std_groups:.0%} of the first rollout's groups gave every completion one reward: "
            "those groups teach nothing (data too easy or too hard for this model)"
        )
    if probe.truncated_share >= T.TRUNCATED_MAX:
        turns = " or ran out of tool turns (rollout.max_turns)" if settings.multi_turn else ""
        warn(
            f"{probe.truncated_share:.0%} of the first rollout's completions were cut at "
            f"trainer.max_completion_length={limit}{turns}: consider trainer.max_completion_length={2 * limit}"
        )
    if (
        settings.answer_graded
        and probe.extractable_share is not None
        and 0 < probe.extractable_share < T.PREFLIGHT_READABLE_MIN
    ):
        warn(
            f"only {probe.extractable_share:.0%} of the first rollout's completions hold an answer the grader "
            f"reads (data.answer_style={settings.answer_style}): check data.template={settings.template}"
        )
    if empty and not no_signal:
        warn(
            f"{probe.empty_share:.0%} of the first rollout's completions are empty (the model ended its turn at "
            f"once): {_empty_fix(settings.template)}"
        )
    if probe.logprob_gap is not None and probe.logprob_gap > T.LOGPROB_GAP_MAX:
        warn(
            f"rollout/trainer log-prob gap {probe.logprob_gap:.3g} on the first rollout (> {T.LOGPROB_GAP_MAX:g}): "
            "vLLM samples with other weights or numerics than the trainer's; see rollout.importance_sampling"
        )
    return verdict


def _empty_fix(template: str) -> str:
    if template == "plain":  # the one template that is no chat turn (data/templates.py)
        return "an instruct model answers in its chat turn: set data.template=chat"
    return f"check data.template={template}, data.system_prompt and the model's own chat template"


def empty_share(completions: list[str]) -> Optional[float]:
    """The share of `completions` with no text but white space (None: none logged)."""
    if not completions:
        return None
    return sum(not text.strip() for text in completions) / len(completions)


def readable_share(completions: list[str], style: Optional[str]) -> Optional[float]:
    """The share of `completions` with an answer `extract` finds under `style` (None: not judged)."""
    if style is None or not completions:
        return None
    return sum(extract(text, style).answer is not None for text in completions) / len(completions)
