"""QwenLong-L1's three DocQA reward rules and its judge fallback (Tongyi-Zhiwen/QwenLong-L1 at
38d0806, verl/verl/utils/reward_score/{long,docmath,docqa}.py), on hand-made completions: every
expected value is worked out in the comments from the rule the docstring cites."""

from __future__ import annotations

import pytest

from rlrecipes.errors import UserError
from rlrecipes.rewards import RewardContext, build_reward
from rlrecipes.rewards.docqa import (
    CHOICE,
    DOCMATH,
    MULTIHOP,
    DocQAOptions,
    OrmJudge,
    choice_score,
    docmath_score,
    docqa_rewards,
    domain_of,
    multihop_score,
    normalize_number,
    orm_judge,
    question_of,
)

T = "<think>reading the document...</think>\n\n"  # the answer is what follows the last </think>


def test_multiple_choice_reads_the_letter_after_the_thinking():
    gold = "The correct answer is (B)"
    assert choice_score(T + "The correct answer is (B).", gold) == 1.0
    assert choice_score(T + "The correct answer is **(B)**", gold) == 1.0  # asterisks dropped first
    assert choice_score(T + "The correct answer is B.", gold) == 1.0  # a bare letter
    assert choice_score(T + "The correct answer is (C)", gold) == 0.0
    assert choice_score("The correct answer is (B)", gold) == 0.0  # no </think>: no answer at all
    assert choice_score("<think>The correct answer is (B)</think> unsure", gold) == 0.0  # only after </think>
    assert choice_score(T + "the correct answer is (B)", gold) == 0.0  # the phrase is case-sensitive
    assert choice_score(T + "The correct answer is (B)", "B") == 1.0  # a bare gold letter is the answer


def test_docmath_compares_numbers_as_the_authors_do():
    def score(answer, gold):
        return docmath_score(T + answer, gold)[0]

    assert docmath_score(T + "So the answer is $1,234.5.", "The answer is 1234.5") == (1.0, "$1234.5", "1234.5")
    assert score("THE ANSWER IS 7", "the answer is 7") == 1.0  # any case (re.IGNORECASE)
    # within 0.15 %: 200 +- 0.3
    assert score("the answer is 200.29", "the answer is 200") == 1.0
    assert score("the answer is 200.31", "the answer is 200") == 0.0
    # a percentage slip: 0.4531 <= 45.3 / 50 and 0.4531 x 100 = 45.31 is within 45.3 +- 0.06795
    assert score("the answer is 0.4531", "the answer is 45.3") == 1.0
    # rounded up to 3 decimals both are 0.002 (ceil(1.1) / 1000, ceil(1.9) / 1000); 0.15 % of
    # 0.0011 would allow only 0.0011 +- 0.00000165
    assert score("the answer is 0.0019", "the answer is 0.0011") == 1.0
    assert score("the answer is 0.0031", "the answer is 0.0011") == 0.0
    # a power of ten apart: log10(10) - log10(1) = 1 - 0 = 1 exactly (no other test takes 1 for 10:
    # 1 > 10 / 50, and the two differ rounded up to 3 decimals)
    assert score("the answer is 1", "the answer is 10") == 1.0
    # 0.125 x 100 = 12.5 exactly: the percentage slip (and log10(12.5) - log10(0.125) = 2)
    assert score("the answer is 0.125", "the answer is 12.5") == 1.0
    assert score("I computed 1234.5", "the answer is 1234.5") == 0.0  # no "the answer is"
    assert score("the answer is 1234.5", "1234.5") == 1.0  # a bare gold number is the answer
    # the authors' normalisation: units dropped, a leading "." read as its unit (".5" -> 5)
    assert (normalize_number("=42"), normalize_number(".5"), normalize_number("007")) == (42, 5, 0)


def test_multihop_answers_match_by_substring_after_squad_normalisation():
    gold = "the answer is Eiffel Tower"
    assert multihop_score(T + "Both say it, so the answer is the Eiffel Tower in Paris.", gold)[0] == 1.0
    assert multihop_score(T + "the answer is Tower", gold)[0] == 1.0  # the prediction inside the gold counts too
    assert multihop_score(T + "the answer is London", gold) == (0.0, "London", "Eiffel Tower")
    assert multihop_score(T + "The answer is Eiffel Tower", gold)[0] == 0.0  # "the answer is", this case only
    assert multihop_score(T + "the answer is Eiffel Tower", "Eiffel Tower")[0] == 1.0  # a bare gold


