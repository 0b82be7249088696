"""The tool toys' data: the fact base's retrieval guarantees, checked with the `search` tool
the rollout runs, and teacher demonstrations whose tool segments are exactly what the rollout
appends; big arithmetic's flawed teacher and its disjoint split."""

import random

import pytest

from rlrecipes.data.bigarith import bigarith_task, estimate
from rlrecipes.data.factbase import (
    RAG_DEMO_SHARE,
    RAG_TOPK,
    factbase_task,
    make_people,
    one_hop,
    passages,
    two_hop,
    write_corpus,
)
from rlrecipes.errors import UserError
from rlrecipes.tools import build_tools, call_tool


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    train, held_out = make_people(300, 50, seed=7)
    corpus = tmp_path_factory.mktemp("factbase") / "corpus.jsonl"
    write_corpus(train + held_out, corpus)
    return train, held_out, corpus


def _search(corpus, topk):
    [tool] = build_tools(["search"], {"search": {"corpus": str(corpus), "topk": topk}})
    return tool


def test_worlds_are_disjoint_and_teachers_stay_in_their_world(world):
    train, held_out, _ = world
    names = {p.name for p in train}
    assert len(train) == 300 and len(held_out) == 50 and not names & {p.name for p in held_out}
    for people in (train, held_out):
        by_name = {p.name: p for p in people}
        for p in people:
            teacher = by_name[p.teacher]  # a KeyError here: a teacher from the other world
            assert teacher.name != p.name and teacher.city != p.city and teacher.teacher != p.name


def test_searching_a_name_returns_its_passage_first_with_the_rollouts_search_tool(world):
    train, held_out, corpus = world
    search = _search(corpus, 1)
    for p in train + held_out:
        assert call_tool(search, p.name, 10).text == f"Doc 1(Title: {p.name}) {p.contents.splitlines()[1]}\n"


def test_one_search_with_a_2hop_question_never_retrieves_the_teachers_passage(world):
    """What makes the second search necessary: the question's retrieval (at Search-R1's top-3
    and deeper) holds the subject's passage and those it taught, never the teacher's, and the
    subject's own passage names another city."""
    train, held_out, corpus = world
    deep = _search(corpus, 10)
    by_name = {p.name: p for p in train + held_out}
    for p in train + held_out:
        found = call_tool(deep, two_hop(p.name), 10).text
        assert f"(Title: {p.teacher})" not in found
        assert by_name[p.teacher].city not in p.contents
    assert RAG_TOPK == 3  # Search-R1's train_grpo.sh retriever.topk


def test_the_same_seed_gives_the_same_world_and_another_seed_another():
    assert make_people(20, 5, seed=1) == make_people(20, 5, seed=1)
    assert make_people(20, 5, seed=1) != make_people(20, 5, seed=2)
    with pytest.raises(UserError, match="at least 3 people per world"):
        make_people(2, 5, seed=1)


def test_teacher_segments_are_what_the_rollout_appends(world, tmp_path):
    task = factbase_task(40, 10, seed=3, error_rate=0.0)
    corpus = tmp_path / "corpus.jsonl"
    train, held_out = make_people(20, 5, seed=3)
    write_corpus(train + held_out, corpus)
    search = _search(corpus, 1)
    two = next(it for it in task.train if it["hops"] == 2)
    segments = task.segments(two, random.Random(0))
    assert [by_model for _, by_model in segments] == [True, False, True, False, True]
    subject = two["id"].split(":", 1)[1]
    assert segments[0][0] == f"<search>{subject}</search>"
    assert segments[1][0] == f"\n\n<information>{call_tool(search, subject, 10).text}</information>\n\n"
    assert segments[4][0] == f"<answer>{two['answer']}</answer>"
    assert task.verify(task.demonstration(two, random.Random(0)), two["answer"])
    assert two["problem"] == two_hop(subject) and one_hop(subject) == f"Where is {subject} from?"


