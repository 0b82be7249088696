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


def calculates(context: str) -> str:
    """Calls the calculator on the problem's expression and answers with what it returned;
    a problem without one gets a guess that is neither a call nor an answer."""
    if "</result>" in context:
        return "<answer>" + context.rsplit("<result>", 1)[1].split("</result>")[0] + "</answer>"
    expression = re.search(r"Compute (\S+)\.", context)
    return "no" if expression is None else f"<calculator>{expression.group(1)}</calculator>"


def test_a_tool_eval_records_the_tool_metrics_training_logs(world, tmp_path, monkeypatch):
    """summary.json and the printed table carry, per benchmark, the `tools/*` numbers the
    training loop logs per step (same function), here over three problems counted by hand."""
    from rich.console import Console

    from rlrecipes.eval import runner
    from rlrecipes.eval.backends import HFBackend
    from rlrecipes.eval.plan import plan_benchmark
    from rlrecipes.eval.report import print_eval_summary
    from rlrecipes.models.toy import build_tokenizer

    problems = [("a", "Compute 2*3.", "6"), ("b", "Compute 1/0.", "0"), ("c", "Guess.", "1")]
    data = tmp_path / "calc.jsonl"
    data.write_text("".join(json.dumps({"problem": p, "answer": a}) + "\n" for _, p, a in problems))
    cfg = compose(
        f"model.name_or_path={world[2]}",
        "benchmark=data",
        "data.source=file",
        f"data.path={data}",
        "protocol.max_new_tokens=200",
        "generation.backend=hf",
        "progress=false",
        "rollout.tools=[calculator]",
    )
    tok = build_tokenizer()
    monkeypatch.setattr(runner, "make_backend", lambda *a, **k: HFBackend(ScriptedLM(tok, calculates), tok, 8))
    plan = plan_benchmark(cfg, "data")
    graded = BenchmarkItems(
        [BenchmarkItem(key, p, a) for key, p, a in problems], name="data", source="calc", verify=exact_match
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = runner.run_eval(cfg, run_dir, log=lambda _: None, prepared=[dataclasses.replace(plan, items=graded)])
    # One token per character (the toy tokenizer). Per problem, (turns, calls, errors, invalid
    # actions, answered, tool tokens, all tokens):
    # a: <calculator>2*3</calculator> (28) | <result>6</result> (18, tool) | <answer>6</answer> (18)
    #    + the EOS put after an answer (1)                           -> 2, 1, 0, 0, 1, 18, 65
    # b: <calculator>1/0</calculator> (28) | <result>error: division by zero</result> (40, tool)
    #    | <answer>error: division by zero</answer> (40) + EOS (1)   -> 2, 1, 1, 0, 1, 40, 109
    # c: "no" + the model's EOS (3): ends without a call or an answer -> 1, 0, 0, 1, 0, 0, 3
    expected = {
        "calls_per_rollout": round(2 / 3, 6),
        "error_rate": 0.5,  # 1 of 2 calls
        "invalid_action_rate": 0.2,  # 1 of 5 turns
        "turns": round(5 / 3, 6),
        "answer_rate": round(2 / 3, 6),
        "tool_token_share": round(58 / 177, 6),
        "void_turn_rate": round(1 / 3, 6),  # c's rollout holds a void turn
    }
    on_disk = json.loads((run_dir / "summary.json").read_text())
    assert summary["benchmarks"]["data"]["tools"] == on_disk["benchmarks"]["data"]["tools"] == expected
    assert summary["benchmarks"]["data"]["pass@1"] == round(1 / 3, 6)  # only a is right
    console = Console(record=True, width=300)
    print_eval_summary(summary, run_dir, console)
    table = console.export_text()
    assert re.search(r"tool calls +tool errors % +invalid % +turns +answered % +tool tokens %", table)
    assert re.search(r"data .* 0\.67 +50\.0 +20\.0 +1\.67 +66\.7 +32\.8", table)  # 58/177 = 32.8 %


def test_an_eval_without_tools_has_no_tool_metrics(world, tmp_path, monkeypatch):
    records, _ = evaluate(world, tmp_path, monkeypatch)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "tools" not in summary["benchmarks"]["data"]
    assert all("tool_stats" not in r for r in records.values())  # samples.jsonl as it always was
