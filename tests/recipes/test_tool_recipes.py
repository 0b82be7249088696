"""search_r1 and tir: their settings, their one-line refusals, the presets' dry runs, the
exact-match reward on the model's own text, and a tiny run of each CPU toy preset's recipe (on a
scripted policy, beside the toy's own warm-start)."""

from __future__ import annotations

import json
import random
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


def test_the_teachers_rag_demonstration_is_the_context_rag_once_gives(tmp_path):
    """The warm-start's RAG demonstrations put after the prompt exactly what the RAG control's
    retrieval does (`rollout.tool_mode=rag_once` with the toy's corpus), and answer with the
    city of the passage retrieved: the subject's (on a 2-hop question, the teacher's error)."""
    from rlrecipes.data.factbase import factbase_task, people_for
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models.toy import build_tokenizer
    from rlrecipes.tool_loop.build import retrieve_once

    cfg = compose("experiment=search_r1_toy", "rollout.tool_mode=rag_once", f"cache_dir={tmp_path}")
    tok = build_tokenizer()
    retrieve = retrieve_once(cfg.rollout, tok)
    s = cfg.data.synthetic
    always_rag = factbase_task(s.num_train, s.num_eval, s.seed, s.teacher_error_rate, rag_share=1.0)
    city = {p.name: p.city for world in people_for(s.num_train, s.num_eval, s.seed) for p in world}
    for it in always_rag.train[:8]:  # the retrieval itself, as the RAG control runs it
        prompt = render_prompt(it["problem"], cfg.data.template, tok)
        [(context, by_model), (answer, answered)] = always_rag.segments(it, random.Random(0))
        assert (by_model, answered) == (False, True)
        assert retrieve(prompt, it["problem"]) == prompt + context
    assert {it["hops"] for it in always_rag.train[:8]} == {1, 2}
    for it in always_rag.train:  # every question's passage is its subject's, and the answer that passage's city
        [(context, _), (answer, _)] = always_rag.segments(it, random.Random(0))
        subject = it["id"].split(":", 1)[1]
        assert context.startswith(f"\n\n<information>Doc 1(Title: {subject}) {subject}: born in {city[subject]};")
        assert answer == f"<answer>{city[subject]}</answer>"


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

# Each preset's recipe on a scripted policy (tests/helpers/scripted_model.py) whose tokenizer has
# the preset's tags as tokens, so the bigram table writes them: four problems whose plain prompt
# ends in a letter; after "g" and "m" the policy calls the tool, and after the result answers;
# after "h" it answers at once; after "k" it writes "5" and stops (a void turn: neither a call nor
# an answer, which ends the rollout). "g" and "h" are answered right, "k" and "m" wrong.
TIR_TAGS = ("<calculator>", "</calculator>", "<result>", "</result>", "<answer>", "</answer>")
SEARCH_TAGS = ("<search>", "</search>", "<information>", "</information>", "<answer>", "</answer>")
PASSAGES = ["Kalo\nKalo was born in Perin.", "Dasi\nDasi was born in Lemo."]


def scripted_tool_case(preset: str, folder: Path) -> tuple[list[tuple[str, str]], Path, list[str]]:
    """(problems, the scripted model, the overrides) of `preset`'s scripted run."""
    from tests.helpers.scripted_model import chain, tagged_chain, tagged_model

    if preset == "tir_toy":
        # "<calculator>6*7</calculator>" -> "<result>42</result>" -> "<answer>\boxed{42}</answer>"
        script = {
            "g": "<calculator>",
            "m": "<calculator>",
            **tagged_chain("<calculator>", "6*7</calculator>", TIR_TAGS),
            **tagged_chain("</result>", "<answer>\\boxed{42}</answer>", TIR_TAGS),
            "h": "<answer>",
            **chain("k", "5"),
        }
        problems = [("6*7 g", "42"), ("7*6 h", "42"), ("6*8 k", "48"), ("6*9 m", "54")]
        return problems, tagged_model(folder / "model", script, TIR_TAGS), ["data.answer_style=boxed"]
    # "<search>Kalo</search>" -> "\n\n<information>Doc 1(Title: Kalo) ...</information>\n\n" -> "<answer>Perin</answer>"
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "contents": c}) + "\n" for i, c in enumerate(PASSAGES)))
    script = {
        "g": "<search>",
        "m": "<search>",
        **tagged_chain("<search>", "Kalo</search>", SEARCH_TAGS),
        **tagged_chain("\n", "<answer>Perin</answer>", SEARCH_TAGS),
        "h": "<answer>",
        **chain("k", "5"),
    }
    problems = [("Kalo g", "Perin"), ("Kalo h", "Perin"), ("Kalo k", "Perin"), ("Dasi m", "Lemo")]
    # exact match reads the last <answer> block: nothing maths-like to extract (as data=nq_hotpotqa_train)
    overrides = ["data.answer_style=none", f"rollout.tool_kwargs.search.corpus={corpus}"]
    return problems, tagged_model(folder / "model", script, SEARCH_TAGS), overrides


