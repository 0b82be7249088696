"""The training job's setup checks what needs no model before any model is built or loaded."""

import pytest

from rlrecipes.errors import UserError
from tests.conftest import compose


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the mistake was reported")

    monkeypatch.setattr("rlrecipes.models.resolve_model_path", refuse)
    monkeypatch.setattr("rlrecipes.models.load_model", refuse)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["recipe.rewards=[{name: acuracy, weight: 1.0}]"],
            "unknown reward 'acuracy' (recipe.rewards); valid: accuracy",
        ),
        (["model.lora.r=8", "model.lora.dropout=1.5"], "model.lora.dropout=1.5 must be in [0, 1)"),
        (["trainer.micro_batch_size=3"], "trainer.micro_batch_size=3 x 1 processes must divide"),
    ],
)
def test_mistakes_fail_before_a_model_loads(overrides, message, no_model, tmp_path):
    from rlrecipes.train import train

    with pytest.raises(UserError) as err:
        train(compose(*overrides), tmp_path, log=lambda _: None)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_fewer_problems_than_one_rollout_step_is_refused(toy_model_dir, tmp_path):
    from rlrecipes.train import train

    with pytest.raises(
        UserError, match="3 training problems are fewer than one rollout step's trainer.prompts_per_rollout=4"
    ):
        train(compose("data.max_examples=3"), tmp_path, log=lambda _: None)
