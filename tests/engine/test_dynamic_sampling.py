"""Dynamic sampling with a scripted reward: known group outcomes per round, so the kept
groups, the round count, the surplus and the loss denominator are worked out by hand."""

from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

from rlrecipes.engine.dynamic_sampling import (
    DynamicSampler,
    DynamicSamplingSettings,
    KeptGroup,
    RefillPrompts,
    merge_batches,
    mixed_groups,
    plan_kept_groups,
)
from rlrecipes.errors import UserError

PAD = 0
G = 2  # completions per prompt
# what each scripted prompt's G completions score on the filter reward ("acc")
OUTCOMES = {"mixed": [1.0, -1.0], "right": [1.0, 1.0], "wrong": [-1.0, -1.0]}


class FakeAccelerator:
    def __init__(self, num_processes=1, process_index=0):
        self.num_processes, self.process_index = num_processes, process_index

    def gather(self, x):  # every process holds the same loss-token count in these tests
        return x.reshape(1).repeat(self.num_processes)


def make_trainer(num_processes=1, process_index=0, local_prompts=4):
    t = SimpleNamespace(
        num_generations=G,
        reward_func_names=["acc", "shaped"],
        reward_weights=torch.tensor([1.0, 1.0]),
        accelerator=FakeAccelerator(num_processes, process_index),
        args=SimpleNamespace(seed=0, per_device_train_batch_size=local_prompts * G, steps_per_generation=1),
        train_dataset=[{"prompt": f"p{i}"} for i in range(10)],
        _tokenizer=SimpleNamespace(pad_token_id=PAD),
        last_rewards=None,
        logged={},
    )
    t.log_metric = lambda name, value: t.logged.__setitem__(name, value)
    return t


def rows(*names, tag):
    """Scripted dataset rows: one per completion (G per prompt), as TRL lays them out."""
    return [{"prompt": f"{tag}{i}", "outcome": n} for i, n in enumerate(names) for _ in range(G)]


class Script:
    """Scores rounds like TRL's `_generate_and_score_completions`: a local batch whose
    completions are `3 + round` tokens long, and the global (N, 2) reward tensor."""

    def __init__(self, trainer, other_ranks=()):
        self.trainer, self.other_ranks, self.round = trainer, list(other_ranks), 0

    def __call__(self, inputs):
        self.round += 1
        n, width = len(inputs), 3 + self.round
        acc = [OUTCOMES[row["outcome"]][i % G] for i, row in enumerate(inputs)]
        global_acc = [acc]
        for rank_rows in self.other_ranks:  # rewards of the other processes for this round
            other = rank_rows[self.round - 1]
            global_acc.append([OUTCOMES[r["outcome"]][i % G] for i, r in enumerate(other)])
        rank = self.trainer.accelerator.process_index
        global_acc.insert(rank, global_acc.pop(0))
        flat = torch.tensor(sum(global_acc, []))
        # the shaped reward differs inside every group: filtering on it would keep everything
        self.trainer.last_rewards = torch.stack([flat, torch.arange(len(flat)).float()], dim=1)
        names = [row["prompt"] for row in inputs]
        return {
            "prompt_ids": torch.full((n, self.round), 7),
            "prompt_mask": torch.ones(n, self.round, dtype=torch.long),
            "completion_ids": torch.full((n, width), 9),
            "completion_mask": torch.ones(n, width, dtype=torch.long),
            # advantages carry "round.row" so the test can see which rows survived
            "advantages": torch.tensor([self.round + i / 100 for i in range(n)]),
            "num_items_in_batch": torch.tensor(-1),
            "names": names,
        }


class Refill:
    def __init__(self, rounds):
        self.rounds = list(rounds)

    def take(self, n, process_index=0, num_processes=1):
        return self.rounds.pop(0)


def sampler(trainer, refill_rounds, max_rounds=10):
    s = DynamicSampler(trainer, DynamicSamplingSettings("acc", max_rounds))
    s.refill = Refill(refill_rounds)
    return s


def run(sampler_, script, inputs):
    names = []

    def score(round_inputs):
        batch = script(round_inputs)
        names.append(batch.pop("names"))
        return batch

    return sampler_.generate(inputs, score), names


