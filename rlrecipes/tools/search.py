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
"""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol

from rlrecipes.errors import ConfigError, DataError
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
    open: str = "<search>"
    close: str = "</search>"
    wrap: str = "\n\n<information>{}</information>\n\n"

    def __post_init__(self) -> None:
        if self.retriever not in ("bm25", "http", "random"):
            raise ConfigError(f"rollout.tool_kwargs.search.retriever={self.retriever!r}; valid: bm25, http, random")
        if self.topk < 1:
            raise ConfigError(f"rollout.tool_kwargs.search.topk={self.topk} must be at least 1")
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
    def __init__(self, passages: list[Passage], k1: float = 0.9, b: float = 0.4):
        self.index = BM25Index(passages, k1, b)

    def search(self, query: str, k: int) -> list[Passage]:
        return [passage for passage, _ in self.index.search(query, k)]


class HttpRetriever:
    """Client of Search-R1's retrieval server; a server that is down or answers malformed
    JSON is a `ToolFailure` (text in the rollout, counted), never a crash."""

    def __init__(self, url: str, timeout_s: float = 10.0):
        self.url, self.timeout_s = url, timeout_s

    def search(self, query: str, k: int) -> list[Passage]:
        body = json.dumps({"queries": [query], "topk": k, "return_scores": True}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = json.loads(response.read())
        except (urllib.error.URLError, OSError) as exc:
            raise ToolFailure(f"retriever {self.url} unreachable ({getattr(exc, 'reason', exc)})") from None
        except ValueError:
            raise ToolFailure(f"retriever {self.url} answered malformed JSON") from None
        try:
            hits = payload["result"][0]
            return [Passage(str(hit["document"].get("id", "")), str(hit["document"]["contents"])) for hit in hits]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ToolFailure(f"retriever {self.url} answered JSON without result[0][i].document.contents") from None


class RandomRetriever:
    """k distinct passages drawn uniformly from the corpus, ignoring the query (a broken tool)."""

    def __init__(self, passages: list[Passage], seed: int = 0):
        self.passages, self.rng = passages, random.Random(seed)

    def search(self, query: str, k: int) -> list[Passage]:
        return self.rng.sample(self.passages, min(k, len(self.passages)))


def load_corpus(path: str) -> list[Passage]:
    """Passages of a JSON-lines corpus; a bad line is a one-line DataError naming file and line."""
    passages = []
    with open(Path(path).expanduser(), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise DataError(f"{path} line {number}: not JSON") from None
            if not isinstance(row, dict):
                raise DataError(f"{path} line {number}: expected an object with 'contents' (or 'title' and 'text')")
            if "contents" in row:
                contents = str(row["contents"])
            elif "text" in row:
                contents = f"{row.get('title', '')}\n{row['text']}"
            else:
                raise DataError(f"{path} line {number}: no 'contents' (or 'text') field; fields: {sorted(row)}")
            passages.append(Passage(str(row.get("id", number)), contents))
    if not passages:
        raise DataError(f"{path}: no passages")
    return passages


def format_passages(passages: list[Passage]) -> str:
    """Search-R1's `_passages2string`: one `Doc i(Title: title) text` line per passage."""
    lines = []
    for i, passage in enumerate(passages, 1):
        title, _, text = passage.contents.partition("\n")
        lines.append(f"Doc {i}(Title: {title}) {text}\n")
    return "".join(lines)


def make_retriever(options: SearchOptions) -> Retriever:
    if options.retriever == "http":
        return HttpRetriever(options.url, options.http_timeout_s)
    if options.retriever == "random":
        return RandomRetriever(load_corpus(options.corpus), options.seed)
    return BM25Retriever(load_corpus(options.corpus), options.k1, options.b)


@register_tool("search", SearchOptions)
def search_tool(options: SearchOptions) -> ToolSpec:
    retriever = make_retriever(options)

    def run(query: str) -> str:
        if not query.strip():
            raise ToolFailure("empty query")
        return format_passages(retriever.search(query.strip(), options.topk))

    return ToolSpec("search", options.open, options.close, options.wrap, run)
