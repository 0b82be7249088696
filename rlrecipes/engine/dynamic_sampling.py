"""Dynamic sampling: train only on prompt groups with mixed outcomes, refilling the batch.

DAPO (paper §3.2, verl `recipe/dapo/dapo_ray_trainer.py::fit`): a group whose
completions all got the same reward (all right or all wrong) has zero advantage
everywhere, so it adds no gradient but still dilutes the batch. Each step therefore

1. generates and scores a round of prompts (the first round is the batch TRL's
   dataloader gave; later rounds come from a second, independently shuffled stream
   over the training set, each prompt repeated `num_generations` times as TRL's
   `RepeatSampler` does);
2. keeps the groups whose filter reward (`recipe.dynamic_sampling.filter`; DAPO uses
   correctness, not the length-shaped score) is not the same for every completion;
3. repeats until the **global** batch (all processes together) holds
   `trainer.prompts_per_rollout` such groups, then discards the surplus, as verl does
   (`batch[:train_batch_size * n]` over the concatenated rounds);
4. gives up with a `UserError` after `recipe.dynamic_sampling.max_rounds` rounds.

With several processes each one scores its own share of every round, so one process
may find more mixed groups than its share of the batch while another finds fewer.
verl's single controller sees one pool; here the processes agree (from the gathered
rewards, identically everywhere) on which groups the pool keeps and move the few
groups needed from processes with a surplus to those with a deficit
(`plan_kept_groups`), so a step never fails or oversamples while the global batch
could have been filled.

Advantages were computed per group within each round, so keeping whole groups leaves
them exact. The loss denominator of TRL's token-level loss (`num_items_in_batch`) is
recomputed from the kept masks. TRL has no such loop (trl#3708); this module is the
engine's, and any recipe switches it on with `recipe.dynamic_sampling.enabled=true`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from transformers import TrainerCallback

from rlrecipes.engine.hooks import reward_column
from rlrecipes.errors import UserError

Batch = dict[str, Any]

# How each field of TRL's scored batch is padded when rounds of different lengths are
# concatenated: (side, pad value); None = the tokenizer's pad id. Values outside the
# masks never reach the loss; 1.0 keeps an importance ratio neutral.
_PADDING: dict[str, tuple[str, float | None]] = {
    "prompt_ids": ("left", None),
    "prompt_mask": ("left", 0),
    "completion_ids": ("right", None),
    "completion_mask": ("right", 0),
    "tool_mask": ("right", 1),
    "advantages": ("right", 0.0),
    "old_per_token_logps": ("right", 0.0),
    "ref_per_token_logps": ("right", 0.0),
    "sampling_per_token_logps": ("right", 0.0),
    "importance_sampling_ratio": ("right", 1.0),
}


@dataclass(frozen=True)
class DynamicSamplingSettings:
    # no defaults for these: recipe.dynamic_sampling (config/schema.py) is their one home
    filter_reward: str
    max_rounds: int
    prompts_per_round: int | None = None  # None: as many as the batch needs (verl gen_batch_size)
    max_batches: int | None = None  # the run's budget of generation rounds (verl's epoch of batches)

    @classmethod
    def from_recipe(cls, recipe: Any) -> DynamicSamplingSettings | None:
        """The settings in a recipe config node's `dynamic_sampling` node, or None when it is off."""
        node = recipe.get("dynamic_sampling")
        if node is None or not node.enabled:
            return None
        if node.max_rounds < 1:
            raise UserError(f"recipe.dynamic_sampling.max_rounds={node.max_rounds} must be at least 1")
        per_round = node.get("prompts_per_round")
        if per_round is not None and per_round < 1:
            raise UserError(f"recipe.dynamic_sampling.prompts_per_round={per_round} must be at least 1 (or null)")
        budget = node.get("max_batches")
        if budget is not None and budget < 1:
            raise UserError(f"recipe.dynamic_sampling.max_batches={budget} must be at least 1 (or null)")
        return cls(node.filter, node.max_rounds, per_round, budget)


