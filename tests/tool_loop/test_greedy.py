"""Greedy decoding through the tool loop, as held-out accuracy measures a run with tools: on a
scripted model (the toy's character tokenizer, a `generate` that answers by what its context
ends with), so every verdict below is known by hand."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.engine.heldout import HeldOutAccuracy
from rlrecipes.grading.exact_match import exact_match
from rlrecipes.tool_loop.greedy import greedy_tool_accuracy, greedy_tool_texts
from rlrecipes.tool_loop.rollout import ToolRollout, ToolRolloutSettings
from rlrecipes.tools import ToolSpec


@pytest.fixture(scope="module")
def tok():
    from rlrecipes.models.toy import build_tokenizer

    return build_tokenizer()


class ScriptedLM:
    """A stand-in for a causal LM: `generate` continues each left-padded row with the text
    `reply(context)` picks, then EOS, cut after the first of its stop strings (without EOS
    then), and pads the batch to one width, as transformers does."""

    def __init__(self, tok, reply):
        self.tok, self.reply, self.training = tok, reply, False
        self.generation_config = SimpleNamespace(eos_token_id=tok.eos_token_id)
        self.contexts: list[str] = []

    def parameters(self):
        yield torch.zeros(1)

    def eval(self):
        self.training = False

    def train(self, mode=True):
        self.training = mode

    def generate(self, input_ids, attention_mask, generation_config, tokenizer=None):
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            context = self.tok.decode([t for t, m in zip(ids, mask) if m], skip_special_tokens=False)
            self.contexts.append(context)
            text, stops = self.reply(context), generation_config.stop_strings or []
            ends = [text.find(s) + len(s) for s in stops if s in text]
            tail = [] if ends else [self.tok.eos_token_id]
            new = self.tok.encode(text[: min(ends)] if ends else text, add_special_tokens=False) + tail
            rows.append(ids + new[: generation_config.max_new_tokens])
        width = max(map(len, rows))
        return torch.tensor([row + [self.tok.pad_token_id] * (width - len(row)) for row in rows])


def search_returning(text):
    return ToolSpec("search", "<search>", "</search>", "\n<information>{}</information>\n", lambda q: text)


def reads_then_answers(context: str) -> str:
    """Searches first; once a result is in its context, answers from it; without one (a
    single-turn decoder never runs the tool) it hallucinates a result and answers wrongly."""
    if "</information>" in context:
        return "<answer>" + context.split("born in ")[-1].split(".")[0] + "</answer>"
    return "<search>Kalo Remuta</search><information>born in Nowhere.</information><answer>Nowhere</answer>"


def rollout(tok, tool, max_turns=1):
    return ToolRollout([tool], ToolRolloutSettings(max_turns=max_turns, max_completion_tokens=200), tok)


def test_each_tool_call_really_runs_and_only_the_models_text_comes_back(tok):
    model = ScriptedLM(tok, reads_then_answers)
    loop = rollout(tok, search_returning("Kalo Remuta: born in Pelimon."))
    [text] = greedy_tool_texts(model, tok, loop, ["<|user|>Where is Kalo Remuta from?<|assistant|>"])
    assert text == "<search>Kalo Remuta</search><answer>Pelimon</answer>"
    # the second turn continued the real result, not the model's own invented one
    assert model.contexts[-1].endswith(
        "<search>Kalo Remuta</search>\n<information>Kalo Remuta: born in Pelimon.</information>\n"
    )


def test_the_final_turn_stops_only_at_the_answer_as_in_training(tok):
    """After its last tool turn the model searches again and then answers. The sampled rollout
    keeps that final turn up to `</answer>` (no tool runs in it), so greedy decoding must not
    stop it at `</search>`: the answer counts."""

    def searches_twice(context: str) -> str:
        if "</information>" in context:
            return "<search>Kalo</search><answer>Pelimon</answer>"
        return "<search>Kalo Remuta</search>"

    model = ScriptedLM(tok, searches_twice)
    loop = rollout(tok, search_returning("Kalo Remuta: born in Pelimon."), max_turns=1)
    [text] = greedy_tool_texts(model, tok, loop, ["<|user|>Where is Kalo Remuta from?<|assistant|>"])
    assert text == "<search>Kalo Remuta</search><search>Kalo</search><answer>Pelimon</answer>"


def test_accuracy_counts_answers_by_hand(tok):
    model = ScriptedLM(tok, reads_then_answers)
    loop = rollout(tok, search_returning("Kalo Remuta: born in Pelimon."))
    prompts = ["<|user|>a<|assistant|>", "<|user|>b<|assistant|>", "<|user|>c<|assistant|>"]
    answers = ["Pelimon", "Vipanan", "pelimon"]  # right, wrong, right after normalisation
    assert greedy_tool_accuracy(model, tok, loop, prompts, answers, exact_match, batch_size=2) == pytest.approx(2 / 3)


@contextmanager
def _as_is(model, accelerator, gather_deepspeed3_params=True):
    yield model


def heldout_on(tok, model, tool_rollout, monkeypatch, prompts, answers):
    """HeldOutAccuracy.measure on one process, with `tool_rollout` as the trainer's rollout_func."""
    import trl.models.utils

    monkeypatch.setattr(trl.models.utils, "unwrap_model_for_generation", _as_is)
    heldout = HeldOutAccuracy(
        prompts, answers, exact_match, tok, max_new_tokens=200, batch_size=8, before=True, after=True
    )
    accelerator = SimpleNamespace(process_index=0, num_processes=1)
    heldout.trainer = SimpleNamespace(accelerator=accelerator, model_wrapped=model, rollout_func=tool_rollout)
    return heldout.measure()


