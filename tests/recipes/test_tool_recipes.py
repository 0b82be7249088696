"""search_r1 and tir: their settings, their one-line refusals, the presets' dry runs, the
exact-match reward on the model's own text, and a tiny run of each CPU toy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.recipes.search_r1 import SearchR1, factbase_corpus
from rlrecipes.tool_loop.rollout import ToolRollout, ToolRolloutSettings
from tests.conftest import compose


def test_search_r1_differs_from_grpo_by_the_verl_forks_loss_and_exact_match():
    r = compose("experiment=search_r1_toy").recipe
    assert (r.loss_type, r.beta, r.entropy_coef, r.epsilon, r.epsilon_high) == ("bnpo", 0.001, 0.001, 0.2, None)
    assert [(s.name, s.weight) for s in r.rewards] == [("exact_match", 1.0)] and r.subem is False


def test_tir_differs_from_grpo_by_simpletirs_clip_and_loss():
    r = compose("experiment=tir_toy").recipe
    assert (r.loss_type, r.beta, r.entropy_coef, r.epsilon, r.epsilon_high) == ("bnpo", 0.0, 0.0, 0.2, 0.28)
    assert [(s.name, s.weight) for s in r.rewards] == [("accuracy", 1.0)]


def test_the_toy_presets_pass_the_dry_run():
    from rlrecipes.training.plan import dry_run

    for preset, reward in (("search_r1_toy", "exact_match=1, accuracy=0"), ("tir_toy", "accuracy=1")):
        rows = dict(dry_run(compose(f"experiment={preset}")))
        assert rows["rewards"] == reward


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["recipe=search_r1"], "recipe=search_r1 trains a model to call the search tool but rollout.tools=[]"),
        (["recipe=tir"], "recipe=tir trains a model to compute with a tool but rollout.tools=[]"),
        (["experiment=search_r1_toy", "rollout.tool_kwargs.search.topk=3"], "the fact-base toy retrieves 1 passage"),
        (
            ["experiment=search_r1_toy", "rollout.tool_kwargs.search.corpus=/etc/hostname"],
            "whose answers are only in its corpus",
        ),
        (
            ["experiment=search_r1_toy", "+rollout.tool_kwargs.search.close='</q>'"],
            "rollout.tool_kwargs.search.close is set, but the fact-base toy was taught Search-R1's tags",
        ),
        (["experiment=tir_toy", "rollout.tools=[python]"], "trains on big arithmetic"),
    ],
)
def test_settings_the_recipes_cannot_train_with_are_one_line_errors(overrides, message):
    from rlrecipes.training.plan import check_run

    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        check_run(compose(*overrides), hardware=False)
    assert "\n" not in str(caught.value)


def test_the_corpus_the_config_names_is_the_fact_bases(tmp_path):
    cfg = compose("experiment=search_r1_toy", f"cache_dir={tmp_path}")
    path = cfg.rollout.tool_kwargs.search.corpus
    assert path == str(factbase_corpus(cfg.data.synthetic, str(tmp_path)))
    rows = [json.loads(line) for line in open(path)]
    task = SearchR1(cfg.recipe).problem_set(cfg.data)
    subjects = {it["id"].split(":", 1)[1] for it in task.train + task.eval}
    assert {row["contents"].split("\n")[0] for row in rows} == subjects  # one passage per person, no other
    SearchR1.validate(cfg)


def test_an_answer_only_inside_the_retrieved_passages_scores_zero(tmp_path):
    """The search tool returns a passage that holds the right answer block; the model writes
    none. The recipe's rewards, given the model's text as the engine gives them, are all 0;
    the whole completion, retrieved passage included, would have scored 1."""
    from rlrecipes.models.toy import build_tokenizer
    from rlrecipes.tools import build_tools
    from rlrecipes.training.plan import planned_rewards, reward_context

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "0", "contents": "Kalo Remuta\n<answer>Pelimon</answer>"}) + "\n")
    tok = build_tokenizer()
    tools = build_tools(["search"], {"search": {"corpus": str(corpus), "topk": 1}})
    loop = ToolRollout(tools, ToolRolloutSettings(max_turns=1, max_completion_tokens=200), tok)

    def model(prompt_ids, max_new_tokens):  # searches, then stops
        turn = "<search>Kalo Remuta</search>" if len(prompt_ids[0]) < 10 else ""
        return [tok.encode(turn, add_special_tokens=False) + [tok.eos_token_id]], None

    [row] = loop.run([tok.encode("Where?", add_special_tokens=False)], model)
    full = tok.decode(row.ids, skip_special_tokens=True)
    assert "<answer>Pelimon</answer>" in full and "<answer>" not in loop.model_text(row)
    cfg = compose("experiment=search_r1_toy", f"cache_dir={tmp_path}")
    verify = SearchR1(cfg.recipe).problem_set(cfg.data).verify
    rewards = planned_rewards(SearchR1(cfg.recipe), reward_context(cfg, verify))
    assert [name.__name__ for name, _ in rewards] == ["exact_match", "accuracy"]
    for reward, _ in rewards:
        assert reward(prompts=["Where?"], completions=[loop.model_text(row)], answer=["Pelimon"]) == [0.0]
        assert reward(prompts=["Where?"], completions=[full], answer=["Pelimon"]) == [1.0]


TOOL_KEYS = (
    "tools/calls_per_rollout",
    "tools/error_rate",
    "tools/invalid_action_rate",
    "tools/turns",
    "tools/answer_rate",
    "tools/tool_token_share",
)


@pytest.mark.integration
@pytest.mark.parametrize("preset", ["search_r1_toy", "tir_toy"])
def test_tiny_toy_run_logs_the_tool_metrics_and_measures_through_the_tools(preset, tmp_path):
    """Two steps of each CPU toy on the TINY model (warm-started 60 steps: whether it calls the
    tool is left open): every step logs the tool metrics, held-out accuracy is measured before
    and after, and the warm-start's dev accuracy was measured through the tool loop."""
    from rlrecipes.training.job import train

    cfg = compose(f"experiment={preset}", "data.synthetic.num_eval=32", "trainer.eval.batch_size=32")
    summary = train(cfg, tmp_path, log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "tools/turns" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    for r in steps:
        assert all(0.0 <= r[key] <= 3.0 for key in TOOL_KEYS)
    assert 0.0 <= summary["accuracy_before"] <= 1.0 and 0.0 <= summary["accuracy_after"] <= 1.0
    built = json.loads((Path(summary["model"]) / "warm_start.json").read_text())
    assert built["dev_measured_with_tools"] is True and built["steps"] == 60
