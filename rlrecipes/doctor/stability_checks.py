"""Checks of whether the updates are sound: rollout/trainer mismatch, KL or clip-fraction
drift, NaN/inf and their precursors, and a tool loop that never calls or always fails."""

from __future__ import annotations

import bisect
import math
from typing import Any, Optional

from rlrecipes.doctor import thresholds as T
from rlrecipes.doctor.findings import (
    Check,
    Finding,
    excerpt,
    finding,
    latest_sample,
    level_window,
    quote,
    quote_sample,
)
from rlrecipes.doctor.fixes import halved_learning_rate, setting
from rlrecipes.doctor.reading import RunRecord
from rlrecipes.doctor.series import end, mean, median, num, share, span, start, start_vs_end, window_text


# --------------------------------------------------------------- rollout/trainer mismatch
def mismatch(record: RunRecord) -> Optional[Finding]:
    tests = [  # metric, the values that show a mismatch, in words
        ("vllm/logprob_gap", lambda v: v > T.LOGPROB_GAP_MAX, f"> {T.LOGPROB_GAP_MAX:g}"),
        ("vllm/is_ratio_p99", lambda v: v > T.IS_RATIO_P99_MAX, f"> {T.IS_RATIO_P99_MAX:g}"),
        ("vllm/is_ratio_p1", lambda v: v < T.IS_RATIO_P1_MIN, f"< {T.IS_RATIO_P1_MIN:g}"),
    ]
    evidence, shown = [], None
    for metric, bad, words in tests:
        points = record.series(metric)
        if points and share(points, bad) >= T.MISMATCH_STEP_SHARE:
            hits = [p for p in points if bad(p[1])]
            evidence.append(
                f"{metric} {words} on {len(hits)} of {len(points)} logged rounds ({span(hits)}), "
                f"median {num(median([v for _, v in points]))}"
            )
            shown = shown or (metric, hits)
    if shown is None:
        return stale_engine(record)
    if not record.setting("rollout.importance_sampling.enabled"):
        changes: dict[str, Any] = {"rollout.importance_sampling.enabled": True}
        advice = "weigh each token by pi_trainer / pi_vLLM, clipped"
    else:
        changes, advice = {"rollout.backend": "hf"}, "the correction is on and the gap stays: rule vLLM out"
    return finding(
        record,
        shown[0],
        shown[1],
        changes,
        advice=advice,
        evidence=evidence,
        cause="vLLM samples from another distribution than the trainer computes (a failed weight "
        "sync, or bfloat16 against float32): every update is off-policy",
    )


def stale_engine(record: RunRecord) -> Optional[Finding]:
    """A gap below every fixed limit that grows with training, against its first rounds
    (thresholds.LOGPROB_GAP_RISING_*, LOGPROB_GAP_BASELINE_ROUNDS): the
    engine keeps sampling from weights the trainer has left, which importance weights would only hide."""
    gap = record.series("vllm/logprob_gap")
    if len(gap) < T.MIN_TREND_STEPS:
        return None
    baseline = start(gap)[: T.LOGPROB_GAP_BASELINE_ROUNDS]
    first, last = mean(baseline), mean(end(gap))
    if last < T.LOGPROB_GAP_RISING_MIN or last < T.LOGPROB_GAP_RISING_FACTOR * first:
        return None
    return finding(
        record,
        "vllm/logprob_gap",
        end(gap),
        {"rollout.backend": "hf"},
        advice="until the engine gets the trainer's weights: transformers rollouts",
        evidence=[f"{start_vs_end('vllm/logprob_gap', gap, first=baseline)}: it grows as the trainer moves on"],
        cause="vLLM samples from weights the trainer has left behind (a weight sync skipped, failed or "
        "not reaching the engine): every update is more off-policy than the last",
    )


