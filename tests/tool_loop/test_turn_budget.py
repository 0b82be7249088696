"""The per-turn token cap, the invalid-action note and the tool result's character cap of the
tool loop, on scripted generations and on a scripted model (the toy's character tokenizer: one
token per character, so every length below is counted by hand from the strings).

- `rollout.max_turn_tokens`: each turn samples at most that many tokens of the completion budget
  (Search-R1's data.max_response_length=500, PeterGriffinJin/Search-R1 scripts/nq_hotpotqa/v0.2/
  train_grpo.sh:34; SimpleTIR's 8000 per turn within 16000, ltzheng/SimpleTIR README.md:61-62);
- `rollout.invalid_action_note`: a tool turn with neither a tool call nor an answer gets the note
  and the rollout goes on (search_r1/llm_agent/generation.py:395-401); null: it ends (SimpleTIR,
  recipe/simpletir/agent_utils.py:594-598);
- `rollout.max_tool_result_chars`: SimpleTIR's truncate_content (agent_utils.py:19-29, :630)."""

from __future__ import annotations

import re

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.tool_loop.build import check_tool_rollout, settings_from_config
from rlrecipes.tool_loop.rollout import MODEL, TOOL, ToolRollout, ToolRolloutSettings, cap_chars
from rlrecipes.tools import ToolSpec
from tests.conftest import compose

from .test_rollout import Script, enc

# Search-R1's note, as generation.py:396-398 writes it (its line continuations join the lines)
SEARCH_R1_NOTE = (
    "\nMy previous action is invalid. If I want to search, I should put the query between <search> and "
    "</search>. If I want to give the final answer, I should put the answer between <answer> and </answer>. "
    "Let me try again.\n"
)


@pytest.fixture(scope="module")
def tok():
    from rlrecipes.models.toy import build_tokenizer

    return build_tokenizer()


def search_returning(text):
    return ToolSpec("search", "<search>", "</search>", "<information>{}</information>", lambda q: text)


def settings(**kw):
    base = dict(max_turns=2, max_completion_tokens=200, max_result_tokens=500, timeout_s=5.0)
    return ToolRolloutSettings(**{**base, **kw})


class Unbounded(Script):
    """A generator that returns its whole scripted text whatever it is asked for: the loop's own
    cut, not the generator's, must hold each turn to its cap."""

    def __call__(self, prompt_ids, max_new_tokens):
        self.calls.append(([list(p) for p in prompt_ids], max_new_tokens))
        texts = self.turns[len(self.calls) - 1]
        return [enc(self.tok, t) for t in texts] + [[self.tok.eos_token_id]] * (len(prompt_ids) - len(texts)), None


# turn 1 writes past the cap of 20 without a tag; turn 2 searches; the final turn answers
TURNS = [["I am not sure about it yet"], ["<search>q</search>"], ["<answer>7</answer>"]]


def test_each_turn_samples_at_most_max_turn_tokens(tok):
    script = Unbounded(tok, TURNS)
    [row] = ToolRollout([search_returning("D")], settings(max_turn_tokens=20), tok).run([enc(tok, "Q:")], script)
    # "I am not sure about " = 1+1+2+1+3+1+4+1+5+1 = 20 tokens: the rest of the turn is dropped
    assert row.ids == enc(tok, "I am not sure about ") and len(row.ids) == 20
    assert script.calls[0][1] == 20  # the turn asked for 20 new tokens, not the budget's 200
    # without the note, a turn with neither a tool call nor an answer ends the rollout (SimpleTIR)
    assert (row.done, row.turns, row.invalid_actions, row.void_turns, len(script.calls)) == (True, 1, 1, 1, 1)


def test_without_a_cap_a_turn_may_use_the_whole_budget(tok):
    script = Unbounded(tok, TURNS)
    [row] = ToolRollout([search_returning("D")], settings(), tok).run([enc(tok, "Q:")], script)
    assert row.ids == enc(tok, "I am not sure about it yet") and script.calls[0][1] == 200


def test_the_cap_is_what_is_left_of_the_budget_when_less(tok):
    # budget 30: turn 1 keeps 20 (its cap) and gets a 4-token note; turn 2 may use 30 - 24 = 6
    script = Unbounded(tok, TURNS)
    rollout = ToolRollout(
        [search_returning("D")],
        settings(max_turn_tokens=20, max_completion_tokens=30, invalid_action_note="\nno\n"),
        tok,
    )
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert [max_new for _, max_new in script.calls] == [20, 6]
    assert row.ids == enc(tok, "I am not sure about ") + enc(tok, "\nno\n") + enc(tok, "<searc")
    assert len(row.ids) == 30 and row.done


