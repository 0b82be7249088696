"""TTRL's majority vote and pseudo-rewards, on scripted groups (no model).

The group used below (boxed answers; the fourth response has none):
    \\frac{1}{2} | 0.5 | 3 | (none) | 3 | 1/2
Equivalence vote: {\\frac{1}{2}, 0.5, 1/2} has 3 votes, {3} has 2 -> label \\frac{1}{2}, ratio 3/6.
Rewards (agree with the label): 1 1 0 0 0 1.
With gold "3": true rewards 0 0 1 0 1 0; label wrong; pseudo == true on 1 of 6 (the 4th).
Exact vote (the TTRL code): keys \\frac{1}{2}, 0.5, 3, "", 3, 1/2 -> "3" has 2, every other key 1
-> label "3", rewards 0 0 1 0 1 0.
"""

import pytest

from rlrecipes.data.problems import answer_verifier
from rlrecipes.errors import UserError
from rlrecipes.rewards.majority import Vote, diagnostics, vote, vote_rewards

GROUP = ["so \\boxed{\\frac{1}{2}}", "\\boxed{0.5}", "it is \\boxed{3}", "I give up", "\\boxed{3}.", "\\boxed{1/2}"]
VERIFY = answer_verifier("boxed")


def test_equivalent_spellings_form_one_vote():
    assert vote(["\\frac{1}{2}", "0.5", "3", None, "3", "1/2"]) == ("\\frac{1}{2}", 3)
    # the exact rule splits them: "3" wins with its 2 identical strings
    assert vote(["\\frac{1}{2}", "0.5", "3", None, "3", "1/2"], exact=True) == ("3", 2)
    # normalisation still merges pure spellings under the exact rule ("\dfrac12" == "\frac{1}{2}")
    assert vote(["\\dfrac12", "\\frac{1}{2}", "3"], exact=True) == ("\\dfrac12", 2)


def test_ties_go_to_the_answer_seen_first():
    assert vote(["4", "3", "3", "4"]) == ("4", 2)
    assert vote(["4", "3", "3", "4"], exact=True) == ("4", 2)
    assert vote(["0.5", "3", "1/2", "3"]) == ("0.5", 2)  # {0.5, 1/2} ties {3}; 0.5 came first


def test_missing_answers_never_win_an_equivalence_vote_but_can_win_the_exact_one():
    assert vote([None, None, None, "7"]) == ("7", 1)
    assert vote([None, ""]) == (None, 0)
    assert vote([None, None, None, "7"], exact=True) == ("", 3)


def test_scripted_group_rewards_and_diagnostics_by_hand():
    v = vote_rewards(GROUP, style="boxed", verify=VERIFY, gold="3")
    assert (v.label, v.count, v.majority_ratio) == ("\\frac{1}{2}", 3, 0.5)
    assert v.rewards == [1.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert v.true_rewards == [0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert v.label_correct is False
    assert diagnostics([v]) == {"majority_ratio": 0.5, "label_accuracy": 0.0, "reward_accuracy": pytest.approx(1 / 6)}


def test_right_label_rewards_equal_the_true_rewards():
    v = vote_rewards(GROUP, style="boxed", verify=VERIFY, gold="0.50")  # gold in yet another spelling
    assert v.label_correct is True and v.rewards == v.true_rewards
    assert diagnostics([v])["reward_accuracy"] == 1.0


def test_exact_rule_on_the_scripted_group():
    v = vote_rewards(GROUP, style="boxed", verify=VERIFY, exact=True, gold="3")
    assert (v.label, v.count) == ("3", 2)
    assert v.rewards == [0.0, 0.0, 1.0, 0.0, 1.0, 0.0] and v.label_correct is True


def test_exact_rule_when_no_answer_wins_rewards_the_empty_responses():
    """TTRL's code: the empty string wins, and grade_answer("", "") holds for the empty ones."""
    v = vote_rewards(["none", "nothing", "\\boxed{2}"], style="boxed", verify=VERIFY, exact=True, gold="2")
    assert (v.label, v.count) == ("", 2)
    assert v.rewards == [1.0, 1.0, 0.0] and v.label_correct is False
    # the equivalence rule lets the one real answer win
    v = vote_rewards(["none", "nothing", "\\boxed{2}"], style="boxed", verify=VERIFY, gold="2")
    assert (v.label, v.rewards, v.label_correct) == ("2", [0.0, 0.0, 1.0], True)


def test_no_answer_at_all_gives_zero_rewards():
    v = vote_rewards(["a", "b"], style="boxed", verify=VERIFY, gold="1")
    assert (v.label, v.count, v.rewards, v.label_correct) == (None, 0, [0.0, 0.0], False)


def test_diagnostics_average_over_groups_and_skip_unlabelled_ones():
    a = Vote("1", 3, [1.0, 1.0, 1.0, 0.0], label_correct=True, true_rewards=[1.0, 1.0, 1.0, 0.0])
    b = Vote("2", 2, [1.0, 1.0, 0.0, 0.0], label_correct=False, true_rewards=[0.0, 0.0, 0.0, 0.0])
    c = Vote("5", 4, [1.0, 1.0, 1.0, 1.0])  # no gold: only its majority ratio counts
    d = diagnostics([a, b, c])
    assert d["majority_ratio"] == pytest.approx((3 / 4 + 2 / 4 + 4 / 4) / 3)
    assert d["label_accuracy"] == 0.5
    assert d["reward_accuracy"] == pytest.approx(6 / 8)  # a: 4 of 4 agree, b: 2 of 4


def test_majority_vote_is_a_group_reward_with_the_recipe_vote_rule():
    from rlrecipes.rewards import CompletionGroup, GroupReward, RewardContext, build_reward, reward_scope

    assert reward_scope("majority_vote") == "group"
    # "1/2" and "0.5" split the exact vote (the TTRL code's Counter) but not the equivalence one
    group = CompletionGroup("p", ["\\boxed{1/2}", "\\boxed{0.5}", "\\boxed{3}", "\\boxed{3}"], {"answer": ["3"] * 4})
    logged = {}
    exact = build_reward("majority_vote", RewardContext(verify=VERIFY, answer_style="boxed", recipe={"vote": "exact"}))
    assert isinstance(exact, GroupReward) and exact.__name__ == "majority_vote"
    # exact strings: "3" has two votes, "1/2" and "0.5" one each -> label 3 (right)
    assert exact.score([group], logged.__setitem__) == [[0.0, 0.0, 1.0, 1.0]]
    assert logged["ttrl/majority_ratio"] == 0.5 and logged["ttrl/label_accuracy"] == 1.0
    equivalent = build_reward(
        "majority_vote", RewardContext(verify=VERIFY, answer_style="boxed", recipe={"vote": "equivalence"})
    )
    # by equivalence 1/2 = 0.5 ties with 3 at two votes, and the group written first wins
    assert equivalent.score([group], lambda *_: None) == [[1.0, 1.0, 0.0, 0.0]]
    with pytest.raises(UserError, match="recipe.vote='plurality'; valid: equivalence, exact"):
        build_reward("majority_vote", RewardContext(verify=VERIFY, recipe={"vote": "plurality"}))
