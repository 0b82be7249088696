"""A resumed run draws each epoch's prompt order as the uninterrupted run did (TRL's
RepeatSampler alone redraws epoch 0's order after a resume in a later epoch)."""

from __future__ import annotations

from trl.trainer.utils import RepeatSampler

from rlrecipes.engine.epoch_order import seed_each_epoch
from rlrecipes.engine.paired_batches import BlockRepeatSampler


def orders(sampler, epochs):
    out = []
    for epoch in epochs:
        sampler.set_epoch(epoch)  # what Trainer and accelerate do before every epoch
        out.append(list(sampler))
    return out


def test_a_fresh_sampler_in_epoch_k_draws_what_the_first_one_drew_in_epoch_k():
    data = list(range(16))
    uninterrupted = orders(seed_each_epoch(RepeatSampler(data, mini_repeat_count=2, batch_size=4, seed=7)), [0, 1, 2])
    resumed = orders(seed_each_epoch(RepeatSampler(data, mini_repeat_count=2, batch_size=4, seed=7)), [1, 2])
    assert resumed == uninterrupted[1:]
    assert uninterrupted[0] != uninterrupted[1]  # still a new shuffle each epoch


def test_epoch_zero_keeps_trls_first_draw_and_block_samplers_are_seeded_too():
    data = list(range(16))
    plain = RepeatSampler(data, mini_repeat_count=1, batch_size=4, seed=3)
    assert orders(seed_each_epoch(RepeatSampler(data, mini_repeat_count=1, batch_size=4, seed=3)), [0]) == [list(plain)]
    blocks = lambda: seed_each_epoch(BlockRepeatSampler(RepeatSampler(data, 1, batch_size=4, seed=3), rows=2))  # noqa: E731
    assert orders(blocks(), [2]) == orders(blocks(), [0, 1, 2])[2:]


def test_without_a_shuffle_or_a_seed_nothing_is_added():
    assert not hasattr(seed_each_epoch(RepeatSampler(list(range(4)), 1, shuffle=False, seed=3)), "set_epoch")
    assert not hasattr(seed_each_epoch(RepeatSampler(list(range(4)), 1, seed=None)), "set_epoch")
