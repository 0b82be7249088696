"""`search`: retrieve the top-k passages for a query (Search-R1, Jin et al. 2025, arXiv 2503.09516).

Tags and result format are Search-R1's (`search_r1/llm_agent/generation.py`: the call is
`<search> query </search>`, the passages come back as
`\\n\\n<information>Doc 1(Title: ...) text\\n...</information>\\n\\n`, top-3 by default).

Retrievers behind one protocol (`Retriever.search(query, k)`):
- `bm25` (default): in-process BM25 (tools/bm25.py) over a local corpus file, for CPUs;
- `http`: a client of the official Search-R1 retrieval server's JSON
  (`search_r1/search/retrieval_server.py`: POST /retrieve with {"queries", "topk",
  "return_scores"} -> {"result": [[{"document": {"id", "contents"}, "score"}]]}), so GPU
  users run the paper's e5 retriever unchanged;
- `random`: k passages of the corpus drawn at random, whatever the query (a broken tool: the
  control that tells gains from the passages' content from gains from the format).

The corpus is JSON lines in Search-R1's format, `{"id": ..., "contents": "Title\\ntext"}`
(`{"title", "text"}` rows are accepted too).

Every passage is bounded before anything processes it: cut to `max_passage_chars` where it
enters (a corpus line at load, a hit of the HTTP server), where it is indexed (BM25) and
where the result text is assembled, and the server's answer is read to `http_max_bytes` at
most. One huge passage (an 11 MB line took 32 s and 2.4 GB per search) then costs what the
budget does.
"""

from __future__ import annotations

import functools
import json
import random
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol

from rlrecipes.errors import ConfigError, DataError
from rlrecipes.phase import Phase
from rlrecipes.tools import ToolFailure, ToolSpec, register_tool
from rlrecipes.tools.bm25 import BM25Index, Passage


@dataclass
class SearchOptions:
    corpus: Optional[str] = None  # JSON-lines passages (retriever=bm25)
    retriever: str = "bm25"  # bm25 | http | random (the broken-tool control)
    seed: int = 0  # retriever=random: its draws
    url: str = "http://127.0.0.1:8000/retrieve"  # retriever=http: the Search-R1 retrieval server
    topk: int = 3
    k1: float = 0.9
    b: float = 0.4
    http_timeout_s: float = 10.0
    # each passage is cut to its first this many characters before it is indexed or shown
    # (a Wikipedia-2018 passage of Search-R1's corpus is about 600; a result is cut to
    # rollout.max_tool_result_tokens=500 tokens anyway): one huge passage costs no more
    max_passage_chars: int = 4000
    # retriever=http: the most bytes of the server's answer read; a longer answer is a tool
    # error the model reads, never read to its end (topk passages of 4000 characters are ~50 kB)
    http_max_bytes: int = 1_048_576
    open: str = "<search>"
    close: str = "</search>"
    wrap: str = "\n\n<information>{}</information>\n\n"

    def __post_init__(self) -> None:
        if self.retriever not in ("bm25", "http", "random"):
            raise ConfigError(f"rollout.tool_kwargs.search.retriever={self.retriever!r}; valid: bm25, http, random")
        for key in ("topk", "max_passage_chars", "http_max_bytes"):
            if getattr(self, key) < 1:
                raise ConfigError(f"rollout.tool_kwargs.search.{key}={getattr(self, key)} must be at least 1")
        if self.retriever in ("bm25", "random"):
            if not self.corpus:
                raise ConfigError(
                    f"tool search with retriever={self.retriever} needs rollout.tool_kwargs.search.corpus "
                    '(a JSON-lines file of {"id", "contents"} passages)'
                )
            path = Path(self.corpus).expanduser()
            if not path.is_file():
                raise ConfigError(f"rollout.tool_kwargs.search.corpus={self.corpus}: no such file")
            if path.stat().st_size == 0:
                raise ConfigError(f"rollout.tool_kwargs.search.corpus={self.corpus} is empty (no passages)")


class Retriever(Protocol):
    def search(self, query: str, k: int) -> list[Passage]: ...


class BM25Retriever:
    def __init__(self, passages: list[Passage], k1: float = 0.9, b: float = 0.4, max_chars: int | None = None):
        self.index = BM25Index(passages, k1, b, max_chars)

    def search(self, query: str, k: int) -> list[Passage]:
        return [passage for passage, _ in self.index.search(query, k)]


