"""Each failure class on a hand-written run: found just past its threshold, with the fix built
from the run's own settings; not found just short of it. Window arithmetic: 10 logged steps,
so the start window is steps 1-2, the end window steps 9-10 and the middle steps 5-6."""

from __future__ import annotations

import math

import pytest

from rlrecipes.doctor.diagnose import diagnose
from rlrecipes.doctor.reading import read_run
from rlrecipes.doctor.stability_checks import _one_digit_below
from tests.doctor.rundirs import make_run, rows, sample


def check(tmp_path, metrics, **run):
    return diagnose(read_run(make_run(tmp_path / "run", metrics, **run)))


def only(verdict, kind):
    found = [f for f in verdict.findings if f.kind == kind]
    assert len(found) == 1, [f.kind for f in verdict.findings]
    return found[0]


def kinds(verdict):
    return [f.kind for f in verdict.findings]


def test_the_healthy_run_is_healthy(tmp_path):
    verdict = check(tmp_path, rows())
    assert verdict.state == "healthy" and verdict.findings == [] and verdict.not_checked == []


# ------------------------------------------------------------------------------ truncation
def test_truncation_near_1_is_found_with_the_doubled_limit_and_a_cut_sample(tmp_path):
    cut = sample(completion="12+7 is the sum of twelve and seven, so we add them: 1", length=16, truncated=True)
    # end window (steps 9-10): (0.6 + 0.5) / 2 = 0.55 > 0.5
    verdict = check(tmp_path, rows({"truncated_fraction": [0.1] * 8 + [0.6, 0.5]}), samples={10: [sample(), cut]})
    found = only(verdict, "truncation")
    assert found.metric == "truncated_fraction" and found.steps == (9, 10)
    assert found.evidence == ["truncated_fraction 0.1 (steps 1-2) -> 0.55 (steps 9-10)"]
    assert found.fix == "trainer.max_completion_length=32"  # twice the run's 16
    assert found.command == "rlrecipes train recipe=grpo trainer.max_steps=10 trainer.max_completion_length=32"
    assert (
        found.sample == 'step 10, group 0: cut at 16 tokens: "12+7 is the sum of twelve and seven, so we add them: 1"'
    )


def test_truncation_at_one_half_is_not_near_1(tmp_path):
    assert "truncation" not in kinds(check(tmp_path, rows({"truncated_fraction": [0.1] * 8 + [0.5, 0.5]})))


# -------------------------------------------------------------------------------- entropy
def test_entropy_collapse_while_accuracy_stalls(tmp_path):
    # entropy: the start's highest max(0.8, 0.6) = 0.8, end (0.05 + 0.08) / 2 = 0.065 < 0.1 * 0.8 = 0.08
    # accuracy: middle (steps 5-6) 0.40, end (0.41 + 0.40) / 2 = 0.405: gained 0.005 < 0.02
    entropy = [0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.05, 0.08]
    accuracy = [0.2, 0.3, 0.35, 0.38, 0.4, 0.4, 0.4, 0.4, 0.41, 0.4]
    found = only(check(tmp_path, rows({"entropy": entropy, "accuracy": accuracy})), "entropy-collapse")
    assert found.evidence == [
        "entropy 0.8 (the highest of steps 1-2) -> 0.065 (steps 9-10)",
        "accuracy 0.4 (steps 5-6) -> 0.405 (steps 9-10)",
    ]
    assert found.fix.startswith("recipe.epsilon_high=0.28 ")  # the run had no clip-higher
    assert found.command.endswith("recipe.epsilon_high=0.28")


def degenerate(truncated_first=0.05, reward_std_first=0.27):
    # one update turns the policy into a repeated token (trainer.learning_rate=1.0 on the toy):
    # the first, untrained rollout fits the limit and its rewards vary; then every completion is
    # cut, scored 0 and alike. entropy: start (0.08 + 0.02) / 2 = 0.05, end 0 < 0.005;
    # accuracy: start (0.1 + 0) / 2 = 0.05, end 0 < 0.05: worse than before training
    return rows(
        {
            "entropy": [0.08, 0.02] + [0.0] * 8,
            "accuracy": [0.1] + [0.0] * 9,
            "reward_mean": [0.1] + [0.0] * 9,
            "truncated_fraction": [truncated_first] + [1.0] * 9,
            "reward_std": [reward_std_first] + [0.0] * 9,
            "frac_groups_zero_std": [0.6] + [1.0] * 9,
        }
    )


def test_a_policy_broken_by_its_updates_is_a_collapse_not_a_limit_or_a_reward(tmp_path):
    verdict = check(tmp_path, degenerate())
    # truncation, the flat reward and the empty groups are its symptoms: the first rollout had none
    assert kinds(verdict) == ["entropy-collapse"]
    found = verdict.findings[0]
    assert found.evidence == [
        "entropy 0.08 (the highest of steps 1-2) -> 0 (steps 9-10)",
        "accuracy 0.05 (steps 1-2) -> 0 (steps 9-10)",
    ]
    assert found.fix.startswith("trainer.learning_rate=0.0001 ")  # half the run's 2e-4, not clip-higher
    assert "worse than before training" in found.cause


