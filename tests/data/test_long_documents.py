"""The long-documents task (rlrecipes/data/long_documents.py): a question after its person's
passage hidden among distractor passages."""

import random
import re

import pytest

from rlrecipes.config.schema import SyntheticTaskConfig
from rlrecipes.data.factbase import Person
from rlrecipes.data.long_documents import document, questions
from rlrecipes.data.synthetic import make_task
from rlrecipes.errors import UserError
from tests.conftest import structured

PASSAGE = re.compile(r"^([A-Z][a-z]{3} [A-Z][a-z]{5}): ([A-Z][a-z]{6})\.$")


def task(**kw):
    # 20 training and 20 held-out people, each asked with 0, 1, 2, 4 and 8 distractors
    sizes = {"num_train": 100, "num_eval": 100, **kw}
    return make_task(structured(SyntheticTaskConfig, task="long_documents", **sizes))


def parse(item):
    """(passages as (name, city), the asked name) of a document."""
    asked, *lines = item["problem"].split("\n")
    return [PASSAGE.match(line).groups() for line in lines], re.fullmatch(r"Where is (.+) from\?", asked).group(1)


def test_document_is_the_question_then_the_passages():
    kalo, dasi, nuta = (Person("Kalo Remuta", "Pelimon", ""), Person("Dasi Kelomu", "Tavisen", ""),
                        Person("Nuta Bokesi", "Kadopan", ""))  # fmt: skip
    assert document(kalo, [dasi, nuta], 1) == (
        "Where is Kalo Remuta from?\nDasi Kelomu: Tavisen.\nKalo Remuta: Pelimon.\nNuta Bokesi: Kadopan."
    )
    assert document(kalo, [], 0) == "Where is Kalo Remuta from?\nKalo Remuta: Pelimon."


def test_the_answers_passage_is_in_every_document_exactly_once_at_its_position():
    t = task()
    for item in t.train + t.eval:
        passages, asked = parse(item)
        assert [name for name, _ in passages].count(asked) == 1
        assert passages[item["position"]] == (asked, item["answer"])


def test_no_distractor_is_about_the_asked_person_or_holds_the_answer():
    t = task()
    for item in t.train + t.eval:
        passages, asked = parse(item)
        others = passages[: item["position"]] + passages[item["position"] + 1 :]
        assert all(name != asked and city != item["answer"] for name, city in others)
        assert item["problem"].count(item["answer"]) == 1


def test_lengths_are_as_requested():
    t = task(distractors=[0, 3, 6])
    counts = {}
    for item in t.train + t.eval:
        passages, _ = parse(item)
        assert len(passages) == item["distractors"] + 1
        # 22 characters a passage and the newline before it ("\nKalo Remuta: Pelimon."), 26 the question
        assert len(item["problem"]) == 22 * (item["distractors"] + 1) + 26
        counts[item["distractors"]] = counts.get(item["distractors"], 0) + 1
    assert counts == {0: 66, 3: 66, 6: 66}  # 100 // 3 = 33 people a world, once per count, both worlds


def test_every_person_asked_once_per_count_at_every_position_equally():
    t = task(distractors=[0, 4], num_eval=50)
    ids = [it["id"] for it in t.eval]
    assert len(ids) == len(set(ids)) == 50
    positions = sorted(it["position"] for it in t.eval if it["distractors"] == 4)
    assert positions == sorted(list(range(5)) * 5)  # 25 held-out people, positions 0-4 five times each


def test_held_out_people_are_unseen_in_training():
    t = task()
    names = lambda items: {name for it in items for name, _ in parse(it)[0]}  # noqa: E731
    assert len(names(t.eval)) == 20 and len(names(t.train)) == 20
    assert not names(t.train) & names(t.eval)


def test_lazy_reader_answers_with_the_first_passage_at_its_rate():
    t = task(teacher_error_rate=0.5)
    rng = random.Random(0)
    no_distractors = [it for it in t.train if it["distractors"] == 0]
    assert {t.demonstration(it, rng) for it in no_distractors} == {f"Answer: {it['answer']}" for it in no_distractors}
    hidden = next(it for it in t.train if it["position"] > 0)
    first_city = parse(hidden)[0][0][1]
    demos = [t.demonstration(hidden, rng) for _ in range(2000)]
    assert set(demos) == {f"Answer: {hidden['answer']}", f"Answer: {first_city}"}
    assert demos.count(f"Answer: {first_city}") / len(demos) == pytest.approx(0.5, abs=0.05)
    assert t.solution(hidden) == f"Answer: {hidden['answer']}"


def test_verifier_is_an_exact_match_of_the_answer_line():
    t = task()
    assert t.verify("Answer: Pelimon", "Pelimon") and t.verify("Answer:  Pelimon ", "Pelimon")
    assert not t.verify("Answer: Pelimo", "Pelimon") and not t.verify("Pelimon", "Pelimon")


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"distractors": []}, "data.synthetic.distractors=[]"),
        ({"distractors": [0, -1]}, "data.synthetic.distractors=[0, -1]"),
        ({"distractors": [2, 2]}, "data.synthetic.distractors=[2, 2]"),
        ({"num_eval": 14}, "data.synthetic.num_eval=14"),
        ({"distractors": [0, 1, 2, 4, 40]}, "40 distractors need more people"),
    ],
)
def test_bad_settings_are_one_line(kw, message):
    with pytest.raises(UserError, match=re.escape(message)):
        task(**kw)


def test_questions_draw_distractors_from_their_own_world_only():
    world = [Person(f"Abcd Efghi{c}", f"City{i:03d}", "") for i, c in enumerate("klmn")]
    items = questions(world, [3], seed=0)
    for item in items:
        assert sorted(item["problem"].split("\n")[1:]) == sorted(f"{p.name}: {p.city}." for p in world)
