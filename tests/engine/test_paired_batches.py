"""Blocks of consecutive rows stay in one rollout batch, shuffled as blocks, on 1 and 2 processes."""

import pytest
from trl.trainer.utils import RepeatSampler

from rlrecipes.engine.paired_batches import BlockRepeatSampler, KeepRowsTogether
from rlrecipes.errors import UserError


def rollout_batches(rows=40, prompts=8, generations=4, repeat=2, seed=3, block=2):
    base = RepeatSampler(
        list(range(rows)), mini_repeat_count=generations, batch_size=prompts, repeat_count=repeat, seed=seed
    )
    stream = list(BlockRepeatSampler(base, block))
    size = prompts * generations * repeat  # one generation round's indices, all processes together
    return stream, [stream[i : i + size] for i in range(0, len(stream), size)]


@pytest.mark.parametrize("processes", [1, 2])
def test_both_rows_of_every_pair_share_a_rollout_batch(processes):
    stream, batches = rollout_batches()
    assert len(batches) == 40 // 8
    for batch in batches:
        # accelerate hands process p its share of the batch; the engine gathers them back in process order
        shares = [batch[p::processes] for p in range(processes)]
        gathered = {i for share in shares for i in share}
        assert all(i ^ 1 in gathered for i in gathered)  # rows 2k and 2k+1 together
    firsts = [i for i in dict.fromkeys(stream)]
    assert firsts != sorted(firsts)  # shuffled...
    assert all(firsts[k] % 2 == 0 and firsts[k + 1] == firsts[k] + 1 for k in range(0, len(firsts), 2))  # ...by block


def test_plain_sampler_would_split_pairs():
    base = RepeatSampler(list(range(40)), mini_repeat_count=1, batch_size=8, seed=3)
    batches = [set(list(base)[i : i + 8]) for i in range(0, 40, 8)]
    assert any(i ^ 1 not in batch for batch in batches for i in batch)  # what the block sampler prevents


def test_blocks_that_cannot_fit_fail_with_one_line():
    with pytest.raises(UserError, match="trainer.prompts_per_rollout=7 must be a multiple of 2"):
        rollout_batches(rows=42, prompts=7)
    with pytest.raises(UserError, match="41 training rows"):
        rollout_batches(rows=41)
    default = object()
    assert KeepRowsTogether(1).wrap_sampler(default) is default
