"""The tools: calculator, BM25 search (hand-computed scores), the HTTP retriever's failures,
the registry's one-line errors."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rlrecipes.errors import ConfigError, DataError
from rlrecipes.tools import ToolFailure, build_tools, call_tool
from rlrecipes.tools.bm25 import BM25Index, Passage
from rlrecipes.tools.calculator import evaluate
from rlrecipes.tools.search import HttpRetriever, format_passages, load_corpus
from tests.helpers.processes import free_port


def test_calculator_computes_what_the_toy_cannot():
    assert evaluate("4817*9263") == "44619871"
    assert evaluate("(2+3)**3 - 7//2") == "122"
    assert evaluate("-2**10 % 7") == str(-(2**10) % 7)
    assert evaluate("7/2") == "3.5"


@pytest.mark.parametrize(
    "expression, message",
    [
        ("9**9**9", "exponent 387420489 is larger than 64"),
        ("10**60", "result would have more than 100 digits"),
        ("10**50 * 10**50 * 10", "result has more than 100 digits"),
        ("__import__('os').system('true')", "unsupported"),
        ("1/0", "division by zero"),
        ("2 +", "cannot parse"),
        ("", "empty expression"),
    ],
)
def test_calculator_refuses_with_text(expression, message):
    with pytest.raises(ToolFailure, match=message.replace("*", r"\*")):
        evaluate(expression)


def test_bm25_scores_by_hand():
    # N=2, avgdl=(2+3)/2=2.5; "c": df=1, idf=ln(1 + 1.5/1.5)=ln 2; doc 1 has tf=2, dl=3:
    # norm = 0.9 * (1 - 0.4 + 0.4 * 3 / 2.5) = 0.972; score = ln2 * 2 * 1.9 / (2 + 0.972)
    index = BM25Index([Passage("a", "a b"), Passage("b", "b c c")])
    expected = math.log(2) * 2 * 1.9 / (2 + 0.972)
    assert index.scores("c") == pytest.approx({1: expected})
    # "b" is in both: idf = ln(1 + 0.5/2.5) = ln 1.2; shorter doc 0 ranks first
    [(first, _), (second, _)] = index.search("b", 2)
    assert (first.id, second.id) == ("a", "b")
    assert index.search("zzz", 3) == []


def test_search_tool_reads_a_corpus_and_formats_like_search_r1(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"id": "1", "contents": "Pelmora\nZorvath Quill was born in Pelmora."},
        {"title": "Ostrel", "text": "A mill."},
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows))
    [search] = build_tools(["search"], {"search": {"corpus": str(corpus), "topk": 1}})
    assert (search.open, search.close) == ("<search>", "</search>")
    assert search.run("where was Zorvath Quill born") == "Doc 1(Title: Pelmora) Zorvath Quill was born in Pelmora.\n"
    assert format_passages(load_corpus(str(corpus))) == (
        "Doc 1(Title: Pelmora) Zorvath Quill was born in Pelmora.\nDoc 2(Title: Ostrel) A mill.\n"
    )


def test_bad_corpora_are_one_line_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        build_tools(["search"], {"search": {"corpus": str(empty)}})
    with pytest.raises(ConfigError, match="no such file"):
        build_tools(["search"], {"search": {"corpus": str(tmp_path / "missing.jsonl")}})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"contents": "x"}\n{"body": "y"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl line 2: no 'contents' \(or 'text'\) field; fields: \['body'\]"):
        load_corpus(str(bad))
    with pytest.raises(ConfigError, match="needs rollout.tool_kwargs.search.corpus"):
        build_tools(["search"])


def test_registry_errors_name_what_is_valid():
    with pytest.raises(
        ConfigError, match="unknown tool 'serch' \\(rollout.tools\\); valid: calculator, python, search"
    ):
        build_tools(["serch"])
    with pytest.raises(ConfigError, match="rollout.tool_kwargs.calculator.digits is not a setting of tool"):
        build_tools(["calculator"], {"calculator": {"digits": 3}})


def test_http_retriever_down_is_a_tool_error_not_a_crash():
    spec = build_tools(
        ["search"], {"search": {"retriever": "http", "url": f"http://127.0.0.1:{free_port()}/retrieve"}}
    )[0]
    result = call_tool(spec, "anything", timeout_s=30)
    assert (
        result.error and result.text.startswith("error: retriever http://127.0.0.1:") and "unreachable" in result.text
    )


class _Server(BaseHTTPRequestHandler):
    body = b""

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(
    "body, expected",
    [
        (b"not json", "answered malformed JSON"),
        (b'{"result": [[{"doc": 1}]]}', "answered JSON without result[0][i].document.contents"),
        (
            json.dumps({"result": [[{"document": {"id": "7", "contents": "T\nbody"}, "score": 1.0}]]}).encode(),
            None,
        ),
    ],
)
def test_http_retriever_speaks_search_r1_json(body, expected):
    handler = type("Handler", (_Server,), {"body": body})
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        retriever = HttpRetriever(f"http://127.0.0.1:{server.server_port}/retrieve")
        if expected is None:
            assert retriever.search("q", 3) == [Passage("7", "T\nbody")]
        else:
            with pytest.raises(ToolFailure, match=expected.replace("[", r"\[").replace("]", r"\]")):
                retriever.search("q", 3)
    finally:
        server.shutdown()


def test_random_retriever_ignores_the_query(tmp_path):
    """The broken-tool control: k distinct passages of the corpus, whatever is asked, the
    draws fixed by the seed."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "contents": f"T{i}\nfact {i}"}) + "\n" for i in range(6)))
    options = {"search": {"corpus": str(corpus), "retriever": "random", "topk": 2, "seed": 5}}
    [first], [second] = build_tools(["search"], options), build_tools(["search"], options)
    results = [first.run("T3") for _ in range(4)]
    assert results == [second.run("anything") for _ in range(4)]  # the query plays no part
    for text in results:
        lines = text.splitlines()
        assert len(lines) == 2 and len(set(lines)) == 2
        assert all(line.startswith("Doc ") and "(Title: T" in line for line in lines)
    with pytest.raises(ConfigError, match="valid: bm25, http, random"):
        build_tools(["search"], {"search": {"corpus": str(corpus), "retriever": "nope"}})


def test_a_fenced_python_call_drops_the_info_string_as_simpletir_reads_it():
    # SimpleTIR's pattern ```(?:py|python)?\n(.*?)\n``` (agent_utils.py:570): "py", "python" or nothing
    from rlrecipes.tools.python import fenced_code

    assert fenced_code("python\nprint(1)\n") == "print(1)\n"
    assert fenced_code("py\nx = 2\nprint(x)\n") == "x = 2\nprint(x)\n"
    assert fenced_code("\nprint(1)\n") == "print(1)\n"
    with pytest.raises(ToolFailure, match=r"not a Python block \(```output\); write ```python"):
        fenced_code("output\n1024\n")


def test_the_python_tool_reads_a_fenced_block_when_its_tags_are_fences():
    from tests.tools.test_sandbox import _sandbox_works

    if not _sandbox_works():
        pytest.skip("unshare namespaces not permitted here")
    fence = {"open": "```", "close": "```", "wrap": "\nCode execution result: {}\n"}
    [fenced] = build_tools(["python"], {"python": fence})
    assert call_tool(fenced, "py\nprint(2**10)\n", 10.0).text == "1024\n"
    [tagged] = build_tools(["python"], {})  # <python>...</python>: the text is the program
    assert call_tool(tagged, "print(2**10)\n", 10.0).text == "1024\n"