def mixed_groups(values: torch.Tensor) -> torch.Tensor:
    """True for each group (last dim) whose finite values are not all equal.

    NaN marks a completion the reward did not score; a group with fewer than two scored
    completions carries no comparison and counts as not mixed.
    """
    finite = torch.isfinite(values)
    hi = torch.where(finite, values, torch.full_like(values, -torch.inf)).amax(dim=-1)
    lo = torch.where(finite, values, torch.full_like(values, torch.inf)).amin(dim=-1)
    return hi > lo


def select_groups(batch: Batch, groups: torch.Tensor, num_generations: int) -> Batch:
    """The rows of `batch` that belong to the given group indices (whole groups, in order)."""
    rows = (groups.view(-1, 1) * num_generations + torch.arange(num_generations, device=groups.device)).flatten()
    return {k: v if k == "num_items_in_batch" else v[rows.to(v.device)] for k, v in batch.items()}


def merge_batches(batches: list[Batch], pad_token_id: int) -> Batch:
    """Concatenate scored batches row-wise, padding each field to the widest round."""
    merged: Batch = {}
    for key in batches[0]:
        if key == "num_items_in_batch":
            continue  # the caller recomputes it from the merged masks
        if key not in _PADDING:
            raise UserError(
                f"dynamic sampling cannot merge the scored-batch field {key!r} "
                "(multimodal and tool-image rollouts are not supported); set recipe.dynamic_sampling.enabled=false"
            )
        side, value = _PADDING[key]
        value = pad_token_id if value is None else value
        parts = [b[key] for b in batches]
        if parts[0].dim() > 1:
            width = max(p.size(1) for p in parts)
            parts = [
                F.pad(p, (width - p.size(1), 0) if side == "left" else (0, width - p.size(1)), value=value)
                for p in parts
            ]
        merged[key] = torch.cat(parts, dim=0)
    return merged


class KeptGroup(NamedTuple):
    round: int  # generation round (0-based)
    source: int  # the process that generated it
    index: int  # its position among that process's mixed groups of that round
    destination: int  # the process that trains on it


def plan_kept_groups(counts: Sequence[Sequence[int]], per_process: int) -> list[KeptGroup]:
    """Which mixed groups the step keeps and which process trains on each.

    `counts[r][p]` is how many mixed groups process `p` found in round `r`. The kept
    groups are the first `per_process * processes` in pool order (round, then process,
    then position: the order of verl's concatenated batch). Each process keeps its own
    kept groups up to its share; the rest go, in pool order, to the processes that
    found fewer than their share, lowest rank first — so only the imbalance moves.
    Raises ValueError when the pool holds too few groups.
    """
    processes = len(counts[0]) if counts else 0
    need = per_process * processes
    pool = [(r, p, j) for r, row in enumerate(counts) for p, n in enumerate(row) for j in range(n)][:need]
    if len(pool) < need:
        raise ValueError(f"{len(pool)} mixed groups found, {need} needed")
    owned = Counter()
    destination: list[int | None] = []
    for _, p, _ in pool:
        stays = owned[p] < per_process
        owned[p] += stays
        destination.append(p if stays else None)
    receivers = iter([p for p in range(processes) for _ in range(per_process - owned[p])])
    return [KeptGroup(r, p, j, d if d is not None else next(receivers)) for (r, p, j), d in zip(pool, destination)]


class RefillPrompts:
    """An endless shuffled stream of training rows, identical on every process.

    Each round takes the next `n` prompt indices of the global stream; a process keeps
    its contiguous share and repeats each prompt `num_generations` times, the layout
    TRL's sampler gives its own batches (groups stay on one process).
    """

    def __init__(self, dataset: Any, num_generations: int, seed: int):
        self.dataset = dataset
        self.num_generations = num_generations
        self.generator = torch.Generator().manual_seed(seed)
        self.pending: list[int] = []

    def take(self, n: int, process_index: int = 0, num_processes: int = 1) -> list[dict[str, Any]]:
        while len(self.pending) < n:
            self.pending += torch.randperm(len(self.dataset), generator=self.generator).tolist()
        indices, self.pending = self.pending[:n], self.pending[n:]
        share = n // num_processes
        rows = []
        for i in indices[process_index * share : (process_index + 1) * share]:
            row = self.dataset[i]
            rows += [dict(row) for _ in range(self.num_generations)]  # TRL may edit rows in place
        return rows


