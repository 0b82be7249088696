"""Experience replay (ARPO): an all-failed group gets a stored success of its prompt (hand-made
batches, hand-computed advantages), nothing changes without one, only successes are kept and
the buffer is bounded, tool rollouts keep their tool mask, and a real TRL run swaps a row."""

import random
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.engine.replay import (
    ExperienceReplay,
    ReplayBuffer,
    ReplaySettings,
    StoredRollout,
    check_replay,
    plan_swaps,
)
from rlrecipes.errors import ConfigError
from tests.conftest import compose

EPS = 1e-4  # TRL's advantage epsilon
PAD = 0


def fake_trainer(prompts, process_index=0, num_processes=1, other_tokens=0):
    metrics = defaultdict(list)  # name: the values logged this step, as TRL keeps them
    return SimpleNamespace(
        num_generations=4,
        model=SimpleNamespace(training=True),
        scale_rewards="group",
        reward_func_names=["accuracy", "format"],
        reward_weights=torch.tensor([1.0, 0.0]),
        last_inputs=[{"prompt": p} for p in prompts],
        last_rewards=None,
        _tokenizer=SimpleNamespace(pad_token_id=PAD),
        accelerator=SimpleNamespace(
            process_index=process_index,
            num_processes=num_processes,
            gather=lambda t: t + other_tokens,
        ),
        log_metric=lambda name, value: metrics[name].append(float(value)),
        metrics=metrics,
        _metrics={"train": metrics},
        state=SimpleNamespace(global_step=0),
    )


def batch_of(rows, width=3, tool=False):
    """Rows of completion ids (right-padded to `width`)."""
    ids = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    batch = {
        "prompt_ids": torch.tensor([[7, 8]] * len(rows)),
        "prompt_mask": torch.ones(len(rows), 2, dtype=torch.long),
        "completion_ids": ids,
        "completion_mask": mask,
        "advantages": torch.zeros(len(rows)),
        "num_items_in_batch": mask.sum(),
    }
    if tool:
        batch["tool_mask"] = torch.ones_like(mask)
    return batch


def hook(buffer_size=8, **stored):
    replay = ExperienceReplay(ReplaySettings(buffer_size=buffer_size))
    replay.column = 0  # bind's work: `accuracy` is column 0 of fake_trainer's rewards
    for task, rollouts in stored.items():
        for r in rollouts:
            replay.buffer.add(task, r)
    return replay


SUCCESS = StoredRollout([5, 6], None, [1.0, 0.5])
# group "p" (rows 0-3) all failed, group "q" (rows 4-7) mixed
FAILED_THEN_MIXED = torch.tensor([[0.0, 0.0]] * 4 + [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])


def test_an_all_failed_group_gets_a_stored_success_in_its_first_row():
    trainer = fake_trainer(["p"] * 4 + ["q"] * 4)
    batch = batch_of([[1, 2, 3], [1, 2], [1], [4, 4, 4], [9, 9, 9], [3], [3, 3], [2]])
    out = hook(p=[SUCCESS]).after_scoring(trainer, batch, FAILED_THEN_MIXED)
    assert out["completion_ids"][0].tolist() == [5, 6, PAD]  # the stored success, padded
    assert out["completion_mask"][0].tolist() == [1, 1, 0]
    assert out["completion_ids"][1:].tolist() == batch["completion_ids"][1:].tolist()
    # rewards of group p are now [1, 0, 0, 0]: mean 0.25, unbiased std 0.5
    hi, lo = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    assert out["advantages"].tolist() == pytest.approx([hi, lo, lo, lo, hi, lo, lo, lo], abs=1e-6)
    assert trainer.last_rewards[0].tolist() == [1.0, 0.5]  # later hooks see the swapped reward row
    assert out["num_items_in_batch"].item() == out["completion_mask"].sum().item() == 2 + 2 + 1 + 3 + 3 + 1 + 2 + 1
    assert trainer.metrics["replay/uses"] == [1]
    assert trainer.metrics["replay/failed_groups"] == [1]