def test_an_invalid_turn_gets_search_r1s_note_and_the_rollout_goes_on(tok):
    script = Unbounded(tok, TURNS, eos_after=set())
    rollout = ToolRollout(
        [search_returning("D")],
        settings(max_turn_tokens=20, invalid_action_note=SEARCH_R1_NOTE, max_completion_tokens=400),
        tok,
    )
    [row] = rollout.run([enc(tok, "Q:")], script)
    first = enc(tok, "I am not sure about ")  # 20 model tokens (the cap)
    note = enc(tok, SEARCH_R1_NOTE)  # 32 + 76 + 92 + 18 characters, one sentence of the note each
    search = enc(tok, "<search>q</search>")  # 8 + 1 + 9 = 18
    info = enc(tok, "<information>D</information>")  # 13 + 1 + 14 = 28
    answer = enc(tok, "<answer>7</answer>")  # 18, then the EOS the loop adds (the model wrote none)
    assert (len(first), len(note), len(search), len(info), len(answer)) == (20, 218, 18, 28, 18)
    assert row.ids == first + note + search + info + answer + [tok.eos_token_id]
    # the note is the environment's, like a tool result: in the context, out of the loss
    assert row.env_mask() == [1] * 20 + [0] * 218 + [1] * 18 + [0] * 28 + [1] * 18 + [0]
    assert row.origin[:20] == [MODEL] * 20 and row.origin[20:238] == [TOOL] * 218
    # turn 2 continued from the capped turn and the note; each turn asked for 20 tokens
    assert script.calls[1][0] == [enc(tok, "Q:") + first + note]
    assert [max_new for _, max_new in script.calls] == [20, 20, 20]
    assert (row.turns, row.tool_calls, row.invalid_actions, row.answered) == (3, 1, 1, True)
    assert rollout.model_text(row) == "I am not sure about <search>q</search><answer>7</answer>"


