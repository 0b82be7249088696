"""Training on the first k rows of each group: advantages over the kept rows (hand values),
rows dropped from every per-row entry, the loss's token count recounted, and a real TRL
run that trains on exactly the kept rows."""

from types import SimpleNamespace

import pytest
import torch

from rlrecipes.engine.advantages import group_advantages, weighted_rewards
from rlrecipes.engine.group_subset import GroupSubset, take_rows
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError
from tests.conftest import compose

EPS = 1e-4  # TRL's advantage epsilon

# Two groups of 4: [1, 0, 1, 1] and [0, 0, 0, 1].
REWARDS = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0])


def test_advantages_of_whole_groups_by_hand():
    # group 0: mean 0.75, unbiased std sqrt((3 * 0.25^2 + 0.75^2) / 3) = 0.5
    # group 1: mean 0.25, std 0.5
    a, b = 0.25 / (0.5 + EPS), 0.75 / (0.5 + EPS)
    expected = [a, -b, a, a, -a, -a, -a, b]
    assert group_advantages(REWARDS, 4).tolist() == pytest.approx(expected, abs=1e-6)


def test_advantages_over_the_kept_rows_only():
    keep = torch.tensor([True, True, False, False] * 2)
    # group 0 keeps [1, 0]: mean 0.5, std sqrt(0.5) -> +-0.5 / (0.70711 + 1e-4)
    # group 1 keeps [0, 0]: std 0 -> 0 / 1e-4 = 0; dropped rows get 0
    x = 0.5 / (0.5**0.5 + EPS)
    assert group_advantages(REWARDS, 4, keep=keep).tolist() == pytest.approx([x, -x, 0, 0, 0, 0, 0, 0], abs=1e-6)


def test_scale_modes_and_unscorable_rows():
    assert group_advantages(REWARDS, 4, "none").tolist() == pytest.approx(
        [0.25, -0.75, 0.25, 0.25, -0.25, -0.25, -0.25, 0.75]
    )
    # batch: one std over all 8 rewards (mean 0.5, unbiased std sqrt(2/7))
    s = (2 / 7) ** 0.5
    assert group_advantages(REWARDS, 4, "batch")[1].item() == pytest.approx(-0.75 / (s + EPS), abs=1e-6)
    with_nan = REWARDS.clone()
    with_nan[1] = float("nan")  # left out of its group's statistics, advantage 0
    out = group_advantages(with_nan, 4)
    assert out[1].item() == 0.0 and out[0].item() == pytest.approx(0.0)  # group 0 is now all ones
    with pytest.raises(ValueError, match="groups of 3"):
        group_advantages(REWARDS, 3)


def test_weighted_rewards_match_trl():
    per_func = torch.tensor([[1.0, 0.5], [float("nan"), 1.0], [float("nan"), float("nan")]])
    total = weighted_rewards(per_func, torch.tensor([2.0, 0.0]))
    assert total[:2].tolist() == [2.0, 0.0] and torch.isnan(total[2])


def fake_trainer(process_index=0, other_tokens=0):
    return SimpleNamespace(
        num_generations=4,
        model=SimpleNamespace(training=True),
        scale_rewards="group",
        reward_weights=torch.tensor([1.0, 0.0]),
        accelerator=SimpleNamespace(
            process_index=process_index, gather=lambda t: torch.stack([t, torch.tensor(other_tokens)])
        ),
        args=SimpleNamespace(per_device_train_batch_size=2, steps_per_generation=2),
    )