def test_no_swap_without_a_stored_success():
    trainer = fake_trainer(["p"] * 4 + ["q"] * 4)
    batch = batch_of([[1]] * 8)
    replay = hook(r=[SUCCESS])  # a success of another prompt only
    assert replay.after_scoring(trainer, batch, FAILED_THEN_MIXED) is batch
    assert trainer.metrics["replay/uses"] == [0] and trainer.last_rewards is None


def test_mixed_groups_are_left_alone_and_successes_are_stored():
    trainer = fake_trainer(["q"] * 4 + ["q"] * 4)
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]] + [[1.0, 0.0]] * 3 + [[0.0, 0.0]])
    replay = hook(buffer_size=2)
    batch = batch_of([[1], [2], [3, 3], [4], [5], [6], [7], [8, 8, 8]])
    assert replay.after_scoring(trainer, batch, rewards) is batch
    # six successes of q, of which the buffer keeps the newest two; the failures (rows 1, 7) never
    assert [r.completion_ids for r in replay.buffer.tasks["q"]] == [[6], [7]]
    assert all(r.rewards[0] == 1.0 for r in replay.buffer.tasks["q"])


def test_a_group_draws_from_its_buffer_before_its_own_batch_is_stored():
    """ARPO's order: draw, then update. A failed group's stored success is the one of an
    earlier step, not a row of this batch's other group of the same prompt."""
    trainer = fake_trainer(["p"] * 8)
    rewards = torch.tensor([[0.0, 0.0]] * 4 + [[1.0, 0.0]] * 4)
    replay = hook()
    assert replay.after_scoring(trainer, batch_of([[1]] * 8), rewards)["completion_ids"][0, 0] == 1
    assert len(replay.buffer.tasks["p"]) == 4


def test_the_rounds_of_one_step_are_counted_together():
    """Dynamic sampling scores one step in several rounds, each through the hook, and TRL logs
    the mean of a step's values: two rounds with one swap each are 2 uses, not their mean 1."""
    trainer = fake_trainer(["p"] * 4)
    replay = hook(p=[SUCCESS])
    for _ in range(2):
        replay.after_scoring(trainer, batch_of([[1]] * 4), torch.zeros(4, 2))
    assert trainer.metrics["replay/uses"] == [2] and trainer.metrics["replay/failed_groups"] == [2]
    assert trainer.metrics["replay/buffered_tasks"] == [1]
    trainer.state.global_step = 1  # the next step: a new entry
    replay.after_scoring(trainer, batch_of([[1]] * 4), torch.zeros(4, 2))
    assert trainer.metrics["replay/uses"] == [2, 1]


def test_the_buffer_is_bounded_per_task_and_in_tasks():
    buffer = ReplayBuffer(size=2, max_tasks=2)
    for i in range(3):
        buffer.add("a", StoredRollout([i], None, [1.0]))
    buffer.add("b", StoredRollout([9], None, [1.0]))
    buffer.add("c", StoredRollout([8], None, [1.0]))  # "a" is the least recently updated
    assert list(buffer.tasks) == ["b", "c"]
    buffer.add("b", StoredRollout([7], None, [1.0]))
    buffer.add("d", StoredRollout([6], None, [1.0]))
    assert list(buffer.tasks) == ["b", "d"]
    assert [r.completion_ids for r in buffer.tasks["b"]] == [[9], [7]]


def test_the_threshold_decides_success():
    success = torch.tensor([0.1, 0.05, 0.0, 0.0]) > ReplaySettings().success_threshold  # ARPO: > 0.1
    buffer = ReplayBuffer(8, 10)
    buffer.add("p", SUCCESS)
    assert plan_swaps(success, ["p"] * 4, buffer, 4, random.Random(0)) == [(0, SUCCESS)]


