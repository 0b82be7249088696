"""A judge as a reward: options, pointwise/pairwise rewards from scripted judge outputs, the
hybrid's rule-OR-judge, failure handling, and a tiny policy trained against a tiny judge."""

import json

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.rewards import RewardContext, build_reward
from rlrecipes.rewards.judge import Judge, JudgeRewardSettings, judge_rewards
from tests.conftest import compose


class ScriptedJudge(Judge):
    """A Judge whose outputs are given: no model."""

    def __init__(self, settings, outputs):
        super().__init__(settings)
        self.scripted, self.asked = list(outputs), []

    def outputs(self, user_messages):
        self.asked += list(user_messages)
        return [self.scripted.pop(0) for _ in user_messages]


def test_the_judge_generates_in_batches_until_its_deadline(monkeypatch):
    """`Judge.outputs` draws through the one sampling loop: `batch_size` messages per greedy
    call, each seeded with the judge's seed; a batch not started by `timeout_s` is not
    generated and its messages get None. The clock is scripted: one second per call."""
    import rlrecipes.generation as generation
    import rlrecipes.rewards.judge as judge_module
    from rlrecipes.generation import Completion

    now, calls = [0.0], []

    def hf_generate(model, tokenizer, prompts, sampling, seed=None):
        calls.append((list(prompts), sampling.temperature, seed))
        now[0] += 1.0
        return [[Completion(f"judged {p}", 1, "stop")] for p in prompts]

    monkeypatch.setattr(generation, "hf_generate", hf_generate)
    monkeypatch.setattr(judge_module, "time", type("Clock", (), {"monotonic": staticmethod(lambda: now[0])}))
    settings = JudgeRewardSettings(model="x", template="plain", batch_size=2, timeout_s=1.5)
    judge = Judge(settings, seed=5)
    judge.model, judge.tokenizer = object(), object()  # loaded: `outputs` does not load again
    out = judge.outputs(["m1", "m2", "m3", "m4", "m5"])
    # batches start at t=0 and t=1 (<= 1.5); the third would start at t=2, past the deadline
    assert calls == [(["m1", "m2"], 0.0, 5), (["m3", "m4"], 0.0, 5)]
    assert out == ["judged m1", "judged m2", "judged m3", "judged m4", None]


class EndsAtOnce:
    """A stand-in judge model for the real `hf_generate`: every completion is EOS at once."""

    training = False

    def __init__(self, tok):
        import torch

        self.tok, self.generation_config = tok, type("Config", (), {"eos_token_id": tok.eos_token_id})()
        self.zero = torch.zeros(1)

    def parameters(self):
        yield self.zero

    def eval(self):
        pass

    def train(self, mode=True):
        pass

    def generate(self, input_ids, generation_config, tokenizer=None, **_):
        import torch

        return torch.cat([input_ids, torch.full((len(input_ids), 1), self.tok.eos_token_id)], dim=1)


def test_judging_leaves_the_training_processs_random_stream_alone():
    """The judge reseeds torch for each batch; it runs inside the policy's training process, so
    the draws after a reward call must be the ones that would have come without it."""
    import torch

    from rlrecipes.models.toy import build_tokenizer

    tok = build_tokenizer()
    judge = Judge(JudgeRewardSettings(model="x", template="plain", batch_size=2), seed=5)
    judge.model, judge.tokenizer = EndsAtOnce(tok), tok
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    assert judge.outputs(["m1", "m2", "m3"]) == ["", "", ""]
    assert torch.equal(torch.rand(3), expected)


def test_options_are_checked_with_one_line():
    with pytest.raises(ConfigError, match="needs options.model"):
        JudgeRewardSettings.from_options({}, "judge")
    with pytest.raises(ConfigError, match="unknown option 'modle'; valid: model, format"):
        JudgeRewardSettings.from_options({"modle": "x"}, "judge")
    with pytest.raises(ConfigError, match="options.format='listwise'; valid: pointwise, pairwise"):
        JudgeRewardSettings.from_options({"model": "x", "format": "listwise"}, "judge")