def test_after_scoring_keeps_the_first_rows_of_this_process_groups():
    """Process 1 of 2 holds the second group (global rows 4..7)."""
    batch = {
        "prompt_ids": torch.arange(8).view(4, 2),
        "completion_ids": torch.arange(12).view(4, 3),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]]),
        "old_per_token_logps": torch.arange(12.0).view(4, 3),
        "advantages": torch.full((4,), 9.0),
        "num_items_in_batch": torch.tensor(99),
        "num_images": ["i0", "i1", "i2", "i3"],
    }
    rewards = torch.stack([torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]), torch.zeros(8)], 1)
    out = GroupSubset(2).after_scoring(fake_trainer(process_index=1, other_tokens=4), batch, rewards)
    assert out["prompt_ids"].tolist() == [[0, 1], [2, 3]]
    assert out["old_per_token_logps"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert out["num_images"] == ["i0", "i1"]
    # group 1 keeps rewards [1, 0] (global rows 4, 5): +-0.5 / (sqrt(0.5) + 1e-4)
    x = 0.5 / (0.5**0.5 + EPS)
    assert out["advantages"].tolist() == pytest.approx([x, -x], abs=1e-6)
    # the kept rows hold 3 + 2 tokens here, plus the other process's 4
    assert out["num_items_in_batch"].item() == 9


def test_take_rows_leaves_scalars_alone():
    out = take_rows({"a": torch.arange(4), "s": torch.tensor(3), "n": None}, torch.tensor([3]), 4)
    assert out["a"].tolist() == [3] and out["s"].item() == 3 and out["n"] is None


def test_eval_batches_are_untouched():
    trainer = fake_trainer()
    trainer.model.training = False
    batch = {"completion_ids": torch.zeros(4, 1)}
    assert GroupSubset(1).after_scoring(trainer, batch, torch.zeros(4, 1)) is batch


@pytest.mark.parametrize(
    "keep, per_device, steps, message",
    [
        (5, 2, 2, r"recipe.n_train=5 must be between 1 and trainer.num_generations=4"),
        (2, 3, 2, r"each process scores 6 completions, not a whole number of groups of 4"),
        # 8 completions = 2 groups -> 2 kept rows for 8 micro-steps
        (1, 1, 8, r"recipe.n_train=1 leaves 2 completions per process, which do not split into the 8 micro-steps"),
    ],
)
def test_bind_rejects_batches_that_cannot_split(keep, per_device, steps, message):
    trainer = fake_trainer()
    trainer.args = SimpleNamespace(per_device_train_batch_size=per_device, steps_per_generation=steps)
    with pytest.raises(UserError, match=message):
        GroupSubset(keep, key="recipe.n_train").bind(trainer)


def test_bind_refuses_dynamic_sampling():
    trainer = fake_trainer()
    trainer.dynamic_sampling = object()
    with pytest.raises(
        UserError,
        match="recipe.n_train=2 .* cannot be combined with recipe.dynamic_sampling.enabled=true; set recipe.n_train=4",
    ):
        GroupSubset(2, key="recipe.n_train").bind(trainer)
    GroupSubset(4, key="recipe.n_train").bind(trainer)  # every sample trains: nothing to subset


def test_by_default_the_first_half_of_each_group_trains():
    subset = GroupSubset(None, key="recipe.n_train", fraction=0.5)
    subset.bind(fake_trainer())
    assert subset.keep == 2  # of num_generations=4


class Recorder(EngineHook):
    def __init__(self):
        self.batches = []

    def after_scoring(self, trainer, batch, rewards):
        self.batches.append(({k: v for k, v in batch.items() if torch.is_tensor(v)}, rewards.clone()))
        return batch


@pytest.mark.integration
def test_a_real_trl_run_trains_on_the_kept_rows(toy_model_dir, tmp_path):
    from datasets import Dataset

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model

    # 4 prompts x 4 samples, 2 optimizer steps of 2 micro-steps (4 generated rows each) per
    # rollout: TRL splits what the hook returns into 4 micro-batches
    cfg = compose(
        "trainer.max_steps=2", "trainer.updates_per_rollout=2", "trainer.micro_batch_size=4", "recipe.loss_type=dapo"
    )
    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(toy_model_dir), cfg.model)
    rows = [
        {"prompt": render_prompt(it["problem"], "chat", tok), "answer": it["answer"], "id": it["id"]}
        for it in problems.train[:16]
    ]

    def place_in_group(completions, **_):
        # 0, 1, 2, 3 in every group, whatever is sampled: the kept rows (0, 1) differ, and their
        # advantages over the kept rows (-+0.707) differ from those over the whole group
        return [float(i % 4) for i in range(len(completions))]

    recorder = Recorder()
    trainer = RecipeGRPOTrainer(
        model=model,
        reward_funcs=[place_in_group],
        args=build_grpo_config(cfg, tmp_path, {}, [1.0]),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        hooks=[GroupSubset(2), recorder],
    )
    seen = []
    trainer._compute_loss = (lambda compute: lambda model, inputs: (seen.append(inputs), compute(model, inputs))[1])(
        trainer._compute_loss
    )
    trainer.train()
    [(batch, rewards)] = recorder.batches  # one rollout for the two optimizer steps
    assert batch["completion_ids"].size(0) == 8  # 4 groups x the first 2
    assert batch["num_items_in_batch"].item() == batch["completion_mask"].sum().item()
    keep = torch.arange(16) % 4 < 2
    expected = group_advantages(rewards[:, 0], 4, keep=keep)[keep]
    assert torch.allclose(batch["advantages"], expected)
    assert batch["advantages"].tolist() == pytest.approx([-0.5 / (0.5**0.5 + EPS), 0.5 / (0.5**0.5 + EPS)] * 4)
    # the loss saw 4 micro-batches of 2 kept rows each, i.e. every kept row once
    assert [x["completion_ids"].size(0) for x in seen] == [2, 2, 2, 2]
    trained = torch.cat([x["completion_ids"] for x in seen])
    assert sorted(map(tuple, trained.tolist())) == sorted(map(tuple, batch["completion_ids"].tolist()))
