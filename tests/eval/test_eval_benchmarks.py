"""Benchmark loading from the shared data files (as-is) and from odd local files."""

import json
from pathlib import Path

import pytest

from rlrecipes.data.loader import gold_text
from rlrecipes.errors import DataError
from rlrecipes.eval.benchmarks import load_benchmark, resolve_benchmarks
from rlrecipes.grading import grade

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared/data not present")


@needs_shared
@pytest.mark.parametrize(
    "name, size",
    [
        ("math500", 500),
        ("aime24", 30),
        ("aime25", 30),
        ("amc23", 40),
        ("amc", 83),
        ("minerva_math", 272),
        ("olympiadbench", 675),
    ],
)
def test_shared_layout_loads_every_benchmark(name, size):
    items = load_benchmark(name, data_dir=SHARED)
    assert len(items) == size and not items.skipped
    assert len({it.id for it in items}) == size
    assert all(it.problem and it.gold for it in items)


@needs_shared
def test_math500_fields_and_breakdowns():
    item = load_benchmark("math500", data_dir=SHARED)[0]
    assert item.id == "test/precalculus/807.json"
    assert item.subject == "Precalculus" and item.level == "2"
    assert item.gold == "\\left( 3, \\frac{\\pi}{2} \\right)"


@needs_shared
@pytest.mark.parametrize(
    "path, name, index, gold, graded_as",
    [
        ("aime24/TTRL/test.json", "aime24", 0, "204", "204"),
        ("aime25/Spurious_Rewards/test.json", "aime25", 0, "070", "70"),  # zero-padded
        ("aime25/One-Shot-RLVR/test.jsonl", "aime25", 19, "336^\\circ", "336"),
        ("amc23/One-Shot-RLVR/test.jsonl", "amc23", 0, "27", "27"),  # float 27.0
        ("amc_ttrl/TTRL/test.json", "amc", 0, "142.0", "142"),
        ("minerva_math/One-Shot-RLVR/test.jsonl", "minerva_math", 0, "1.6", "1.6"),
    ],
)
def test_answer_styles_are_handled_by_loader_and_grader(path, name, index, gold, graded_as):
    items = load_benchmark(name, data_dir=SHARED / path)
    assert items[index].gold == gold
    assert grade(f"so the answer is $\\boxed{{{graded_as}}}$", items[index].gold)


@needs_shared
def test_dapo_parquet_merges_the_32_copies():
    items = load_benchmark("aime24", data_dir=SHARED / "aime24" / "DAPO" / "aime-2024.parquet")
    assert len(items) == 30 and items.duplicates == 930
    assert not items[0].problem.startswith("Solve the following")  # the raw problem
    assert "930 duplicate rows merged" in items.report()


@needs_shared
def test_data_dir_may_point_below_the_layout_root():
    assert len(load_benchmark("math500", data_dir=SHARED / "math500")) == 500
    assert len(load_benchmark("math500", data_dir=SHARED / "math500" / "TTRL")) == 500


@needs_shared
def test_olympiadbench_list_answers_and_limit():
    items = load_benchmark("olympiadbench", data_dir=SHARED, limit=20)
    assert len(items) == 20
    assert items[0].gold == "2" and items[0].subject == "Combinatorics"
    assert items[5].gold == "(1,8,19), (2,7,13), (4,5,7)"