def test_pointwise_reward_is_score_over_ten_and_unparsed_is_none():
    judge = ScriptedJudge(JudgeRewardSettings(model="x"), ["<score>8</score>", "no score", None])
    rewards, records = judge_rewards(judge, ["q1", "q2", "q3"], ["r1", "r2", "r3"], ["4", None, "6"])
    assert rewards == [0.8, None, None]
    assert [r["statuses"] for r in records] == [["ok"], ["none"], ["timeout"]]
    assert "(Reference answer: 4)" in judge.asked[0] and "Reference answer" not in judge.asked[1]


def test_pairwise_reward_votes_over_both_orders():
    a, b = "<answer>[[A]]</answer>", "<answer>[[B]]</answer>"
    # row 1: the response wins in both orders; row 2: position-biased (A twice); row 3: one order parses
    judge = ScriptedJudge(JudgeRewardSettings(model="x", format="pairwise"), [a, b, a, a, "?", b])
    rewards, _ = judge_rewards(judge, ["q"] * 3, ["r1", "r2", "r3"], ["1", "2", "3"])
    assert rewards == [1.0, 0.5, 1.0]
    assert judge.asked[0].index("r1") < judge.asked[0].index("Answer: 1")  # order 1: response first
    assert judge.asked[1].index("Answer: 1") < judge.asked[1].index("r1")


def test_hybrid_asks_the_judge_only_where_the_rule_says_no(tmp_path, monkeypatch):
    import rlrecipes.rewards.judge as judge_module
    from rlrecipes.rewards import reward_names

    # every reward module imported before the patch: one first imported under it (the behaviour
    # counter binds `Judge` by name) would keep the scripted judge for the rest of the session
    reward_names()
    judge = ScriptedJudge(JudgeRewardSettings(model="x"), ["<score>7</score>", "<score>2</score>"])
    monkeypatch.setattr(judge_module, "Judge", lambda settings, seed: judge)
    verify = lambda completion, gold: completion.strip() == f"Answer: {gold}"  # noqa: E731
    ctx = RewardContext(verify=verify, options={"model": "x", "threshold": 0.5}, run_dir=tmp_path)
    fn = build_reward("judge_hybrid", ctx)
    out = fn(prompts=["p1", "p2", "p3"], completions=["Answer: 5", "Answer: five", "Answer: 9"], answer=["5", "5", "5"])
    assert out == [1.0, 1.0, 0.0]  # rule match; judge 0.7 >= 0.5; judge 0.2
    assert len(judge.asked) == 2  # the rule's match was never judged
    logged = [json.loads(x) for x in (tmp_path / "judge_verdicts.jsonl").read_text().splitlines()]
    assert [r["prompt"] for r in logged] == ["p2", "p3"] and logged[0]["judge_outputs"] == ["<score>7</score>"]


@pytest.mark.integration
def test_tiny_policy_trained_against_a_tiny_judge_logs_its_verdicts(toy_model_dir, tmp_path):
    from rlrecipes.models import resolve_model_path
    from rlrecipes.recipes.j1 import J1
    from rlrecipes.training.job import train

    judge_cfg = compose("recipe=j1", "recipe.prompt=compact", "model.toy.sft_max_new_tokens=24")
    recipe = J1(judge_cfg.recipe)
    problems = recipe.problem_set(judge_cfg.data)
    judge_dir = resolve_model_path(
        judge_cfg.model, problems.task, recipe.warm_start_key(judge_cfg.data), log=lambda _: None
    )
    cfg = compose(
        f"model.name_or_path={toy_model_dir}",
        "reward=judge",
        f"recipe.rewards.0.options.model={judge_dir}",
        "recipe.rewards.0.options.prompt=compact",
        "recipe.rewards.0.options.format=pairwise",
        "recipe.rewards.0.options.max_new_tokens=24",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    summary = train(cfg, tmp_path, log=lambda _: None)
    assert summary["steps"] == 2
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all("rewards/judge/mean" in r for r in rows)
    logged = [json.loads(x) for x in (tmp_path / "judge_verdicts.jsonl").read_text().splitlines()]
    assert len(logged) == 2 * 4 * 4  # every sample of both steps (4 prompts x 4 generations)
    assert {"prompt", "completion", "answer", "judge_outputs", "statuses", "reward"} <= set(logged[0])