def test_groups_emptied_by_a_drifting_policy_are_its_symptom(tmp_path):
    # kl start (0 + 0.05) / 2 = 0.025 -> end (0.8 + 0.9) / 2 = 0.85 > 0.3; the groups: 0.2 at the
    # untrained first rollout, end (1 + 1) / 2 = 1 >= 0.9 with accuracy 0: failing, from the updates
    metrics = rows(
        {
            "kl": [0.0, 0.05, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
            "frac_groups_zero_std": [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0],
            "accuracy": [0.3, 0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.0, 0.0],
        }
    )
    assert kinds(check(tmp_path / "drifted", metrics, config={"recipe.beta": 0.04})) == ["drift"]
    # the same groups with the first rollout already empty: a signal problem of its own
    metrics[0]["frac_groups_zero_std"] = 0.95
    assert kinds(check(tmp_path / "empty", metrics, config={"recipe.beta": 0.04})) == ["no-signal", "drift"]


def test_a_limit_that_cut_the_first_rollout_stays_a_finding_beside_a_collapse(tmp_path):
    # the untrained policy was already cut (0.9 > 0.5) and its rewards were all alike: the limit and
    # the reward are causes of their own
    verdict = check(tmp_path, degenerate(truncated_first=0.9, reward_std_first=0.0))
    assert kinds(verdict) == ["entropy-collapse", "truncation", "reward-flat"]


@pytest.mark.parametrize(
    "entropy_end, accuracy_end",
    [
        ([0.08, 0.09], [0.41, 0.4]),  # end entropy 0.085: above a tenth of the start's highest, 0.8
        ([0.05, 0.08], [0.45, 0.4]),  # accuracy still rising: 0.425 - 0.40 = 0.025 >= 0.02
        ([0.05, 0.08], [0.96, 0.96]),  # solved: confident, not collapsed
    ],
)
def test_no_entropy_collapse_short_of_it_or_while_learning(tmp_path, entropy_end, accuracy_end):
    entropy = [0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, *entropy_end]
    accuracy = [0.2, 0.3, 0.35, 0.38, 0.4, 0.4, 0.4, 0.4, *accuracy_end]
    assert "entropy-collapse" not in kinds(check(tmp_path, rows({"entropy": entropy, "accuracy": accuracy})))


def test_a_collapse_or_blowup_within_the_first_window_is_not_averaged_away(tmp_path):
    # 30 steps: windows of 6. Collapse by step 6: start mean (0.08+0.11+0.09+0.06+0.03+0.006)/6 = 0.0627,
    # end 0.008: 0.128 of the mean (missed by it) but 0.073 of the start's highest, 0.11
    collapse = [0.08, 0.11, 0.09, 0.06, 0.03, 0.006] + [0.008] * 24
    metrics = rows({"entropy": collapse, "accuracy": [0.25] + [0.0] * 29}, steps=30)
    assert "entropy-collapse" in kinds(check(tmp_path / "collapse", metrics))
    # blow-up by step 5: start mean (0.07+0.16+0.16+0.14+0.31+0.34)/6 = 0.197, end 0.35: 1.8x the mean
    # (missed before), 5x the start's lowest 0.07 and above its highest 0.34
    blowup = [0.07, 0.16, 0.16, 0.14, 0.31, 0.34] + [0.35] * 24
    assert "entropy-blowup" in kinds(check(tmp_path / "blowup", rows({"entropy": blowup}, steps=30)))
    # collapsed from step 2, then back up to 0.01: 1000x the start's lowest (0.00001), but below
    # its highest (0.08): no blow-up
    back = [0.08, 0.00001, 0.00002, 0.00001, 0.00002, 0.00001] + [0.0] * 18 + [0.01] * 6
    assert "entropy-blowup" not in kinds(check(tmp_path / "back", rows({"entropy": back}, steps=30)))


def test_entropy_blowup_names_the_entropy_bonus(tmp_path):
    # the start's lowest 0.5, end 1.75 > 3 * 0.5 = 1.5 and above the start's highest
    entropy = [0.5, 0.5, 0.8, 1.0, 1.2, 1.4, 1.6, 1.7, 1.75, 1.75]
    garbled = sample(completion="q#z 19 ]]x 7 k")
    verdict = check(tmp_path, rows({"entropy": entropy}), config={"recipe.entropy_coef": 0.01}, samples={10: [garbled]})
    found = only(verdict, "entropy-blowup")
    assert found.evidence == ["entropy 0.5 (the lowest of steps 1-2) -> 1.75 (steps 9-10), 3.5x"]
    assert found.fix == "recipe.entropy_coef=0" and "recipe.entropy_coef=0.01" in found.cause
    assert found.sample == 'step 10, group 0: completion "q#z 19 ]]x 7 k"'


def test_entropy_blowup_without_a_bonus_halves_the_learning_rate(tmp_path):
    entropy = [0.5, 0.5, 0.8, 1.0, 1.2, 1.4, 1.6, 1.7, 1.75, 1.75]
    assert only(check(tmp_path, rows({"entropy": entropy})), "entropy-blowup").fix == "trainer.learning_rate=0.0001"


def test_entropy_tripled_exactly_is_no_blowup(tmp_path):
    entropy = [0.5, 0.5, 0.8, 1.0, 1.2, 1.4, 1.6, 1.5, 1.5, 1.5]  # end 1.5 = 3 * 0.5, not above
    assert "entropy-blowup" not in kinds(check(tmp_path, rows({"entropy": entropy})))


# Under an entropy bonus: 20 steps, the entropy's first 5 at 0.1 and last 5 at 0.21 (2.1x); the
# tripling rule's windows are 4 steps: the start's lowest 0.1, the end's mean 0.21 < 3 * 0.1, so only
# the bonus rule can find it. The reward flat at 0.4 over steps 1-10 and 11-20.
BONUS = {"recipe.entropy_coef": 0.01}
RISING = [0.1] * 5 + [0.12] * 10 + [0.21] * 5
FLAT = [0.4] * 20


def test_entropy_doubled_under_a_bonus_while_the_reward_stands_still_is_a_blowup(tmp_path):
    metrics = rows({"entropy": RISING, "reward_mean": FLAT, "accuracy": FLAT}, steps=20)
    found = only(check(tmp_path, metrics, config=BONUS), "entropy-blowup")
    assert found.evidence == [
        "entropy 0.1 (steps 1-5) -> 0.21 (steps 16-20), 2.1x",
        "reward_mean 0.4 (steps 1-10) -> 0.4 (steps 11-20): no higher",
    ]
    assert found.steps == (16, 20)
    assert found.fix == "recipe.entropy_coef=0"
    assert found.cause == (
        "the entropy rises while the reward does not, and a fixed bonus lets it run on until the text garbles: "
        "the entropy bonus (recipe.entropy_coef=0.01) outweighs the reward"
    )
    # solved at the last step only: steps 11-20 average (9 * 0.4 + 0.96) / 10 = 0.456, not solved
    last_solved = rows({"entropy": RISING, "reward_mean": FLAT, "accuracy": [0.4] * 19 + [0.96]}, steps=20)
    assert "entropy-blowup" in kinds(check(tmp_path / "last-solved", last_solved, config=BONUS))
    # no accuracy logged: judged by the entropy and the reward alone
    without = rows({"entropy": RISING, "reward_mean": FLAT}, steps=20, drop=("accuracy",))
    assert "entropy-blowup" in kinds(check(tmp_path / "no-accuracy", without, config=BONUS))


@pytest.mark.parametrize(
    "changes, config",
    [
        ({}, {}),  # no bonus: the tripling rule alone, which 2.1x does not meet
        ({"entropy": [0.1] * 5 + [0.12] * 10 + [0.2] * 5}, BONUS),  # 0.2 = 2 * 0.1 exactly: not above
        ({"reward_mean": [0.4] * 10 + [0.4] * 9 + [0.41]}, BONUS),  # steps 11-20 average 0.401 > 0.4: rising
        ({"accuracy": [0.4] * 10 + [0.95] * 10}, BONUS),  # steps 11-20 at 0.95: solved, the bonus explores
        # an adaptive bonus raises the entropy to its target on purpose: entropy_coef is only its start
        ({}, {**BONUS, "recipe.adaptive_entropy.enabled": True}),
    ],
    ids=["no bonus", "exactly doubled", "reward rising", "solved", "adaptive"],
)
def test_no_bonus_blowup_without_all_of_its_signs(tmp_path, changes, config):
    metrics = rows({"entropy": RISING, "reward_mean": FLAT, "accuracy": FLAT, **changes}, steps=20)
    assert "entropy-blowup" not in kinds(check(tmp_path, metrics, config=config))


def test_the_bonus_rule_needs_a_reward_and_a_start_with_entropy(tmp_path):
    no_reward = rows({"entropy": RISING, "accuracy": FLAT}, steps=20, drop=("reward_mean",))
    assert "entropy-blowup" not in kinds(check(tmp_path / "no-reward", no_reward, config=BONUS))
    # a start at 0 (every first token certain) is no base to double: no finding, no division by it
    from_zero = rows({"entropy": [0.0] * 5 + RISING[5:], "reward_mean": FLAT, "accuracy": FLAT}, steps=20)
    assert "entropy-blowup" not in kinds(check(tmp_path / "from-zero", from_zero, config=BONUS))


def test_the_bonus_rule_waits_for_twenty_logged_steps(tmp_path):
    # 19 steps: the reward's first and last ten would share a step
    metrics = rows({"entropy": RISING[1:], "reward_mean": FLAT[1:], "accuracy": FLAT[1:]}, steps=19)
    assert "entropy-blowup" not in kinds(check(tmp_path, metrics, config=BONUS))


# ------------------------------------------------------------------------ learning signal
def test_no_signal_with_groups_all_failing_asks_for_more_generations(tmp_path):
    # end window: (0.9 + 0.95) / 2 = 0.925 >= 0.9; accuracy there (0.05 + 0.0) / 2 = 0.025 < 0.5: failing
    wrong = sample(completion="12+7=20", rewards={"accuracy": 0.0})
    metrics = rows({"frac_groups_zero_std": [0.25] * 8 + [0.9, 0.95], "accuracy": [0.3] * 8 + [0.05, 0.0]})
    found = only(check(tmp_path, metrics, samples={9: [wrong]}), "no-signal")
    assert "the groups all fail" in found.cause
    assert found.evidence == [
        "frac_groups_zero_std 0.925 (mean of steps 9-10)",
        "accuracy 0.025 (mean of steps 9-10)",
    ]
    assert found.fix.startswith("trainer.num_generations=16 ")  # twice the run's 8
    assert found.sample == "step 9, group 0: completion \"12+7=20\", answer '19'"


def test_no_signal_with_groups_all_solved_turns_on_dynamic_sampling(tmp_path):
    metrics = rows({"frac_groups_zero_std": [0.25] * 8 + [0.9, 0.95], "accuracy": [0.3] * 8 + [0.98, 1.0]})
    found = only(check(tmp_path, metrics), "no-signal")
    assert "the groups are solved" in found.cause
    assert found.fix.startswith("recipe.dynamic_sampling.enabled=true ")


def test_most_groups_without_signal_is_not_none(tmp_path):
    # end window (0.85 + 0.9) / 2 = 0.875 < 0.9
    metrics = rows({"frac_groups_zero_std": [0.25] * 8 + [0.85, 0.9]})
    assert "no-signal" not in kinds(check(tmp_path, metrics))


# ------------------------------------------------- shares of groups: over at least 16 of them
FOUR_PROMPTS = {"trainer.prompts_per_rollout": 4}  # SmolLM2's preset: 16 groups are 4 rollouts


def test_a_share_of_few_groups_a_rollout_is_judged_over_sixteen_groups(tmp_path):
    # the fifth (steps 9-10) averages 0.3, the last 4 rollouts of 4 groups (steps 7-10) 0.6 > 0.5
    truncated = [0.1] * 6 + [0.9, 0.9, 0.3, 0.3]
    found = only(check(tmp_path / "four", rows({"truncated_fraction": truncated}), config=FOUR_PROMPTS), "truncation")
    assert found.steps == (7, 10) and found.evidence == ["truncated_fraction 0.1 (steps 1-2) -> 0.6 (steps 7-10)"]
    # 8 prompts a rollout (the config's default): 16 groups are the fifth's two rollouts, 0.3
    assert "truncation" not in kinds(check(tmp_path / "eight", rows({"truncated_fraction": truncated})))


def test_one_rollout_of_groups_all_alike_is_not_yet_judged(tmp_path):
    # SmolLM2's healthy preset, seed 105: all 4 groups alike on steps 2 and 3, learning after
    alike = rows({"frac_groups_zero_std": 1.0, "accuracy": 0.0}, steps=3)
    verdict = check(tmp_path / "three", alike, config=FOUR_PROMPTS)
    assert "no-signal" not in kinds(verdict)
    assert {c.kind: c.reason for c in verdict.not_checked}["no-signal"] == (
        "3 logged rollouts of 4 groups (trainer.prompts_per_rollout); a share of the groups is judged over 16"
    )
    # the fourth rollout makes 16 groups: (1 + 1 + 1 + 1) / 4 >= 0.9
    four = rows({"frac_groups_zero_std": 1.0, "accuracy": 0.0}, steps=4)
    assert only(check(tmp_path / "four", four, config=FOUR_PROMPTS), "no-signal").steps == (1, 4)


@pytest.mark.parametrize(
    "kind, metrics, config",
    [
        ("truncation", {"truncated_fraction": 1.0}, {}),
        ("no-signal", {"frac_groups_zero_std": 1.0}, {}),
        ("tool-loop", {"tools/calls_per_rollout": 0.0}, {"rollout.tools": ["calculator"]}),
    ],
)
def test_a_share_of_groups_waits_for_its_sixteen(tmp_path, kind, metrics, config):
    # one rollout of the config's 8 prompts: not judged; a second makes 16 groups
    one = check(tmp_path / "one", rows(metrics, steps=1), config=config)
    assert kind in [c.kind for c in one.not_checked] and kind not in kinds(one)
    assert kind in kinds(check(tmp_path / "two", rows(metrics, steps=2), config=config))


@pytest.mark.parametrize("prompts", [0, -3, "four", True, 2.5, 10**400])  # 10**400: past the float range
def test_a_config_without_a_usable_prompt_count_is_read_as_the_default_eight(tmp_path, prompts):
    # 8 prompts: one rollout is too few, two hold 16 groups (True as 1 would wait for 16 rollouts,
    # 2.5 as 2 for 8, a negative count for none)
    alike, config = {"frac_groups_zero_std": 1.0, "accuracy": 0.0}, {"trainer.prompts_per_rollout": prompts}
    one = check(tmp_path / "one", rows(alike, steps=1), config=config)
    assert "no-signal" in [c.kind for c in one.not_checked]
    assert "no-signal" in kinds(check(tmp_path / "two", rows(alike, steps=2), config=config))


def test_the_rollouts_that_hold_sixteen_groups_are_rounded_up(tmp_path):
    # 5 prompts a rollout: 3 rollouts hold 15 groups, too few; 4 hold 20
    alike = {"frac_groups_zero_std": 1.0, "accuracy": 0.0}
    five = {"trainer.prompts_per_rollout": 5}
    assert "no-signal" in [c.kind for c in check(tmp_path / "3", rows(alike, steps=3), config=five).not_checked]
    assert "no-signal" in kinds(check(tmp_path / "4", rows(alike, steps=4), config=five))


def test_a_long_run_is_judged_over_its_fifth_not_only_its_last_sixteen_groups(tmp_path):
    # 30 steps of 8 prompts: the fifth (steps 25-30) averages (4 * 0.3 + 2 * 0.9) / 6 = 0.5, not above
    # 0.5, though the last 16 groups (steps 29-30) average 0.9
    truncated = [0.1] * 24 + [0.3] * 4 + [0.9, 0.9]
    assert "truncation" not in kinds(check(tmp_path / "a", rows({"truncated_fraction": truncated}, steps=30)))
    found = only(check(tmp_path / "b", rows({"truncated_fraction": [0.1] * 24 + [0.6] * 6}, steps=30)), "truncation")
    assert found.steps == (25, 30)


def test_a_reward_flat_for_ten_steps_is_found_and_explains_the_missing_signal(tmp_path):
    # reward_std 0 on steps 1-10: ten in a row; every group then has zero std too, which the
    # reward-flat finding explains (no separate no-signal finding)
    metrics = rows({"reward_std": 0.0, "frac_groups_zero_std": 1.0, "reward_mean": 0.0, "accuracy": 0.0})
    verdict = check(tmp_path, metrics)
    assert kinds(verdict) == ["reward-flat"]
    found = verdict.findings[0]
    assert found.evidence[0] == "reward_std <= 1e-06 on 10 consecutive logged steps (steps 1-10)"
    assert found.fix.startswith("trainer.log_samples_every=1 trainer.max_steps=10 ")  # no samples to read yet
    assert found.command == "rlrecipes train recipe=grpo trainer.log_samples_every=1 trainer.max_steps=10"


@pytest.mark.parametrize("read, found", [(0.1, "no-signal"), (0.09, "reward-flat"), (None, "reward-flat")])
def test_a_reward_flat_at_0_on_answers_the_grader_read_is_data_too_hard(tmp_path, read, found):
    # every completion wrong (accuracy 0 on all ten steps); the pre-flight's probe read an answer in
    # a tenth of its completions (PREFLIGHT_READABLE_MIN): the grader judged them, the data is too
    # hard. Fewer read, or no probe (--no-preflight): the reward may not see the answers at all.
    metrics = rows({"reward_std": 0.0, "frac_groups_zero_std": 1.0, "reward_mean": 0.0, "accuracy": 0.0})
    probe = {"preflight": {"probe": {"extractable_share": read}}} if read is not None else {}
    verdict = check(tmp_path, metrics, summary=probe)
    assert kinds(verdict) == [found]
    if found == "no-signal":
        assert "the groups all fail" in verdict.findings[0].cause


def test_a_flat_reward_quotes_what_it_scored_when_samples_are_stored(tmp_path):
    unparsed = sample(completion="the sum is nineteen", rewards={"accuracy": 0.0})
    found = only(check(tmp_path, rows({"reward_std": 0.0}), samples={10: [unparsed]}), "reward-flat")
    assert found.sample == "step 10, group 0: completion \"the sum is nineteen\", answer '19'"
    assert found.fix.startswith(f"read what it scores (rlrecipes show {tmp_path / 'run'} --step 10)")
    assert found.command is None  # no setting to change names the cause


def test_rewards_logged_at_weight_0_are_not_judged(tmp_path):
    # INTUITOR (recipe=intuitor): accuracy at weight 0 is logged only, the advantages come from
    # self-certainty; its flat reward_std and all-zero-std groups are no finding
    metrics = rows({"reward_std": 0.0, "frac_groups_zero_std": 1.0, "reward_mean": 0.0})
    logged = {"recipe.name": "intuitor", "recipe.rewards": [{"name": "accuracy", "weight": 0.0, "options": {}}]}
    verdict = check(tmp_path, metrics, config=logged)
    assert verdict.findings == []
    ruled_out = {n.kind: n.reason for n in verdict.not_applicable}
    assert ruled_out.keys() >= {"reward-flat", "no-signal", "reward-hacking"}
    assert ruled_out["reward-flat"] == "every recipe.rewards weight is 0: the rewards are logged, not trained on"


def test_one_reward_with_a_weight_keeps_the_reward_checks(tmp_path):
    metrics = rows({"reward_std": 0.0, "frac_groups_zero_std": 1.0, "reward_mean": 0.0})
    both = {"recipe.rewards": [{"name": "accuracy", "weight": 0.0}, {"name": "format", "weight": 0.5}]}
    assert kinds(check(tmp_path, metrics, config=both)) == ["reward-flat"]


def test_a_reward_that_went_flat_after_varying_blames_the_updates(tmp_path):
    # 12 steps: rewards vary on steps 1-2 (mean 0.15), then every completion scores 0 on steps 3-12
    # (ten in a row): the reward could tell completions apart, the policy lost them
    metrics = rows(
        {"reward_std": [0.3, 0.3] + [0.0] * 10, "reward_mean": [0.1, 0.2] + [0.0] * 10, "accuracy": 0.0}, steps=12
    )
    found = only(check(tmp_path, metrics), "reward-flat")
    assert found.evidence[1:] == ["reward_mean 0 (mean of steps 3-12)", "reward_mean 0.15 before (steps 1-2)"]
    assert found.fix == "trainer.learning_rate=0.0001 (updates too large: the policy lost what it could do)"
    # flat at a higher reward than before, every completion now right: the data is solved
    solved = {"reward_std": [0.3, 0.3] + [0.0] * 10, "reward_mean": [0.1, 0.2] + [1.0] * 10}
    solved |= {"accuracy": [0.1, 0.2] + [1.0] * 10, "frac_groups_zero_std": 1.0}
    assert kinds(check(tmp_path / "b", rows(solved, steps=12))) == ["no-signal"]


def test_a_reward_flat_for_nine_steps_is_not_found(tmp_path):
    metrics = rows({"reward_std": [0.0] * 9 + [0.1]})
    assert "reward-flat" not in kinds(check(tmp_path, metrics))


# ----------------------------------------------------------- reward vs held-out accuracy
def hacked_rewards(length=None, accuracy=0.4):
    # reward: start (0.2 + 0.2) / 2 = 0.2, end (0.35 + 0.35) / 2 = 0.35: rose 0.15 >= 0.1, while
    # the samples' own correctness (training accuracy) stays at 0.4
    changes = {"reward_mean": [0.2, 0.2, 0.25, 0.25, 0.3, 0.3, 0.3, 0.3, 0.35, 0.35], "accuracy": accuracy}
    if length:
        changes["completion_length_mean"] = length
    return rows(changes)


def test_reward_rising_while_heldout_accuracy_does_not_with_longer_completions(tmp_path):
    # held-out 0.40 -> 0.405: +0.005 < 0.01; length start 10, end (16 + 14) / 2 = 15 = 1.5 * 10
    length = [10.0, 10.0, 11.0, 12.0, 12.0, 13.0, 13.0, 14.0, 16.0, 14.0]
    verdict = check(tmp_path, hacked_rewards(length), summary={"accuracy_before": 0.4, "accuracy_after": 0.405})
    found = only(verdict, "reward-hacking")
    assert found.evidence == [
        "reward_mean 0.2 (steps 1-2) -> 0.35 (steps 9-10)",
        "held-out accuracy (summary.json accuracy_before -> accuracy_after): +0.005",
        "completion_length_mean 10 (steps 1-2) -> 15 (steps 9-10)",
    ]
    assert found.fix == "recipe.loss_type=dr_grpo"


def test_a_reward_that_rises_with_the_samples_correctness_is_no_hack(tmp_path):
    # training accuracy rises as the reward does (0.2 -> 0.35 each) while greedy held-out accuracy
    # stays: sampling sharpens towards what greedy already answers, the reward is not gamed
    risen = [0.2, 0.2, 0.25, 0.25, 0.3, 0.3, 0.3, 0.3, 0.35, 0.35]
    summary = {"accuracy_before": 0.4, "accuracy_after": 0.4}
    verdict = check(tmp_path, hacked_rewards(accuracy=risen), summary=summary)
    assert "reward-hacking" not in kinds(verdict)
    # with the samples' accuracy up only 0.04 (0.2 -> 0.24), 0.11 of the reward's rise is unexplained
    partly = [0.2, 0.2, 0.21, 0.21, 0.22, 0.22, 0.23, 0.23, 0.24, 0.24]
    assert "reward-hacking" in kinds(check(tmp_path / "b", hacked_rewards(accuracy=partly), summary=summary))


def test_a_rising_format_reward_gets_its_weight_halved(tmp_path):
    metrics = hacked_rewards()
    for row, value in zip(metrics, [0.0, 0.0, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3]):
        row["rewards/format/mean"] = value
    rewards = [{"name": "accuracy", "weight": 1.0, "options": {}}, {"name": "format", "weight": 0.5, "options": {}}]
    verdict = check(
        tmp_path,
        metrics,
        config={"recipe.rewards": rewards},
        summary={"accuracy_before": 0.4, "accuracy_after": 0.4},
    )
    found = only(verdict, "reward-hacking")
    assert "rewards/format/mean rose +0.300" in found.evidence
    assert found.fix == "recipe.rewards=[{name: accuracy, weight: 1}, {name: format, weight: 0.25}]"
    assert found.command.endswith("'recipe.rewards=[{name: accuracy, weight: 1}, {name: format, weight: 0.25}]'")


def test_heldout_accuracy_logged_during_the_run_is_preferred(tmp_path):
    metrics = hacked_rewards()
    metrics[0]["heldout_accuracy"], metrics[-1]["heldout_accuracy"] = 0.5, 0.5
    verdict = check(tmp_path, metrics, summary={"accuracy_before": 0.1, "accuracy_after": 0.9})
    found = only(verdict, "reward-hacking")
    assert "heldout_accuracy steps 1-10: +0.000" in found.evidence
    assert found.fix == "trainer.eval.every=1 trainer.checkpoints.best_metric=heldout_accuracy"


def test_reward_rising_with_heldout_accuracy_is_learning(tmp_path):
    verdict = check(tmp_path, hacked_rewards(), summary={"accuracy_before": 0.4, "accuracy_after": 0.42})
    assert "reward-hacking" not in kinds(verdict)


# --------------------------------------------------------------- rollout/trainer mismatch
VLLM = {"rollout.backend": "vllm"}


def test_a_logprob_gap_on_most_rounds_is_a_mismatch(tmp_path):
    gap = [0.3, 0.01, 0.3, 0.01, 0.3, 0.01, 0.3, 0.01, 0.3, 0.3]  # 6 of 10 rounds > 0.1
    found = only(check(tmp_path, rows({"vllm/logprob_gap": gap}), config=VLLM), "rollout-mismatch")
    assert found.evidence == ["vllm/logprob_gap > 0.1 on 6 of 10 logged rounds (steps 1-10), median 0.3"]
    assert found.fix.startswith("rollout.importance_sampling.enabled=true ")


def test_an_importance_ratio_tail_past_the_clip_is_a_mismatch(tmp_path):
    metrics = rows({"vllm/logprob_gap": 0.02, "vllm/is_ratio_p99": 2.5, "vllm/is_ratio_p1": 0.9})
    found = only(check(tmp_path, metrics, config=VLLM), "rollout-mismatch")
    assert found.metric == "vllm/is_ratio_p99"


def test_a_gap_on_fewer_than_half_the_rounds_is_not_a_mismatch(tmp_path):
    gap = [0.3, 0.01, 0.3, 0.01, 0.3, 0.01, 0.3, 0.01, 0.01, 0.01]  # 4 of 10
    assert "rollout-mismatch" not in kinds(check(tmp_path, rows({"vllm/logprob_gap": gap}), config=VLLM))


def test_a_gap_that_grows_to_a_hundredth_of_a_nat_is_a_stale_engine(tmp_path):
    # start (0 + 0.002) / 2 = 0.001 -> end (0.009 + 0.0111) / 2 = 0.01005 >= 0.01 and 10x
    gap = [0.0, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.0111]
    assert "rollout-mismatch" in kinds(check(tmp_path, rows({"vllm/logprob_gap": gap}), config=VLLM))


def test_a_gap_that_grows_with_training_is_a_stale_engine(tmp_path):
    # under every fixed limit, but start (0 + 0.002) / 2 = 0.001 -> end (0.04 + 0.05) / 2 = 0.045: 45x, >= 0.01
    gap = [0.0, 0.002, 0.004, 0.006, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05]
    found = only(check(tmp_path, rows({"vllm/logprob_gap": gap}), config=VLLM), "rollout-mismatch")
    assert found.evidence == [
        "vllm/logprob_gap 0.001 (steps 1-2) -> 0.045 (steps 9-10): it grows as the trainer moves on"
    ]
    assert found.fix.startswith("rollout.backend=hf ")


def test_a_gap_that_grew_early_in_a_long_run_is_a_stale_engine(tmp_path):
    # 30 rounds rising 0.002 a round to a plateau of 0.012: the first fifth (6 rounds) averages
    # 0.005, and 0.012 < 3 x 0.005 would miss it; the first 3 rounds, before the trainer had moved,
    # average (0 + 0.002 + 0.004) / 3 = 0.002, and 0.012 >= 3 x 0.002 and >= 0.01
    gap = [min(0.002 * i, 0.012) for i in range(30)]
    found = only(check(tmp_path, rows({"vllm/logprob_gap": gap}, steps=30), config=VLLM), "rollout-mismatch")
    assert found.evidence == [
        "vllm/logprob_gap 0.002 (steps 1-3) -> 0.012 (steps 25-30): it grows as the trainer moves on"
    ]


@pytest.mark.parametrize(
    "gap",
    [
        [0.03 + 0.002 * (-1) ** i for i in range(30)],  # bfloat16 against float32 over a long run: flat
        [0.03, 0.028, 0.031, 0.03, 0.029, 0.032, 0.03, 0.031, 0.029, 0.03],  # bfloat16 against float32: flat
        [0.0, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.009, 0.0109],  # grows, ends 0.00995 < 0.01
        [0.01, 0.01, 0.012, 0.015, 0.018, 0.02, 0.022, 0.025, 0.028, 0.029],  # ends 0.0285 < 3 x 0.01
    ],
)
def test_a_flat_or_small_gap_is_no_stale_engine(tmp_path, gap):
    metrics = rows({"vllm/logprob_gap": gap}, steps=len(gap))
    assert "rollout-mismatch" not in kinds(check(tmp_path, metrics, config=VLLM))


def test_a_run_without_vllm_is_not_checked_for_a_mismatch_nor_told_it_was_not(tmp_path):
    verdict = check(tmp_path, rows())
    assert [c.kind for c in verdict.not_applicable] == ["rollout-mismatch", "tool-loop"]
    assert verdict.not_checked == []


# ------------------------------------------------------------------- KL and clip fraction
def test_kl_drift(tmp_path):
    # start (0.01 + 0.02) / 2 = 0.015, end (0.35 + 0.45) / 2 = 0.4 > 0.3
    kl = [0.01, 0.02, 0.03, 0.05, 0.06, 0.08, 0.1, 0.2, 0.35, 0.45]
    found = only(check(tmp_path, rows({"kl": kl}), config={"recipe.beta": 0.04}), "drift")
    assert found.evidence == ["kl 0.015 (steps 1-2) -> 0.4 (steps 9-10), above 0.3"]
    assert found.fix == "trainer.learning_rate=0.0001 (or a stronger KL penalty, recipe.beta=0.08)"


def test_clip_fraction_drift(tmp_path):
    clip = [0.05, 0.05, 0.1, 0.1, 0.15, 0.15, 0.2, 0.2, 0.25, 0.3]  # end 0.275 > 0.2
    found = only(check(tmp_path, rows({"clip_ratio_region": clip})), "drift")
    assert found.metric == "clip_ratio_region" and found.fix == "trainer.learning_rate=0.0001"


def test_kl_at_its_limit_is_no_drift(tmp_path):
    # end 0.3, not above; INTUITOR's weak penalty (beta 0.005) ends a healthy toy run near 0.1
    kl = [0.01, 0.02, 0.03, 0.05, 0.06, 0.08, 0.1, 0.2, 0.3, 0.3]
    assert "drift" not in kinds(check(tmp_path, rows({"kl": kl}), config={"recipe.beta": 0.04}))


def test_a_sequence_level_ratio_clipping_most_sequences_is_no_drift(tmp_path):
    # GSPO clips at 3e-4 a sequence: on a rollout's second update half its sequences (its paper, §5.3)
    clip = [0.0, 0.1, 0.0, 0.3, 0.0, 0.4, 0.0, 0.5, 0.0, 0.6]  # as a token-level ratio: end 0.3 > 0.2
    metrics = rows({"clip_ratio_region": clip})
    assert "drift" in kinds(check(tmp_path / "token", metrics))
    config = {"recipe.importance_sampling_level": "sequence"}
    assert "drift" not in kinds(check(tmp_path / "sequence", metrics, config=config))


# ------------------------------------------------------------------------------ step size
WARMUP = [1e-4 * k for k in range(1, 11)]  # a warm-up still rising at step 10 (to 5e-3 below); entropy 0.6


def test_a_warm_up_whose_target_rate_would_overstep_is_found_while_the_rate_is_low(tmp_path):
    # policy_shift = 20000 lr² on every step: the median of shift / lr² over steps 1-8 is 20000, and at
    # the warm-up's target 5e-3 a step would move 20000 * 2.5e-5 = 0.5 nats, 0.5 / 0.6 = 0.833 of the
    # entropy >= 0.5
    shift = [20000 * lr**2 for lr in WARMUP]
    metrics = rows({"learning_rate": WARMUP, "policy_shift": shift})
    found = only(check(tmp_path, metrics, config={"trainer.learning_rate": 0.005}), "step-size")
    assert found.steps == (1, 8)  # found at step 8, with the rate at 8e-4
    # shifts of steps 1-8: 2e-4 k², median (0.0032 + 0.005) / 2 = 0.0041
    assert found.evidence == [
        "policy_shift 0.0041 nats a token (median of steps 1-8) at learning_rate 0.0008, the policy's entropy 0.6",
        "the warm-up rises to 0.005, where such steps would move ~0.5 (a step's KL grows with the square "
        "of its rate): 0.833 of its entropy a step, above 0.5",
    ]
    # 5e-3 * 0.5 * sqrt(0.5 / 0.833) = 1.94e-3, rounded down to one digit
    assert found.fix == "trainer.learning_rate=0.001"


@pytest.mark.parametrize("scale, found", [(12010, True), (11990, False)])  # 0.5004 and 0.4996 of the entropy
def test_a_step_size_at_the_limit_is_found_and_just_below_it_is_not(tmp_path, scale, found):
    metrics = rows({"learning_rate": WARMUP, "policy_shift": [scale * lr**2 for lr in WARMUP]})
    assert ("step-size" in kinds(check(tmp_path, metrics, config={"trainer.learning_rate": 0.005}))) == found


def test_a_constant_rate_is_judged_at_itself_against_the_entropy(tmp_path):
    # median 0.4 at the run's own 2e-4: 0.667 of the entropy 0.6; fix 2e-4 * 0.5 * sqrt(0.75) = 8.66e-5 -> 8e-5
    found = only(check(tmp_path, rows({"policy_shift": 0.4})), "step-size")
    assert found.evidence == [
        "policy_shift 0.4 nats a token (median of steps 1-8) at learning_rate 0.0002, the policy's entropy 0.6: "
        "0.667 of its entropy a step, above 0.5"
    ]
    assert found.fix == "trainer.learning_rate=8e-05"
    # the same shift where the policy is twice as uncertain: a third of its entropy, no finding
    assert "step-size" not in kinds(check(tmp_path / "wide", rows({"policy_shift": 0.4, "entropy": 1.2})))


def test_a_large_share_of_a_tiny_entropy_is_no_large_step(tmp_path):
    # a cold sampling temperature: entropy 0.003, steps of 0.004 nats, 1.33 of it, but under 0.02 nats
    cold = rows({"policy_shift": 0.004, "entropy": 0.003})
    assert "step-size" not in kinds(check(tmp_path / "cold", cold))
    # the same share at 0.03 nats (entropy 0.0225) is found
    found = only(check(tmp_path / "warm", rows({"policy_shift": 0.03, "entropy": 0.0225})), "step-size")
    assert found.evidence[0].endswith("1.33 of its entropy a step, above 0.5")


def test_a_decaying_rate_is_not_judged_at_the_peak_it_left(tmp_path):
    # 400000 lr²: at trainer.learning_rate 1e-3 that is 0.4 (0.667 of the entropy), but the rate falls
    # 1e-3 -> 5.5e-4 and at step 8's 6.5e-4 a step moves 400000 * 4.225e-7 = 0.169 (0.28)
    decay = [1e-3 - 5e-5 * k for k in range(10)]
    metrics = rows({"learning_rate": decay, "policy_shift": [400000 * lr**2 for lr in decay]})
    assert "step-size" not in kinds(check(tmp_path, metrics, config={"trainer.learning_rate": 0.001}))


def test_one_step_past_a_nat_is_found_at_that_step_without_a_window(tmp_path):
    # SmolLM2-shaped: step 2 moves 1.92 nats (the entropy 0.6) at 0.01, under the 8 steps a window needs
    metrics = rows({"learning_rate": 0.01, "policy_shift": [0.05, 1.92, 0.5]}, steps=3)
    found = only(check(tmp_path, metrics, config={"trainer.learning_rate": 0.01}), "step-size")
    assert found.steps == (2, 2)
    assert found.evidence == [
        "policy_shift 1.92 nats a token at step 2 (learning_rate 0.01, the policy's entropy 0.6): past 1, one step "
        "made the tokens it sampled e times less likely on average"
    ]
    # share 3.2: 0.01 * 0.5 * sqrt(0.5 / 3.2) = 1.98e-3, rounded down to one digit
    assert (
        found.fix == "trainer.learning_rate=0.001 (at most: a step this large grows slower than the square of its rate)"
    )
    # a window that found the rate earlier keeps its step: 0.4 a step (0.667 of the entropy) from step 1,
    # found at step 8, and a broken step 9 after it
    later = rows({"policy_shift": [0.4] * 8 + [1.5, 0.4]})
    assert only(check(tmp_path / "later", later), "step-size").steps == (1, 8)
    # a broken step 2 before that window is the finding, though the window would fire at step 8 too
    early = rows({"policy_shift": [0.4, 1.5] + [0.4] * 8})
    assert only(check(tmp_path / "early", early), "step-size").steps == (2, 2)
    # exactly 1 nat is past the bar; where the entropy dwarfs it (share 0.4), the fix halves the rate
    wide = rows({"learning_rate": 0.01, "policy_shift": [1.0, 0.1, 0.1], "entropy": 2.5}, steps=3)
    found = only(check(tmp_path / "wide", wide, config={"trainer.learning_rate": 0.01}), "step-size")
    assert found.steps == (1, 1) and found.fix.startswith("trainer.learning_rate=0.005 ")
    # just under the bar, three steps are no verdict
    below = rows({"learning_rate": 0.01, "policy_shift": [0.05, 0.999, 0.5]}, steps=3)
    assert "step-size" not in kinds(check(tmp_path / "below", below, config={"trainer.learning_rate": 0.01}))


def test_what_a_broken_step_did_to_the_next_rollouts_is_its_symptom_live(tmp_path):
    # a learning rate of 1 as the live doctor sees it after 3 steps: step 1 moves 60 nats, then every
    # completion is cut, scored alike and every group empty; 3 steps are too few for the entropy trends
    # (and for reward-flat's, so the empty groups are no-signal's)
    broken = {
        "learning_rate": 1.0,
        "policy_shift": [60.0, 0.5, 0.2],
        "truncated_fraction": [0.05, 1.0, 1.0],
        "reward_std": [0.27, 0.0, 0.0],
        "frac_groups_zero_std": [0.6, 1.0, 1.0],
    }
    verdict = check(tmp_path / "broken", rows(broken, steps=3), config={"trainer.learning_rate": 1.0})
    assert kinds(verdict) == ["step-size"]
    # exactly 1 nat is past the bar
    exactly = rows({**broken, "policy_shift": [1.0, 0.5, 0.2]}, steps=3)
    assert kinds(check(tmp_path / "exactly", exactly, config={"trainer.learning_rate": 1.0})) == ["step-size"]
    # the same symptoms with no step past a nat (0.9): causes of their own, each with its own fix
    unbroken = rows({**broken, "policy_shift": [0.9, 0.5, 0.2]}, steps=3)
    assert kinds(check(tmp_path / "unbroken", unbroken)) == ["truncation", "no-signal"]
    # cut from the broken step's own rollout on (step 1, scored before its update): not its symptom
    before = rows({**broken, "truncated_fraction": [0.05, 1.0, 1.0], "policy_shift": [0.1, 60.0, 0.2]}, steps=3)
    assert kinds(check(tmp_path / "before", before, config={"trainer.learning_rate": 1.0})) == [
        "step-size",
        "truncation",
        "no-signal",
    ]


@pytest.mark.parametrize(
    "value, rounded",
    [(1.37e-3, 1e-3), (0.0009999999999999998, 9e-4), (9.999999999999999e-05, 9e-5), (2.5e-2, 2e-2)],
)
def test_a_fixed_rate_is_rounded_down_to_one_digit_and_never_to_0(value, rounded):
    assert _one_digit_below(value) == pytest.approx(rounded)


def test_steps_at_rate_0_do_not_count_and_a_run_without_the_metric_is_not_checked(tmp_path):
    # a warm-up's step 1 at rate 0: seven rated steps are one short of a verdict
    rates = [0.0, *WARMUP[:7], 0.0, 0.0]  # shifts of 0.9: large, but under the one-step bar of 1 nat
    metrics = rows({"learning_rate": rates, "policy_shift": [0.9] * 10})
    assert "step-size" not in kinds(check(tmp_path / "short", metrics, config={"trainer.learning_rate": 0.005}))
    verdict = check(tmp_path / "old", rows(drop=("policy_shift",)))
    assert [n.kind for n in verdict.not_checked] == ["step-size"]


# ---------------------------------------------------------------- NaN/inf and precursors
def test_a_nan_loss_is_found_at_its_first_step(tmp_path):
    loss = [0.01] * 6 + [math.nan, math.nan, math.inf, 0.01]
    found = only(check(tmp_path, rows({"loss": loss})), "numeric")
    assert found.evidence == ["loss nan at step 7 (3 non-finite steps, steps 7-9)"]
    assert found.fix == "trainer.learning_rate=0.0001"


def test_a_nan_reward_is_found_in_a_log_without_loss_or_grad_norm(tmp_path):
    # a hand-made or foreign log: no loss, no grad_norm, its reward NaN from step 4 on
    reward = [0.3, 0.32, 0.34] + [math.nan] * 7
    found = only(check(tmp_path, rows({"reward_mean": reward}, drop=("loss", "grad_norm"))), "numeric")
    assert found.evidence == ["reward_mean nan at step 4 (7 non-finite steps, steps 4-10)"]


def test_a_reward_that_breaks_first_is_blamed_not_the_learning_rate(tmp_path):
    reward = [0.3, 0.32, 0.34] + [math.nan] * 7
    found = only(check(tmp_path, rows({"reward_mean": reward})), "numeric")  # loss and grad_norm finite
    assert found.cause == "a reward function returned NaN or an infinity while the loss and gradients stayed finite"
    assert found.fix == (
        f"read what the reward returned (rlrecipes show {tmp_path / 'run'}) and make it return a finite number"
    )
    # the entropy broke first (step 3): the update, not the reward
    entropy = [0.6, 0.6, math.inf] + [0.6] * 7
    found = only(check(tmp_path / "e", rows({"reward_mean": reward, "entropy": entropy})), "numeric")
    assert found.fix == "trainer.learning_rate=0.0001"


def test_values_at_the_float_limit_are_averaged_without_overflow():
    from rlrecipes.doctor.series import mean

    # fsum of 1e308 + 1e308 overflows; their mean is 1e308
    assert mean([(1, 1e308), (2, 1e308)]) == 1e308
    assert mean([(1, 1e308), (2, -1e308), (3, 3.0)]) == 1.0


@pytest.mark.parametrize("rate", [1e-320, 1e-170, 1e300])  # squares: 0, 0 (underflow), overflow
def test_a_logged_rate_whose_square_is_0_or_infinite_is_no_step_size_evidence(tmp_path, rate):
    # shift / lr² would divide by 0 (1e-320² underflows) or by infinity: such steps are left out, and
    # the run's one-step bar still holds on the steps that have a usable rate
    metrics = rows({"learning_rate": [rate] * 9 + [2e-4], "policy_shift": [0.4] * 9 + [1.5]})
    found = only(check(tmp_path, metrics), "step-size")
    assert found.steps == (10, 10)  # the window of 8 needs 8 usable steps: the broken step alone is found


def test_a_configured_rate_whose_square_is_infinite_is_not_the_warm_up_target(tmp_path):
    # trainer.learning_rate 1e300: no prediction at it; judged at the logged rates (8e-4 at step 8)
    shift = [20000 * lr**2 for lr in WARMUP]
    metrics = rows({"learning_rate": WARMUP, "policy_shift": shift})
    assert "step-size" not in kinds(check(tmp_path, metrics, config={"trainer.learning_rate": 1e300}))


def test_a_grad_norm_spike_over_ten_times_the_median_before_it(tmp_path):
    # median of steps 1-6 is 0.5; step 7's 6.0 > 10 * 0.5
    grad = [0.5, 0.4, 0.6, 0.5, 0.5, 0.5, 6.0, 0.5, 0.5, 0.5]
    found = only(check(tmp_path, rows({"grad_norm": grad}), config={"trainer.max_grad_norm": 0.0}), "numeric")
    assert found.evidence == ["grad_norm 6 at step 7, 12x the median 0.5 of the steps before (1 such spikes)"]
    assert found.fix == "trainer.max_grad_norm=1"  # the run clipped nothing


def test_a_spike_that_comes_with_a_reward_outlier_blames_the_reward(tmp_path):
    # steps 1-6: grad_norm median 0.5, reward_std median 0.4; step 7: 300 (600x) with reward_std
    # 1250 (3125x): one completion scored on another scale, unnormalised (scale_rewards=none)
    grad = [0.5, 0.4, 0.6, 0.5, 0.5, 0.5, 300.0, 0.5, 0.5, 0.5]
    spread = [0.4] * 6 + [1250.0, 0.4, 0.4, 0.4]
    unscaled = {"recipe.scale_rewards": "none"}
    found = only(check(tmp_path, rows({"grad_norm": grad, "reward_std": spread}), config=unscaled), "numeric")
    assert found.evidence[1] == "reward_std 1.25e+03 at step 7, 3125x the median 0.4 before"
    assert (
        found.fix
        == f"recipe.scale_rewards=group (and read what the reward returned (rlrecipes show {tmp_path / 'run'}))"
    )
    assert "reward far outside its usual range" in found.cause


def test_spikes_with_a_calm_reward_are_the_update_size(tmp_path):
    # steps 7 and 9 past 10x the median before them (0.5, then 0.5 again): two spikes, clipped or not
    grad = [0.5, 0.4, 0.6, 0.5, 0.5, 0.5, 300.0, 0.5, 300.0, 0.5]
    spread = [0.4] * 6 + [4.0, 0.4, 0.4, 0.4]  # 10x the median: not past it
    found = only(check(tmp_path, rows({"grad_norm": grad, "reward_std": spread})), "numeric")
    assert found.fix == "trainer.learning_rate=0.0001"
    assert found.evidence == ["grad_norm 300 at step 7, 600x the median 0.5 of the steps before (2 such spikes)"]


@pytest.mark.parametrize("config", [{}, {"trainer.max_grad_norm": 1.0}])  # TRL's default clip, and set
def test_one_clipped_spike_with_a_calm_reward_is_no_precursor(tmp_path, config):
    # the clip bounds what step 7's 12x spike moves; a long healthy run has such a spike now and then
    grad = [0.5, 0.4, 0.6, 0.5, 0.5, 0.5, 6.0, 0.5, 0.5, 0.5]
    assert "numeric" not in kinds(check(tmp_path, rows({"grad_norm": grad}), config=config))


def test_grad_spikes_compare_each_step_with_the_median_of_every_step_before():
    import random
    import statistics

    from rlrecipes.doctor.stability_checks import grad_spikes

    draw = random.Random(7)
    for length in (5, 6, 7, 40):  # the running median, odd and even counts, against the plain one
        points = [(s, draw.choice([0.5, 0.4, 0.6, 0.05, 9.0, 30.0])) for s in range(1, length + 1)]
        plain = [
            (step, value, statistics.median(v for _, v in points[:i]))
            for i, (step, value) in enumerate(points)
            if i >= 5
            and statistics.median(v for _, v in points[:i]) > 0
            and value > 10 * statistics.median(v for _, v in points[:i])
        ]
        assert grad_spikes(points) == plain
    assert plain  # the last draw has spikes to find


def test_a_grad_norm_ten_times_the_median_is_no_spike(tmp_path):
    grad = [0.5, 0.4, 0.6, 0.5, 0.5, 0.5, 5.0, 0.5, 0.5, 0.5]
    assert "numeric" not in kinds(check(tmp_path, rows({"grad_norm": grad})))


# ------------------------------------------------------------------------------- tool loop
TOOLS = {"rollout.tools": ["calculator"]}


def tool_rows(calls, errors, invalid=0.0):
    return rows({"tools/calls_per_rollout": calls, "tools/error_rate": errors, "tools/invalid_action_rate": invalid})


def test_a_tool_loop_that_never_calls(tmp_path):
    found = only(check(tmp_path, tool_rows([1.0] * 8 + [0.04, 0.04], 0.0, 1.0), config=TOOLS), "tool-loop")
    assert found.metric == "tools/calls_per_rollout"
    assert found.evidence == [
        "tools/calls_per_rollout 0.04 (mean of steps 9-10)",
        "tools/invalid_action_rate 1 (mean of steps 9-10)",
    ]


def test_a_tool_that_always_times_out_gets_more_time(tmp_path):
    # error rate at the end (0.95 + 0.9) / 2 = 0.925 >= 0.9; the stored reply says why
    reply = sample(
        turns=[
            {"by": "model", "text": "<calc>2**99</calc>"},
            {"by": "tool", "text": "error: calculator timed out after 10 s"},
        ]
    )
    verdict = check(tmp_path, tool_rows(1.5, [0.5] * 8 + [0.95, 0.9]), config=TOOLS, samples={10: [reply]})
    found = only(verdict, "tool-loop")
    assert found.metric == "tools/error_rate" and found.fix == "rollout.tool_timeout_s=20"
    assert found.sample == 'step 10, group 0: the tool replied "error: calculator timed out after 10 s"'


def test_a_tool_loop_is_judged_over_sixteen_groups(tmp_path):
    # 4 prompts a rollout: the last 4 steps, not the fifth (steps 9-10)
    four = {**TOOLS, "trainer.prompts_per_rollout": 4}
    calls = [1.0] * 6 + [0.0, 0.0, 0.08, 0.08]  # steps 7-10: 0.04 < 0.05; steps 9-10: 0.08
    assert only(check(tmp_path / "calls", tool_rows(calls, 0.0), config=four), "tool-loop").steps == (7, 10)
    assert "tool-loop" not in kinds(check(tmp_path / "calls8", tool_rows(calls, 0.0), config=TOOLS))
    errors = [0.5] * 6 + [1.0, 1.0, 0.85, 0.85]  # steps 7-10: 0.925 >= 0.9; steps 9-10: 0.85
    found = only(check(tmp_path / "errors", tool_rows(1.5, errors), config=four), "tool-loop")
    assert found.metric == "tools/error_rate" and found.steps == (7, 10)
    assert "tool-loop" not in kinds(check(tmp_path / "errors8", tool_rows(1.5, errors), config=TOOLS))


def test_a_tool_loop_that_calls_and_mostly_works_is_fine(tmp_path):
    verdict = check(tmp_path, tool_rows([1.0] * 8 + [0.05, 0.05], [0.5] * 8 + [0.85, 0.85]), config=TOOLS)
    assert "tool-loop" not in kinds(verdict)
