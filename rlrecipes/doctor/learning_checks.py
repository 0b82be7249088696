"""Checks of whether a run can learn and learns the task: truncation, entropy collapse and
blow-up, no learning signal, a reward that does not vary, and a reward that rises while
held-out accuracy does not."""

from __future__ import annotations

from typing import Any, Callable, Optional

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
from rlrecipes.doctor.fixes import dapo_epsilon_high, halved_learning_rate, setting
from rlrecipes.doctor.reading import RunRecord
from rlrecipes.doctor.series import (
    Point,
    end,
    longest_streak,
    mean,
    middle,
    num,
    span,
    start,
    start_vs_end,
    window_text,
    within,
)
from rlrecipes.doctor.stability_checks import broke_policy


# ------------------------------------------------------------------------------ truncation
def truncation(record: RunRecord) -> Optional[Finding]:
    metric = "truncated_fraction"
    points = record.series(metric)
    tail = level_window(record, points)
    if mean(tail) <= T.TRUNCATED_MAX:
        return None
    limit = setting(record, "trainer.max_completion_length", int)
    evidence = [start_vs_end(metric, points, tail) if len(points) > len(tail) else window_text(metric, tail)]
    shown = f"trainer.max_completion_length={limit}" if limit else "trainer.max_completion_length"
    return finding(
        record,
        metric,
        tail,
        {"trainer.max_completion_length": 2 * limit if limit else "<twice yours>"},
        evidence=evidence,
        cause=f"most completions hit {shown} before they end: their answers are cut, so the reward "
        "measures the limit, not the model",
        sample=quote_sample(
            record,
            lambda row: row.get("truncated") is True,
            lambda row: f"cut at {row.get('length', '?')} tokens: {excerpt(row['completion'], tail=True)}",
        ),
    )


# -------------------------------------------------------------------------------- entropy
def entropy_collapse(record: RunRecord) -> Optional[Finding]:
    entropy, accuracy = record.series("entropy"), record.series("accuracy")
    # the start's highest: a collapse within the first window (one large update) is not averaged away
    before, after = max(v for _, v in start(entropy)), mean(end(entropy))
    if not (before > 0 and after < T.ENTROPY_COLLAPSE_SHARE * before):
        return None
    acc_start, acc_mid, acc_end = mean(start(accuracy)), mean(middle(accuracy)), mean(end(accuracy))
    if acc_end >= T.SOLVED_ACCURACY or acc_end - acc_mid >= T.ACCURACY_STALL_GAIN:
        return None  # still learning, or solved: a confident policy, not a collapsed one
    shown = middle(accuracy)
    high, dapo_high = setting(record, "recipe.epsilon_high", float), dapo_epsilon_high()
    if acc_end < acc_start:  # worse than the untrained policy: the updates broke it, not slow sharpening
        shown = start(accuracy)
        changes: dict[str, Any] = halved_learning_rate(record)
        advice = "updates too large: the policy fell into one completion"
        cause = "the policy samples nearly one completion per prompt, and answers worse than before training"
    else:
        cause = (
            "the policy samples nearly one completion per prompt: groups stop differing and "
            "training accuracy has stopped rising"
        )
        if high is None or high < dapo_high:
            changes = {"recipe.epsilon_high": dapo_high}
            advice = "clip-higher: low-probability tokens may grow, as in DAPO"
        elif not record.setting("recipe.adaptive_entropy.enabled"):
            changes, advice = {"recipe.adaptive_entropy.enabled": True}, "an entropy bonus that holds a target"
        else:
            changes, advice = halved_learning_rate(record), "smaller steps spend entropy slower"
    return finding(
        record,
        "entropy",
        end(entropy),
        changes,
        advice=advice,
        evidence=[
            f"entropy {num(before)} (the highest of {span(start(entropy))}) -> {num(after)} ({span(end(entropy))})",
            f"accuracy {num(mean(shown))} ({span(shown)}) -> {num(acc_end)} ({span(end(accuracy))})",
        ],
        cause=cause,
    )


