"""SimpleTIR's void turns and its markdown code fences, on scripted token rollouts (the toy's
character tokenizer: one token per character, so lengths are counted from the strings).

A void turn ends with neither a complete code block nor an answer (ltzheng/SimpleTIR
recipe/simpletir/agent_utils.py:594-604); with void-turn masking the trajectory's whole
completion leaves the loss (simpletir_ray_trainer.py:1162-1165)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlrecipes.tool_loop.rollout import ToolRollout, ToolRolloutSettings, find_stop, rollout_metrics, rollout_stats
from rlrecipes.tools import ToolSpec

from .test_rollout import Script, enc

FENCE = ToolSpec("python", "```python", "```", "\nCode execution result: {}\n", lambda code: "1024\n")


@pytest.fixture(scope="module")
def tok():
    from rlrecipes.models.toy import build_tokenizer

    return build_tokenizer()


def settings(**kw):
    base = dict(max_turns=2, max_completion_tokens=200, max_result_tokens=50, timeout_s=5.0, answer_mark="\\boxed{")
    return ToolRolloutSettings(**{**base, **kw})


class FakeTrainer:
    """What `ToolRollout.__call__` uses of TRL's GRPOTrainer: one process, a scripted generator."""

    def __init__(self, tok, script):
        self.tok, self.script, self.logged = tok, script, {}
        self.accelerator = SimpleNamespace(num_processes=1)
        self.eos_token_ids = [tok.eos_token_id]

    def _tokenize_prompts(self, prompts):
        return [enc(self.tok, p) for p in prompts], None, None

    def _generate_single_turn(self, prompt_ids, images, kwargs, n):
        return self.script(prompt_ids, 10_000)

    def log_metric(self, name, value):
        self.logged[name] = value


# row 0: a code block, its result, then a boxed answer and EOS (no void turn);
# row 1: prose that ends at EOS with neither a code block nor \boxed{ (a void turn);
# row 2: answers at once with \boxed{} and EOS (no void turn).
TURNS = [["```python\nprint(2**10)\n```", "I give up.", "\\boxed{7}"], ["\\boxed{1024}"]]
EOS_AFTER = {(0, 1), (0, 2), (1, 0)}


def rollout_outputs(tok, **kw):
    rollout = ToolRollout([FENCE], settings(**kw), tok)
    trainer = FakeTrainer(tok, Script(tok, TURNS, EOS_AFTER))
    return rollout(["Q0", "Q1", "Q2"], trainer), trainer.logged


def test_a_trajectory_with_a_void_turn_gets_an_all_zero_mask(tok):
    out, logged = rollout_outputs(tok, void_turn_masking=True)
    code = len("```python\nprint(2**10)\n```")  # 26 tokens
    result = len("\nCode execution result: 1024\n\n")  # 30: the wrap around "1024\n"
    answer = len("\\boxed{1024}") + 1  # 12 and the model's EOS
    assert (code, result, answer) == (26, 30, 13)
    assert out["env_mask"][0] == [1] * code + [0] * result + [1] * answer  # no void turn: kept
    assert out["env_mask"][1] == [0] * len("I give up.x")  # the void turn: all out of the loss
    assert out["env_mask"][2] == [1] * len("\\boxed{7}x")  # an answer without tools: kept
    assert logged["tools/void_turn_rate"] == 1 / 3
    assert logged["tools/answer_rate"] == 2 / 3  # \boxed{ counts as an answer
    assert out["model_text"][1] == "I give up."  # the reward still reads it (it stays in its group)


def test_without_void_turn_masking_the_void_trajectory_keeps_its_mask(tok):
    out, logged = rollout_outputs(tok)
    assert out["env_mask"][1] == [1] * len("I give up.x")
    assert logged["tools/void_turn_rate"] == 1 / 3  # measured either way


