"""The fact base: the Search-R1 toy, where every answer is in a corpus and nowhere else.

Invented people, each with a home city and a teacher, one short passage each, in
Search-R1's corpus format (`{"id", "contents": "Title\\ntext"}`):

    Kalo Remuta
    Kalo Remuta: born in Pelimon; taught by Dasi Kelomu.

Questions are 1-hop ("Where is Kalo Remuta from?") and 2-hop ("Where is the teacher of
Kalo Remuta from?"). People are split into a training world and a held-out world whose
teachers stay inside their world, so no held-out answer is ever a training answer about the
same person; names and cities are drawn from the seed. What the generator guarantees by
construction (and checks, with the `search` tool's own BM25):

- searching a person's name returns that person's passage first: the name is written twice
  there and once in the passages of the people it taught, and every passage has the same
  number of words;
- a 2-hop question cannot be answered by retrieving once with the question's text, however
  many passages are retrieved: the question shares no word with any passage except the
  subject's name, so it retrieves the subject's passage and those of the people the
  subject taught, never the teacher's (nobody teaches their own teacher); and nobody is
  from their teacher's city, so the subject's passage does not hold the answer either.

The warm-start's demonstrator (the project's "flawed teacher", not a person's teacher in the
fact base) is flawed as the reference note on agentic RL proposes: it always searches the
subject's name and reads the answer from the passage it gets, but on a 2-hop question it
stops after that first search with probability `error_rate`
(data.synthetic.teacher_error_rate) and answers with the subject's own city, which is wrong.
RL with exact match can teach the second search.

On `RAG_DEMO_SHARE` of its demonstrations the demonstrator does not search: the passage that one
search with the question's own text returns comes right after the question, and it answers from
that passage (a 2-hop question wrongly: the passage is the subject's). That is the context
`rollout.tool_mode=rag_once` gives (Search-R1's RAG baseline, `search_r1_rag`), so the RAG control
starts from a model that has read a passage there, not from one that never saw that context.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from rlrecipes.data.tool_task import Segment, ToolTask, answered, called, tool_task
from rlrecipes.errors import UserError
from rlrecipes.tools import ToolSpec
from rlrecipes.tools.bm25 import BM25Index, Passage
from rlrecipes.tools.search import SearchOptions, format_passages

TOPK = 1  # passages per search in the toy: two searches must fit the toy's 512-character context
RAG_TOPK = 3  # Search-R1's retrieval top-k (train_grpo.sh retriever.topk=3): the 2-hop check's depth
NUM_CITIES = 16
# demonstrations in the RAG context (retrieved with the question, no search of the model's own):
# a quarter, so the searching demonstrations that the search arm imitates stay the bulk
RAG_DEMO_SHARE = 0.25
_CONSONANTS, _VOWELS = "bdfgklmnprstv", "aeiou"


@dataclass(frozen=True)
class Person:
    name: str
    city: str
    teacher: str

    @property
    def contents(self) -> str:
        return f"{self.name}\n{self.name}: born in {self.city}; taught by {self.teacher}."


# The questions' other words (where, is, the, teacher, of, from) are in no passage.
def one_hop(name: str) -> str:
    return f"Where is {name} from?"


def two_hop(name: str) -> str:
    return f"Where is the teacher of {name} from?"


def _words(rng: random.Random, syllables: int, count: int, ending: str = "") -> list[str]:
    """`count` distinct capitalised words of `syllables` consonant-vowel pairs (+ `ending`)."""
    pool = [c + v for c in _CONSONANTS for v in _VOWELS]
    if count > len(pool) ** syllables:
        raise UserError(f"the fact base has names for at most {len(pool) ** syllables} people; ask for fewer")
    seen: set[str] = set()
    while len(seen) < count:
        seen.add("".join(rng.choice(pool) for _ in range(syllables)).capitalize() + ending)
    return sorted(seen)


def make_people(num_train: int, num_eval: int, seed: int) -> tuple[list[Person], list[Person]]:
    """The training and held-out worlds (each person's teacher is in their own world)."""
    if num_train < 3 or num_eval < 3:
        raise UserError(
            f"the fact base needs at least 3 people per world; data.synthetic.num_train={2 * num_train} "
            f"and num_eval={2 * num_eval} questions give {num_train} and {num_eval}"
        )
    rng = random.Random(seed)
    total = num_train + num_eval
    # first names 4 letters, last names 6, cities 7: no word is two kinds of thing
    firsts, lasts = _words(rng, 2, total), _words(rng, 3, total)
    rng.shuffle(firsts)
    rng.shuffle(lasts)
    names = [f"{a} {b}" for a, b in zip(firsts, lasts)]
    cities = _words(rng, 3, NUM_CITIES, ending="n")
    worlds = []
    for members in (names[:num_train], names[num_train:]):
        city = {name: rng.choice(cities) for name in members}
        worlds.append(_assign_teachers(members, city, rng))
    checked = [p for world in worlds for p in world]
    _check_retrieval(checked)
    return worlds[0], worlds[1]


def _assign_teachers(members: list[str], city: dict[str, str], rng: random.Random) -> list[Person]:
    """A teacher for each person: someone else, from another city, not taught by them (drawn
    again from the start in the rare small world where the draws leave someone without one)."""
    for _ in range(100):
        teacher: dict[str, str] = {}
        for name in members:
            choices = [t for t in members if t != name and city[t] != city[name] and teacher.get(t) != name]
            if not choices:
                break
            teacher[name] = rng.choice(choices)
        else:
            return [Person(name, city[name], teacher[name]) for name in members]
    raise UserError("the fact base cannot give everyone a teacher from another city; use more people")


def passages(people: list[Person]) -> list[Passage]:
    return [Passage(str(i), p.contents) for i, p in enumerate(people)]


def _check_retrieval(people: list[Person]) -> None:
    """The two retrieval guarantees of the module doc, checked with the search tool's BM25
    (they hold by construction: a failure here is a bug in this module)."""
    index = BM25Index(passages(people))
    row = {p.name: i for i, p in enumerate(people)}
    for p in people:
        [(top, _)] = index.search(p.name, 1)
        if top.id != str(row[p.name]):
            raise UserError(f"fact base: searching {p.name!r} does not return its passage first")
        found = {hit.id for hit, _ in index.search(two_hop(p.name), RAG_TOPK)}
        if str(row[p.teacher]) in found:
            raise UserError(f"fact base: one search for {two_hop(p.name)!r} retrieves the teacher's passage")


def write_corpus(people: list[Person], path: Path) -> None:
    """The corpus as Search-R1's JSON lines (what `rollout.tool_kwargs.search.corpus` reads)."""
    lines = [json.dumps({"id": psg.id, "contents": psg.contents}) for psg in passages(people)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _search_defaults() -> dict[str, Any]:
    return {f.name: f.default for f in fields(SearchOptions) if f.name in ("open", "close", "wrap")}


def search_spec(people: list[Person], topk: int = TOPK) -> ToolSpec:
    """The `search` tool over these people's passages, as the rollout runs it with the
    fact-base corpus (same BM25, same passage format, same tags and wrapper)."""
    index = BM25Index(passages(people))
    tags = _search_defaults()

    def run(query: str) -> str:
        return format_passages([psg for psg, _ in index.search(query.strip(), topk)])

    return ToolSpec("search", tags["open"], tags["close"], tags["wrap"], run)


def questions(people: list[Person]) -> list[dict[str, Any]]:
    by_name = {p.name: p for p in people}
    items = []
    for p in people:
        items.append({"id": f"1hop:{p.name}", "problem": one_hop(p.name), "answer": p.city, "hops": 1})
        items.append({"id": f"2hop:{p.name}", "problem": two_hop(p.name), "answer": by_name[p.teacher].city, "hops": 2})
    return items


def people_for(num_train: int, num_eval: int, seed: int) -> tuple[list[Person], list[Person]]:
    """The worlds behind `num_train` / `num_eval` questions: each person is asked two."""
    return make_people(max(num_train // 2, 1), max(num_eval // 2, 1), seed)


def factbase_task(
    num_train: int, num_eval: int, seed: int, error_rate: float, rag_share: float = RAG_DEMO_SHARE
) -> ToolTask:
    """The fact-base ToolTask: `num_train` / `num_eval` questions (half 1-hop, half 2-hop);
    `rag_share` of the teacher's demonstrations are in the RAG context (module docstring)."""
    train_people, eval_people = people_for(num_train, num_eval, seed)
    everyone = train_people + eval_people
    search = search_spec(everyone)
    by_name = {p.name: p for p in everyone}
    train, held_out = questions(train_people), questions(eval_people)
    random.Random(seed + 1).shuffle(train)

    def demonstrate(it: dict[str, Any], skip_second: bool) -> list[Segment]:
        subject = by_name[it["id"].split(":", 1)[1]]
        steps = called(search, subject.name)
        if it["hops"] == 1 or skip_second:  # answered from the first passage
            return steps + [answered(subject.city)]
        return steps + called(search, subject.teacher) + [answered(by_name[subject.teacher].city)]

    def retrieved(it: dict[str, Any]) -> list[Segment]:
        """The passage one search with the question returns, after the prompt, and the city it names."""
        subject = by_name[it["id"].split(":", 1)[1]]
        [_, passage] = called(search, it["problem"])
        return [passage, answered(subject.city)]

    def demonstrator(it: dict[str, Any], rng: random.Random) -> list[Segment]:
        if rng.random() < rag_share:
            return retrieved(it)
        return demonstrate(it, skip_second=rng.random() < error_rate)

    correct = lambda it: demonstrate(it, skip_second=False)  # noqa: E731
    return tool_task("factbase", train, held_out, [search], 2, demonstrator, correct)