def test_heldout_accuracy_goes_through_the_tool_loop_when_the_run_has_tools(tok, monkeypatch):
    """The scripted model answers right only when the search really runs: through the tool
    loop held-out accuracy is 1; decoded in one turn (the run without tools) it is 0."""
    prompts, answers = ["<|user|>Where is Kalo Remuta from?<|assistant|>"], ["Pelimon"]
    tool = search_returning("Kalo Remuta: born in Pelimon.")
    with_tools = heldout_on(tok, ScriptedLM(tok, reads_then_answers), rollout(tok, tool), monkeypatch, prompts, answers)
    one_turn = heldout_on(tok, ScriptedLM(tok, reads_then_answers), None, monkeypatch, prompts, answers)
    assert (with_tools, one_turn) == (1.0, 0.0)


def test_an_answer_only_inside_a_tool_result_scores_zero_in_heldout_accuracy(tok, monkeypatch):
    """The tool's result holds the right answer block; the model never writes one."""
    tool = search_returning("<answer>Pelimon</answer>")
    model = ScriptedLM(tok, lambda context: "" if "</information>" in context else "<search>Kalo</search>")
    prompts, answers = ["<|user|>Where is Kalo Remuta from?<|assistant|>"], ["Pelimon"]
    assert heldout_on(tok, model, rollout(tok, tool), monkeypatch, prompts, answers) == 0.0
    [full] = [c for c in model.contexts if "</information>" in c]
    assert exact_match(full, "Pelimon")  # the whole context would have scored 1


def test_on_several_processes_heldout_joins_the_turns_of_the_busiest_one(tok, monkeypatch):
    """Another process (simulated in the all-gather) still has one unfinished row in every
    turn: this one pads each of its `generate` calls with a row, as the sampled rollouts do,
    so ZeRO-3 / FSDP forwards never wait on a process that stopped generating; the padding row
    changes no verdict."""
    import trl.models.utils

    monkeypatch.setattr(trl.models.utils, "unwrap_model_for_generation", _as_is)
    sizes = []
    model = ScriptedLM(tok, reads_then_answers)
    generate = model.generate
    model.generate = lambda input_ids, **kw: (sizes.append(len(input_ids)), generate(input_ids, **kw))[1]

    def gather(local):  # the other process: one more unfinished row, the same budget
        return torch.cat([local, local + torch.tensor([[1, 0]])])

    accelerator = SimpleNamespace(process_index=0, num_processes=2, device="cpu", gather=gather)
    heldout = HeldOutAccuracy(
        ["<|user|>Where is Kalo Remuta from?<|assistant|>"], ["Pelimon"], exact_match, tok,
        max_new_tokens=200, batch_size=8, before=True, after=True,
    )  # fmt: skip
    tool = rollout(tok, search_returning("Kalo Remuta: born in Pelimon."))
    heldout.trainer = SimpleNamespace(accelerator=accelerator, model_wrapped=model, rollout_func=tool)
    assert heldout.measure() == 1.0
    assert sizes == [2, 2]  # both turns: its own row and a padding row
