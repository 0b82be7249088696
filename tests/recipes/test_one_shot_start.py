"""`recipe=one_shot` says what it trains on: it refuses to start without examples (naming
recipe.examples and the toy pipeline) and its data line names the picked example and copies."""

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.recipes.one_shot import OneShot
from tests.conftest import compose


def test_one_shot_without_examples_is_refused_with_the_pipeline():
    with pytest.raises(ConfigError) as refused:
        OneShot.validate(compose("recipe=one_shot"))
    message = str(refused.value)
    assert "\n" not in message and "recipe.examples" in message and "recipe.whole_set=true" in message
    assert "rlrecipes train recipe=one_shot trainer.record_accuracy_history=true data.max_examples=64" in message
    assert "rlrecipes select H/accuracy_history.json --top 1" in message


@pytest.mark.parametrize(
    "overrides",
    [
        ["recipe.examples=[68+42]", "recipe.rows=8"],  # the examples
        ["trainer.record_accuracy_history=true"],  # the history pass of the pipeline
        ["recipe.whole_set=true"],  # the full-set baseline, on purpose
    ],
)
def test_one_shot_starts_with_examples_a_history_pass_or_the_whole_set(overrides):
    OneShot.validate(compose("recipe=one_shot", *overrides))


def test_the_data_line_says_which_example_is_copied_how_often():
    from rlrecipes.data.problems import load_problem_set

    cfg = compose("recipe=one_shot", "recipe.rows=8")
    first = load_problem_set(cfg.data).train[0]["id"]
    cfg.recipe.examples = [first]
    report = OneShot(cfg.recipe).problem_set(cfg.data).report
    assert report == (
        f"one-shot: 8 rows = 1 example (id {first}) x 8 copies, "
        "picked from 1200 train / 64 held-out arithmetic problems (disjoint)"
    )
    cfg.recipe.examples = None
    assert (
        OneShot(cfg.recipe)
        .problem_set(cfg.data)
        .report.endswith("; one-shot trains on every training row (recipe.examples=null)")
    )


def test_an_unknown_example_fails_before_the_model_loads():
    from rlrecipes.errors import UserError

    cfg = compose("recipe=one_shot", "recipe.rows=8", "recipe.examples=[nope]")
    with pytest.raises(UserError, match="recipe.examples: no training problem has id 'nope'"):
        OneShot(cfg.recipe).problem_set(cfg.data)  # the data is loaded, the model not yet


@pytest.mark.integration
def test_the_command_refuses_one_shot_without_examples_in_one_line(tmp_path):
    import os
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "train", "recipe=one_shot", f"run_dir={tmp_path / 'run'}"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=600,
    )
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2 and len(text.splitlines()) == 1, text
    assert text.startswith("error: recipe=one_shot trains on the examples named by recipe.examples")
    assert not (tmp_path / "run").exists()
