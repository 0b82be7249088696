"""The reward weights TRL trains with: what the recipe asked for, and never gold labels for a
label-free recipe.

TRL's `GRPOConfig.reward_weights=None` weighs every reward function 1.0, so a config built
without the weights would make TTRL, INTUITOR and the label-free spurious rewards train on
the gold-accuracy monitor that every run logs.
"""

import pytest

from rlrecipes.engine.grpo_args import build_grpo_config
from rlrecipes.training.job import build_trainer, setup
from tests.conftest import compose


def test_the_grpo_config_carries_the_weights_it_is_given(tmp_path):
    args = build_grpo_config(compose(), tmp_path, {}, [0.5, 0.0, 2.0])
    assert args.reward_weights == [0.5, 0.0, 2.0]


LABEL_FREE = {
    "ttrl": ["recipe=ttrl", "trainer.num_generations=4", "recipe.n_train=2"],
    "intuitor": ["recipe=intuitor"],
    "spurious_random": ["recipe=spurious", "reward=random"],
    "spurious_format": ["recipe=spurious", "reward=format"],
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(LABEL_FREE))
def test_a_label_free_recipe_gives_trl_a_zero_weight_for_gold_accuracy(name, toy_model_dir, tmp_path):
    job = setup(compose(*LABEL_FREE[name]), tmp_path, log=lambda _: None)
    names = [fn.__name__ for fn, _ in job.reward_fns]
    assert "accuracy" in names  # the monitor is there (it is logged) ...
    assert job.args.reward_weights is not None  # None: TRL would weigh every reward 1.0
    weights = dict(zip(names, job.args.reward_weights, strict=True))
    assert weights["accuracy"] == 0.0  # ... and the GRPOConfig weighs it 0
    assert all(w != 0 for n, w in weights.items() if n != "accuracy") or name == "intuitor"
    # what the trainer TRL builds from that config actually sums with
    trainer = build_trainer(job)[0]
    assert trainer.reward_func_names == names
    assert trainer.reward_weights.tolist() == [weights[n] for n in names]


@pytest.mark.integration
def test_grpo_trains_on_gold_accuracy(toy_model_dir, tmp_path):
    """The counterpart: a labelled recipe's accuracy reward does reach TRL with its weight."""
    job = setup(compose(), tmp_path, log=lambda _: None)
    assert [fn.__name__ for fn, _ in job.reward_fns] == ["accuracy"]
    assert build_trainer(job)[0].reward_weights.tolist() == [1.0]
