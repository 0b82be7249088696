"""Long documents with the answer hidden among distractors: the toy's document QA, for the length
curriculum of QwenLong-L1 (Wan et al. 2025, arXiv 2505.17667: phases of growing input length).

The people of the fact base (rlrecipes/data/factbase.py: invented names, each with a home city)
each get a one-line passage. A question about one person comes first, then a document made of that
person's passage and `n` distractor passages about other people of the same world, so `n`
(`data.synthetic.distractors`, a list: every person is asked once per count) sets the input
length, 22 characters (the toy's tokens) per passage:

    Where is Kalo Remuta from?
    Nuta Bokesi: Kadopan.
    Kalo Remuta: Pelimon.
    Dasi Kelomu: Tavisen.               ->  Answer: Pelimon

The passage is a name and a city rather than the fact base's `Person.contents`: that one also
names the person's teacher, so other people's names would sit in the distractors, and its ~64
characters would put nine passages past the toy's 512 positions (rlrecipes/models/toy.py).
With these, a document with 8 distractors is 227 tokens under the chat template, and the toy's
cost per step grows with the tokens.

The question comes first, as document-QA prompts often state the task before the document.
Reading it means matching the asked name, character by character in the toy, against every
passage's. The toy with 400 training people, warm-started 600 steps on every length, never
learned that: it answered held-out documents with n distractors right about 1 / (n + 1) of the
time, a guess among their cities, whatever its teacher. The preset's toy
(conf/model/toy_long_documents.yaml) learns it from 4000 people's one-distractor documents,
which leaves the longer ones to RL.

What the generator guarantees (tests/data/test_long_documents.py):
- the asked person's passage is in the document exactly once, at position `k % (n + 1)` for
  the k-th person asked with `n` distractors (every position equally often); the distractors
  are shuffled around it;
- no distractor is about the asked person or holds the asked person's city, so the answer's
  word occurs in the document once, in the right passage;
- every name and city has the same length, so a document's length depends on `n` alone;
- training and held-out documents are built from the fact base's two disjoint worlds (people
  and distractors alike): no held-out person was ever seen in training.

A flawed teacher for the warm-start, off in the preset: the lazy reader, which on
`teacher_error_rate` of its demonstrations answers with the city of the document's first
passage (always right without distractors, right with probability (1 - e) + e / (n + 1) with
`n`).
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from rlrecipes.data.factbase import Person, make_people
from rlrecipes.errors import UserError
from rlrecipes.grading.extract import answer_line


def passage(person: Person) -> str:
    return f"{person.name}: {person.city}."


def question(name: str) -> str:
    return f"Where is {name} from?"


def document(asked: Person, distractors: Sequence[Person], position: int) -> str:
    """The prompt: the question, then the passages, the asked person's at `position`."""
    people = [*distractors[:position], asked, *distractors[position:]]
    return "\n".join([question(asked.name), *map(passage, people)])


def check_counts(counts: Sequence[int]) -> list[int]:
    values = [int(n) for n in counts]
    if not values or min(values) < 0 or len(set(values)) != len(values):
        raise UserError(
            f"data.synthetic.distractors={list(counts)}: give distinct distractor counts >= 0, e.g. [0, 1, 2, 4, 8]"
        )
    return sorted(values)


def questions(world: list[Person], counts: Sequence[int], seed: int) -> list[dict[str, Any]]:
    """Every person of `world` asked once per distractor count, distractors drawn from `world`."""
    rng = random.Random(seed)
    # per city, the people from other cities: the answer's word is then in the right passage only
    other_cities = {city: [p for p in world if p.city != city] for city in sorted({p.city for p in world})}
    items = []
    for n in counts:
        for k, asked in enumerate(world):
            others = other_cities[asked.city]
            if len(others) < n:
                raise UserError(
                    f"data.synthetic.distractors: {n} distractors need more people from other cities "
                    f"than this world's {len(others)}; raise data.synthetic.num_train / num_eval"
                )
            chosen = rng.sample(others, n)
            position = k % (n + 1)
            first = chosen[0] if position > 0 else asked
            items.append(
                {
                    "id": f"{asked.name}|{n}",
                    "problem": document(asked, chosen, position),
                    "answer": asked.city,
                    "distractors": n,
                    "position": position,
                    "first_city": first.city,  # the lazy reader's answer
                }
            )
    return items


def worlds(num_train: int, num_eval: int, counts: Sequence[int], seed: int) -> tuple[list[Person], list[Person]]:
    """The fact base's two worlds for `num_train` / `num_eval` questions (one per person and count)."""
    return make_people(max(num_train // len(counts), 1), max(num_eval // len(counts), 1), seed)


def verify(completion: str, gold: Any) -> bool:
    """Exact match of the answer line with the city."""
    found = answer_line(completion)
    return found is not None and found.strip() == str(gold).strip()


def lazy_reader(error_rate: float):
    """The flawed teacher (module doc): on `error_rate` of its answers, the first passage's city."""

    def demonstrate(item: dict[str, Any], rng: random.Random) -> str:
        wrong = rng.random() < error_rate
        return f"Answer: {item['first_city'] if wrong else item['answer']}"

    return demonstrate


def solution(item: dict[str, Any]) -> str:
    return f"Answer: {item['answer']}"
