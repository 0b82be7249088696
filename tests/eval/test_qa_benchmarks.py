"""Search-R1's QA benchmarks (rlrecipes/eval/qa.py): FlashRAG rows, every gold alias kept,
exact match on the last <answer>; the search_r1 prompt and the two protocols (search, RAG).
Tiny local files in FlashRAG's layout ({id, question, golden_answers: [...]}); no network."""

import json
import re
from pathlib import Path

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.data.loader import to_problems
from rlrecipes.data.templates import SEARCH_R1_INSTRUCTION, render_prompt
from rlrecipes.eval.benchmarks import BENCHMARKS, load_benchmark, resolve_benchmarks
from rlrecipes.grading.exact_match import exact_match
from rlrecipes.recipes import get_recipe
from tests.eval.test_eval_cli import cli

QA_SETS = ["nq", "triviaqa", "popqa", "hotpotqa", "twowiki", "musique", "bamboogle"]
ROWS = [
    {"id": "test_0", "question": "where was the eiffel tower built ", "golden_answers": ["Paris", "Paris, France"]},
    {"id": "test_1", "question": "who wrote hamlet?", "golden_answers": ["William Shakespeare"]},
    {"id": "test_2", "question": "no answers here?", "golden_answers": []},
]


def flashrag_file(tmp_path: Path, name: str = "nq") -> Path:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path


def test_the_suite_is_the_papers_seven_sets_each_naming_its_flashrag_config():
    assert resolve_benchmarks("search_r1_qa") == QA_SETS
    # (hub config, split): qa_search_test_merge.py takes test, else dev
    expected = {
        "nq": ("nq", "test"),
        "triviaqa": ("triviaqa", "test"),
        "popqa": ("popqa", "test"),
        "hotpotqa": ("hotpotqa", "dev"),
        "twowiki": ("2wikimultihopqa", "dev"),
        "musique": ("musique", "dev"),
        "bamboogle": ("bamboogle", "test"),
    }
    for name, (config, split) in expected.items():
        spec = BENCHMARKS[name]
        assert (spec.hub_id, spec.hub_config, spec.split) == ("RUC-NLPIR/FlashRAG_datasets", config, split)
        cfg = compose_config("eval", [f"benchmark={name}"])  # each set has its own config
        assert list(cfg.benchmark.names) == [name]


@pytest.mark.parametrize("name", QA_SETS)
def test_a_local_file_keeps_every_alias_and_reports_a_row_without_gold(name, tmp_path):
    items = load_benchmark(name, flashrag_file(tmp_path, name))
    assert [it.id for it in items] == ["test_0", "test_1"]
    assert json.loads(items[0].gold) == ["Paris", "Paris, France"]  # not joined into one answer
    assert items[0].problem == "where was the eiffel tower built"
    assert [(s.row, s.reason) for s in items.skipped] == [(2, "no gold answer (looked for golden_answers)")]
    # graded by exact match on the last <answer> against any alias, not by maths equivalence
    assert items.verify("<think>...</think><answer> paris </answer>", items[0].gold)
    assert items.verify("<answer>Paris, France.</answer>", items[0].gold)
    assert not items.verify("<answer>France</answer>", items[0].gold)
    assert not items.verify("Paris", items[0].gold)  # no <answer> block: no answer


def test_rescoring_completions_grades_by_exact_match_with_golds_by_id(tmp_path, capsys):
    gen = tmp_path / "gens.jsonl"
    lines = [
        {"id": "test_0", "completions": ["<answer> The Paris </answer>", "<answer>Lyon</answer>"]},
        {"id": "test_1", "completions": ["<answer>Shakespeare</answer>", "<answer>william shakespeare!</answer>"]},
    ]
    gen.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = tmp_path / "run"
    data = flashrag_file(tmp_path)
    code, text = cli(capsys, "eval", f"generations={gen}", "benchmark=nq", f"data_dir={data}", f"run_dir={run}")
    assert code == 0, text
    m = json.loads((run / "summary.json").read_text())["benchmarks"]["nq"]
    # test_0: "the paris" -> "paris" (articles dropped) right, Lyon wrong; test_1: the surname
    # alone is not an exact match, the full name with "!" is: (1/2 + 1/2) / 2
    assert m["pass@1"] == pytest.approx(0.5)


def test_the_search_r1_prompt_is_the_authors_instruction_under_the_chat_template():
    class ChatTokenizer:
        chat_template = "{{ messages }}"

        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            return f"<chat>{messages[-1]['content']}</chat>"

    prompt = render_prompt(" who wrote hamlet ", "search_r1", ChatTokenizer())
    assert prompt == f"<chat>{SEARCH_R1_INSTRUCTION.format(question='who wrote hamlet?')}</chat>"
    assert prompt.endswith("For example, <answer> Beijing </answer>. Question: who wrote hamlet?\n</chat>")
    assert BENCHMARKS["nq"].template == "search_r1"


