"""Pair files, pair construction from graded samples, both-order rows and the prompts."""

import json

import pytest

from rlrecipes.errors import DataError, UserError
from rlrecipes.judge.pairs import Pair, PairFields, judge_rows, load_pairs, pairs_from_graded, split_row_id
from rlrecipes.judge.prompts import pairwise_prompt, pointwise_prompt


def test_pairs_from_graded_keep_one_right_and_one_wrong_per_problem():
    problems = [{"id": "p1", "problem": "1+1"}, {"id": "p2", "problem": "2+2"}, {"id": "p3", "problem": "3+3"}]
    samples = [["2", "3", "2"], ["4", "4"], ["5", "7"]]
    graded = [[True, False, True], [True, True], [False, False]]
    build = pairs_from_graded(problems, samples, graded, seed=0)
    assert build.counts() == {"problems": 3, "pairs": 1, "all_correct": 1, "all_wrong": 1}
    (pair,) = build.pairs
    assert (pair.id, pair.prompt, pair.chosen, pair.rejected) == ("p1", "1+1", "2", "3")


def test_every_pair_gives_two_consecutive_rows_in_both_orders():
    rows = judge_rows([Pair("7", "q", "good", "bad")], "pairwise", "compact")
    assert [(r["id"], r["answer"]) for r in rows] == [("7|AB", "A"), ("7|BA", "B")]
    assert rows[0]["problem"] == "q\nA: good\nB: bad\nBetter?" and rows[1]["problem"] == "q\nA: bad\nB: good\nBetter?"
    point = judge_rows([Pair("7", "q", "good", "bad")], "pointwise", "compact")
    assert [(r["id"], r["answer"]) for r in point] == [("7|chosen", "chosen"), ("7|rejected", "rejected")]
    assert split_row_id("a|b|BA") == ("a|b", "BA")
    with pytest.raises(ValueError):
        split_row_id("7|XY")


def test_pair_files_with_a_field_mapping(tmp_path):
    path = tmp_path / "pairs.jsonl"
    rows = [
        {"q": {"text": "Q1"}, "win": "W1", "lose": "L1", "subset": "math"},
        {"q": {"text": "Q2"}, "win": "", "lose": "L2", "subset": "chat"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_pairs(str(path), PairFields("q.text", "win", "lose", category="subset"))
    assert loaded.pairs == [Pair("0", "Q1", "W1", "L1", "math")]
    assert loaded.skipped == [(1, "no win")] and "1 rows left out" in loaded.report()
    with pytest.raises(DataError, match="no row has field 'chosen'"):
        load_pairs(str(path), PairFields("q.text"))


def test_prompts_name_the_format_and_refuse_bad_choices():
    assert "<answer> [[A]] </answer>" in pairwise_prompt("q", "a", "b")
    assert "<score_A>" in pairwise_prompt("q", "a", "b", judge="pairwise_scores")
    assert "<type>" in pairwise_prompt("q", "a", "b", style="rm_r1")
    assert "<score>" in pointwise_prompt("q", "a")
    with pytest.raises(UserError, match="recipe.judge='pairs'; valid: pairwise, pairwise_scores, pointwise"):
        pairwise_prompt("q", "a", "b", judge="pairs")
    with pytest.raises(UserError, match="recipe.prompt=rm_r1"):
        pointwise_prompt("q", "a", style="rm_r1")


def test_label_columns_and_style_matrices(tmp_path):
    path = tmp_path / "bench.jsonl"
    rows = [
        {"q": "Q1", "ra": "first", "rb": "second", "label": "B>A"},
        {"q": "Q2", "ra": "first", "rb": "second", "label": "A=B"},  # a tie names no winner
        {"q": "Q3", "ra": ["c0", "c1"], "rb": ["r0", "r1"], "label": "A>B"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_pairs(str(path), PairFields("q", "ra", "rb", label="label"))
    assert loaded.pairs[0] == Pair("0", "Q1", "second", "first")
    assert [(p.id, p.chosen, p.rejected) for p in loaded.pairs[1:]] == [
        ("2:00", "c0", "r0"),
        ("2:01", "c0", "r1"),
        ("2:10", "c1", "r0"),
        ("2:11", "c1", "r1"),
    ]
    assert loaded.skipped == [(1, "label='A=B' names no winner")]


def test_pair_files_are_written_once_with_their_provenance(tmp_path):
    from rlrecipes.judge.build_pairs import build_pairs, write_pairs

    verify = lambda text, gold: text == gold  # noqa: E731
    build = build_pairs([{"id": "a", "problem": "1+1", "answer": "2"}], [["2", "3"]], verify, seed=0)
    out = tmp_path / "pairs.jsonl"
    write_pairs(out, build, {"model": "m", "data": "d", "seed": 0})
    assert [json.loads(x) for x in out.read_text().splitlines()] == [
        {"id": "a", "prompt": "1+1", "chosen": "2", "rejected": "3"}
    ]
    meta = json.loads((tmp_path / "pairs.jsonl.provenance.json").read_text())
    assert meta["model"] == "m" and meta["counts"] == {"problems": 1, "pairs": 1, "all_correct": 0, "all_wrong": 0}
    with pytest.raises(UserError, match="already exists; pair files are never overwritten"):
        write_pairs(out, build, {})
    assert out.read_text().count("\n") == 1


def test_an_interrupted_pair_write_leaves_nothing_that_blocks_the_rerun(tmp_path, monkeypatch):
    """Writing the pair file fails (disk full): no pair file, no temporary file, one
    line; the rerun writes both files (the provenance left behind describes no pairs)."""
    import errno
    import os

    from rlrecipes import rundir
    from rlrecipes.errors import StorageError
    from rlrecipes.judge.build_pairs import build_pairs, write_pairs

    verify = lambda text, gold: text == gold  # noqa: E731
    build = build_pairs([{"id": "a", "problem": "1+1", "answer": "2"}], [["2", "3"]], verify, seed=0)
    out = tmp_path / "pairs.jsonl"
    real_replace = os.replace

    def full_disk(src, dst):
        if str(dst) == str(out):  # the pair file, after its provenance
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)

    monkeypatch.setattr(rundir.os, "replace", full_disk)
    with pytest.raises(StorageError, match=f"cannot write {out}: No space left on device") as error:
        write_pairs(out, build, {"model": "m"})
    assert "\n" not in str(error.value)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.jsonl.provenance.json"]
    write_pairs(out, build, {"model": "m"})
    assert len(out.read_text().splitlines()) == 1
    assert json.loads((tmp_path / "pairs.jsonl.provenance.json").read_text())["counts"]["pairs"] == 1