# ------------------------------------------------------------------- KL and clip fraction
def drift(record: RunRecord) -> Optional[Finding]:
    evidence, shown = [], None
    token_ratios = record.setting("recipe.importance_sampling_level") in (None, "token")
    for metric, limit in (("kl", T.KL_HIGH), ("clip_ratio_region", T.CLIP_FRACTION_MAX)):
        if metric == "clip_ratio_region" and not token_ratios:
            continue  # a sequence-level ratio clips most sequences by design (thresholds.CLIP_FRACTION_MAX)
        points = record.series(metric)
        if len(points) < T.MIN_TREND_STEPS:
            continue
        before, after = mean(start(points)), mean(end(points))
        if after > limit and after > before:
            evidence.append(f"{start_vs_end(metric, points)}, above {limit:g}")
            shown = shown or (metric, end(points))
    if shown is None:
        return None
    changes = halved_learning_rate(record)
    beta = setting(record, "recipe.beta", float)
    advice = f"or a stronger KL penalty, recipe.beta={2 * beta:g}" if shown[0] == "kl" and beta else None
    return finding(
        record,
        shown[0],
        shown[1],
        changes,
        advice=advice,
        evidence=evidence,
        cause="each update moves the policy further than the last: it drifts from its reference "
        "and its own rollouts, the step before instability",
    )


# ------------------------------------------------------------------------------ step size
def step_size(record: RunRecord) -> Optional[Finding]:
    """Steps that move the policy (policy_shift, nats a token) by more than thresholds.
    POLICY_SHIFT_MAX_SHARE of its own entropy (and by thresholds.POLICY_SHIFT_MIN_NATS at least)
    at the highest learning rate the schedule has ahead, predicted from the steps so far: a
    warm-up to too high a rate is found while the rate is still low, before the reward collapses."""
    rates, entropies = dict(record.series("learning_rate")), dict(record.series("entropy"))
    points = [
        (step, shift, rates[step], entropies[step])
        for step, shift in record.series("policy_shift")
        if _usable_rate(rates.get(step, 0)) and entropies.get(step, 0) > 0
    ]
    # one step past the bar is found at that step, unless a window found it earlier
    broken = next(((s, shift, lr, e) for s, shift, lr, e in points if broke_policy(shift)), None)
    base = setting(record, "trainer.learning_rate", float)
    base = base if base is not None and _usable_rate(base) else None
    for i in range(T.POLICY_SHIFT_WINDOW - 1, len(points)):
        window = points[i + 1 - T.POLICY_SHIFT_WINDOW : i + 1]
        step, _, rate, _ = window[-1]
        if broken is not None and step >= broken[0]:
            break
        rising = i > 0 and rate > points[i - 1][2]
        ahead = max(rate, base) if rising and base else rate  # a warm-up still rising goes to trainer.learning_rate
        predicted = median([shift / lr**2 for _, shift, lr, _ in window]) * ahead**2
        entropy = median([e for _, _, _, e in window])
        share = predicted / entropy
        if share < T.POLICY_SHIFT_MAX_SHARE or predicted < T.POLICY_SHIFT_MIN_NATS:
            continue
        shifts = [(s, shift) for s, shift, _, _ in window]
        evidence = [
            f"policy_shift {num(median([v for _, v in shifts]))} nats a token (median of {span(shifts)}) at "
            f"learning_rate {rate:g}, the policy's entropy {num(entropy)}"
        ]
        if ahead > rate:
            evidence.append(
                f"the warm-up rises to {ahead:g}, where such steps would move ~{num(predicted)} "
                "(a step's KL grows with the square of its rate)"
            )
        evidence[-1] += f": {num(share)} of its entropy a step, above {T.POLICY_SHIFT_MAX_SHARE:g}"
        lower = _rate_for_share(ahead, share)
        return finding(
            record,
            "policy_shift",
            shifts,
            {"trainer.learning_rate": _one_digit_below(lower) if _usable_rate(lower) else rate / 10},
            evidence=evidence,
            cause="each optimiser step moves the policy by a large share of its own uncertainty: the learning "
            "rate (or the warm-up's target) is too high for this model, and the reward collapses or the "
            "text garbles once the rate gets there",
        )
    return _broken_step(record, *broken) if broken is not None else None