def entropy_blowup(record: RunRecord) -> Optional[Finding]:
    entropy = record.series("entropy")
    # against the start's lowest (a blow-up within the first window is not averaged away), and above
    # all of the start (a policy that collapsed from there and came back up a little did not blow up)
    first = [v for _, v in start(entropy)]
    before, after = min(first), mean(end(entropy))
    bonus = setting(record, "recipe.entropy_coef", float)
    if before > 0 and after > T.ENTROPY_BLOWUP_FACTOR * before and after > max(first):
        window = end(entropy)
        evidence = [
            f"entropy {num(before)} (the lowest of {span(start(entropy))}) -> {num(after)} ({span(window)}), "
            f"{after / before:.1f}x"
        ]
        symptom = "sampling spreads over many tokens at each position and the text garbles"
    elif (
        bonus
        and bonus > 0
        # an adaptive bonus's coefficient is only its start: it raises the entropy to its target on purpose
        and not record.setting("recipe.adaptive_entropy.enabled")
        and (rise := _bonus_outgrowing_reward(record, entropy))
    ):
        window, evidence = rise
        symptom = "the entropy rises while the reward does not, and a fixed bonus lets it run on until the text garbles"
    else:
        return None
    if bonus:
        changes: dict[str, Any] = {"recipe.entropy_coef": 0.0}
        cause = f"the entropy bonus (recipe.entropy_coef={bonus:g}) outweighs the reward"
    else:
        changes, cause = halved_learning_rate(record), "updates too large for the policy (the learning rate)"
    return finding(
        record,
        "entropy",
        window,
        changes,
        evidence=evidence,
        cause=f"{symptom}: {cause}",
        sample=quote_sample(record, lambda row: True, lambda row: f"completion {excerpt(row['completion'])}"),
    )


def _bonus_outgrowing_reward(record: RunRecord, entropy: list[Point]) -> Optional[tuple[list[Point], list[str]]]:
    """(the window, the evidence) where, under an entropy bonus, the mean entropy of the last
    thresholds.ENTROPY_BONUS_RISE_STEPS logged steps has passed ENTROPY_BONUS_RISE_FACTOR times the
    first's, while the reward has not risen and the task is not solved: the bonus is winning before
    the entropy triples. None otherwise, and before 20 logged reward steps (its two windows apart)."""
    n = T.ENTROPY_BONUS_RISE_STEPS
    reward = record.series("reward_mean")
    if len(reward) < 4 * n:
        return None
    first, last = entropy[:n], entropy[-n:]
    if not (mean(first) > 0 and mean(last) > T.ENTROPY_BONUS_RISE_FACTOR * mean(first)):
        return None
    reward_first, reward_last = reward[: 2 * n], reward[-2 * n :]
    if mean(reward_last) > mean(reward_first):
        return None
    solved = within(record.series("accuracy"), reward_last)
    if solved and mean(solved) >= T.SOLVED_ACCURACY:
        return None
    return last, [
        f"{start_vs_end('entropy', entropy, last, first)}, {mean(last) / mean(first):.1f}x",
        f"{start_vs_end('reward_mean', reward, reward_last, reward_first)}: no higher",
    ]


