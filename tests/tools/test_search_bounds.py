"""The search tool bounds what it processes: a passage is cut to `max_passage_chars` before
it is tokenised, split or shown (at load, in the BM25 index, in the result, from the HTTP
server), the server's answer is read to `http_max_bytes` and its hits to `topk`, and a
corpus line that cannot be read is one ConfigError line naming file and line, in `train`
and in `eval` alike."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

import pytest

from rlrecipes.config.schema import RolloutConfig
from rlrecipes.errors import ConfigError
from rlrecipes.tools import ToolFailure, bm25, build_tools, call_tool, search
from rlrecipes.tools.bm25 import BM25Index, Passage
from rlrecipes.tools.search import HttpRetriever, SearchOptions, format_passages, load_corpus, make_retriever
from tests.conftest import one_error_line, structured

BIG = "Huge\n" + "w " * 5_500_000  # an 11 MB passage: 5.5 million tokens


def _corpus(tmp_path, *lines: bytes):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _big_corpus(tmp_path):
    small = json.dumps({"id": "s", "contents": "Small\na short passage"}).encode()
    return _corpus(tmp_path, small, json.dumps({"id": "big", "contents": BIG}).encode())


@pytest.fixture
def tokenised(monkeypatch) -> list[int]:
    """The length of every text BM25's tokeniser is given."""
    lengths: list[int] = []

    def recording(text: str) -> list[str]:
        lengths.append(len(text))
        return bm25._TOKEN.findall(text.lower())

    monkeypatch.setattr(bm25, "tokenize", recording)
    return lengths


# ---------------------------------------------------------------- passages are cut to the budget


def test_the_index_tokenises_a_bounded_prefix_of_each_passage(tokenised):
    index = BM25Index([Passage("big", BIG), Passage("s", "Small\nshort")], max_chars=1000)
    assert tokenised == [1000, 11]  # the 11 MB passage's first 1000 characters, the short one whole
    assert index.lengths == [1 + 498, 2]  # "Huge\n" (5) + "w " * 497 (994) + "w": huge and 498 w's


def test_a_corpus_passage_is_cut_as_it_is_read(tmp_path):
    passages = load_corpus(str(_big_corpus(tmp_path)), max_chars=1000)
    assert [(p.id, p.contents) for p in passages] == [("s", "Small\na short passage"), ("big", BIG[:1000])]


def test_the_result_text_shows_each_passage_cut_to_the_budget():
    text = format_passages([Passage("big", BIG), Passage("s", "Small\nshort")], max_chars=20)
    assert text == f"Doc 1(Title: Huge) {BIG[5:20]}\nDoc 2(Title: Small) short\n"


def test_the_search_tool_never_tokenises_more_than_its_budget(tmp_path, tokenised):
    """The tool end to end on a corpus with an 11 MB passage: loaded, indexed and shown cut
    to `max_passage_chars`."""
    corpus = str(_big_corpus(tmp_path))
    retriever = make_retriever(SearchOptions(corpus=corpus, max_passage_chars=2000))
    assert [len(p.contents) for p in retriever.index.passages] == [21, 2000]  # what it holds
    [tool] = build_tools(["search"], {"search": {"corpus": corpus, "max_passage_chars": 2000, "topk": 1}})
    assert tool.run("w") == f"Doc 1(Title: Huge) {BIG[5:2000]}\n"
    assert max(tokenised) <= 2000


@pytest.mark.parametrize("key", ["max_passage_chars", "http_max_bytes"])
def test_a_budget_below_one_is_one_line(key):
    with pytest.raises(ConfigError, match=rf"^rollout.tool_kwargs.search.{key}=0 must be at least 1$"):
        SearchOptions(retriever="http", **{key: 0})


# ---------------------------------------------------------------- the HTTP retriever's answer


def _serve(handler: type) -> tuple[HTTPServer, str]:
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/retrieve"


class _Huge(BaseHTTPRequestHandler):
    """Answers valid Search-R1 JSON of 64 MiB (one 64 MiB passage), counting what it could send."""

    sent = 0
    done = threading.Event()
    MIB = 2**20

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        chunks = [b'{"result": [[{"document": {"id": "1", "contents": "', *[b"x" * self.MIB] * 64, b'"}}]]}']
        self.send_response(200)
        self.send_header("Content-Length", str(sum(map(len, chunks))))
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except OSError:  # the client closed the connection: it read no further
            pass
        finally:
            type(self).done.set()

    def log_message(self, *args):
        pass


def test_a_huge_answer_is_read_only_to_the_limit_and_is_a_tool_error():
    handler = type("Handler", (_Huge,), {"sent": 0, "done": threading.Event()})
    server, url = _serve(handler)
    try:
        [tool] = build_tools(["search"], {"search": {"retriever": "http", "url": url, "http_max_bytes": 65536}})
        result = call_tool(tool, "q", timeout_s=60)
        assert result.error
        assert result.text == (
            f"error: retriever {url} answered more than 65536 bytes "
            "(rollout.tool_kwargs.search.http_max_bytes); not read further"
        )
        assert handler.done.wait(30)
        # the client stopped reading: the server could not send the whole answer (socket
        # buffers on the loopback hold a few MiB, far less than 64 MiB)
        assert handler.sent < 64 * _Huge.MIB
    finally:
        server.shutdown()