def test_the_note_replaces_the_turns_eos_and_the_final_turn_still_ends(tok):
    # turn 1 ends at the model's own EOS without a tag: Search-R1 decodes the turn without
    # special tokens, so the context goes on after "hmm" and the note; the final turn (no
    # tools) ends without an answer: no note there, its EOS kept
    script = Script(tok, [["hmm"], ["nope"]], eos_after={(0, 0), (1, 0)})
    rollout = ToolRollout([search_returning("D")], settings(max_turns=1, invalid_action_note="\nagain\n"), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert row.ids == enc(tok, "hmm") + enc(tok, "\nagain\n") + enc(tok, "nope") + [tok.eos_token_id]
    assert row.env_mask() == [1] * 3 + [0] * 7 + [1] * 5
    assert (row.turns, row.invalid_actions, row.done, row.answered) == (2, 2, True, False)


def test_a_closing_tag_without_its_opening_tag_gets_the_note(tok):
    script = Script(tok, [["what</search>"], ["<answer>1</answer>"]], eos_after={(1, 0)})
    rollout = ToolRollout([search_returning("D")], settings(invalid_action_note="\nagain\n"), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert tok.decode(row.ids) == "what</search>\nagain\n<answer>1</answer><|eos|>"
    assert (row.tool_calls, row.invalid_actions) == (0, 1)
    # the note is an observation: cut to max_result_tokens as Search-R1 cuts every one (generation.py:87-89)
    script = Script(tok, [["what</search>"], ["<answer>1</answer>"]], eos_after={(1, 0)})
    short = ToolRollout([search_returning("D")], settings(invalid_action_note="\nagain\n", max_result_tokens=3), tok)
    [row] = short.run([enc(tok, "Q:")], script)
    assert tok.decode(row.ids) == "what</search>\nag<answer>1</answer><|eos|>"


def test_no_note_once_the_turn_spent_the_budget(tok):
    # budget 10: the turn's 10 tokens leave no room for a note, so the rollout ends
    script = Unbounded(tok, TURNS)
    rollout = ToolRollout(
        [search_returning("D")], settings(max_completion_tokens=10, invalid_action_note="\nno\n"), tok
    )
    [row] = rollout.run([enc(tok, "Q:")], script)
    assert row.ids == enc(tok, "I am not s") and row.done and len(script.calls) == 1


def test_a_long_tool_result_keeps_its_halves_around_simpletirs_note(tok):
    text = "a" * 300 + "b" * 300  # 600 characters, over SimpleTIR's 512
    marker = "\n..._This content has been truncated to stay below 512 characters_...\n"
    assert cap_chars(text, 512) == "a" * 256 + marker + "b" * 256
    assert cap_chars("0123456789", 5) == "01" + marker.replace("512", "5") + "789"  # [:5 // 2], [(-5) // 2:]
    assert cap_chars("0123456789", 10) == "0123456789" and cap_chars(text, None) == text
    tool = ToolSpec("python", "<c>", "</c>", "[{}]", lambda q: text)
    script = Script(tok, [["<c>1</c>"], ["<answer>1</answer>"]], eos_after={(1, 0)})
    rollout = ToolRollout([tool], settings(max_result_chars=512, max_result_tokens=600, max_completion_tokens=800), tok)
    [row] = rollout.run([enc(tok, "Q:")], script)
    result = tok.decode([t for t, o in zip(row.ids, row.origin) if o == TOOL])
    assert result == "[" + "a" * 256 + marker + "b" * 256 + "]"  # the characters first, then the tokens
    capped = ToolRollout([tool], settings(max_result_chars=512, max_result_tokens=300, max_completion_tokens=800), tok)
    [row] = capped.run([enc(tok, "Q:")], Script(tok, [["<c>1</c>"], [""]], eos_after={(1, 0)}))
    tokens = [t for t, o in zip(row.ids, row.origin) if o == TOOL]
    assert len(tokens) == 1 + 300 + 1  # the token cut still applies to what the characters left


def test_the_rag_baselines_single_result_gets_the_character_cap_too(tok, monkeypatch):
    from rlrecipes.config.schema import ToolLoopConfig
    from rlrecipes.tool_loop import build
    from tests.conftest import structured

    tool = ToolSpec("calculator", "<c>", "</c>", "[{}]", lambda q: "0123456789")
    monkeypatch.setattr(build, "_built_tools", lambda rollout: [tool])
    node = structured(ToolLoopConfig, tools=["calculator"], tool_mode="rag_once", max_tool_result_chars=5)
    marker = "\n..._This content has been truncated to stay below 5 characters_...\n"
    assert build.retrieve_once(node, tok)("P", "Q") == "P[01" + marker + "789]"


# ----------------------------------------------------------------------- a scripted model
def test_the_cap_and_the_note_on_a_scripted_model(tmp_path, tok):
    """A real causal LM (tests/helpers/scripted_model.py: every next token certain) through
    greedy decoding, the path of held-out accuracy and `rlrecipes eval`: after "?" it writes
    "abcde", after "Z" it writes "7]" (the answer's closing tag here is "]")."""
    from transformers import AutoModelForCausalLM

    from rlrecipes.tool_loop.greedy import greedy_tool_rows
    from tests.helpers.scripted_model import chain, scripted_model

    folder = scripted_model(tmp_path / "model", {**chain("?", "abcde"), **chain("Z", "7]")})
    model = AutoModelForCausalLM.from_pretrained(folder)
    tool = ToolSpec("calc", "{", "}", "({})", str)

    def run(**kw):
        loop = ToolRollout([tool], settings(max_turns=1, answer_close="]", **kw), tok)
        [row] = greedy_tool_rows(model, tok, loop, ["<|user|>Q?"])
        return row, loop

    row, loop = run(max_turn_tokens=3, invalid_action_note="\nZ")
    # turn 1: "abc" (3 tokens, the cap); the note "\nZ" (2); turn 2 from "Z": "7]", where greedy
    # decoding stops (the answer's closing tag), so the EOS after it is the loop's (mask 0)
    assert row.ids == enc(tok, "abc") + enc(tok, "\nZ") + enc(tok, "7]") + [tok.eos_token_id]
    assert row.env_mask() == [1, 1, 1, 0, 0, 1, 1, 0]
    assert (loop.model_text(row), row.answered, row.invalid_actions) == ("abc7]", True, 1)
    row, _ = run(max_turn_tokens=3)  # without the note the rollout ends at the capped turn
    assert row.ids == enc(tok, "abc") and row.done and not row.answered
    row, _ = run()  # without the cap the model writes all of "abcde" and its EOS, then stops
    assert row.ids == enc(tok, "abcde") + [tok.eos_token_id]


# --------------------------------------------------------------------------- the settings
def test_settings_reach_the_loop_and_bad_values_are_one_line():
    cfg = compose(
        "rollout.tools=[calculator]",
        "rollout.max_turn_tokens=8",
        "rollout.max_tool_result_chars=512",
        "rollout.invalid_action_note='Try again.'",
        "trainer.max_completion_length=64",
    )
    check_tool_rollout(cfg)
    s = settings_from_config(cfg)
    assert (s.max_turn_tokens, s.max_result_chars, s.invalid_action_note) == (8, 512, "Try again.")
    defaults = settings_from_config(compose("rollout.tools=[calculator]"))
    assert (defaults.max_turn_tokens, defaults.max_result_chars, defaults.invalid_action_note) == (None, None, None)
    for overrides, message in [
        (["rollout.max_turn_tokens=0"], "rollout.max_turn_tokens=0 must be at least 1 (null: no cap)"),
        (["rollout.max_tool_result_chars=0"], "rollout.max_tool_result_chars=0 must be at least 1 (null: no cap)"),
        (["rollout.invalid_action_note=' '"], "rollout.invalid_action_note=' ' is empty"),
        (
            ["rollout.max_turn_tokens=65", "trainer.max_completion_length=64"],
            "rollout.max_turn_tokens=65 is above trainer.max_completion_length=64",
        ),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            check_tool_rollout(compose("rollout.tools=[calculator]", *overrides))
    for key, value in [("max_turn_tokens", "8"), ("max_tool_result_chars", "8"), ("invalid_action_note", "x")]:
        with pytest.raises(ConfigError, match=re.escape(f"rollout.{key} is set but rollout.tools is empty")):
            check_tool_rollout(compose(f"rollout.{key}={value}"))