def _usable_rate(rate: float) -> bool:
    """A learning rate the square law can use: positive, with a finite, non-zero square (a log's
    1e-320 or 1e308 is none; the rates training uses lie far inside)."""
    return rate > 0 and 0 < rate * rate < math.inf


def broke_policy(shift: float) -> bool:
    """One update moved the policy (policy_shift, nats a token) past thresholds.
    POLICY_SHIFT_BROKEN_NATS: a broken step, found at once, whose later symptoms are its own
    (learning_checks)."""
    return shift >= T.POLICY_SHIFT_BROKEN_NATS


def _broken_step(record: RunRecord, step: int, shift: float, rate: float, entropy: float) -> Finding:
    """One step past thresholds.POLICY_SHIFT_BROKEN_NATS: found at once. Its fix is the rate whose
    step would move a quarter of POLICY_SHIFT_MAX_SHARE of the entropy by the square law, an upper
    bound: so large a step's KL grows slower than the square of its rate."""
    share = shift / entropy
    lower = _rate_for_share(rate, share) if share > T.POLICY_SHIFT_MAX_SHARE else rate / 2
    return finding(
        record,
        "policy_shift",
        [(step, shift)],
        {"trainer.learning_rate": _one_digit_below(lower) if _usable_rate(lower) else rate / 10},
        advice="at most: a step this large grows slower than the square of its rate",
        evidence=[
            f"policy_shift {num(shift)} nats a token at step {step} (learning_rate {rate:g}, the policy's entropy "
            f"{num(entropy)}): past {T.POLICY_SHIFT_BROKEN_NATS:g}, one step made the tokens it sampled e times "
            "less likely on average"
        ],
        cause="one optimiser step moved the policy further than any healthy step does: the learning rate is "
        "far too high for this model, and the next steps collapse or garble it",
    )


def _rate_for_share(rate: float, share: float) -> float:
    """The rate whose steps would move a quarter of POLICY_SHIFT_MAX_SHARE of the entropy, where
    `rate`'s move `share` of it: half the rate scaled by the square law (a step's KL ∝ rate²)."""
    return rate * 0.5 * math.sqrt(T.POLICY_SHIFT_MAX_SHARE / share)


def _one_digit_below(value: float) -> float:
    """`value` rounded down to one significant digit (1.37e-3 -> 1e-3): a rate a user would type."""
    exponent = math.floor(math.log10(value))
    digit = int(value / 10**exponent)
    if digit == 0:  # log10 rounded up just below a power of ten (9.99...e-5 -> exponent -4)
        exponent -= 1
        digit = int(value / 10**exponent)
    return float(f"{digit}e{exponent}")


# ---------------------------------------------------------------- NaN/inf and precursors
# the metrics a NaN or infinity is looked for in; any one of them logged makes the check possible
WATCHED_FINITE = ("loss", "grad_norm", "reward_mean", "entropy", "kl")


