"""The multi-turn tool rollout on scripted generations (the toy's character tokenizer: one
token per character, so every length below is counted by hand from the strings)."""

from __future__ import annotations

import threading

import pytest

from rlrecipes.tool_loop.rollout import (
    FILLER,
    MODEL,
    TOOL,
    ToolRollout,
    ToolRolloutSettings,
    find_stop,
    model_written,
    rollout_metrics,
    rollout_stats,
)
from rlrecipes.tools import ToolSpec


@pytest.fixture(scope="module")
def tok():
    from rlrecipes.models.toy import build_tokenizer

    return build_tokenizer()


def enc(tok, text):
    return tok.encode(text, add_special_tokens=False)


class Script:
    """A generator that returns, call after call, the next scripted text for each row, and
    records what it was asked to continue."""

    def __init__(self, tok, turns: list[list[str]], eos_after: set[tuple[int, int]] = frozenset()):
        self.tok, self.turns, self.eos_after = tok, turns, eos_after
        self.calls: list[tuple[list[list[int]], int]] = []

    def __call__(self, prompt_ids, max_new_tokens):
        call = len(self.calls)
        self.calls.append(([list(p) for p in prompt_ids], max_new_tokens))
        out = []
        for row, text in enumerate(self.turns[call]):
            ids = enc(self.tok, text) + ([self.tok.eos_token_id] if (call, row) in self.eos_after else [])
            out.append(ids[:max_new_tokens])
        out += [[self.tok.eos_token_id]] * (len(prompt_ids) - len(out))  # padding rows
        return out, None


def search_returning(text):
    return ToolSpec("search", "<search>", "</search>", "<information>{}</information>", lambda q: text)


def settings(**kw):
    base = dict(max_turns=2, max_completion_tokens=200, max_result_tokens=50, timeout_s=5.0)
    return ToolRolloutSettings(**{**base, **kw})


def test_tool_tokens_are_masked_and_kept_tokens_are_the_sampled_ones(tok):
    # turn 1 samples past the closing tag ("xyz" after </search>): the cut keeps 19 tokens;
    # the tool's 30 tokens follow with mask 0; turn 2 answers, then its own EOS (mask 1)
    script = Script(tok, [["<search>ab</search>xyz"], ["<answer>7</answer>"]], eos_after={(1, 0)})
    rollout = ToolRollout([search_returning("Doc")], settings(), tok)
    prompt = enc(tok, "Q:")
    [row] = rollout.run([prompt], script)

    first = enc(tok, "<search>ab</search>")  # 8 + 2 + 9 = 19 tokens
    info = enc(tok, "<information>Doc</information>")  # 13 + 3 + 14 = 30 tokens
    answer = enc(tok, "<answer>7</answer>") + [tok.eos_token_id]  # 18 + 1 tokens
    assert (len(first), len(info), len(answer)) == (19, 30, 19)
    assert row.ids == first + info + answer
    assert row.env_mask() == [1] * 19 + [0] * 30 + [1] * 19
    assert row.origin == [MODEL] * 19 + [TOOL] * 30 + [MODEL] * 19
    # the second turn continued from the prompt, the kept sample and the tool result
    assert script.calls[1][0] == [prompt + first + info]
    assert script.calls[1][1] == 200 - 49  # the turn may use only what is left of the budget
    assert (row.turns, row.tool_calls, row.tool_errors, row.invalid_actions, row.answered) == (2, 1, 0, 0, True)
    assert rollout.model_text(row) == "<search>ab</search><answer>7</answer>"


def test_answer_without_eos_ends_with_a_masked_eos(tok):
    # the model's turn goes on after </answer>; the cut drops that and an EOS it did not
    # sample is appended with mask 0, so TRL counts the rollout as finished, not truncated
    rollout = ToolRollout([search_returning("Doc")], settings(), tok)
    [row] = rollout.run([enc(tok, "Q:")], Script(tok, [["<answer>7</answer> more"]]))
    assert row.ids == enc(tok, "<answer>7</answer>") + [tok.eos_token_id]
    assert row.origin == [MODEL] * 18 + [FILLER]
    assert row.env_mask() == [1] * 18 + [0]
    assert row.env_mask(mask_tool_output=False) == [1] * 18 + [0]