class DynamicSampler:
    """Generate -> filter -> refill -> truncate, around one round of TRL's scoring."""

    def state_dict(self) -> dict[str, Any]:
        """The refill stream's position and the generation budget spent, for an exact resume."""
        return {
            "generator": self.refill.generator.get_state(),
            "pending": list(self.refill.pending),
            "batches_generated": self.batches_generated,
            "stop_at_step": self.stop_at_step,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.refill.generator.set_state(state["generator"])
        self.refill.pending = list(state["pending"])
        self.batches_generated = int(state.get("batches_generated", 0))
        self.stop_at_step = state.get("stop_at_step")

    def __init__(self, trainer: Any, settings: DynamicSamplingSettings):
        self.trainer = trainer
        self.settings = settings
        names = list(trainer.reward_func_names)
        self.column = reward_column(names, settings.filter_reward, "recipe.dynamic_sampling.filter")
        training = [n for n, w in zip(names, trainer.reward_weights.tolist()) if w != 0]
        if settings.filter_reward not in training:
            # a weight-0 reward is a monitor (e.g. gold-answer accuracy in a label-free recipe):
            # filtering on it would let what the run must not train on pick its groups
            raise UserError(
                f"recipe.dynamic_sampling.filter={settings.filter_reward!r} has weight 0 in this run "
                f"(it is only logged); filter on a reward that trains: "
                f"{', '.join(training) or 'none (this recipe scores completions in a hook)'}"
            )
        g, args, procs = trainer.num_generations, trainer.args, trainer.accelerator.num_processes
        local = args.per_device_train_batch_size * args.steps_per_generation
        if local % g:
            raise UserError(
                f"dynamic sampling keeps whole groups on one process: the {local} completions each "
                f"process generates per step must be a multiple of trainer.num_generations={g}"
            )
        if settings.prompts_per_round is not None and settings.prompts_per_round % procs:
            raise UserError(
                f"recipe.dynamic_sampling.prompts_per_round={settings.prompts_per_round} must be a "
                f"multiple of the {procs} processes"
            )
        # A stream distinct from TRL's own sampler (seeded with args.seed), so a refill
        # round does not replay the prompts of the batch it is refilling.
        self.refill = RefillPrompts(trainer.train_dataset, g, args.seed + 1)
        self.batches_generated = 0  # generation rounds of the whole run so far
        self.stop_at_step: int | None = None  # the last optimizer step once the budget is spent

    def generate(self, inputs: list[dict[str, Any]], score_one_round: Callable[[list], Batch]) -> Batch:
        t, s = self.trainer, self.settings
        g = t.num_generations
        procs, rank = t.accelerator.num_processes, t.accelerator.process_index
        target = len(inputs) // g  # groups each process trains on
        per_round = s.prompts_per_round or target * procs
        round_inputs = list(inputs)
        if per_round > target * procs:  # verl's gen_batch_size > train_batch_size: oversample up front
            round_inputs += self.refill.take(per_round - target * procs, rank, procs)

        mixed_batches: list[Batch] = []  # this process's mixed groups of each round, in order
        counts: list[list[int]] = []  # mixed groups found per round, per process
        generated, uniform = 0, Counter()
        for rounds in range(1, s.max_rounds + 1):
            if rounds > 1:
                round_inputs = self.refill.take(per_round, rank, procs)
            batch = score_one_round(round_inputs)
            values = t.last_rewards[:, self.column].detach().float().cpu().view(procs, -1, g)
            mixed = mixed_groups(values)
            generated += mixed.numel()
            uniform.update(_uniform_values(values[~mixed]))
            mixed_batches.append(select_groups(batch, mixed[rank].nonzero().flatten(), g))
            counts.append(mixed.sum(dim=1).tolist())
            if sum(map(sum, counts)) >= target * procs:
                break
        else:
            raise UserError(
                f"dynamic sampling found only {sum(map(sum, counts))} of the {target * procs} prompt groups with "
                f"mixed '{s.filter_reward}' rewards it needs after {s.max_rounds} generation rounds "
                f"({generated} groups generated; groups with one reward for all completions: "
                f"{_describe(uniform)}); raise recipe.dynamic_sampling.max_rounds (now {s.max_rounds}), lower "
                "trainer.prompts_per_rollout, or use data the model solves sometimes but not always"
            )
        plan = plan_kept_groups(counts, target)
        kept = _exchange(plan, mixed_batches, rank, procs, g)

        out = merge_batches(kept, t._tokenizer.pad_token_id)
        loss_mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        out["num_items_in_batch"] = t.accelerator.gather(loss_mask.sum()).sum()
        self.spend(rounds)
        t.log_metric("dynamic_sampling/rounds", rounds)
        t.log_metric("dynamic_sampling/generation_batches", self.batches_generated)
        t.log_metric("dynamic_sampling/prompts_generated", generated)
        t.log_metric("dynamic_sampling/prompts_kept", target * procs)
        t.log_metric("dynamic_sampling/filtered_fraction", sum(uniform.values()) / generated)
        t.log_metric("dynamic_sampling/surplus_discarded", sum(map(sum, counts)) - target * procs)
        t.log_metric("dynamic_sampling/groups_moved", sum(k.source != k.destination for k in plan))
        return out

    def spend(self, rounds: int) -> None:
        """Count this step's generation rounds; once the run's budget is reached, training
        stops after this rollout's updates (the step that crosses the budget still trains:
        verl would have dropped its part-filled batch, at most dynamic_sampling.max_rounds - 1 over)."""
        self.batches_generated += rounds
        budget = self.settings.max_batches
        if budget is not None and self.stop_at_step is None and self.batches_generated >= budget:
            t = self.trainer
            self.stop_at_step = t.state.global_step + t.args.steps_per_generation * t.args.num_iterations


class GenerationBudget(TrainerCallback):
    """Stops training at the optimizer step the dynamic sampler's budget set (`spend`)."""

    def __init__(self, sampler: DynamicSampler):
        self.sampler = sampler

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        stop = self.sampler.stop_at_step
        if stop is not None and state.global_step >= stop:
            control.should_training_stop = True
        return control


def _exchange(
    plan: list[KeptGroup], mixed_batches: list[Batch], rank: int, procs: int, num_generations: int
) -> list[Batch]:
    """This process's kept groups, one batch per group in pool order: its own, plus those
    other processes send it (every process takes part in the gather, even with nothing to send)."""

    def group(k: KeptGroup) -> Batch:
        return select_groups(mixed_batches[k.round], torch.tensor([k.index]), num_generations)

    mine = [(n, group(k)) for n, k in enumerate(plan) if k.source == rank == k.destination]
    if procs > 1:
        from accelerate.utils import gather_object

        outgoing = [
            (n, k.destination, {key: v.cpu() for key, v in group(k).items() if key != "num_items_in_batch"})
            for n, k in enumerate(plan)
            if k.source == rank != k.destination
        ]
        device = mixed_batches[0]["completion_ids"].device
        for n, destination, batch in gather_object(outgoing):
            if destination == rank:
                mine.append((n, {key: v.to(device) for key, v in batch.items()}))
    return [batch for _, batch in sorted(mine, key=lambda item: item[0])]


def _uniform_values(values: torch.Tensor) -> list[str]:
    """A label per all-equal group: its common reward, or "unscored"."""
    labels = []
    for group in values.reshape(-1, values.size(-1)):
        finite = group[torch.isfinite(group)]
        labels.append(f"{finite[0].item():g}" if len(finite) else "unscored")
    return labels


def _describe(counts: Counter) -> str:
    return ", ".join(f"{n} at {value}" for value, n in counts.most_common()) or "none"