def numeric(record: RunRecord) -> Optional[Finding]:
    evidence, shown, first = [], None, {}
    for metric in WATCHED_FINITE:
        bad = [(step, v) for step, v in record.raw(metric) if not math.isfinite(v)]
        if bad:
            first[metric] = bad[0][0]
            evidence.append(f"{metric} {bad[0][1]} at step {bad[0][0]} ({len(bad)} non-finite steps, {span(bad)})")
            shown = shown or (metric, bad)
    spikes = grad_spikes(record.series("grad_norm"))
    clip = setting(record, "trainer.max_grad_norm", float)  # None: TRL's default, 1
    outlier = reward_outlier(record, spikes[0][0]) if spikes else None
    if len(spikes) < T.GRAD_SPIKES_CLIPPED_MIN and clip != 0 and outlier is None:
        spikes = []  # one spike the clip bounded, with a calm reward (thresholds.GRAD_SPIKES_CLIPPED_MIN)
    if spikes:
        step, value, typical = spikes[0]
        evidence.append(
            f"grad_norm {num(value)} at step {step}, {value / typical:.0f}x the median {num(typical)} "
            f"of the steps before ({len(spikes)} such spikes)"
        )
        shown = shown or ("grad_norm", [(s, v) for s, v, _ in spikes])
    ratios = [p for p in record.series("vllm/is_ratio_max") if p[1] > T.IS_RATIO_EXPLODE]
    if ratios:
        evidence.append(f"vllm/is_ratio_max above {T.IS_RATIO_EXPLODE:g} on {len(ratios)} rounds ({span(ratios)})")
        shown = shown or ("vllm/is_ratio_max", ratios)
    if shown is None:
        return None
    if shown[0] == "reward_mean" and first["reward_mean"] == min(first.values()) and not spikes and not ratios:
        # the reward broke first, and loss and gradients stayed finite: the reward function returned
        # it (a division by zero, a parsed "nan"), not an update too large
        return finding(
            record,
            *shown,
            {},
            advice=f"read what the reward returned (rlrecipes show {record.path}) and make it return a finite number",
            evidence=evidence,
            cause="a reward function returned NaN or an infinity while the loss and gradients stayed finite",
        )
    if outlier is not None:
        evidence.append(outlier)
        scale = record.setting("recipe.scale_rewards")
        changes: dict[str, Any] = {"recipe.scale_rewards": "group"} if scale in ("none", False) else {}
        return finding(
            record,
            shown[0],
            shown[1],
            changes,
            advice=f"and read what the reward returned (rlrecipes show {record.path})",
            evidence=evidence,
            cause="a reward far outside its usual range (a unit or parsing bug, a raw score) scales "
            "its completion's advantage and the gradient with it",
        )
    changes = {"trainer.max_grad_norm": 1.0} if clip == 0 else halved_learning_rate(record)
    return finding(
        record,
        shown[0],
        shown[1],
        changes,
        evidence=evidence,
        cause="non-finite values, or the jumps that come before them: an update too large for the "
        "model (learning rate, unclipped gradients, a huge importance weight)",
    )


def reward_outlier(record: RunRecord, step: int) -> Optional[str]:
    """Evidence that the gradient spike at `step` came with the reward's spread jumping as far
    (GRAD_SPIKE_FACTOR times its median over the steps before), or None."""
    points = record.series("reward_std")
    before = [v for s, v in points if s < step]
    now = [v for s, v in points if s == step]
    if len(before) < T.GRAD_HISTORY_MIN or not now:
        return None
    typical = median(before)
    if typical <= 0 or now[0] <= T.GRAD_SPIKE_FACTOR * typical:
        return None
    return f"reward_std {num(now[0])} at step {step}, {now[0] / typical:.0f}x the median {num(typical)} before"


def grad_spikes(points: list) -> list[tuple[int, float, float]]:
    """(step, grad_norm, median of the steps before) where it exceeds GRAD_SPIKE_FACTOR times
    that median, once GRAD_HISTORY_MIN steps give one."""
    spikes = []
    before = sorted(v for _, v in points[: T.GRAD_HISTORY_MIN])  # kept sorted: the live doctor runs this every step
    for step, value in points[T.GRAD_HISTORY_MIN :]:
        half = len(before) // 2
        typical = before[half] if len(before) % 2 else (before[half - 1] + before[half]) / 2
        if typical > 0 and value > T.GRAD_SPIKE_FACTOR * typical:
            spikes.append((step, value, typical))
        bisect.insort(before, value)
    return spikes