@pytest.mark.parametrize(("protocol", "mode"), [("search_r1", "loop"), ("search_r1_rag", "rag_once")])
def test_the_protocols_search_as_the_authors_evaluate_and_the_rag_one_retrieves_once(protocol, mode):
    cfg = compose_config("eval", ["benchmark=search_r1_qa", f"protocol={protocol}"])
    assert (cfg.protocol.name, cfg.protocol.template, cfg.protocol.temperature) == (protocol, "search_r1", 0.0)
    r = cfg.rollout
    assert (list(r.tools), r.tool_mode, r.max_turns, r.max_tool_result_tokens) == (["search"], mode, 4, 500)
    assert dict(r.tool_kwargs.search) == {"retriever": "http", "url": "http://127.0.0.1:8000/retrieve", "topk": 3}


def test_training_data_keeps_aliases_and_held_out_accuracy_is_exact_match(tmp_path):
    rows = to_problems(ROWS, "t", "question", "golden_answers", aliases=True)
    assert rows.items[0]["answer"] == json.dumps(["Paris", "Paris, France"])
    assert exact_match("<answer>paris</answer>", rows.items[0]["answer"])  # the reward reads the aliases back
    data = flashrag_file(tmp_path)
    cfg = compose_config(
        "train",
        ["experiment=search_r1_qwen2_5_3b_base", "data.source=file", f"data.path={data}", f"data.eval_path={data}"],
    )
    problems = get_recipe("search_r1")(cfg).problem_set(cfg.data)
    gold = problems.eval[0]["answer"]
    assert json.loads(gold) == ["Paris", "Paris, France"]
    assert problems.verify("<answer>Paris</answer>", gold) and not problems.verify("\\boxed{Paris}", gold)


def reads_the_first_title(context: str) -> str:
    """A scripted LM: searches the question, then answers with the first passage's title."""
    found = re.search(r"Doc 1\(Title: ([^)]+)\)", context)  # the instruction names <information> too
    if found:
        return f"<answer>{found.group(1)}</answer>"
    return "<search>" + re.findall(r"Question: (.+?)\?", context)[-1] + "</search>"


@pytest.mark.parametrize(("protocol", "first"), [("search_r1", "<search>"), ("search_r1_rag", "<answer>")])
def test_a_qa_benchmark_runs_through_the_protocol_and_is_graded_by_exact_match(protocol, first, tmp_path, monkeypatch):
    from rlrecipes.eval import runner
    from rlrecipes.eval.backends import HFBackend
    from rlrecipes.models.toy import build_tokenizer
    from tests.helpers.scripted_model import scripted_model
    from tests.tool_loop.test_greedy import ScriptedLM

    corpus = tmp_path / "corpus.jsonl"
    passages = [
        {"id": "1", "title": "Paris", "text": "The eiffel tower was built in Paris."},
        {"id": "2", "title": "Hamlet", "text": "Hamlet is a play by William Shakespeare."},
    ]
    corpus.write_text("".join(json.dumps(p) + "\n" for p in passages))
    cfg = compose_config(
        "eval",
        [
            f"model.name_or_path={scripted_model(tmp_path / 'model', {})}",
            "benchmark=nq",
            f"protocol={protocol}",
            f"data_dir={flashrag_file(tmp_path)}",
            "rollout.tool_kwargs.search.retriever=bm25",
            f"+rollout.tool_kwargs.search.corpus={corpus}",
            "rollout.tool_kwargs.search.topk=1",
            "protocol.max_new_tokens=200",
            "progress=false",
        ],
    )
    tok = build_tokenizer()
    lm = ScriptedLM(tok, reads_the_first_title)
    monkeypatch.setattr(runner, "make_backend", lambda *a, **k: HFBackend(lm, tok, batch_size=8))
    (tmp_path / "run").mkdir()
    summary = runner.run_eval(cfg, tmp_path / "run", log=lambda _: None)
    records = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [r["completions"][0].startswith(first) for r in records] == [True, True]
    assert all("Question: " in r["prompt"] and "as your want" in r["prompt"] for r in records)  # the authors' prompt
    # the Eiffel question's passage is titled Paris (an alias: right); Hamlet's is titled Hamlet,
    # not the gold William Shakespeare (wrong): EM 1/2
    assert [r["correct"][0] for r in records] == [True, False]
    assert summary["benchmarks"]["nq"]["pass@1"] == 0.5