def test_a_tool_rollout_is_swapped_with_its_tool_mask_and_a_wider_completion():
    trainer = fake_trainer(["p"] * 4)
    tool_success = StoredRollout([5, 6, 7, 8, 9], [1, 1, 0, 0, 1], [1.0, 0.0])
    batch = batch_of([[1, 2], [1], [1], [1, 2]], width=2, tool=True)
    batch["tool_mask"][0] = torch.tensor([1, 0])
    batch["sampling_per_token_logps"] = torch.full((4, 2), -0.5)
    out = hook(p=[tool_success]).after_scoring(trainer, batch, torch.zeros(4, 2))
    assert out["completion_ids"].tolist() == [[5, 6, 7, 8, 9], [1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [1, 2, 0, 0, 0]]
    assert out["tool_mask"][0].tolist() == [1, 1, 0, 0, 1]  # the result tokens stay out of the loss
    assert out["tool_mask"][1:].tolist() == [[1] * 5] * 3  # padding keeps the neutral 1
    assert torch.isnan(out["sampling_per_token_logps"][0]).all()  # sampled by an earlier policy
    assert out["sampling_per_token_logps"][1].tolist() == [-0.5, -0.5, 0.0, 0.0, 0.0]
    # loss tokens: 3 model tokens of the replayed row + 1 + 1 + 2
    assert out["num_items_in_batch"].item() == 7


def test_a_stored_tool_rollout_keeps_its_mask_in_the_buffer():
    trainer = fake_trainer(["p"] * 4)
    batch = batch_of([[1, 2, 3], [1], [1], [1]], tool=True)
    batch["tool_mask"][0] = torch.tensor([1, 0, 1])
    replay = hook()
    replay.after_scoring(trainer, batch, torch.tensor([[1.0, 0.0]] + [[0.0, 0.0]] * 3))
    [stored] = replay.buffer.tasks["p"]
    assert stored.completion_ids == [1, 2, 3] and stored.tool_mask == [1, 0, 1]


def test_the_process_holding_the_group_swaps_its_local_row(monkeypatch):
    """Process 1 of 2 holds group p (global rows 4-7); the buffer is the same everywhere."""
    monkeypatch.setattr("rlrecipes.engine.replay.gather_object", lambda mine: [("q", None)] * 4 + list(mine))
    trainer = fake_trainer(["p"] * 4, process_index=1, num_processes=2, other_tokens=10)
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]] + [[0.0, 0.0]] * 4)
    out = hook(p=[SUCCESS]).after_scoring(trainer, batch_of([[1]] * 4), rewards)
    assert out["completion_ids"][0].tolist() == [5, 6, PAD]
    hi, lo = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    assert out["advantages"].tolist() == pytest.approx([hi, lo, lo, lo], abs=1e-6)
    assert out["num_items_in_batch"].item() == 5 + 10  # this process's tokens + the (fake) others'


def test_old_log_probs_are_recomputed_after_a_swap():
    trainer = fake_trainer(["p"] * 4)
    trainer.args = SimpleNamespace(per_device_train_batch_size=4)
    seen = []

    def logps(model, ids, mask, keep, batch_size):
        seen.append(ids[:, -keep:].tolist())
        return (ids[:, -keep:].float() * -1.0, None, None)

    trainer._get_per_token_logps_and_entropies = logps
    batch = batch_of([[1], [1], [1], [1]], width=2)
    batch["old_per_token_logps"] = torch.zeros(4, 2)
    out = hook(p=[SUCCESS]).after_scoring(trainer, batch, torch.zeros(4, 2))
    assert seen == [[[5, 6], [1, 0], [1, 0], [1, 0]]]
    assert out["old_per_token_logps"][0].tolist() == [-5.0, -6.0]