def test_fills_the_batch_with_mixed_groups_only_and_counts_rounds():
    t = make_trainer()
    first = rows("mixed", "right", "wrong", "mixed", tag="a")
    refills = [rows("wrong", "right", "wrong", "wrong", tag="b"), rows("mixed", "mixed", "mixed", "right", tag="c")]
    batch, _ = run(sampler(t, refills), Script(t), first)
    # round 1 keeps a0, a3; round 2 nothing; round 3 needs 2 more: c0, c1 (c2 is surplus)
    assert batch["advantages"].tolist() == pytest.approx([1.00, 1.01, 1.06, 1.07, 3.00, 3.01, 3.02, 3.03])
    assert t.logged == {
        "dynamic_sampling/rounds": 3,
        "dynamic_sampling/generation_batches": 3,  # the run's rounds so far (verl's budget unit)
        "dynamic_sampling/prompts_generated": 12,
        "dynamic_sampling/prompts_kept": 4,
        "dynamic_sampling/filtered_fraction": pytest.approx(7 / 12),
        "dynamic_sampling/surplus_discarded": 1,
        "dynamic_sampling/groups_moved": 0,
    }
    # rounds had 4- and 6-token completions: round-1 rows are right-padded with zeros
    assert batch["completion_ids"].shape == (8, 6)
    assert batch["completion_mask"].sum(dim=1).tolist() == [4, 4, 4, 4, 6, 6, 6, 6]
    assert batch["completion_ids"][0].tolist() == [9, 9, 9, 9, PAD, PAD]
    # prompts are left-padded: round 1 had 1 prompt token, round 3 had 3
    assert batch["prompt_mask"][0].tolist() == [0, 0, 1] and batch["prompt_ids"][0].tolist() == [PAD, PAD, 7]
    # the token-level loss denominator counts only kept tokens: 4 rows x 4 + 4 rows x 6
    assert int(batch["num_items_in_batch"]) == 40


def test_one_round_when_the_first_batch_is_already_mixed():
    t = make_trainer(local_prompts=2)
    batch, names = run(sampler(t, []), Script(t), rows("mixed", "mixed", tag="a"))
    assert len(names) == 1 and t.logged["dynamic_sampling/rounds"] == 1
    assert t.logged["dynamic_sampling/filtered_fraction"] == 0.0
    assert int(batch["num_items_in_batch"]) == 4 * 4


def test_raises_at_the_cap_and_says_what_to_change():
    t = make_trainer(local_prompts=2)
    s = sampler(t, [rows("wrong", "wrong", tag="b")], max_rounds=2)
    with pytest.raises(UserError) as err:
        run(s, Script(t), rows("right", "mixed", tag="a"))
    message = str(err.value)
    assert "found only 1 of the 2 prompt groups" in message and "after 2 generation rounds" in message
    assert "4 groups generated" in message and "2 at -1, 1 at 1" in message
    assert (
        "raise recipe.dynamic_sampling.max_rounds (now 2)" in message and "lower trainer.prompts_per_rollout" in message
    )


def test_two_processes_stop_together_and_keep_whole_local_groups():
    # rank 1 of 2; the script also knows what rank 0 scored in each round
    t = make_trainer(num_processes=2, process_index=1, local_prompts=2)
    rank0 = [rows("mixed", "mixed", tag="x"), rows("wrong", "wrong", tag="y")]
    batch, names = run(
        sampler(t, [rows("mixed", "mixed", tag="b")]), Script(t, [rank0]), rows("right", "mixed", tag="a")
    )
    # round 1: rank0 has 2, rank1 has 1 -> go on; round 2: rank1 takes b0, b1 is surplus
    assert len(names) == 2
    assert batch["advantages"].tolist() == pytest.approx([1.02, 1.03, 2.00, 2.01])
    assert t.logged["dynamic_sampling/prompts_generated"] == 8
    assert t.logged["dynamic_sampling/prompts_kept"] == 4
    assert t.logged["dynamic_sampling/surplus_discarded"] == 1
    assert int(batch["num_items_in_batch"]) == 2 * (2 * 4 + 2 * 5)  # gathered over both ranks


def test_the_quota_is_global_and_only_the_imbalance_moves():
    # round 1: rank 0 found 3 mixed groups, rank 1 one; 2 each are needed. Per process, rank 1
    # would need another round; globally the batch is full, and rank 0's third group moves.
    assert plan_kept_groups([[3, 1]], 2) == [
        KeptGroup(0, 0, 0, 0),
        KeptGroup(0, 0, 1, 0),
        KeptGroup(0, 0, 2, 1),
        KeptGroup(0, 1, 0, 1),
    ]
    # pool order is round, then process, then position (verl's concatenated batch); rank 1's
    # round-2 groups are surplus because rank 0's earlier ones fill the pool first
    assert plan_kept_groups([[3, 0], [1, 2]], 2) == [
        KeptGroup(0, 0, 0, 0),
        KeptGroup(0, 0, 1, 0),
        KeptGroup(0, 0, 2, 1),
        KeptGroup(1, 0, 0, 1),
    ]
    # rank 1 keeps its first two; its third is rank 0's missing one
    assert plan_kept_groups([[1, 1], [0, 2]], 2) == [
        KeptGroup(0, 0, 0, 0),
        KeptGroup(0, 1, 0, 1),
        KeptGroup(1, 1, 0, 1),
        KeptGroup(1, 1, 1, 0),
    ]
    with pytest.raises(ValueError, match="3 mixed groups found, 4 needed"):
        plan_kept_groups([[2, 1]], 2)


