"""Search-R1: training LLMs to reason and call a search engine with RL (Jin et al., 2025,
arXiv 2503.09516), after the authors' code (PeterGriffinJin/Search-R1).

The model writes `<search>query</search>` while it reasons; the engine's tool rollout
(`rollout.tools=[search]`, tool_loop/rollout.py) runs the retriever and appends the top-k
passages as `<information>...</information>`, which stay in the context but out of the
loss and the KL term (the paper's retrieved-token masking); the rollout ends at
`</answer>`. What the recipe adds over GRPO is the reward, exact match on the last
`<answer>` the model wrote (rewards/exact_match.py; `recipe.subem` for the substring
variant), and the verl fork's loss settings (conf/recipe/search_r1.yaml).

The tool belongs to the rollout config, which a recipe's YAML cannot set (Hydra merges the
`rollout` group after the recipe), so `validate` asks for it in one line. The CPU toy is
`rlrecipes train experiment=search_r1_toy`: with synthetic data the recipe trains on the
fact base (data/factbase.py), whose answers are only in its corpus, written to the cache
and named by `${factbase_corpus:}`; the toy model is warm-started on a flawed teacher's
searches (through the tool loop, models/toy_tools.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.data.factbase import TOPK, factbase_task, people_for, write_corpus
from rlrecipes.data.problems import ProblemSet, load_problem_set
from rlrecipes.data.tool_task import ToolTask
from rlrecipes.errors import ConfigError
from rlrecipes.grading.exact_match import exact_match
from rlrecipes.models.cache import cache_root, cached_folder, digest
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards.exact_match import ExactMatchParams

FACTBASE_VERSION = 2  # bump when the fact base or its teacher changes (cache keys of corpus and toy)
TOY = "rlrecipes train experiment=search_r1_toy"


@dataclass
class SearchR1Config(RecipeConfig):
    name: str = "search_r1"
    subem: bool = ExactMatchParams.subem  # exact_match reward: a gold answer inside the prediction counts (subem_check)


@register_recipe
class SearchR1(Recipe):
    name = "search_r1"
    paper = "Search-R1 (Jin et al., 2025, arXiv 2503.09516)"
    idea = "Search while reasoning: <search> calls to a retriever mid-answer, exact-match reward, passages masked"
    config_cls = SearchR1Config
    own_fields = ("subem",)
    progress_keys = ("tools/calls_per_rollout", "tools/answer_rate", "tools/invalid_action_rate")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        if "search" not in list(cfg.rollout.tools or []):
            raise ConfigError(
                f"recipe=search_r1 trains a model to call the search tool but rollout.tools={list(cfg.rollout.tools)}; "
                "set rollout.tools=[search] and +rollout.tool_kwargs.search.corpus=FILE (JSON lines), "
                f"or run the CPU toy: {TOY}"
            )
        if cfg.data.source == "synthetic":
            _check_toy_rollout(cfg)

    def problem_set(self, data_cfg: Any) -> ProblemSet | None:
        """With synthetic data, the fact base (its questions; its corpus is the search tool's).
        With real QA data (conf/data/nq_hotpotqa_train.yaml), the `data` config's questions with
        every gold alias kept (`golden_answers` is a list) and held-out accuracy by exact match
        on the last <answer>, the paper's metric, rather than by maths equivalence."""
        if data_cfg.source != "synthetic":
            return replace(load_problem_set(data_cfg, aliases=True), verify=exact_match)
        from rlrecipes.tool_loop.greedy import tool_warm_start

        task = replace(toy_task(data_cfg.synthetic), warm_start=tool_warm_start)
        train = task.train[: data_cfg.max_examples] if data_cfg.max_examples else task.train
        held_out = task.eval[: data_cfg.max_eval_examples] if data_cfg.max_eval_examples else task.eval
        report = f"{len(train)} train / {len(held_out)} held-out fact-base questions (1-hop and 2-hop; disjoint people)"
        return ProblemSet(train, held_out, task.verify, task, report)

    def warm_start_key(self, data_cfg: Any) -> Any:
        synthetic = OmegaConf.to_container(data_cfg.synthetic, resolve=True)
        return OmegaConf.create({**synthetic, "tool_task": "factbase", "factbase_version": FACTBASE_VERSION})


def toy_task(synthetic: Any) -> ToolTask:
    return factbase_task(synthetic.num_train, synthetic.num_eval, synthetic.seed, synthetic.teacher_error_rate)


def factbase_corpus(synthetic: Any, cache_dir: str | None = None) -> Path:
    """The fact base's corpus for `data.synthetic` (people, seed), written once into the cache."""
    questions = (synthetic.num_train, synthetic.num_eval, synthetic.seed)
    key = {"questions": list(questions), "version": FACTBASE_VERSION}
    folder = cache_root(cache_dir) / "factbase" / digest(key)

    def build(tmp: Path) -> None:
        train, held_out = people_for(*questions)
        write_corpus(train + held_out, tmp / "corpus.jsonl")

    return cached_folder(folder, key, build, lambda _: None) / "corpus.jsonl"


def _corpus_of_config(*, _root_: Any) -> str:
    """`${factbase_corpus:}` in a config: the fact-base corpus of that config's data.synthetic."""
    return str(factbase_corpus(_root_.data.synthetic, _root_.get("cache_dir")))


# Registered when the recipes load, which every command does before it composes a config.
OmegaConf.register_new_resolver("factbase_corpus", _corpus_of_config, replace=True)


def _check_toy_rollout(cfg: Any) -> None:
    """The fact base's answers are only in its own corpus, and its warm-start demonstrated the
    search tool's default tags with one passage per search: the rollout must match."""
    search = dict(cfg.rollout.get("tool_kwargs", {}).get("search") or {})
    corpus = str(factbase_corpus(cfg.data.synthetic, cfg.get("cache_dir")))
    if str(search.get("corpus")) != corpus:
        raise ConfigError(
            f"with synthetic data recipe=search_r1 trains on the fact base, whose answers are only in its "
            f"corpus: set rollout.tool_kwargs.search.corpus='${{factbase_corpus:}}' ({corpus}), as {TOY} does"
        )
    if search.get("topk") != TOPK:
        raise ConfigError(
            f"rollout.tool_kwargs.search.topk={search.get('topk')}: the fact-base toy retrieves {TOPK} passage per "
            "search (two searches must fit its 512-character context); use topk=1 or real data"
        )
    changed = sorted(set(search) & {"open", "close", "wrap"})
    if search.get("retriever", "bm25") not in ("bm25", "random"):  # random: the broken-tool control
        changed.append("retriever")
    if changed or cfg.rollout.answer_close != "</answer>":
        what = f"rollout.tool_kwargs.search.{changed[0]}" if changed else "rollout.answer_close"
        raise ConfigError(f"{what} is set, but the fact-base toy was taught Search-R1's tags; leave it unset")