# ------------------------------------------------------------------------ learning signal
def no_signal(record: RunRecord) -> Optional[Finding]:
    points = record.series("frac_groups_zero_std")
    tail = level_window(record, points)
    if mean(tail) < T.ZERO_STD_GROUPS_MAX:
        return None
    accuracy = within(record.series("accuracy"), tail)
    evidence = [window_text("frac_groups_zero_std", tail)]
    if not accuracy:
        return finding(
            record,
            "frac_groups_zero_std",
            tail,
            {},
            advice=f"see whether the groups all pass or all fail in a stored sample (rlrecipes show {record.path})",
            evidence=evidence,
            cause="nine groups in ten score every completion alike: zero advantage, little to learn "
            "from (no accuracy is logged to say whether they pass or fail)",
        )
    level = mean(accuracy)
    evidence.append(window_text("accuracy", accuracy))
    if level >= T.SOLVED_SIDE:
        if record.setting("recipe.dynamic_sampling.enabled"):
            changes: dict[str, Any] = {}
            advice = "harder training data: this run's problems are learned (data.path=...)"
        else:
            changes, advice = {"recipe.dynamic_sampling.enabled": True}, "drop solved groups, refill with open ones"
        return finding(
            record,
            "frac_groups_zero_std",
            tail,
            changes,
            advice=advice,
            evidence=evidence,
            cause="the groups are solved: every completion of nine prompts in ten is right, so their advantages are 0",
        )
    group = setting(record, "trainer.num_generations", int)
    return finding(
        record,
        "frac_groups_zero_std",
        tail,
        {"trainer.num_generations": 2 * group if group else "<twice yours>"},
        advice="more tries per prompt find a right one to learn from",
        evidence=evidence,
        cause="the groups all fail: every completion of nine prompts in ten is wrong, so there is "
        "no right one to reinforce (too hard, or answers the grader cannot read)",
        sample=quote_sample(record, _unrewarded, _graded),
    )


def _unrewarded(row: dict[str, Any]) -> bool:
    rewards = row.get("rewards") if isinstance(row.get("rewards"), dict) else {}
    scores = [v for v in rewards.values() if isinstance(v, (int, float))]
    return bool(scores) and max(scores) <= 0


def _graded(row: dict[str, Any]) -> str:
    return f"completion {excerpt(row['completion'], tail=True, chars=60)}, answer {row.get('answer')!r}"


def reward_flat(record: RunRecord) -> Optional[Finding]:
    points = record.series("reward_std")
    streak = longest_streak(points, lambda v: v <= T.REWARD_STD_FLAT)
    if len(streak) < T.FLAT_REWARD_STEPS:
        return None
    rewards = within(record.series("reward_mean"), streak)
    solved = within(record.series("accuracy"), streak)
    if solved and mean(solved) >= T.SOLVED_ACCURACY:
        return None  # every completion right: the data is solved, no-signal says so
    evidence = [f"reward_std <= {T.REWARD_STD_FLAT:g} on {len(streak)} consecutive logged steps ({span(streak)})"]
    if rewards:
        evidence.append(window_text("reward_mean", rewards))
    row = latest_sample(record, lambda row: True)
    earlier = [p for p in record.series("reward_mean") if p[0] < streak[0][0]]
    if earlier and rewards and mean(rewards) < mean(earlier) and _flat_by_training(record):
        # the reward told the first rollout's completions apart and they have since fallen to one
        # (lower) reward: the updates broke the policy, the reward is not at fault
        evidence.append(f"reward_mean {num(mean(earlier))} before ({span(earlier)})")
        return finding(
            record,
            "reward_std",
            streak,
            halved_learning_rate(record),
            advice="updates too large: the policy lost what it could do",
            evidence=evidence,
            cause="every completion now gets the same, lower reward, though the reward told them apart "
            "at first: the policy degraded, not the reward",
            sample=quote(row, _graded(row)) if row else None,
        )
    if solved and max(v for _, v in solved) == 0 and _answers_read(record):
        return None  # every answer read and wrong: the data is too hard, no-signal says so
    if row:
        changes: dict[str, Any] = {}
        advice = (
            f"read what it scores (rlrecipes show {record.path} --step {row['step']}) and match "
            "data.answer_style and data.template to the completions' answers"
        )
    else:
        changes = {"trainer.log_samples_every": 1, "trainer.max_steps": T.FLAT_REWARD_STEPS}
        advice = "a short rerun keeping samples shows what the reward is given (rlrecipes show)"
    return finding(
        record,
        "reward_std",
        streak,
        changes,
        advice=advice,
        evidence=evidence,
        cause="every completion gets the same reward: the reward cannot tell them apart (answers "
        "never extracted, a verifier that never accepts, or a constant reward)",
        sample=quote(row, _graded(row)) if row else None,
    )