def test_state_round_trips_through_a_weights_only_checkpoint(tmp_path):
    from rlrecipes.integrity import load_torch_state

    replay = hook(p=[SUCCESS, StoredRollout([1], [1], [1.0, 0.0])])
    replay.rng.random()
    torch.save(replay.state_dict(), tmp_path / "s.pt")
    again = hook()
    again.load_state_dict(load_torch_state(tmp_path / "s.pt"))
    assert [r.as_dict() for r in again.buffer.tasks["p"]] == [r.as_dict() for r in replay.buffer.tasks["p"]]
    assert again.rng.random() == replay.rng.random()


def test_eval_batches_are_untouched():
    trainer = fake_trainer(["p"] * 4)
    trainer.model.training = False
    batch = batch_of([[1]] * 4)
    assert hook(p=[SUCCESS]).after_scoring(trainer, batch, torch.zeros(4, 2)) is batch


def replay_node(**kw):
    return OmegaConf.create(
        {
            "replay": {
                "enabled": True,
                "buffer_size": 8,
                "reward": "accuracy",
                "success_threshold": 0.1,
                "max_tasks": 9,
                **kw,
            }
        }
    )


@pytest.mark.parametrize(
    "node, rewards, message",
    [
        (dict(reward="judge"), [("accuracy", 1.0)], r"recipe.replay.reward='judge' is not one of this run's rewards"),
        (dict(), [("majority_vote", 1.0), ("accuracy", 0.0)], r"recipe.replay.reward='accuracy' has weight 0"),
        (dict(buffer_size=0), [("accuracy", 1.0)], r"recipe.replay.buffer_size=0 must be at least 1"),
    ],
)
def test_bad_settings_fail_before_loading(node, rewards, message):
    with pytest.raises(ConfigError, match=message):
        check_replay(replay_node(**node), rewards)
    check_replay(replay_node(enabled=False, **node), rewards)  # off: nothing to check


def test_the_plan_checks_replay_settings():
    from rlrecipes.training.plan import check_run

    with pytest.raises(ConfigError, match="recipe.replay.reward='nope'"):
        check_run(compose("recipe.replay.enabled=true", "recipe.replay.reward=nope"), hardware=False)
    check_run(compose("recipe.replay.enabled=true"), hardware=False)


class Recorder(EngineHook):
    def __init__(self):
        self.batches = []

    def after_scoring(self, trainer, batch, rewards):
        self.batches.append((batch["completion_ids"].clone(), batch["advantages"].clone(), rewards.clone()))
        return batch


@pytest.mark.integration
def test_a_real_trl_run_replays_into_an_all_failed_group(toy_model_dir, tmp_path):
    """Step 1: every rollout of prompt 0 succeeds and is stored; step 2: every rollout of
    prompt 0 fails, and the first row trains on a step-1 completion with advantage > 0."""
    from datasets import Dataset

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model

    cfg = compose("trainer.max_steps=2", "trainer.prompts_per_rollout=1", "trainer.num_generations=2")
    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(toy_model_dir), cfg.model)
    rows = [{"prompt": render_prompt(problems.train[0]["problem"], "chat", tok), "answer": "1"}]
    calls = []

    def accuracy(completions, **_):  # succeeds everywhere on the first step, fails on the second
        calls.append(len(completions))
        return [1.0 if len(calls) == 1 else 0.0] * len(completions)

    recorder = Recorder()
    trainer = RecipeGRPOTrainer(
        model=model,
        reward_funcs=[accuracy],
        args=build_grpo_config(cfg, tmp_path, {}, [1.0]),
        train_dataset=Dataset.from_list(rows * 4),
        processing_class=tok,
        hooks=[ExperienceReplay(ReplaySettings()), recorder],
    )
    trainer.train()
    (first_ids, _, _), (second_ids, advantages, rewards) = recorder.batches
    assert rewards[:, 0].tolist() == [1.0, 0.0]  # the replayed success and a failure
    assert advantages[0] > 0 > advantages[1]
    stored = [row[row != tok.pad_token_id].tolist() for row in first_ids]
    assert second_ids[0][second_ids[0] != tok.pad_token_id].tolist() in stored
