"""J1: LLM-as-a-judge trained with verifiable rewards (Whitehouse et al., 2025, arXiv 2505.10320).

GRPO on judge prompts built from preference pairs whose winner is known:

    every pair (x, chosen, rejected) is judged in both orders, (x, a=chosen, b=rejected)
    with gold verdict A and (x, a=rejected, b=chosen) with gold B, in the same batch
    the judge thinks, then answers in the format of recipe.judge (judge/prompts.py):
      pairwise (PaV) <answer>[[A]]</answer> | pairwise_scores (PaS) <score_A>..<score_B>
      | pointwise (PoS) <score>s</score> for one response at a time | multitask (PaS + PoS)
    reward (§2): verdict correctness, 1 right / recipe.wrong_reward wrong (0; -1 is Tab. 4's
      negative-reward row); recipe.reward=consistency: 1 only if right in both orders
      (Tab. 8); pointwise: 1 iff score(chosen) > score(rejected), ties wrong
    recipe.format_weight > 0 adds Tab. 4's think-format reward

Both orders land in one rollout batch through the engine's KeepRowsTogether (blocks of two
consecutive rows; four for multitask); the `verdict` column is a group reward, scored on the
gathered batch (rewards/j1.py, the registered `verdict` reward). Pairs come from a file or hub id (recipe.pairs, with a
field mapping) or, by default, from the
synthetic arithmetic task (a correct vs a wrong sum; judge/synthetic.py), whose toy judge
is warm-started on a position-biased teacher. RM-R1 (arXiv 2505.02387) is the same recipe
with recipe.prompt=rm_r1 (chain of rubrics) and its -1 wrong reward, judging each pair once
(recipe.pair_orders=one: the chosen response first in every other pair, as its data script
alternates; judge/pairs.py) and rewarded by `rm_r1_verdict` (rewards/rm_r1.py: the authors'
check of the output's last 80 characters), which needs no partner row. Its released RL data
holds the judge prompts already written: with recipe.chosen_field=null and
recipe.rejected_field=null, recipe.prompt_field is the judge prompt as written and
recipe.label_field names the winner (the order is the file's; recipe.prompt is not used).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from omegaconf import OmegaConf

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.data.problems import ProblemSet
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError
from rlrecipes.judge.pairs import (
    PairFields,
    PairOrders,
    check_pair_source,
    judge_rows,
    load_pairs,
    load_prepared,
    one_order,
)
from rlrecipes.judge.prompts import JudgeFormat, PromptStyle, check_choice
from rlrecipes.judge.synthetic import PAIRS_VERSION, judge_task
from rlrecipes.judge.verdicts import verdict_verifier
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext, build_reward
from rlrecipes.rewards.j1 import VerdictParams, VerdictReward


@dataclass
class J1Config(RecipeConfig):
    name: str = "j1"
    judge: JudgeFormat = VerdictParams.judge
    prompt: PromptStyle = PromptStyle.j1
    reward: VerdictReward = VerdictParams.reward
    wrong_reward: float = VerdictParams.wrong_reward  # reward of a wrong or unparseable verdict (-1: Tab. 4 / RM-R1)
    format_weight: float = 0.0  # weight of the think-format reward (Tab. 4; 0 = off)
    # Preference pairs: a hub id or a local jsonl/json/parquet file; null = pairs made from
    # the synthetic arithmetic task of `data.synthetic` (a correct vs a wrong sum).
    pairs: Optional[str] = None
    eval_pairs: Optional[str] = None  # held-out pairs (null: none, or the synthetic held-out split)
    pairs_subset: Optional[str] = None
    pairs_split: str = "train"
    eval_pairs_split: str = "test"
    # both: every pair in both orders in one batch (J1 §2); one: each pair once, the chosen
    # response first in every other pair (RM-R1's data, mix_data.py:146-153)
    pair_orders: PairOrders = PairOrders.both
    prompt_field: str = "prompt"
    # null with rejected_field null: prompt_field holds the judge prompt as written, both
    # responses in it, and label_field names the winner (RM-R1's RL data)
    chosen_field: Optional[str] = "chosen"
    rejected_field: Optional[str] = "rejected"
    category_field: Optional[str] = None
    id_field: Optional[str] = None
    label_field: Optional[str] = None  # a column naming the winner (A>B / B>A): chosen/rejected = responses A/B
    max_pairs: Optional[int] = None
    max_eval_pairs: Optional[int] = None


@register_recipe
class J1(Recipe):
    name = "j1"
    paper = "J1 (Whitehouse et al., 2025, arXiv 2505.10320)"
    idea = "Train an LLM judge with GRPO: verdicts on pairs with a known winner, both orders per batch"
    config_cls = J1Config
    own_fields = (
        "judge",
        "prompt",
        "reward",
        "wrong_reward",
        "format_weight",
        "pairs",
        "eval_pairs",
        "pairs_subset",
        "pairs_split",
        "eval_pairs_split",
        "pair_orders",
        "prompt_field",
        "chosen_field",
        "rejected_field",
        "category_field",
        "id_field",
        "label_field",
        "max_pairs",
        "max_eval_pairs",
    )
    progress_keys = ("j1/consistent", "j1/first_position_share")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r = cfg.recipe
        check_choice(r.judge, r.prompt)
        names = [spec.name for spec in r.rewards]
        if not {"verdict", "rm_r1_verdict"} & set(names):
            raise ConfigError(
                "recipe=j1 trains on a verdict reward: keep {name: verdict} (J1) or {name: rm_r1_verdict} (RM-R1) "
                "in recipe.rewards"
            )
        if r.reward == "consistency" and r.judge == "pointwise":  # multitask: consistency on its PaS rows
            raise ConfigError(
                "recipe.reward=consistency compares the two orders of a pairwise verdict; recipe.judge=pointwise has no orders"
            )
        if r.reward == "consistency" and "verdict" not in names:
            raise ConfigError(
                "recipe.reward=consistency is a setting of the 'verdict' reward, which recipe.rewards lacks"
            )
        check_pair_source(r, names)
        rows = cls.rows_for(r)
        if cfg.trainer.prompts_per_rollout % rows:
            raise ConfigError(
                f"trainer.prompts_per_rollout={cfg.trainer.prompts_per_rollout} must be a multiple of {rows}: "
                f"the {rows} rows of every pair (both orders{'; both responses' if rows == 4 else ''}) share a rollout batch"
            )
        if cfg.model.builder == "toy" and not cfg.model.name_or_path and r.prompt != "compact":
            raise ConfigError(
                f"recipe.prompt={r.prompt} writes judge prompts longer than the toy model's 512-character "
                "context; use recipe.prompt=compact (rlrecipes train experiment=j1_toy)"
            )
        if r.pairs is None and (cfg.data.source != "synthetic" or cfg.data.synthetic.task != "arithmetic"):
            raise ConfigError(
                "recipe.pairs=null builds pairs from the synthetic arithmetic task (data=arithmetic); "
                "set recipe.pairs=FILE_OR_HUB_ID (e.g. a file written by rlrecipes judge-pairs)"
            )

    def problem_set(self, data_cfg: Any) -> ProblemSet:
        c = self.cfg
        n = self.rows_per_pair
        if c.pairs is None:
            task = judge_task(data_cfg.synthetic, c.judge, c.prompt)
            train, held_out = task.train, task.eval
            if c.pair_orders == PairOrders.one:  # the warm-start still imitates both orders
                train, held_out = one_order(train), one_order(held_out)
            train, held_out = _first_pairs(train, c.max_pairs, n), _first_pairs(held_out, c.max_eval_pairs, n)
            report = (
                f"{len(train) // n} train / {len(held_out) // n} held-out synthetic arithmetic pairs, {n} rows each"
            )
            return ProblemSet(train, held_out, task.verify, task, report)
        fields = PairFields(
            c.prompt_field, c.chosen_field, c.rejected_field, c.category_field, c.id_field, c.label_field
        )
        if c.chosen_field is None:  # written judge prompts (validate: rejected_field too)
            train_rows = load_prepared(c.pairs, fields, c.pairs_subset, c.pairs_split, c.max_pairs)
            held = (
                load_prepared(c.eval_pairs, fields, c.pairs_subset, c.eval_pairs_split, c.max_eval_pairs)
                if c.eval_pairs
                else None
            )
            report = f"train: {train_rows.report()}; held-out: {held.report() if held else 'none'}"
            return ProblemSet(train_rows.rows, held.rows if held else [], verdict_verifier(c.judge), None, report)
        train = load_pairs(c.pairs, fields, c.pairs_subset, c.pairs_split, c.max_pairs)
        held_out = (
            load_pairs(c.eval_pairs, fields, c.pairs_subset, c.eval_pairs_split, c.max_eval_pairs)
            if c.eval_pairs
            else None
        )
        report = f"train: {train.report()}; held-out: {held_out.report() if held_out else 'none'}"
        return ProblemSet(
            judge_rows(train.pairs, c.judge, c.prompt, c.pair_orders),
            judge_rows(held_out.pairs, c.judge, c.prompt, c.pair_orders) if held_out else [],
            verdict_verifier(c.judge),
            None,
            report,
        )

    def warm_start_key(self, data_cfg: Any) -> Any:
        synthetic = OmegaConf.to_container(data_cfg.synthetic, resolve=True)
        return OmegaConf.create(
            {**synthetic, "judge": self.cfg.judge, "judge_prompt": self.cfg.prompt, "judge_pairs": PAIRS_VERSION}
        )

    @property
    def rows_per_pair(self) -> int:
        return self.rows_for(self.cfg)

    @staticmethod
    def rows_for(r: Any) -> int:
        """Consecutive judge rows per pair: 1 (one order), 4 (multitask) or 2."""
        if r.pair_orders == PairOrders.one:
            return 1
        return 4 if r.judge == "multitask" else 2

    def reward_functions(self, ctx: RewardContext) -> list:
        """`recipe.rewards` (the `verdict` column), then the think-format reward when weighted."""
        out = super().reward_functions(ctx)
        if self.cfg.format_weight:
            out.append((build_reward("judge_format", ctx), float(self.cfg.format_weight)))
        return out

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        from rlrecipes.engine.paired_batches import KeepRowsTogether

        rows = self.rows_per_pair
        return [KeepRowsTogether(rows)] if rows > 1 else []  # a lone row needs no company


def _first_pairs(rows: list[dict[str, Any]], limit: Optional[int], rows_per_pair: int) -> list[dict[str, Any]]:
    return rows if limit is None else rows[: rows_per_pair * limit]