def test_an_answer_only_in_a_tool_result_is_not_model_text(tok):
    script = Script(tok, [["<search>q</search>"], [""]], eos_after={(1, 0)})
    rollout = ToolRollout([search_returning("<answer>42</answer>")], settings(), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert "<answer>42</answer>" in tok.decode(row.ids)
    assert rollout.model_text(row) == "<search>q</search>"
    assert not row.answered
    # the trainer scores rewards on model_text when a row carries it
    assert model_written([{"model_text": "mine"}], ["mine + tool"]) == ["mine"]
    assert model_written([{"answer": "1"}], ["plain"]) == ["plain"]


def test_tool_result_is_cut_to_its_token_budget(tok):
    tool = ToolSpec("calc", "<c>", "</c>", "<r>{}</r>", lambda q: "0123456789")
    script = Script(tok, [["<c>1</c>"], ["<answer>1</answer>"]], eos_after={(1, 0)})
    rollout = ToolRollout([tool], settings(max_result_tokens=4), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    tool_part = [t for t, o in zip(row.ids, row.origin) if o == TOOL]
    assert tok.decode(tool_part) == "<r>0123</r>"  # 4 result tokens, the wrap kept whole


def test_the_completion_budget_covers_tool_tokens(tok):
    # budget 12: "<c>1</c>" takes 8, the result "<r>0123456789</r>" is cut to the 4 left
    tool = ToolSpec("calc", "<c>", "</c>", "<r>{}</r>", lambda q: "0123456789")
    script = Script(tok, [["<c>1</c>"]])
    rollout = ToolRollout([tool], settings(max_completion_tokens=12), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert len(row.ids) == 12 and row.done
    assert tok.decode(row.ids) == "<c>1</c><r>0"
    assert len(script.calls) == 1  # nothing left to generate with


def test_errors_and_timeouts_become_text_the_model_reads(tok):
    def boom(query):
        raise ValueError("boom")

    never = threading.Event()
    tools = [
        ToolSpec("bad", "<b>", "</b>", "[{}]", boom),
        ToolSpec("hang", "<h>", "</h>", "[{}]", lambda q: never.wait()),
    ]
    script = Script(tok, [["<b>x</b>"], ["<h>y</h>"], ["done"]], eos_after={(2, 0)})
    rollout = ToolRollout(tools, settings(timeout_s=0.05), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    text = tok.decode(row.ids)
    assert "[error: ValueError: boom]" in text
    assert "[error: hang timed out after 0.05 s]" in text
    assert (row.tool_calls, row.tool_errors) == (2, 2)


def test_max_turns_then_one_final_turn_without_tools(tok):
    # max_turns=1: the second turn's <search> is not run (no tools in the final turn)
    calls = []
    tool = ToolSpec("search", "<search>", "</search>", "<i>{}</i>", lambda q: calls.append(q) or "D")
    script = Script(tok, [["<search>a</search>"], ["<search>b</search>"]], eos_after={(1, 0)})
    rollout = ToolRollout([tool], settings(max_turns=1), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert calls == ["a"]
    assert len(script.calls) == 2 and row.turns == 2
    assert tok.decode(row.ids, skip_special_tokens=True) == "<search>a</search><i>D</i><search>b</search>"
    assert row.ids[-1] == tok.eos_token_id
    assert row.invalid_actions == 1  # the final turn ended without an answer


def test_closing_tag_without_opening_tag_is_an_invalid_action(tok):
    calls = []
    tool = ToolSpec("search", "<search>", "</search>", "<i>{}</i>", lambda q: calls.append(q) or "D")
    script = Script(tok, [["what</search>"], ["<answer>1</answer>"]], eos_after={(1, 0)})
    [row] = ToolRollout([tool], settings(), tok).run([enc(tok, "Q:")], script)
    assert calls == [] and row.invalid_actions == 1 and row.tool_calls == 0
    assert "<i>error: </search> without <search></i>" in tok.decode(row.ids)


def test_finished_rows_are_padded_so_every_turn_has_the_same_row_count(tok):
    # row 0 answers in turn 1; row 1 searches. Turn 2 still sends 2 rows (sync reports 2
    # unfinished rows on some process); the padding row's output is dropped.
    script = Script(tok, [["<answer>1</answer>", "<search>a</search>"], ["<answer>2</answer>"]], {(0, 0), (1, 0)})
    rollout = ToolRollout([search_returning("D")], settings(), tok)
    rows = rollout.run([enc(tok, "A"), enc(tok, "B")], script, sync=lambda n, budget: (2 if n else 0, budget))
    assert [len(c[0]) for c in script.calls] == [2, 2]
    assert script.calls[1][0][1] == enc(tok, "A")  # the padding row: the first prompt
    assert rollout.model_text(rows[0]) == "<answer>1</answer>"
    assert rollout.model_text(rows[1]) == "<search>a</search><answer>2</answer>"


def test_stop_at_the_earliest_closing_tag():
    search = ToolSpec("search", "<search>", "</search>", "{}", str)
    code = ToolSpec("py", "```python", "```", "{}", str)
    stop = find_stop("<search>a</search><answer>b</answer>", [search], "</answer>")
    assert (stop.end, stop.tool.name, stop.query) == (18, "search", "a")
    stop = find_stop("x<answer>b</answer><search>a</search>", [search], "</answer>")
    assert stop.end == 19 and stop.tool is None
    # a closing tag that is a prefix of the opening tag is looked for after the opening one
    stop = find_stop("```python\nprint(1)\n```", [code], "</answer>")
    assert (stop.end, stop.query) == (22, "\nprint(1)\n")


def test_metrics_from_hand_counted_rollouts(tok):
    script = Script(
        tok,
        [["<search>a</search>", "oops"], ["<answer>1</answer>"]],
        eos_after={(0, 1), (1, 0)},
    )
    rollout = ToolRollout([search_returning("D")], settings(), tok)
    rows = rollout.run([enc(tok, "A"), enc(tok, "B")], script)
    metrics = rollout_metrics(rollout_stats(rows))
    # row 0: 2 turns, 1 call, 18 model + 28 tool + 19 model tokens; row 1: 1 turn, "oops" + EOS
    info = len(enc(tok, "<information>D</information>"))  # 13 + 1 + 14 = 28
    tokens = 18 + info + 19 + 5  # row 0, then row 1: "oops" + EOS
    assert metrics == {
        "tools/calls_per_rollout": 0.5,
        "tools/error_rate": 0.0,
        "tools/invalid_action_rate": 1 / 3,  # row 1's one turn ended without call or answer
        "tools/turns": 1.5,
        "tools/answer_rate": 0.5,
        "tools/tool_token_share": info / tokens,
        "tools/void_turn_rate": 0.5,  # row 1's "oops": neither a call nor an answer
    }
    assert info == 28