# Tokens of one rollout of each kind: (called: model, tool, model; answered at once; void).
#   tir: "<calculator>" 6 * 7 "</calculator>" = 5, "<result>" 4 2 "</result>" = 4, then
#        "<answer>" \ b o x e d { 4 2 } "</answer>" EOS = 13: 5 + 4 + 13 = 22; at once: 13; void: 5 EOS = 2
#   search_r1: "<search>" K a l o "</search>" = 6; \n \n "<information>" + the 43 characters of
#        "Doc 1(Title: Kalo) Kalo was born in Perin.\n" (19 + 23 + 1) + "</information>" \n \n = 3 + 43 + 3 = 49;
#        "<answer>" P e r i n "</answer>" EOS = 8: 6 + 49 + 8 = 63; at once: 8; void: 2
ROLLOUT_TOKENS = {"tir_toy": (22, 4, 13, 2), "search_r1_toy": (63, 49, 8, 2)}


@pytest.mark.integration
@pytest.mark.parametrize("preset", ["search_r1_toy", "tir_toy"])
def test_tiny_toy_run_logs_the_tool_metrics_and_measures_through_the_tools(preset, tmp_path):
    """Two steps of each CPU toy preset's recipe, on a scripted policy rather than the TINY toy
    (whether the toy calls the tool is a chance outcome of its build): every step logs the tool
    metrics, exactly as the script makes them, and held-out accuracy is measured before and
    after through the tool loop; and the TINY toy's warm-start (60 steps) measured its dev
    accuracy through the tool loop."""
    from rlrecipes.models import resolve_model_path
    from rlrecipes.recipes.tir import TIR
    from rlrecipes.training.job import train

    toy = compose(f"experiment={preset}", "data.synthetic.num_eval=32")
    recipe = {"search_r1_toy": SearchR1, "tir_toy": TIR}[preset](toy.recipe)
    task = recipe.problem_set(toy.data).task
    folder = resolve_model_path(toy.model, task, recipe.warm_start_key(toy.data), toy.cache_dir, log=lambda _: None)
    built = json.loads((Path(folder) / "warm_start.json").read_text())
    assert built["dev_measured_with_tools"] is True and built["steps"] == 60

    problems, model, overrides = scripted_tool_case(preset, tmp_path)
    data = tmp_path / "problems.jsonl"
    data.write_text("".join(json.dumps({"problem": p, "answer": a}) + "\n" for p, a in problems))
    cfg = compose(
        f"experiment={preset}",
        f"model.name_or_path={model}",
        "data.source=file",
        f"data.path={data}",
        f"data.eval_path={data}",
        "data.template=plain",
        *overrides,
    )
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "tools/turns" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    # a step rolls out the four problems 4 times each: 8 rollouts call the tool (g, m), 4 answer
    # at once (h), 4 end in a void turn (k); turns: 8 * 2 + 4 * 1 + 4 * 1 = 24
    called, tool, at_once, void = ROLLOUT_TOKENS[preset]
    expected = {
        "tools/calls_per_rollout": 8 / 16,  # one call in each of 8 rollouts
        "tools/error_rate": 0 / 8,  # every call ran
        "tools/invalid_action_rate": 4 / 24,  # k's void turns, of 24 turns
        "tools/turns": 24 / 16,
        "tools/answer_rate": 12 / 16,  # g, m and h closed an answer; k did not
        # tir: 8 * 4 / (8 * 22 + 4 * 13 + 4 * 2) = 32 / 236; search_r1: 8 * 49 / (8 * 63 + 4 * 8 + 4 * 2) = 392 / 544
        "tools/tool_token_share": 8 * tool / (8 * called + 4 * at_once + 4 * void),
    }
    for r in steps:
        assert {key: r[key] for key in TOOL_KEYS} == expected
        assert r["tools/void_turn_rate"] == 4 / 16
        # g and h right (8 of 16 rollouts), k and m wrong: the accuracy monitor and the trained
        # reward (tir: accuracy; search_r1: exact match on the last <answer> block)
        assert r["accuracy"] == 0.5 and r["reward_mean"] == 0.5
    # held-out (the same four problems, greedy, through the tool loop): g and h right, 2 of 4
    assert summary["accuracy_before"] == 0.5 and summary["accuracy_after"] == 0.5
