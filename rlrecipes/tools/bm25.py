"""Okapi BM25 over an in-memory list of passages, in plain Python (no index package).

Scores follow Lucene's BM25 (the one behind pyserini, which Search-R1's sparse retriever
uses): idf = ln(1 + (N - df + 0.5) / (df + 0.5)), term weight
idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), with pyserini's defaults
k1 = 0.9, b = 0.4. Tokens are lower-cased alphanumeric runs. An inverted index keeps a
query's cost proportional to the postings of its terms, so a corpus of some hundred
thousand short passages is searched in milliseconds on a CPU.

A passage may be indexed by a bounded prefix (`max_chars`): its first characters only are
lower-cased and tokenised, so one huge passage (an 11 MB line of a corpus) costs what the
budget does, not seconds and gigabytes; the rest of it is never seen by the index.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Passage:
    id: str
    contents: str  # Search-R1's corpus format: "Title\ntext"


class BM25Index:
    """BM25 over `passages`, each indexed by its first `max_chars` characters (None: all of it)."""

    def __init__(self, passages: list[Passage], k1: float = 0.9, b: float = 0.4, max_chars: int | None = None):
        if not passages:
            raise ValueError("BM25Index needs at least one passage")
        self.passages, self.k1, self.b = passages, k1, b
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)  # term -> [(doc, tf)]
        for doc, passage in enumerate(passages):
            counts = Counter(tokenize(passage.contents[:max_chars]))  # the bounded prefix, cut before tokenising
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((doc, tf))
        self.avgdl = sum(self.lengths) / len(self.lengths) or 1.0

    def idf(self, term: str) -> float:
        n, df = len(self.passages), len(self.postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> dict[int, float]:
        """BM25 score of every passage sharing a term with `query` (a repeated query term counts once per repeat)."""
        out: dict[int, float] = defaultdict(float)
        for term in tokenize(query):
            idf = self.idf(term)
            for doc, tf in self.postings.get(term, ()):
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc] / self.avgdl)
                out[doc] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        """The `k` best passages, best first; ties keep corpus order (deterministic)."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))[:k]
        return [(self.passages[doc], score) for doc, score in ranked]
