import json

import pytest

from rlrecipes.data.loader import DataError, get_field, read_records, to_problems
from rlrecipes.data.templates import DAPO_INSTRUCTION, render_prompt


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_field_mapping_reaches_nested_fields_and_chat_prompts(tmp_path):
    rows = [
        {
            "prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "What is 2+2?"}],
            "reward_model": {"ground_truth": "4"},
            "extra_info": {"index": "u1"},
        }
    ]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    records, source = read_records(str(path))
    loaded = to_problems(records, source, "prompt", "reward_model.ground_truth", "extra_info.index")
    assert loaded.items == [{"id": "u1", "problem": "What is 2+2?", "answer": "4"}]


def test_rows_without_answers_are_counted_and_reported_not_trained_on(tmp_path):
    rows = [{"q": "a", "a": "1"}, {"q": "b", "a": ""}, {"q": "c"}, {"q": "", "a": "3"}, {"q": "d", "a": 4}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    loaded = to_problems(*read_records(str(path)), "q", "a")
    assert [it["problem"] for it in loaded.items] == ["a", "d"]
    assert loaded.items[1]["answer"] == "4"
    assert [i for i, _ in loaded.skipped] == [1, 2, 3]
    assert "3 rows left out: row 1 (no a), row 2 (no a), row 3 (no q)" in loaded.report()


def test_without_an_answer_field_questions_load_unlabelled():
    rows = [{"q": "a", "a": "1"}, {"q": "b"}, {"q": ""}]
    loaded = to_problems(rows, "mem", "q", None)
    assert loaded.items == [{"id": "0", "problem": "a", "answer": None}, {"id": "1", "problem": "b", "answer": None}]
    assert loaded.skipped == [(2, "no q")]


@pytest.mark.integration
def test_synthetic_training_answers_can_be_withheld():
    from rlrecipes.data.problems import load_problem_set
    from tests.conftest import compose

    problems = load_problem_set(compose("data.answer_field=null").data)
    assert all(it["answer"] is None for it in problems.train)
    assert all(it["answer"] is not None for it in problems.eval)  # held-out accuracy still measurable
    assert "training answers withheld" in problems.report


def test_unlabelled_training_data_cannot_have_a_held_out_set(tmp_path):
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.errors import UserError
    from tests.conftest import compose

    path = write_jsonl(tmp_path / "q.jsonl", [{"problem": "1+2"}])
    cfg = compose("data.source=file", f"data.path={path}", "data.answer_field=null", f"data.eval_path={path}")
    with pytest.raises(UserError, match="data.eval_path=.* needs gold answers .* data.answer_field=null"):
        load_problem_set(cfg.data)


def test_list_answers_are_joined_and_duplicates_removed(tmp_path):
    rows = [{"q": "x", "a": ["2", "3"]}, {"q": "x", "a": ["2", "3"]}, {"q": "y", "a": "1"}]
    loaded = to_problems(rows, "mem", "q", "a", dedup=True)
    assert [it["answer"] for it in loaded.items] == ["2, 3", "1"]
    assert loaded.duplicates_removed == 1


def test_missing_field_names_the_columns(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "1"}])
    with pytest.raises(DataError, match="no row has field 'problem'; columns are: answer, question"):
        to_problems(*read_records(str(path)), "problem", "answer")


def test_bad_jsonl_row_and_missing_file_are_one_line_errors(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"q": "a"}\n{not json}\n')
    with pytest.raises(DataError, match=r"d.jsonl:2: not valid JSON"):
        read_records(str(path))
    with pytest.raises(DataError, match="does not exist"):
        read_records(str(tmp_path / "missing.jsonl"))


def test_undecodable_and_absurdly_nested_files_are_one_line_errors(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"q": "a"}\n{"q": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"latin1.jsonl:2: not UTF-8 text \(byte 0xe9 at column 11\)"):
        read_records(str(path))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match="deep.json: JSON nested too deeply to read"):
        read_records(str(deep))


def test_shared_benchmark_files_load_as_is(shared_data):
    rows, source = read_records(str(shared_data / "math500" / "One-Shot-RLVR" / "test.jsonl"))
    loaded = to_problems(rows, source, "problem", "answer", "unique_id")
    assert len(loaded.items) == 500 and not loaded.skipped
    rows, source = read_records(str(shared_data / "aime24" / "DAPO" / "aime-2024.parquet"))
    dapo = to_problems(rows, source, "prompt", "reward_model.ground_truth", dedup=True)
    assert len(dapo.items) == 30 and dapo.duplicates_removed == 930
    rows, source = read_records(str(shared_data / "amc_ttrl" / "TTRL"))  # a folder works too
    assert len(to_problems(rows, source, "prompt", "answer").items) == 83


def test_templates():
    assert render_prompt("1+1", "plain") == "1+1"
    with pytest.raises(ValueError, match="valid: plain, chat, qwen_math_cot, dapo"):
        render_prompt("1+1", "fancy")
    from rlrecipes.models.toy import build_tokenizer

    tok = build_tokenizer()
    assert render_prompt("1+1", "chat", tok) == "<|user|>1+1<|assistant|>"
    cot = render_prompt("1+1", "qwen_math_cot", tok)
    assert cot.startswith("<|system|>Please reason step by step") and cot.endswith("<|assistant|>")
    assert DAPO_INSTRUCTION.format(problem="1+1") in render_prompt("1+1", "dapo", tok)
    assert get_field({"a": {"b": 1}}, "a.c") is None