# ------------------------------------------------------------------------------- tool loop
def tool_loop(record: RunRecord) -> Optional[Finding]:
    calls = level_window(record, record.series("tools/calls_per_rollout"))
    errors = [p for p in level_window(record, record.series("tools/error_rate")) if p[0] >= calls[0][0]]
    invalid = [p for p in level_window(record, record.series("tools/invalid_action_rate")) if p[0] >= calls[0][0]]
    if mean(calls) < T.TOOL_CALLS_MIN:
        evidence = [window_text("tools/calls_per_rollout", calls)]
        if invalid:
            evidence.append(window_text("tools/invalid_action_rate", invalid))
        return finding(
            record,
            "tools/calls_per_rollout",
            calls,
            {},
            advice="show the model the tools' tags (data.system_prompt, data.template) or warm-start "
            "it on tool use, as recipe=tir and recipe=search_r1 do for the toy",
            evidence=evidence,
            cause="the model writes no tool call: it does not know the tools' tags, or never learned to use them",
            sample=quote_sample(record, lambda row: True, lambda row: f"completion {excerpt(row['completion'])}"),
        )
    failing = [(name, pts) for name, pts in (("error_rate", errors), ("invalid_action_rate", invalid)) if pts]
    failing = [(name, pts) for name, pts in failing if mean(pts) >= T.TOOL_FAILURE_MAX]
    if not failing:
        return None
    name, points = failing[0]
    row = latest_sample(record, lambda row: bool(_tool_reply(row)))
    reply = _tool_reply(row) if row else ""
    timeout = setting(record, "rollout.tool_timeout_s", float)
    if "timed out" in reply and timeout:  # the reply call_tool gives a call past its time
        changes: dict[str, Any] = {"rollout.tool_timeout_s": 2 * timeout}
        advice = None
    else:
        changes = {}
        shown = f"rlrecipes show {record.path}" + (f" --step {row['step']}" if row else "")
        advice = f"read the tools' replies ({shown}); the python tool: rlrecipes sandbox check"
    return finding(
        record,
        f"tools/{name}",
        points,
        changes,
        advice=advice,
        evidence=[window_text(f"tools/{name}", points), window_text("tools/calls_per_rollout", calls)],
        cause="nearly every tool call fails"
        if name == "error_rate"
        else "nearly every tool turn is malformed (neither a whole call nor an answer: cut short, "
        "or a tag the loop does not know)",
        sample=quote(row, f"the tool replied {excerpt(reply)}") if row else None,
    )


def _tool_reply(row: dict[str, Any]) -> str:
    """The text of the row's first tool turn ('' when it has none)."""
    turns = row.get("turns") if isinstance(row.get("turns"), list) else []
    return next((str(t.get("text", "")) for t in turns if isinstance(t, dict) and t.get("by") == "tool"), "")


def _vllm(record: RunRecord) -> Optional[str]:
    backend = record.setting("rollout.backend")
    return None if backend in (None, "vllm") else f"rollout.backend={backend}: no vLLM rollouts"


def _tools(record: RunRecord) -> Optional[str]:
    listed = setting(record, "rollout.tools", list)
    if listed or record.keys_like("tools/") or "rollout.tools" not in record.config:
        return None
    return "rollout.tools is empty: no tool loop"


CHECKS = [
    Check(
        "rollout-mismatch",
        "rollout/trainer mismatch",
        mismatch,
        ("vllm/logprob_gap", "vllm/is_ratio_p99"),
        any_of=True,
        applies=_vllm,
    ),
    Check("drift", "KL or clip-fraction drift", drift, ("kl", "clip_ratio_region"), any_of=True, trend=True),
    Check(
        "numeric",
        "NaN/inf or their precursors",
        numeric,
        WATCHED_FINITE,
        any_of=True,
    ),
    Check("step-size", "updates too large for the policy", step_size, ("policy_shift", "learning_rate", "entropy")),
    Check(
        "tool-loop",
        "tool loop never calls or always fails",
        tool_loop,
        ("tools/calls_per_rollout",),
        groups=True,
        applies=_tools,
    ),
]