def test_a_process_short_of_mixed_groups_is_filled_from_another(monkeypatch):
    """2 processes, 2 groups each. Rank 0 finds only mixed groups, rank 1 none: after two
    rounds the global pool holds the 4 needed, so rank 0 sends its round-2 groups to rank 1
    (a per-process quota would have gone on sampling for rank 1 until the cap). The gather
    across the two ranks is played by hand."""
    import accelerate.utils

    script = {
        0: [rows("mixed", "mixed", tag="a"), rows("mixed", "mixed", tag="b")],
        1: [rows("wrong", "right", tag="c"), rows("wrong", "wrong", tag="d")],
    }
    sent: dict[int, list] = {}

    def gather_as(rank):
        def gather_object(outgoing):
            sent[rank] = outgoing
            return [item for r in sorted(sent) for item in sent[r]]

        return gather_object

    result = {}
    for rank in (0, 1):  # rank 0 first: what it sends is there when rank 1 gathers
        t = make_trainer(num_processes=2, process_index=rank, local_prompts=2)
        monkeypatch.setattr(accelerate.utils, "gather_object", gather_as(rank))
        batch, names = run(sampler(t, [script[rank][1]]), Script(t, [script[1 - rank]]), script[rank][0])
        assert len(names) == 2
        result[rank] = batch, t.logged
    assert result[0][0]["advantages"].tolist() == pytest.approx([1.00, 1.01, 1.02, 1.03])  # its round-1 groups
    assert result[1][0]["advantages"].tolist() == pytest.approx([2.00, 2.01, 2.02, 2.03])  # rank 0's round 2
    assert result[1][0]["completion_ids"].shape == (4, 5)  # round-2 completions, moved whole
    assert [len(item) for item in sent[0]] == [3, 3] and sent[1] == []  # only rank 0 sent: 2 groups
    for _, logged in result.values():
        assert logged["dynamic_sampling/groups_moved"] == 2
        assert logged["dynamic_sampling/rounds"] == 2 and logged["dynamic_sampling/surplus_discarded"] == 0


def test_oversampling_draws_the_extra_prompts_of_the_first_round_from_the_stream():
    t = make_trainer(local_prompts=2)
    s = DynamicSampler(t, DynamicSamplingSettings("acc", 10, prompts_per_round=3))
    s.refill = Refill([rows("mixed", tag="extra")])
    batch, names = run(s, Script(t), rows("right", "mixed", tag="a"))
    assert names == [["a0", "a0", "a1", "a1", "extra0", "extra0"]]
    assert batch["advantages"].tolist() == pytest.approx([1.02, 1.03, 1.04, 1.05])


def test_mixed_groups_ignores_unscored_completions():
    nan = float("nan")
    values = torch.tensor([[1, 1, 1.0], [1, 0, 1], [nan, 1, 1], [nan, 0, 1], [nan, nan, nan], [nan, nan, 2]])
    assert mixed_groups(values).tolist() == [False, True, False, True, False, False]


def test_refill_stream_is_shared_across_processes_and_repeats_each_prompt():
    data = [{"prompt": f"p{i}"} for i in range(5)]
    ranks = [RefillPrompts(data, 3, seed=1), RefillPrompts(data, 3, seed=1)]
    seen = []
    for _ in range(5):  # 5 rounds of 4 prompts: 4 epochs of the 5 prompts
        parts = [r.take(4, process_index=i, num_processes=2) for i, r in enumerate(ranks)]
        for part in parts:
            assert len(part) == 6 and part[0] == part[1] == part[2] and part[0] is not part[1]
        seen += [row["prompt"] for part in parts for row in part[::3]]
    # in global order (rank 0's share, then rank 1's), every epoch is a permutation
    for epoch in range(4):
        assert sorted(seen[5 * epoch : 5 * epoch + 5]) == [f"p{i}" for i in range(5)]