def test_rows_without_gold_are_reported_not_dropped(tmp_path):
    f = tmp_path / "bench.jsonl"
    rows = [
        {"problem": "1+1?", "answer": "2"},
        {"problem": "no gold"},
        {"answer": "3"},
        {"problem": "2+2?", "answer": 4.0},
        {"problem": "1+1?", "answer": "2"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    items = load_benchmark("aime24", data_dir=f)
    assert [it.gold for it in items] == ["2", "4"]
    assert [s.row for s in items.skipped] == [1, 2]
    line = items.report()
    assert "2 rows skipped" in line and "no gold answer" in line and "no problem text" in line
    assert "1 duplicate rows merged" in line


def test_minerva_gold_is_the_last_box_of_the_solution(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text(
        json.dumps({"problem": "p", "solution": "a \\boxed{1} b \\boxed{2.5} c"})
        + "\n"
        + json.dumps({"problem": "q", "solution": "no box"})
        + "\n"
    )
    items = load_benchmark("minerva_math", data_dir=f)
    assert [it.gold for it in items] == ["2.5"] and items.skipped[0].row == 1


def test_gsm8k_gold_after_hashes(tmp_path):
    f = tmp_path / "gsm.jsonl"
    rows = [
        {"question": "q", "answer": "3 + 4 = 7\n#### 1,007"},
        {"question": "r", "answer": "42"},
        {"question": "s", "answer": "a solution without its final line"},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = load_benchmark("gsm8k", data_dir=f)
    assert [it.gold for it in items] == ["1007", "42"]  # an already extracted answer is kept
    assert items.skipped[0].row == 2 and "no '#### answer' line" in items.skipped[0].reason


def test_chat_message_prompts(tmp_path):
    f = tmp_path / "verl.json"
    f.write_text(
        json.dumps([{"prompt": [{"role": "user", "content": "What is 2+2?"}], "reward_model": {"ground_truth": "4"}}])
    )
    item = load_benchmark("math500", data_dir=f)[0]
    assert item.problem == "What is 2+2?" and item.gold == "4"


@pytest.mark.parametrize(
    "value, expected",
    [
        (27.0, "27"),
        (2.5, "2.5"),
        (7, "7"),
        (["2"], "2"),
        (["$69$,$84$"], "69$,$84"),
        ("['2', '3']", "2, 3"),
        ("[\\frac{1}{2}]", "[\\frac{1}{2}]"),
        (None, None),
        ("  ", None),
    ],
)
def test_gold_text(value, expected):
    assert gold_text(value) == expected


def test_bad_jsonl_row_names_file_and_line(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"problem": "a", "answer": "1"}\n{"problem": oops}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: not valid JSON"):
        load_benchmark("math500", data_dir=f)


def test_missing_data_dir_and_unknown_benchmark(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_benchmark("math500", data_dir=tmp_path / "nope")
    with pytest.raises(DataError, match="no file for benchmark 'math500'"):
        load_benchmark("math500", data_dir=tmp_path)
    with pytest.raises(DataError, match=r"unknown benchmark 'math5000'; valid: .*math500"):
        load_benchmark("math5000")


def test_resolve_benchmarks():
    assert resolve_benchmarks("paper_suite") == [
        "math500",
        "aime24",
        "amc23",
        "minerva_math",
        "olympiadbench",
        "aime25",
    ]
    assert resolve_benchmarks("aime24, amc,aime24") == ["aime24", "amc"]
    with pytest.raises(DataError, match="valid: .*paper_suite"):
        resolve_benchmarks("aime24,nope")


def test_hub_failure_is_one_clear_line(monkeypatch):
    import datasets

    def offline(*a, **k):
        raise ConnectionError("Couldn't reach the Hub\nlong traceback text")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError) as err:
        load_benchmark("aime24")
    msg = str(err.value)
    assert "\n" not in msg and "HuggingFaceH4/aime_2024" in msg and "data_dir=" in msg


def test_a_benchmark_folder_never_serves_another_benchmark(shared_data):
    from rlrecipes.eval.benchmarks import BENCHMARKS, DataError, find_local_file

    assert find_local_file(BENCHMARKS["math500"], shared_data / "math500").parent.parent.name == "math500"
    assert find_local_file(BENCHMARKS["aime24"], shared_data).parts[-3] == "aime24"
    for folder in (shared_data / "math500", shared_data / "math500" / "TTRL"):
        with pytest.raises(DataError, match="is the folder of benchmark 'math500', not of 'aime24'"):
            find_local_file(BENCHMARKS["aime24"], folder)