def _answers_read(record: RunRecord) -> bool:
    """The pre-flight's probe read an answer in at least PREFLIGHT_READABLE_MIN of its completions
    (summary.json): a reward of 0 is then the grader's verdict on answers it read, not on answers it
    could not find (a run without the pre-flight's probe: not known, so not assumed)."""
    probe = (record.summary.get("preflight") or {}).get("probe") or {}
    share = probe.get("extractable_share")
    return isinstance(share, (int, float)) and share >= T.PREFLIGHT_READABLE_MIN


# ----------------------------------------------------------- reward vs held-out accuracy
def reward_hacking(record: RunRecord) -> Optional[Finding]:
    reward = record.series("reward_mean")
    rise = mean(end(reward)) - mean(start(reward))
    if rise < T.REWARD_RISE_MIN:
        return None
    accuracy = record.series("accuracy")
    if len(accuracy) >= 2 and rise - (mean(end(accuracy)) - mean(start(accuracy))) < T.REWARD_RISE_MIN:
        # the samples' own correctness rose with the reward: the policy learns its training
        # problems (sampling sharpens towards what greedy decoding already answers), not the reward
        return None
    measured = accuracy_gain(record)
    if measured is None or measured[1] >= T.HELDOUT_GAIN_MIN:
        return None
    label, gain = measured
    evidence = [start_vs_end("reward_mean", reward), f"{label}: {gain:+.3f}"]
    length = record.series("completion_length_mean")
    terms = _risen_terms(record)
    if terms:
        name, term_rise = terms[0]
        evidence.append(f"rewards/{name}/mean rose {term_rise:+.3f}")
        changes = _lower_weight(record, name)
        how = f"the {name} reward pays for the form of an answer, not its correctness"
    elif length and mean(end(length)) >= T.LENGTH_GROWTH * mean(start(length)):
        evidence.append(start_vs_end("completion_length_mean", length))
        how = "completions grow longer without getting right"
        changes = (
            {"recipe.loss_type": "dr_grpo"}  # Dr. GRPO: no per-completion length normalisation
            if record.setting("recipe.loss_type") in ("grpo", None)
            else halved_learning_rate(record)
        )
    else:
        how = "the policy learns what the reward pays for, not the task"
        every = max(1, record.steps[1] // 10)
        changes = {"trainer.eval.every": every, "trainer.checkpoints.best_metric": "heldout_accuracy"}
    return finding(
        record,
        "reward_mean",
        end(reward),
        changes,
        evidence=evidence,
        cause=f"the reward rose {rise:+.3f} while {label} did not: {how}",
    )


def accuracy_gain(record: RunRecord) -> Optional[tuple[str, float]]:
    """(what was measured, its gain): held-out accuracy logged during the run, else the summary's
    before/after, else training accuracy; None when the run measured none of them."""
    heldout = record.series("heldout_accuracy")
    if len(heldout) >= 2:
        return f"heldout_accuracy {span(heldout)}", heldout[-1][1] - heldout[0][1]
    before, after = record.summary.get("accuracy_before"), record.summary.get("accuracy_after")
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return "held-out accuracy (summary.json accuracy_before -> accuracy_after)", after - before
    accuracy = record.series("accuracy")
    if len(accuracy) >= 2:
        return "training accuracy", mean(end(accuracy)) - mean(start(accuracy))
    return None


def _risen_terms(record: RunRecord) -> list[tuple[str, float]]:
    """Reward terms other than accuracy whose mean rose by REWARD_RISE_MIN, most first."""
    risen = []
    for key in record.keys_like("rewards/"):
        name = key[len("rewards/") :].removesuffix("/mean")
        if not key.endswith("/mean") or name == "accuracy":
            continue
        points = record.series(key)
        if len(points) >= 2 and (rise := mean(end(points)) - mean(start(points))) >= T.REWARD_RISE_MIN:
            risen.append((name, rise))
    return sorted(risen, key=lambda item: -item[1])


def _lower_weight(record: RunRecord, name: str) -> dict[str, Any]:
    """recipe.rewards as the run had it, with `name`'s weight halved."""
    specs = setting(record, "recipe.rewards", list)
    if not specs or not all(isinstance(s, dict) for s in specs):
        return {"recipe.rewards": f"<{name}'s weight halved>"}
    lowered = [{**s, "weight": float(s.get("weight", 1.0)) / 2} if s.get("name") == name else s for s in specs]
    return {"recipe.rewards": lowered}


# A policy the updates broke (collapsed to one completion, garbled, or driven far from its
# reference) is cut at the limit, scored alike and fails every group; where the run's first
# rollout, from the untrained policy, was none of these, the limit and the reward are fine and the
# finding is the policy's symptom. (Drift: the doctor zoo's tuning half, seed 100, a KL penalty
# outrun by its learning rate took accuracy to ~0, and its empty groups led the verdict.)
BROKEN_BY_UPDATES = ("entropy-collapse", "entropy-blowup", "drift")


def _arose_in_training(metric: str, healthy: Callable[[float], bool]) -> Callable[[RunRecord], tuple[str, ...]]:
    """A Check's `symptom_of`: BROKEN_BY_UPDATES where the run's first logged `metric` (the untrained
    policy's rollout) was `healthy`, so the finding arose from the updates; and step-size too where
    `metric` left its healthy range after a step that broke the policy (one update past
    thresholds.POLICY_SHIFT_BROKEN_NATS). That is what a live doctor sees first: at a learning rate
    of 1 the toy's step 1 moved it 39-128 nats and its step 2 was cut at the limit and scored alike,
    which a longer limit or another reward would not mend. A step's policy_shift is its update's,
    made after its rollout was scored, so a metric that left its range at the broken step itself
    came before the break."""

    def symptom_of(record: RunRecord) -> tuple[str, ...]:
        points = record.series(metric)
        if not points or not healthy(points[0][1]):
            return ()
        broken = next((s for s, shift in record.series("policy_shift") if broke_policy(shift)), None)
        left = next((s for s, v in points if not healthy(v)), None)
        after_break = broken is not None and left is not None and left > broken
        return (*BROKEN_BY_UPDATES, "step-size") if after_break else BROKEN_BY_UPDATES

    return symptom_of


_cut_by_training = _arose_in_training("truncated_fraction", lambda v: v <= T.TRUNCATED_MAX)
_flat_by_training = _arose_in_training("reward_std", lambda v: v > T.REWARD_STD_FLAT)
_emptied_by_training = _arose_in_training("frac_groups_zero_std", lambda v: v < T.ZERO_STD_GROUPS_MAX)


def _rewards_train(record: RunRecord) -> Optional[str]:
    """Why the reward checks do not apply: every reward has weight 0, so the rewards (and TRL's
    reward_std and frac_groups_zero_std, computed from them) are logged, not trained on; the
    advantages come from the recipe's own score (INTUITOR's self-certainty, recipes/intuitor.py)."""
    specs = setting(record, "recipe.rewards", list)
    if not specs or not all(isinstance(s, dict) for s in specs):
        return None
    weights = [s.get("weight", 1.0) for s in specs]
    if all(isinstance(w, (int, float)) and w == 0 for w in weights):
        return "every recipe.rewards weight is 0: the rewards are logged, not trained on"
    return None


CHECKS = [
    Check(
        "truncation",
        "truncation near 1",
        truncation,
        ("truncated_fraction",),
        groups=True,
        symptom_of=_cut_by_training,
    ),
    Check("entropy-collapse", "entropy collapse", entropy_collapse, ("entropy", "accuracy"), trend=True),
    Check("entropy-blowup", "entropy blow-up", entropy_blowup, ("entropy",), trend=True),
    Check(
        "reward-flat",
        "reward not varying",
        reward_flat,
        ("reward_std",),
        applies=_rewards_train,
        symptom_of=_flat_by_training,
    ),
    Check(
        "no-signal",
        "no learning signal",
        no_signal,
        ("frac_groups_zero_std",),
        groups=True,
        superseded_by=("reward-flat",),
        applies=_rewards_train,
        symptom_of=_emptied_by_training,
    ),
    Check(
        "reward-hacking",
        "reward rising without accuracy",
        reward_hacking,
        ("reward_mean",),
        trend=True,
        applies=_rewards_train,
    ),
]