class _FiftyHits(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert asked["topk"] == 3
        hits = [{"document": {"id": str(i), "contents": f"T{i}\n" + "y" * 500}, "score": 1.0} for i in range(50)]
        body = json.dumps({"result": [hits]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_server_answering_fifty_hits_gets_topk_read_each_cut():
    server, url = _serve(_FiftyHits)
    try:
        passages = HttpRetriever(url, max_chars=100).search("q", 3)
        assert [(p.id, p.contents) for p in passages] == [(str(i), f"T{i}\n" + "y" * 97) for i in range(3)]
        [tool] = build_tools(["search"], {"search": {"retriever": "http", "url": url, "max_passage_chars": 100}})
        assert tool.run("q").count("Doc ") == 3
    finally:
        server.shutdown()


class _Nested(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"[" * 100_000)  # json.loads raises RecursionError, not ValueError

    def log_message(self, *args):
        pass


def test_an_answer_nested_too_deeply_is_malformed_json_to_the_model():
    server, url = _serve(_Nested)
    try:
        with pytest.raises(ToolFailure, match=r"^retriever http://127\.0\.0\.1:\d+/retrieve answered malformed JSON$"):
            HttpRetriever(url).search("q", 3)
    finally:
        server.shutdown()


# ---------------------------------------------------------------- unreadable corpus lines


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"contents": "caf\u00e9"}'.encode("latin-1"), "line 2: not UTF-8 (byte 0xe9 at column 18)"),
        (b"[" * 100_000, "line 2: JSON nested too deeply to read"),
    ],
    ids=["latin-1", "nested"],
)
def test_an_unreadable_corpus_line_is_one_config_error_line(tmp_path, line, message):
    path = _corpus(tmp_path, b'{"contents": "T\\nfine"}', line)
    with pytest.raises(ConfigError) as caught:
        load_corpus(str(path))
    text = str(caught.value)
    assert text.startswith(f"{path} {message}; valid: one JSON object") and "\n" not in text


def test_a_line_longer_than_any_passage_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(search, "MAX_LINE_BYTES", 1000)
    path = _corpus(tmp_path, json.dumps({"contents": "x" * 5000}).encode())
    with pytest.raises(ConfigError, match=r"corpus.jsonl line 1: longer than 1000 bytes; valid: one JSON object"):
        load_corpus(str(path))


def _latin1_corpus(tmp_path):
    return _corpus(tmp_path, b'{"contents": "T\\nfine"}', b'{"contents": "caf\xe9"}')


def _fail_as_the_cli_does(capsys, body) -> str:
    """`body` run as `train` and `eval` run their jobs (commands.common.run_job): a user error
    is printed as one `error:` line with exit status 2."""
    from rlrecipes.commands.common import run_job

    with pytest.raises(SystemExit) as exit:
        run_job(body, lambda: None)
    assert exit.value.code == 2
    out = capsys.readouterr()
    return one_error_line(out.out + out.err)


def test_train_refuses_an_unreadable_corpus_in_one_line(tmp_path, capsys):
    """`rlrecipes train` builds the tool rollout from `rollout.*` (tool_loop.build.rollout_kwargs)."""
    from rlrecipes.tool_loop.build import rollout_kwargs

    path = _latin1_corpus(tmp_path)
    rollout = structured(RolloutConfig, tools=["search"], tool_kwargs={"search": {"corpus": str(path)}})
    cfg = SimpleNamespace(rollout=rollout, trainer=SimpleNamespace(max_completion_length=16))
    tokenizer = SimpleNamespace(eos_token_id=0)
    line = _fail_as_the_cli_does(capsys, lambda: rollout_kwargs(cfg, tokenizer))
    assert line.startswith(f"error: {path} line 2: not UTF-8")


def test_eval_refuses_an_unreadable_corpus_in_one_line(tmp_path, capsys):
    """`rlrecipes eval` builds the tool loop of its `rollout.*` with tool_loop.build.tool_rollout_for
    (called by tool_loop.greedy.with_tools, not imported here: it imports torch)."""
    from rlrecipes.tool_loop.build import tool_rollout_for

    path = _corpus(tmp_path, b"[" * 100_000)
    rollout = structured(RolloutConfig, tools=["search"], tool_kwargs={"search": {"corpus": str(path)}})
    tokenizer = SimpleNamespace(eos_token_id=0)
    line = _fail_as_the_cli_does(capsys, lambda: tool_rollout_for(rollout, tokenizer, 1))
    assert line.startswith(f"error: {path} line 1: JSON nested too deeply to read")


def test_reading_and_indexing_a_corpus_is_a_phase_that_speaks_if_it_is_long(tmp_path, monkeypatch):
    """A million-passage corpus takes minutes: make_retriever reads and indexes it inside a Phase
    (announced once it has run 10 s, tests/test_phase.py), and the Phase ends when the index exists."""
    seen = []

    class Recorder:
        def __init__(self, what, log):
            seen.append(what)

        def __enter__(self):
            seen.append("entered")

        def __exit__(self, *exc):
            seen.append("left")

    def loading(*args, **kwargs):
        seen.append("load")
        return [Passage("1", "T\nsome text")]

    monkeypatch.setattr(search, "Phase", Recorder)
    monkeypatch.setattr(search, "load_corpus", loading)
    corpus = tmp_path / "wiki.jsonl"
    corpus.write_text('{"id": "1", "contents": "T\\nsome text"}\n')
    make_retriever(SearchOptions(corpus=str(corpus)))
    assert seen == [f"reading and indexing the search corpus {corpus}", "entered", "load", "left"]