def test_void_turns_counted_by_hand(tok):
    # row 0: a stray closing tag (void) then an answer; row 1: runs out of budget mid-prose
    # (void); row 2: a code call then a final turn that answers (no void turn)
    close_only = ToolSpec("calc", "<calc>", "</calc>", "<r>{}</r>", lambda q: "3")
    script = Script(
        tok,
        [["1+2</calc>", "x" * 60, "<calc>1+2</calc>"], ["\\boxed{3}", "\\boxed{3}"]],
        eos_after={(1, 0), (1, 1)},
    )
    rollout = ToolRollout([close_only], settings(max_completion_tokens=60), tok)
    rows = rollout.run([enc(tok, "A"), enc(tok, "B"), enc(tok, "C")], script)
    assert [r.void_turns for r in rows] == [1, 1, 0]
    assert [r.answered for r in rows] == [True, False, True]
    assert rollout_metrics(rollout_stats(rows))["tools/void_turn_rate"] == 2 / 3


def test_without_an_answer_mark_a_boxed_answer_is_a_void_turn(tok):
    script = Script(tok, [["\\boxed{3}"]], eos_after={(0, 0)})
    [row] = ToolRollout([FENCE], settings(answer_mark=""), tok).run([enc(tok, "A")], script)
    assert (row.void_turns, row.answered, row.invalid_actions) == (1, False, 1)


def test_markdown_fence_opening_is_not_a_stray_closing_fence(tok):
    # "```" is both the closing fence and the start of the opening one: a text holding only
    # "```" (the shortest prefix of "```python", which the token cut tries) is no stop
    assert find_stop("```", [FENCE], "</answer>") is None
    assert find_stop("Let me compute.\n```pyth", [FENCE], "</answer>") is None
    stop = find_stop("Let me compute.\n```python\nprint(1)\n```\nmore", [FENCE], "</answer>")
    assert (stop.end, stop.query) == (len("Let me compute.\n```python\nprint(1)\n```"), "\nprint(1)\n")


def test_markdown_fence_round_trip_in_token_space(tok):
    # row 0 samples past the closing fence; the cut keeps the block, not its first "```".
    # Row 1's block is short (15 tokens), so the cut's bisection tries the 8-token prefix
    # "```pytho", whose "```" must not read as a stray closing fence.
    script = Script(
        tok,
        [["Compute:\n```python\nprint(2**10)\n```\nthen", "```python\nx\n```"], ["\\boxed{1024}", "\\boxed{1024}"]],
        {(1, 0), (1, 1)},
    )
    rows = ToolRollout([FENCE], settings(), tok).run([enc(tok, "Q"), enc(tok, "R")], script)
    text = tok.decode(rows[0].ids, skip_special_tokens=True)
    assert text == "Compute:\n```python\nprint(2**10)\n```\nCode execution result: 1024\n\n\\boxed{1024}"
    assert tok.decode(rows[1].ids[:15], skip_special_tokens=True) == "```python\nx\n```"
    for row in rows:
        assert (row.tool_calls, row.invalid_actions, row.void_turns, row.answered) == (1, 0, 0, True)


def test_void_turn_settings_reach_the_rollout_and_fail_in_one_line():
    from omegaconf import OmegaConf

    from rlrecipes.config.schema import RolloutConfig
    from rlrecipes.errors import ConfigError
    from rlrecipes.tool_loop.build import check_tools, settings_for

    node = OmegaConf.structured(RolloutConfig)
    node.void_turn_masking, node.answer_mark = True, "\\boxed{"
    with pytest.raises(ConfigError, match=r"rollout.void_turn_masking=true needs a tool in rollout.tools"):
        check_tools(node)
    node.tools = ["calculator"]
    check_tools(node)
    chosen = settings_for(node, 64)
    assert (chosen.void_turn_masking, chosen.answer_mark) == (True, "\\boxed{")


def test_greedy_generation_does_not_stop_at_a_fence_that_also_opens(tok, monkeypatch):
    from rlrecipes.tool_loop import greedy

    seen = []

    def fake_generate(model, tokenizer, stops):
        seen.append(stops)
        return lambda prompt_ids, max_new_tokens: ([[tok.eos_token_id]] * len(prompt_ids), None)

    monkeypatch.setattr(greedy, "greedy_generate", fake_generate)
    monkeypatch.setattr(greedy, "eos_ids", lambda model, tokenizer: [tok.eos_token_id])
    search = ToolSpec("search", "<search>", "</search>", "{}", str)
    rollout = ToolRollout([FENCE, search], settings(max_turns=1), tok)
    greedy.greedy_tool_rows(None, tok, rollout, ["Q"])
    assert seen == [[["</search>", "</answer>"], ["</answer>"]]]
