"""Experience replay into all-failed groups: an engine capability any recipe switches on.

ARPO (Lu, Zhong, Liu, Fu, Jia 2025, "ARPO: End-to-End Policy Optimization for GUI Agents with
Experience Replay", arXiv 2505.16282): under sparse rewards many groups fail in every
rollout, so their rewards are equal, their advantages zero and their gradient nothing. ARPO
keeps a small buffer of recent *successful* trajectories per task and, when a group fails
everywhere, puts one stored success in the place of one of its rollouts, so the group has a
reward to compare against. Its code (dvlab-research/ARPO @ 7489ae3): `verl/trainer/replay_buffer.py`
(per task a FIFO of the last 8 trajectories whose result is > 0.1) and
`verl/trainer/ray_trainer.py::apply_replay` (l.722-760: a group with reward std < 0.05 and
mean < 0.2 gets one success drawn uniformly from its task's buffer in the place of its first
rollout; the buffer is then updated from the batch as sampled; old log-probs are recomputed
afterwards, l.959).

Here, after TRL has scored a rollout batch (`after_scoring`, first of the hooks):

1. a rollout succeeds when its `reward` (a reward function of the run) is above
   `success_threshold`; a group in which none succeeds has failed;
2. each failed group whose task (its prompt) has stored successes gets one, drawn uniformly,
   in place of its first row: the completion tokens, their mask and the tool mask of a
   tool rollout (tool-result tokens stay out of the loss), and its reward row;
3. the advantages are recomputed from the edited rewards (TRL's formula, advantages.py) and
   `trainer.last_rewards` is updated, so later hooks and dynamic sampling see the swap;
   the loss's token count is recounted;
4. log-probs the batch already holds for the old rows are recomputed for the new ones: old
   (ratio) and reference (KL) log-probs by a forward pass over this process's batch, on every
   process whenever any swapped (a sharded model's forward is collective); a replayed row has
   no sampling log-probs (NaN: left out of the vLLM gap) and an importance ratio of 1 — like
   ARPO, the stored trajectory is trained as if the current policy had sampled it;
5. this batch's successes (as sampled, before the swap) go into the buffer: every process
   gathers all of them, so every process holds the same buffer and draws the same swaps.

Logged per step: `replay/uses` (rows swapped), `replay/failed_groups`, `replay/buffered_tasks`;
with dynamic sampling the first two count every generation round of the step (a swapped group
is mixed in the replay reward, so dynamic sampling keeps it unless it is surplus).
"""

from __future__ import annotations

import json
import random
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from accelerate.utils import gather_object

from rlrecipes.engine.advantages import group_advantages, weighted_rewards
from rlrecipes.engine.dynamic_sampling import _PADDING
from rlrecipes.engine.hooks import EngineHook, reward_column
from rlrecipes.errors import ConfigError, UserError

ARPO_BUFFER_SIZE = 8  # ray_trainer.py::_load_replay_data: ReplayBuffer(data_path, 8)
ARPO_SUCCESS = 0.1  # replay_buffer.py::update_replay_buffer: eval_result > 0.1


@dataclass(frozen=True)
class ReplaySettings:
    buffer_size: int = ARPO_BUFFER_SIZE  # successes kept per task, newest last
    reward: str = "accuracy"  # the reward function whose value decides success
    success_threshold: float = ARPO_SUCCESS  # success: reward > this
    max_tasks: int = 4096  # tasks with a buffer; the least recently updated is dropped first
    seed: int = 0

    @classmethod
    def from_recipe(cls, recipe: Any, seed: int = 0) -> ReplaySettings | None:
        """The settings in a recipe config node (`recipe.replay.*`), or None when replay is off."""
        node = recipe.get("replay") or {}
        if not node.get("enabled", False):
            return None
        check_replay_values(node)
        return cls(int(node.buffer_size), str(node.reward), float(node.success_threshold), int(node.max_tasks), seed)


def check_replay_values(node: Any) -> None:
    for key in ("buffer_size", "max_tasks"):
        if node[key] < 1:
            raise ConfigError(f"recipe.replay.{key}={node[key]} must be at least 1")


def check_replay(recipe: Any, rewards: Sequence[tuple[str, float]]) -> None:
    """Before anything loads: `recipe.replay.reward` is a reward of the run that trains
    (a weight-0 monitor, such as gold accuracy in a label-free recipe, must not pick what
    the run trains on)."""
    node = recipe.get("replay") or {}
    if not node.get("enabled", False):
        return
    check_replay_values(node)
    names = [name for name, _ in rewards]
    if node.reward not in names:
        raise ConfigError(
            f"recipe.replay.reward={node.reward!r} is not one of this run's rewards; valid: {', '.join(names)}"
        )
    training = [name for name, weight in rewards if weight != 0]
    if node.reward not in training:
        raise ConfigError(
            f"recipe.replay.reward={node.reward!r} has weight 0 in this run (it is only logged); "
            f"use a reward that trains: {', '.join(training) or 'none'}"
        )