def test_each_row_gets_its_domains_rule():
    assert [domain_of(g) for g in ("The correct answer is (D)", "(A)", "the answer is 3.5", "-12", "Paris")] == [
        CHOICE,
        CHOICE,
        DOCMATH,
        DOCMATH,
        MULTIHOP,
    ]
    # a data source decides as the authors' routing does, whatever the gold looks like
    assert domain_of("Paris", "docmath_qa") == DOCMATH
    assert domain_of("3", "multihoprag_x") == domain_of("3", "musique") == MULTIHOP
    assert domain_of("3", "long_toc_choices_7") == CHOICE
    with pytest.raises(ValueError, match="'gsm8k' has no QwenLong-L1 rule"):
        domain_of("3", "gsm8k")


class FakeJudge:
    def __init__(self, says):
        self.says, self.asked = list(says), []

    def outputs(self, messages):
        self.asked += list(messages)
        return [self.says.pop(0) for _ in messages]


PROBLEM = "<text>The report...</text>\nWhat was the revenue?\nFormat your response as follows: ..."


def test_the_judge_is_asked_only_what_docmath_and_multihop_rules_reject():
    rows = [
        (T + "The correct answer is (A)", "The correct answer is (B)"),  # choice, wrong: never judged
        (T + "the answer is 45", "the answer is 46"),  # DocMath, wrong: judged, "[[YES]]" -> 1
        (T + "the answer is Paris", "the answer is Paris"),  # multi-hop, right: not judged
        (T + "no phrase here", "the answer is Rome"),  # multi-hop, nothing extracted: not judged
        (T + "the answer is Londres", "the answer is London"),  # multi-hop, wrong: judged, "[[NO]]" -> 0
        (T + "the answer is 3", "the answer is 4"),  # DocMath, wrong: the judge timed out -> None
    ]
    judge = FakeJudge(["They are the same. [[YES]]", "Different cities. [[NO]]", None])
    rewards = docqa_rewards([c for c, _ in rows], [g for _, g in rows], [PROBLEM] * 6, judge)
    assert rewards == [0.0, 1.0, 1.0, 0.0, 0.0, None]
    # the question is cut from between "</text>" and "Format your response as follows:"
    assert judge.asked[0] == "\nProblem: What was the revenue?\nAnswer 1: 45\nAnswer 2: 46\n"
    assert [m.split("Answer 1: ")[1] for m in judge.asked] == [
        "45\nAnswer 2: 46\n",
        "Londres\nAnswer 2: London\n",
        "3\nAnswer 2: 4\n",
    ]
    # without a judge (LLM_JUDGE=N) the rules alone
    assert docqa_rewards([c for c, _ in rows], [g for _, g in rows], [PROBLEM] * 6) == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert question_of("no markers") == "no markers"


def test_the_registered_reward_and_its_options():
    ctx = RewardContext(verify=lambda c, g: False)
    rules = build_reward("docqa", ctx)
    out = rules(
        prompts=["p", "p"],
        completions=[T + "the answer is 2", T + "x"],
        answer=["2", "The correct answer is (A)"],
        problem=[PROBLEM, PROBLEM],
    )
    assert out == [1.0, 0.0]
    judged = build_reward(
        "docqa", RewardContext(verify=lambda c, g: False, options={"model": "Qwen/Qwen2.5-1.5B-Instruct"})
    )
    assert judged.__name__ == "docqa"
    judge = orm_judge(DocQAOptions(model="m", timeout_s=5.0))
    assert isinstance(judge, OrmJudge) and judge.model is None  # loaded at its first question
    assert (judge.settings.model, judge.settings.template, judge.settings.timeout_s) == ("m", "plain", 5.0)
    assert orm_judge(DocQAOptions()) is None
    with pytest.raises(UserError, match="unknown option"):
        build_reward("docqa", RewardContext(verify=lambda c, g: False, options={"modle": "x"}))