def test_the_flawed_teacher_stops_after_one_search_on_2hop_questions_and_is_wrong():
    task = factbase_task(40, 10, seed=3, error_rate=1.0)
    for it in task.train:
        text = task.demonstration(it, random.Random(0))
        assert text.count("<search>") == 1
        assert task.verify(text, it["answer"]) is (it["hops"] == 1)  # 1-hop right, 2-hop wrong


def test_a_quarter_of_the_teachers_demonstrations_are_in_the_rag_context():
    """RAG_DEMO_SHARE of the demonstrations start with the passage (no search of the model's
    own); the rest search. 4000 draws: 0.25 lies within 0.23-0.27 by far more than 3 sigma."""
    assert RAG_DEMO_SHARE == 0.25
    task = factbase_task(40, 10, seed=3, error_rate=0.0)
    rng = random.Random(5)
    firsts = [task.segments(it, rng)[0] for it in task.train * 100]
    rag = sum(not by_model for _, by_model in firsts) / len(firsts)
    assert 0.23 < rag < 0.27
    assert all(text.startswith("<search>") for text, by_model in firsts if by_model)
    never = factbase_task(40, 10, seed=3, error_rate=0.0, rag_share=0.0)
    assert all(never.segments(it, rng)[0][1] for it in never.train * 10)


def test_fact_base_questions_by_hand():
    train, held_out = make_people(4, 3, seed=0)
    task = factbase_task(8, 6, seed=0, error_rate=0.0)
    assert {it["id"] for it in task.train} == {f"{h}hop:{p.name}" for p in train for h in (1, 2)}
    by_name = {p.name: p for p in train}
    for it in task.train:
        p = by_name[it["id"].split(":", 1)[1]]
        assert it["answer"] == (p.city if it["hops"] == 1 else by_name[p.teacher].city)
    assert [psg.contents for psg in passages(train)][0] == (
        f"{train[0].name}\n{train[0].name}: born in {train[0].city}; taught by {train[0].teacher}."
    )


def test_big_arithmetic_demonstrations_and_split():
    task = bigarith_task("*", [9999, 9999], 60, 20, seed=5, error_rate=0.0)
    keys = lambda items: {tuple(sorted(it["problem"].split("*"))) for it in items}  # noqa: E731
    assert len(task.train) == 60 and len(task.eval) == 20 and not keys(task.train) & keys(task.eval)
    it = task.train[0]
    a, b = (int(x) for x in it["problem"].split("*"))
    assert it["answer"] == str(a * b)
    assert task.demonstration(it, random.Random(0)) == (
        f"<calculator>{a}*{b}</calculator><result>{a * b}</result><answer>{a * b}</answer>"
    )
    guessed = bigarith_task("*", [9999, 9999], 60, 20, seed=5, error_rate=1.0)
    assert guessed.demonstration(it, random.Random(0)) == f"<answer>{estimate(a, '*', b)}</answer>"
    assert not guessed.verify(guessed.demonstration(it, random.Random(0)), it["answer"])


def test_an_estimate_is_never_the_truth():
    assert estimate(4817, "*", 9263) == 4800 * 9300
    assert estimate(4800, "*", 9300) == 4800 * 9300 + 100  # exact operands: nudged off the truth
    assert estimate(1234, "+", 100) == 1200 + 100


def test_the_teacher_guesses_only_products():
    task = bigarith_task("+*", [9999, 9999], 200, 20, seed=5, error_rate=1.0)
    for it in task.train:
        text = task.demonstration(it, random.Random(0))
        assert ("<calculator>" in text) is ("+" in it["problem"])
        assert task.verify(text, it["answer"]) is ("+" in it["problem"])


def test_nobody_teaches_their_own_teacher():
    """A 2-cycle would put the teacher's passage in the retrieval of the 2-hop question (it names
    the subject); small worlds over 30 seeds, where cycles would be common if allowed."""
    for seed in range(30):
        for world in make_people(5, 5, seed):
            teacher = {p.name: p.teacher for p in world}
            assert all(teacher[teacher[name]] != name for name in teacher), seed
