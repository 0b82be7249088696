"""Each epoch's prompt order a function of (seed, epoch), so a resumed run draws what the
uninterrupted run drew.

TRL's `RepeatSampler` shuffles every epoch from one generator seeded once, so epoch k's order
is the k-th draw of that generator. A run resumed in epoch k builds a fresh sampler: its
generator is at its seed again and it draws epoch 0's order for epoch k (Trainer fast-forwards
the batches inside the resumed epoch, not the generator across earlier ones). Trainer and
accelerate call the sampler's `set_epoch(epoch)` before every epoch, resumed ones included;
reseeding there with seed + epoch makes the order independent of how many epochs this process
has iterated. Epoch 0's order is the generator's first draw either way.
"""

from __future__ import annotations

from typing import Any


def seed_each_epoch(sampler: Any) -> Any:
    """`sampler` (a RepeatSampler, or one built on it) reseeding its generator at each epoch.
    A sampler without a seed or a generator (no shuffle) is returned as it is."""
    seed, generator = getattr(sampler, "seed", None), getattr(sampler, "generator", None)
    if seed is None or generator is None:
        return sampler

    def set_epoch(epoch: int) -> None:
        generator.manual_seed(seed + epoch)

    sampler.set_epoch = set_epoch  # the name Trainer and accelerate look for on the sampler
    return sampler