def test_merge_refuses_fields_it_cannot_pad():
    batch = {"completion_ids": torch.ones(2, 3), "pixel_values": torch.ones(2, 3)}
    with pytest.raises(UserError, match="'pixel_values'"):
        merge_batches([batch, batch], PAD)


def test_settings_and_setup_errors():
    recipe = OmegaConf.create(
        {"dynamic_sampling": {"enabled": False, "filter": "acc", "max_rounds": 10, "prompts_per_round": None}}
    )
    assert DynamicSamplingSettings.from_recipe(recipe) is None
    recipe.dynamic_sampling.enabled = True
    assert DynamicSamplingSettings.from_recipe(recipe) == DynamicSamplingSettings("acc", 10, None)
    recipe.dynamic_sampling.max_rounds = 0
    with pytest.raises(UserError, match="recipe.dynamic_sampling.max_rounds=0"):
        DynamicSamplingSettings.from_recipe(recipe)
    with pytest.raises(UserError, match="dynamic_sampling.filter='accuracy'.*valid: acc, shaped"):
        DynamicSampler(make_trainer(), DynamicSamplingSettings("accuracy", 10))
    odd = make_trainer()
    odd.args.per_device_train_batch_size = 3
    with pytest.raises(UserError, match="multiple of trainer.num_generations=2"):
        DynamicSampler(odd, DynamicSamplingSettings("acc", 10))


@pytest.mark.integration
def test_any_recipe_can_switch_it_on(toy_model_dir, tmp_path):
    """Plain GRPO with dynamic sampling on, filtering on a scripted reward beside the accuracy
    reward: mixed groups by the prompt's CRC32 (tests/helpers/multiprocess_entry.py), so the rounds
    needed do not depend on what the model samples."""
    import json

    import tests.helpers.multiprocess_entry  # noqa: F401  (registers the scripted_groups reward)
    from rlrecipes.training.job import train
    from tests.conftest import compose

    cfg = compose(
        "recipe=grpo",
        "recipe.dynamic_sampling.enabled=true",
        "recipe.rewards=[{name: accuracy, weight: 1.0}, {name: scripted_groups, weight: 1.0}]",
        "recipe.dynamic_sampling.filter=scripted_groups",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    train(cfg, tmp_path, log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["dynamic_sampling/prompts_kept"] for r in rows] == [4, 4]
    assert all(r["dynamic_sampling/prompts_generated"] >= 4 for r in rows)


def test_a_weight_0_monitor_cannot_pick_the_groups():
    """TTRL logs gold accuracy at weight 0: filtering on it would leak the labels into training."""
    t = make_trainer()
    t.reward_weights = torch.tensor([0.0, 1.0])
    with pytest.raises(
        UserError, match="dynamic_sampling.filter='acc' has weight 0 .* filter on a reward that trains: shaped"
    ):
        DynamicSampler(t, DynamicSamplingSettings("acc", 10))


def test_the_generation_budget_stops_after_the_rollout_that_spends_it():
    """verl's DAPO script runs one epoch of generation batches (1166), not a number of steps:
    5 batches here, rollouts of 4 optimizer steps; the rollout that reaches 5 still trains."""
    from rlrecipes.engine.dynamic_sampling import GenerationBudget

    t = make_trainer()
    s = DynamicSampler(t, DynamicSamplingSettings("acc", 10, max_batches=5))
    t.args.steps_per_generation, t.args.num_iterations = 4, 1
    t.state = SimpleNamespace(global_step=8)
    s.spend(3)
    assert s.stop_at_step is None
    s.spend(2)  # 5 of 5 spent at step 8: this rollout's updates 9..12 still train
    assert (s.batches_generated, s.stop_at_step) == (5, 12)
    control, budget = SimpleNamespace(should_training_stop=False), GenerationBudget(s)
    budget.on_step_end(None, SimpleNamespace(global_step=11), control)
    assert not control.should_training_stop
    budget.on_step_end(None, SimpleNamespace(global_step=12), control)
    assert control.should_training_stop
    resumed = DynamicSampler(t, DynamicSamplingSettings("acc", 10, max_batches=5))
    resumed.load_state_dict(s.state_dict())  # a resumed run keeps what it spent
    assert (resumed.batches_generated, resumed.stop_at_step) == (5, 12)
    with pytest.raises(UserError, match="recipe.dynamic_sampling.max_batches=0 must be at least 1"):
        DynamicSamplingSettings.from_recipe(
            OmegaConf.create(
                {"dynamic_sampling": {"enabled": True, "filter": "acc", "max_rounds": 10, "max_batches": 0}}
            )
        )