@dataclass(frozen=True)
class StoredRollout:
    completion_ids: list[int]
    tool_mask: list[int] | None  # a tool rollout's env_mask; None for single-turn rollouts
    rewards: list[float]  # one per reward function, in TRL's order

    def as_dict(self) -> dict[str, Any]:
        return {"completion_ids": self.completion_ids, "tool_mask": self.tool_mask, "rewards": self.rewards}


class ReplayBuffer:
    """The last `size` successes of each task, for at most `max_tasks` tasks."""

    def __init__(self, size: int, max_tasks: int):
        self.size, self.max_tasks = size, max_tasks
        self.tasks: OrderedDict[str, deque[StoredRollout]] = OrderedDict()

    def add(self, task: str, rollout: StoredRollout) -> None:
        stored = self.tasks.pop(task, None) or deque(maxlen=self.size)
        stored.append(rollout)  # a full deque drops its oldest (ARPO: pop(0))
        self.tasks[task] = stored  # most recently updated last
        while len(self.tasks) > self.max_tasks:
            self.tasks.popitem(last=False)

    def draw(self, task: str, rng: random.Random) -> StoredRollout | None:
        stored = self.tasks.get(task)
        return rng.choice(list(stored)) if stored else None

    def state_dict(self) -> dict[str, Any]:
        return {"tasks": [[task, [r.as_dict() for r in stored]] for task, stored in self.tasks.items()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.tasks = OrderedDict()
        for task, stored in state["tasks"]:
            for r in stored:
                self.add(task, StoredRollout(list(r["completion_ids"]), r["tool_mask"], list(r["rewards"])))


def task_key(row: dict[str, Any]) -> str:
    """The task a rollout belongs to: its prompt (a stored completion answers exactly it)."""
    prompt = row["prompt"]
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)


def failed_groups(success: torch.Tensor, num_generations: int) -> torch.Tensor:
    """True for each group of `num_generations` consecutive rows with no success."""
    return ~success.view(-1, num_generations).any(dim=1)


def plan_swaps(
    success: torch.Tensor, tasks: Sequence[str], buffer: ReplayBuffer, num_generations: int, rng: random.Random
) -> list[tuple[int, StoredRollout]]:
    """(global row, stored success) for each failed group whose task has one: its first row."""
    swaps = []
    for group in failed_groups(success, num_generations).nonzero().flatten().tolist():
        row = group * num_generations
        stored = buffer.draw(tasks[row], rng)
        if stored is not None:
            swaps.append((row, stored))
    return swaps


def row_length(completion_mask: torch.Tensor) -> int:
    """Tokens of a right-padded completion (0 when its mask is all zero)."""
    ones = completion_mask.nonzero().flatten()
    return int(ones[-1]) + 1 if ones.numel() else 0


def swap_rows(batch: dict[str, Any], swaps: Sequence[tuple[int, StoredRollout]], pad_token_id: int) -> dict[str, Any]:
    """`batch` with each (local row, stored) completion written in, the per-token fields widened
    when a stored completion is longer than the batch's."""
    out = dict(batch)
    width = out["completion_ids"].size(1)
    longest = max((len(s.completion_ids) for _, s in swaps), default=0)
    if longest > width:
        for key, value in out.items():
            if key in _PADDING and _PADDING[key][0] == "right" and value.dim() > 1 and value.size(1) == width:
                pad = pad_token_id if _PADDING[key][1] is None else _PADDING[key][1]
                out[key] = F.pad(value, (0, longest - width), value=pad)
        width = longest
    out = {k: v.clone() if isinstance(v, torch.Tensor) and v.dim() > 0 else v for k, v in out.items()}
    for row, stored in swaps:
        n = len(stored.completion_ids)
        ids = out["completion_ids"]
        ids[row] = pad_token_id
        ids[row, :n] = torch.tensor(stored.completion_ids, dtype=ids.dtype)
        out["completion_mask"][row] = 0
        out["completion_mask"][row, :n] = 1
        if "tool_mask" in out:
            out["tool_mask"][row] = 1
            if stored.tool_mask is not None:
                out["tool_mask"][row, :n] = torch.tensor(stored.tool_mask, dtype=out["tool_mask"].dtype)
        if "sampling_per_token_logps" in out:  # sampled by an earlier policy: no sampling log-prob
            out["sampling_per_token_logps"][row] = float("nan")
        if "importance_sampling_ratio" in out:
            out["importance_sampling_ratio"][row] = 1.0
    return out


class ExperienceReplay(EngineHook):
    """ARPO's replay buffer as an engine hook (module docstring)."""

    def __init__(self, settings: ReplaySettings):
        self.settings = settings
        self.buffer = ReplayBuffer(settings.buffer_size, settings.max_tasks)
        self.rng = random.Random(settings.seed)
        self.column = 0
        self._step: int | None = None  # the optimizer step of the last scoring round seen
        self._totals: dict[str, int] = {}

    def bind(self, trainer: Any) -> None:
        self.column = reward_column(trainer.reward_func_names, self.settings.reward, "recipe.replay.reward")
        if getattr(trainer, "multi_objective_aggregation", "sum_then_normalize") != "sum_then_normalize":
            raise UserError("recipe.replay needs TRL's multi_objective_aggregation=sum_then_normalize")

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        if not trainer.model.training:
            return batch
        g, acc = trainer.num_generations, trainer.accelerator
        local = batch["completion_ids"].size(0)
        start = acc.process_index * local
        success = rewards[:, self.column].detach().cpu() > self.settings.success_threshold
        mine = [  # only successes travel between processes
            (task_key(row), self._stored(batch, i, rewards[start + i]) if success[start + i] else None)
            for i, row in enumerate(trainer.last_inputs)
        ]
        everyone = mine if acc.num_processes == 1 else gather_object(mine)  # every process: the same list
        tasks = [task for task, _ in everyone]

        swaps = plan_swaps(success, tasks, self.buffer, g, self.rng)
        for task, stored in everyone:  # this batch as sampled, after the draw (ARPO's order)
            if stored is not None:
                self.buffer.add(task, stored)
        self._log(trainer, len(swaps), int(failed_groups(success, g).sum()))
        if not swaps:
            return batch

        edited = rewards.clone()
        for row, stored in swaps:
            edited[row] = torch.tensor(stored.rewards, dtype=edited.dtype, device=edited.device)
        trainer.last_rewards = edited
        ours = [(row - start, stored) for row, stored in swaps if start <= row < start + local]
        out = swap_rows(batch, ours, trainer._tokenizer.pad_token_id)
        advantages = group_advantages(weighted_rewards(edited, trainer.reward_weights), g, trainer.scale_rewards)
        out["advantages"] = advantages[start : start + local].to(batch["advantages"].device)
        loss_mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        out["num_items_in_batch"] = acc.gather(loss_mask.sum()).sum()
        return recompute_logps(trainer, out)

    def _log(self, trainer: Any, uses: int, failed: int) -> None:
        """The step's counts. Dynamic sampling scores several rounds in one step, each through
        this hook, and TRL logs the mean of a step's values: the rows swapped and groups failed
        are summed over the step's rounds instead, so `replay/uses` is the step's total."""
        step = trainer.state.global_step
        again = step == self._step  # a later round of the same step
        self._step = step
        self._totals = {
            "replay/uses": uses + (self._totals["replay/uses"] if again else 0),
            "replay/failed_groups": failed + (self._totals["replay/failed_groups"] if again else 0),
            "replay/buffered_tasks": len(self.buffer.tasks),
        }
        for name, value in self._totals.items():
            logged = trainer._metrics["train"][name] if again else None
            if logged:
                logged[-1] = float(value)  # this step's entry, replaced by the running total
            else:
                trainer.log_metric(name, value)

    @staticmethod
    def _stored(batch: dict[str, Any], i: int, rewards: torch.Tensor) -> StoredRollout | None:
        n = row_length(batch["completion_mask"][i])
        if n == 0:  # nothing of it trains (e.g. a masked truncated completion): nothing to replay
            return None
        tool = batch.get("tool_mask")
        return StoredRollout(
            batch["completion_ids"][i, :n].tolist(),
            None if tool is None else tool[i, :n].tolist(),
            rewards.detach().float().cpu().tolist(),
        )

    def state_dict(self) -> dict[str, Any]:
        return {"buffer": self.buffer.state_dict(), "rng": self.rng.getstate()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            self.buffer.load_state_dict(state["buffer"])
            version, internal, gauss = state["rng"]
            self.rng.setstate((version, tuple(internal), gauss))


def recompute_logps(trainer: Any, batch: dict[str, Any]) -> dict[str, Any]:
    """Old and reference log-probs of `batch`'s rows, where the batch carries them (TRL computes
    them before rewards, so the swapped rows hold another completion's)."""
    if "old_per_token_logps" not in batch and "ref_per_token_logps" not in batch:
        return batch
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    keep, size = batch["completion_ids"].size(1), trainer.args.per_device_train_batch_size
    out = dict(batch)
    with torch.no_grad():
        if "old_per_token_logps" in batch:
            out["old_per_token_logps"] = trainer._get_per_token_logps_and_entropies(
                trainer.model, ids, mask, keep, batch_size=size
            )[0]
        if "ref_per_token_logps" in batch:
            out["ref_per_token_logps"] = _reference_logps(trainer, ids, mask, keep, size)
    return out


def _reference_logps(trainer: Any, ids: torch.Tensor, mask: torch.Tensor, keep: int, size: int) -> torch.Tensor:
    """As TRL computes them: its reference model, or a LoRA policy with its adapter off."""
    if trainer.ref_model is not None:
        return trainer._get_per_token_logps_and_entropies(trainer.ref_model, ids, mask, keep, batch_size=size)[0]
    from trl.trainer.utils import use_adapter

    model = trainer.accelerator.unwrap_model(trainer.model)
    with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
        return trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep, batch_size=size)[0]
