"""One-shot RLVR (Wang et al., 2025, arXiv 2504.20571), paper §2;
the authors' verl fork (ypwang61/One-Shot-RLVR, scripts/train/).

RLVR on a single training example (or a few): the example is duplicated to fill the
rollout batch (`recipe.rows`, the paper's "r128"), and every copy is its own GRPO group,
because TRL, like verl, groups completions per dataset row, not per distinct prompt.
The examples are chosen by `rlrecipes select` (variance of their accuracy history).

The loss is the paper code's verl actor loss (one-shot's `dp_actor.update_policy`):

    loss = masked_mean(clipped PG) + 0.001 * masked_mean(k3 KL) - 0.001 * masked_mean(entropy)

Each mean runs over the tokens of one micro-batch (that old verl has no other mode),
then micro-batches are weighted by their share of the sequences; TRL's micro-batches
all hold the same number, so this is TRL's `bnpo` (token mean per micro-batch, divided
by the accumulation steps), not `dapo` (one token mean over the whole batch).
TRL's `loss -= entropy_coef * H` has verl's sign, so entropy_coef = +0.001 is the
paper's alpha = -0.001 (Eq. 3-8). What TRL cannot match: the advantage epsilon is 1e-4
(verl 1e-6) and the k3 term is not clamped to [-10, 10].
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, List, Optional

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.data.problems import ProblemSet, load_problem_set
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe


@dataclass
class OneShotConfig(RecipeConfig):
    name: str = "one_shot"
    # Ids of the training examples to train on (the data's id column; DSR-sub: its row
    # index, e.g. [124] = π1). null = the whole training set as it is (the DSR-sub
    # baseline; also a data file that already holds the duplicated rows).
    examples: Optional[List[str]] = None
    # The chosen examples are duplicated to this many rows, split evenly (π1+π13: 64 + 64);
    # 128 = the paper's verl batch (drop_last).
    rows: int = 128
    # With examples null: train on every row as loaded (the full-set baseline, or a file that
    # already holds the duplicated rows). Without it (and without recording a history) a run
    # with no examples is refused: one-shot on 4,000 problems is not one-shot.
    whole_set: bool = False


# The toy pipeline, for the error that asks for recipe.examples: a history over a pool small
# enough that each example is sampled many times (120 steps x 8 prompts over 64 examples: 15
# accuracies each), the ranking, then the run on the top example.
TOY_PIPELINE = (
    "rlrecipes train recipe=one_shot trainer.record_accuracy_history=true data.max_examples=64 run_dir=H; "
    "rlrecipes select H/accuracy_history.json --top 1 (prints the id); "
    "rlrecipes train recipe=one_shot 'recipe.examples=[ID]'"
)


def copies_per_example(num_examples: int, rows: int) -> int:
    """How often each example appears so that `num_examples` fill `rows` evenly."""
    if num_examples < 1:
        raise ConfigError("recipe.examples selects no training problem")
    if rows < 1 or rows % num_examples:
        raise ConfigError(
            f"recipe.rows={rows} must be a positive multiple of the {num_examples} "
            "chosen examples (recipe.examples), so each is repeated equally often"
        )
    return rows // num_examples


def pick(rows: list[dict[str, Any]], ids: list[str]) -> list[dict[str, Any]]:
    """The rows whose `id` is in `ids`, in the order `ids` gives."""
    by_id = {str(row["id"]): row for row in rows}
    wanted = distinct_ids(ids)
    missing = [i for i in wanted if i not in by_id]
    if missing:
        sample = ", ".join(list(by_id)[:3])
        raise UserError(
            f"recipe.examples: no training problem has id {missing[0]!r} "
            f"({len(rows)} problems; ids look like: {sample})"
        )
    return [by_id[i] for i in wanted]


def distinct_ids(ids: list[Any]) -> list[str]:
    """`recipe.examples` as strings (the data's id column), each named once."""
    wanted = [str(i) for i in ids]
    if len(set(wanted)) != len(wanted):
        raise ConfigError(f"recipe.examples={wanted} names an example twice; use recipe.rows to repeat it")
    return wanted


def duplicate(pool: list[dict[str, Any]], rows: int) -> list[dict[str, Any]]:
    """Each example repeated `rows // len(pool)` times, in blocks (the paper's merged files)."""
    copies = copies_per_example(len(pool), rows)
    return [row for row in pool for _ in range(copies)]


@register_recipe
class OneShot(Recipe):
    name = "one_shot"
    paper = "One-shot RLVR (Wang et al., 2025)"
    idea = "RLVR on one high-variance example duplicated to fill the batch; PG + KL - entropy"
    config_cls = OneShotConfig
    own_fields = ("examples", "rows", "whole_set")
    progress_keys = ("heldout_accuracy", "entropy")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r = cfg.recipe
        if r.examples is not None:  # which ids exist is known once the data loads (`pick`)
            copies_per_example(len(distinct_ids(list(r.examples))), r.rows)
        elif not (r.whole_set or cfg.trainer.record_accuracy_history):
            raise ConfigError(
                "recipe=one_shot trains on the examples named by recipe.examples, and none are set "
                f"(recipe.whole_set=true: every row); the toy pipeline: {TOY_PIPELINE}"
            )

    def problem_set(self, data_cfg: Any) -> ProblemSet:
        """The data's problems, with a report line that says what one-shot trains on; unknown
        example ids fail here, before the model loads."""
        problems = load_problem_set(data_cfg)
        if self.cfg.examples is None:
            what = "every training row (recipe.examples=null)"
            return replace(problems, report=f"{problems.report}; one-shot trains on {what}")
        chosen = pick(problems.train, list(self.cfg.examples))
        copies = copies_per_example(len(chosen), self.cfg.rows)
        ids = ", ".join(str(row["id"]) for row in chosen)
        report = (
            f"one-shot: {self.cfg.rows} rows = {len(chosen)} example{'s' * (len(chosen) != 1)} (id {ids}) "
            f"x {copies} copies, picked from {problems.report}"
        )
        return replace(problems, report=report)

    def training_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.cfg.examples is None:
            return rows
        return duplicate(pick(rows, list(self.cfg.examples)), self.cfg.rows)