class HttpRetriever:
    """Client of Search-R1's retrieval server; a server that is down, answers malformed JSON
    or more than `max_bytes` bytes is a `ToolFailure` (text in the rollout, counted), never a
    crash. Of its hits the first `k` are kept, each cut to `max_chars` characters."""

    def __init__(
        self,
        url: str,
        timeout_s: float = 10.0,
        max_bytes: int = SearchOptions.http_max_bytes,
        max_chars: int | None = None,
    ):
        self.url, self.timeout_s, self.max_bytes, self.max_chars = url, timeout_s, max_bytes, max_chars

    def search(self, query: str, k: int) -> list[Passage]:
        body = json.dumps({"queries": [query], "topk": k, "return_scores": True}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = response.read(self.max_bytes + 1)  # one byte more tells a longer answer
        except (urllib.error.URLError, OSError) as exc:
            raise ToolFailure(f"retriever {self.url} unreachable ({getattr(exc, 'reason', exc)})") from None
        if len(answer) > self.max_bytes:
            raise ToolFailure(
                f"retriever {self.url} answered more than {self.max_bytes} bytes "
                "(rollout.tool_kwargs.search.http_max_bytes); not read further"
            )
        try:
            payload = json.loads(answer)
        except (ValueError, RecursionError):
            raise ToolFailure(f"retriever {self.url} answered malformed JSON") from None
        try:
            hits = payload["result"][0][:k]  # a server answering more than topk hits gets k read
            return [
                Passage(str(hit["document"].get("id", "")), str(hit["document"]["contents"])[: self.max_chars])
                for hit in hits
            ]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ToolFailure(f"retriever {self.url} answered JSON without result[0][i].document.contents") from None


class RandomRetriever:
    """k distinct passages drawn uniformly from the corpus, ignoring the query (a broken tool)."""

    def __init__(self, passages: list[Passage], seed: int = 0):
        self.passages, self.rng = passages, random.Random(seed)

    def search(self, query: str, k: int) -> list[Passage]:
        return self.rng.sample(self.passages, min(k, len(self.passages)))


class CorpusError(ConfigError, DataError):
    """A corpus file (`rollout.tool_kwargs.search.corpus`) that cannot be read, found when the
    tool is built (`train` and `eval` alike): one line naming the file, the line and what is
    valid. A ConfigError (the setting names an unusable file) and a DataError (a bad row)."""


# a corpus line longer than this is refused after reading this much of it, not read to its
# end: a passage is cut to max_passage_chars anyway, and a line this long is a whole JSON
# document (an array of passages), not one passage per line
MAX_LINE_BYTES = 64 * 2**20

_VALID = 'one JSON object {"id", "contents": "Title\\ntext"} (or {"title", "text"}) per line, UTF-8'


def _corpus_row(path: str, number: int, line: bytes) -> dict | None:
    """Line `number` of corpus `path` as a JSON object; None for a blank line."""
    if len(line) > MAX_LINE_BYTES:
        raise CorpusError(f"{path} line {number}: longer than {MAX_LINE_BYTES} bytes; valid: {_VALID}")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{path} line {number}: not UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); valid: {_VALID}"
        ) from None
    if not text or text.isspace():  # (no stripped copy of a long line)
        return None
    try:
        row = json.loads(text)
    except RecursionError:
        raise CorpusError(f"{path} line {number}: JSON nested too deeply to read; valid: {_VALID}") from None
    except ValueError:
        raise CorpusError(f"{path} line {number}: not JSON; valid: {_VALID}") from None
    if not isinstance(row, dict):
        raise CorpusError(f"{path} line {number}: expected an object with 'contents' (or 'title' and 'text')")
    return row


def load_corpus(path: str, max_chars: int | None = None) -> list[Passage]:
    """Passages of a JSON-lines corpus, each cut to its first `max_chars` characters (None:
    all of it) as it is read, before anything tokenises it: an 11 MB passage is kept (and
    indexed) as a bounded prefix. A bad line (not UTF-8, not JSON or nested too deeply to
    parse, no passage, longer than MAX_LINE_BYTES) is a one-line CorpusError naming file and line."""
    passages = []
    with open(Path(path).expanduser(), "rb") as handle:
        lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b"")  # a longer line is never read whole
        for number, line in enumerate(lines, 1):
            row = _corpus_row(path, number, line)
            if row is None:
                continue
            if "contents" in row:
                contents = str(row["contents"])
            elif "text" in row:
                contents = f"{row.get('title', '')}\n{row['text']}"
            else:
                raise CorpusError(f"{path} line {number}: no 'contents' (or 'text') field; fields: {sorted(row)}")
            passages.append(Passage(str(row.get("id", number)), contents[:max_chars]))
    if not passages:
        raise CorpusError(f"{path}: no passages")
    return passages


def format_passages(passages: list[Passage], max_chars: int | None = None) -> str:
    """Search-R1's `_passages2string`: one `Doc i(Title: title) text` line per passage, each
    passage cut to its first `max_chars` characters (None: all of it) before it is split."""
    lines = []
    for i, passage in enumerate(passages, 1):
        title, _, text = passage.contents[:max_chars].partition("\n")
        lines.append(f"Doc {i}(Title: {title}) {text}\n")
    return "".join(lines)


def make_retriever(options: SearchOptions) -> Retriever:
    budget = options.max_passage_chars
    if options.retriever == "http":
        return HttpRetriever(options.url, options.http_timeout_s, options.http_max_bytes, budget)
    # a corpus of a million passages takes minutes to read and index in plain Python: said once it
    # has taken 10 s (a toy corpus takes milliseconds and says nothing)
    with Phase(f"reading and indexing the search corpus {options.corpus}", functools.partial(print, flush=True)):
        if options.retriever == "random":
            return RandomRetriever(load_corpus(options.corpus, budget), options.seed)
        return BM25Retriever(load_corpus(options.corpus, budget), options.k1, options.b, budget)


@register_tool("search", SearchOptions)
def search_tool(options: SearchOptions) -> ToolSpec:
    retriever = make_retriever(options)

    def run(query: str) -> str:
        if not query.strip():
            raise ToolFailure("empty query")
        return format_passages(retriever.search(query.strip(), options.topk), options.max_passage_chars)

    return ToolSpec("search", options.open, options.close, options.wrap, run)
