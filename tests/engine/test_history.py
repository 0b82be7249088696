"""Per-example accuracy history: the grouping arithmetic, and a real run across epochs."""

import json
import math

import pytest
import torch

from rlrecipes.engine.history import record
from tests.conftest import compose


def test_record_appends_one_accuracy_per_group_in_sampling_order():
    history: dict = {}
    # two groups of 4: ids repeat per completion, as TRL's sampler lays them out
    record(history, ["a"] * 4 + ["b"] * 4, torch.tensor([1, 0, 1, 1, 0, 0, 0, 1.0]), 4)
    record(history, ["b"] * 4 + ["a"] * 4, torch.tensor([1, 1, 1, 1, 0, 0, 0, 0.0]), 4)
    assert history == {"a": [0.75, 0.0], "b": [0.25, 1.0]}
    assert list(history) == ["a", "b"]  # keys in order of first sampling (selection's tie order)


def test_record_copies_of_one_example_and_missing_gold():
    history: dict = {}
    # one example duplicated in the batch: every copy is its own group, so two entries
    record(history, ["x"] * 4, torch.tensor([1.0, 0.0, float("nan"), float("nan")]), 2)
    assert history["x"][0] == 0.5 and history["x"][1] is None  # unknown, written as null
    json.dumps(history, allow_nan=False)  # strict JSON
    with pytest.raises(ValueError, match="groups of 3"):
        record(history, ["x"] * 4, torch.zeros(4), 3)


@pytest.mark.integration
def test_history_across_epochs_matches_logged_accuracy(toy_model_dir, tmp_path):
    """4 problems, 4 prompts per step: each step is one epoch, so after 3 steps every
    problem has exactly 3 accuracies, and each step's mean over the 4 problems is the
    accuracy the run logged for that step."""
    from rlrecipes.training.job import train

    cfg = compose(
        "data.max_examples=4",
        "trainer.max_steps=3",
        "trainer.record_accuracy_history=true",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        f"model.name_or_path={toy_model_dir}",
    )
    train(cfg, tmp_path, log=lambda _: None)
    history = json.loads((tmp_path / "accuracy_history.json").read_text())
    assert len(history) == 4 and all(len(v) == 3 for v in history.values())
    for values in history.values():
        assert all(v in (0.0, 0.25, 0.5, 0.75, 1.0) for v in values)  # k correct of 4 rollouts
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    logged = [row["accuracy"] for row in logged if "accuracy" in row]
    for step in range(3):
        mean = sum(v[step] for v in history.values()) / 4
        assert math.isclose(mean, logged[step], abs_tol=1e-6)
    # `rlrecipes select` reads our own files as it reads the paper's
    from rlrecipes.runs.selection import load_history, rank

    assert {r.id for r in rank(load_history(tmp_path / "accuracy_history.json"))} == set(history)
