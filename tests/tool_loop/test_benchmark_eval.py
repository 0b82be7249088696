"""`rlrecipes eval` through the tool loop, on the fact base: with `rollout.tools=[search]` a
benchmark's numbers are measured with the tool really running (and only the model's own text
graded); with `rollout.tool_mode=rag_once` the search runs once, with the question, before the
model writes (Search-R1's RAG baseline). The model is scripted (a stand-in LM answering by what
its context holds), so every verdict is known by hand."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from rlrecipes.data.factbase import people_for, questions, write_corpus
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.eval.items import BenchmarkItem, BenchmarkItems
from rlrecipes.grading.exact_match import exact_match
from tests.helpers.scripted_model import scripted_model
from tests.tool_loop.test_greedy import ScriptedLM


def compose(*overrides: str):
    from rlrecipes.compose import compose_config

    return compose_config("eval", list(overrides))


def searches_then_reads(context: str) -> str:
    """Searches the question's subject; answers with the city of the first passage it sees."""
    if "</information>" in context:
        return "<answer>" + context.split("born in ")[-1].split(";")[0] + "</answer>"
    subject = re.search(r"Where is (?:the teacher of )?(.+?) from\?", context).group(1)
    return f"<search>{subject}</search>"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("factbase")
    train, held_out = people_for(8, 8, seed=3)
    write_corpus(train + held_out, folder / "corpus.jsonl")
    items = questions(held_out)  # 4 people, each asked a 1-hop and a 2-hop question
    (folder / "questions.jsonl").write_text("".join(json.dumps(it) + "\n" for it in items))
    return folder, items, scripted_model(folder / "model", {})


def evaluate(world, tmp_path, monkeypatch, *overrides):
    from rlrecipes.eval import runner
    from rlrecipes.eval.backends import HFBackend
    from rlrecipes.eval.plan import plan_benchmark
    from rlrecipes.models.toy import build_tokenizer

    folder, items, model_dir = world
    cfg = compose(
        f"model.name_or_path={model_dir}",
        "benchmark=data",
        "data.source=file",
        f"data.path={folder / 'questions.jsonl'}",
        "protocol.max_new_tokens=200",
        "generation.backend=hf",
        "progress=false",
        *overrides,
    )
    tok = build_tokenizer()
    lm = ScriptedLM(tok, searches_then_reads)
    monkeypatch.setattr(runner, "make_backend", lambda *a, **k: HFBackend(lm, tok, batch_size=8))
    runner.check_eval(cfg)
    plan = plan_benchmark(cfg, "data")
    graded = BenchmarkItems(  # the fact base's own grading: exact match on the last <answer>
        [BenchmarkItem(it["id"], it["problem"], it["answer"]) for it in items],
        name="data",
        source="fact base",
        verify=exact_match,
    )
    runner.run_eval(cfg, tmp_path, log=lambda _: None, prepared=[dataclasses.replace(plan, items=graded)])
    records = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in records}, lm


def correct(records, hops):
    return [r["correct"][0] for key, r in records.items() if key.startswith(f"{hops}hop")]


CORPUS = "+rollout.tool_kwargs.search.corpus={}"


def test_a_benchmark_is_measured_through_the_tool_loop(world, tmp_path, monkeypatch):
    corpus = world[0] / "corpus.jsonl"
    records, lm = evaluate(
        world,
        tmp_path,
        monkeypatch,
        "rollout.tools=[search]",
        CORPUS.format(corpus),
        "+rollout.tool_kwargs.search.topk=1",
    )
    # 1-hop: one search finds the subject's passage, which holds the answer
    assert correct(records, 1) == [True] * 4
    # 2-hop: the scripted model answers from the subject's passage (its own city), not the teacher's
    assert correct(records, 2) == [False] * 4
    # graded on the model's own text: the retrieved passage is not in the completion
    one = next(r for key, r in records.items() if key.startswith("1hop"))
    assert re.fullmatch(r"<search>[^<]+</search><answer>[^<]+</answer>", one["completions"][0])
    assert any("<information>" in context for context in lm.contexts)  # the tool's result was read


def test_without_tools_the_same_model_answers_nothing(world, tmp_path, monkeypatch):
    records, _ = evaluate(world, tmp_path, monkeypatch)
    assert correct(records, 1) + correct(records, 2) == [False] * 8


def test_rag_once_retrieves_with_the_question_before_the_model_writes(world, tmp_path, monkeypatch):
    corpus = world[0] / "corpus.jsonl"
    records, lm = evaluate(
        world,
        tmp_path,
        monkeypatch,
        "rollout.tools=[search]",
        "rollout.tool_mode=rag_once",
        CORPUS.format(corpus),
        "+rollout.tool_kwargs.search.topk=1",
    )
    for r in records.values():
        assert "<information>" in r["prompt"]  # the passage follows the prompt
        assert r["completions"][0].startswith("<answer>")  # no search of its own: no tool turn
    assert correct(records, 1) == [True] * 4
    # retrieving once with a 2-hop question finds the subject, not the teacher (the fact base's
    # guarantee): the answer read from it is wrong
    assert correct(records, 2) == [False] * 4


def test_tool_eval_settings_fail_before_loading(world, tmp_path):
    from rlrecipes.eval.runner import check_eval

    base = [f"model.name_or_path={world[2]}", "benchmark=data"]
    with pytest.raises(ConfigError, match="unknown tool 'serch'"):
        check_eval(compose(*base, "rollout.tools=[serch]"))
    with pytest.raises(ConfigError, match="rollout.tool_mode=rag_once calls one tool"):
        check_eval(compose(*base, "rollout.tools=[search,calculator]", "rollout.tool_mode=rag_once"))
    with pytest.raises(UserError, match="generation.backend=hf"):
        check_eval(compose(*base, "rollout.tools=[calculator]", "generation.backend=vllm"))


def test_the_tool_loop_decodes_greedily_only(world, tmp_path, monkeypatch):
    corpus = world[0] / "corpus.jsonl"
    with pytest.raises(UserError, match="decodes greedily, one completion per problem"):
        evaluate(
            world,
            tmp_path,
            monkeypatch,
            "rollout.tools=[search]",
            CORPUS.format(corpus),
            "protocol.num_samples=2",
            "protocol.temperature=0.6",
        )
