"""`rlrecipes save-benchmark`: a benchmark copied from the hub on a networked machine is read by
`data_dir=` on an offline one, exactly as the hub serves it; the offline error names the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlrecipes.errors import DataError
from rlrecipes.eval.benchmarks import load_benchmark, save_benchmark
from tests.conftest import cli, one_error_line

HUB_ROWS = [  # MATH-500's fields on the hub
    {"problem": "What is $1+1$?", "answer": "2", "unique_id": "test/algebra/1.json", "subject": "Algebra", "level": 1},
    {
        "problem": "Find $x$ if $2x=6$.",
        "answer": "3",
        "unique_id": "test/algebra/2.json",
        "subject": "Algebra",
        "level": 2,
    },
]


@pytest.fixture
def hub(monkeypatch):
    """The hub as `datasets.load_dataset` serves it: MATH-500's two rows; the calls recorded."""
    import datasets

    calls = []

    def load_dataset(path, name=None, split=None):
        calls.append((path, name, split))
        return list(HUB_ROWS)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_a_saved_benchmark_loads_offline_as_the_hub_serves_it(tmp_path, hub):
    path, rows = save_benchmark("math500", tmp_path)
    assert (path, rows) == (tmp_path / "math500" / "hub" / "test.jsonl", 2)
    assert hub == [("HuggingFaceH4/MATH-500", None, "test")]
    assert [json.loads(line) for line in path.read_text().splitlines()] == HUB_ROWS
    offline = load_benchmark("math500", data_dir=tmp_path)
    online = load_benchmark("math500")
    assert [(it.id, it.problem, it.gold) for it in offline] == [(it.id, it.problem, it.gold) for it in online]
    assert [it.gold for it in offline] == ["2", "3"]


def test_saving_twice_never_overwrites(tmp_path, hub):
    path, _ = save_benchmark("math500", tmp_path)
    path.write_text("kept\n")
    with pytest.raises(DataError, match="exists; move it away"):
        save_benchmark("math500", tmp_path)
    assert path.read_text() == "kept\n"


def test_the_offline_error_names_the_save_command(monkeypatch):
    import datasets

    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'HuggingFaceH4/MATH-500' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(DataError) as err:
        load_benchmark("math500")
    assert "`rlrecipes save-benchmark math500 DIR` saves it, then pass data_dir=DIR" in str(err.value)
    assert "DIR/math500/hub/test.jsonl" in str(err.value)  # and the layout it then reads


def test_a_synthetic_benchmark_has_nothing_to_save(tmp_path):
    with pytest.raises(DataError, match="has no hub copy to save"):
        save_benchmark("arithmetic", tmp_path)


def test_the_command_saves_a_suite_member_by_member_and_says_how_to_use_it(tmp_path, hub, capsys):
    code, out = cli(capsys, "save-benchmark", "math500", str(tmp_path))
    assert code == 0, out
    assert f"math500: 2 rows -> {tmp_path / 'math500' / 'hub' / 'test.jsonl'}" in out
    assert f"benchmark=math500 data_dir={tmp_path}" in out
    code, out = cli(capsys, "save-benchmark", "math5000", str(tmp_path))
    assert code == 2 and "unknown benchmark 'math5000'; valid: " in one_error_line(out)


def test_the_docs_say_where_every_benchmark_comes_from_and_where_it_is_saved():
    from rlrecipes.eval.benchmarks import BENCHMARKS, saved_file

    docs = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    for spec in BENCHMARKS.values():
        if not (spec.synthetic or spec.from_data):
            assert f"| `{spec.name}` | `{spec.hub_id}`" in docs and f"`{saved_file(spec)}`" in docs, spec.name
