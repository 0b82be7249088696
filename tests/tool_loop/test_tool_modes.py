"""`rollout.tool_mode`: how the tools in `rollout.tools` are used. `loop` runs them while the model
writes; `rag_once` calls the one tool with the question before it writes (Search-R1's RAG
baseline) and gives the rollout no tool turn; `off` gives it none either (the no-tool control).
Settings are checked before anything loads."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rlrecipes.config.schema import ToolLoopConfig
from rlrecipes.errors import ConfigError
from rlrecipes.tool_loop.build import check_tools, retrieve_once, settings_for


@pytest.fixture(scope="module")
def tok():
    from rlrecipes.models.toy import build_tokenizer

    return build_tokenizer()


def rollout(**values):
    node = OmegaConf.structured(ToolLoopConfig)
    for key, value in values.items():
        node[key] = value
    return node


@pytest.mark.parametrize("mode, turns", [("loop", 3), ("rag_once", 0), ("off", 0)])
def test_only_the_loop_has_tool_turns(mode, turns):
    assert settings_for(rollout(tools=["calculator"], max_turns=3, tool_mode=mode), 64).max_turns == turns


def test_rag_once_puts_the_wrapped_result_after_the_prompt(tok):
    node = rollout(tools=["calculator"], tool_mode="rag_once", max_tool_result_tokens=3)
    retrieve = retrieve_once(node, tok)
    # the calculator's result for the question, 56088, cut to 3 tokens (characters), wrapped in
    # the calculator's own <result>...</result> as in the loop
    assert retrieve("<|user|>q<|assistant|>", "123*456") == "<|user|>q<|assistant|><result>560</result>"
    assert retrieve_once(rollout(tools=["calculator"]), tok) is None  # loop: nothing before the model writes


def test_tool_mode_settings_fail_in_one_line():
    with pytest.raises(ConfigError, match="rollout.tool_mode=rag_once needs a tool in rollout.tools"):
        check_tools(rollout(tool_mode="rag_once"))
    with pytest.raises(
        ConfigError, match=r"rag_once calls one tool with the question; rollout.tools=\['search', 'calculator'\]"
    ):
        check_tools(rollout(tools=["search", "calculator"], tool_mode="rag_once"))
    with pytest.raises(Exception, match="tool_mode"):
        rollout(tool_mode="sometimes")  # not a ToolMode: refused by the schema
    check_tools(rollout(tools=["calculator"], tool_mode="off"))


def test_training_prompts_get_the_tool_result_in_rag_once(tok):
    """Training rows and held-out prompts are rendered by one function; with rag_once it puts
    the tool's result for the problem after the rendered prompt."""
    from types import SimpleNamespace

    from rlrecipes.training.job import _prompt
    from tests.conftest import compose

    cfg = compose("rollout.tools=[calculator]", "rollout.tool_mode=rag_once")
    job = SimpleNamespace(cfg=cfg, tokenizer=tok, retrieve=retrieve_once(cfg.rollout, tok))
    prompt = _prompt(job, {"problem": "12*12"})
    assert prompt.endswith("<|assistant|><result>144</result>")
    job.retrieve = None
    assert _prompt(job, {"problem": "12*12"}).endswith("<|assistant|>")


# Four training problems, two of them the same question with two gold answers, and a scripted
# policy (tests/helpers/scripted_model.py) that answers 7 whatever the question: with rag_once every
# prompt ends in the calculator's "</result>", whose last token ">" the policy follows with "Answer: 7".
REPLAY_PROBLEMS = [("1+6", "7"), ("1+6", "8"), ("2+3", "5"), ("3+4", "7")]


@pytest.mark.integration
def test_tiny_runs_with_rag_once_and_replay(tmp_path):
    """Two steps of `train` with rag_once (no tool turn: one turn, no calls) and experience
    replay switched on (its counters logged every step). A step rolls out all four problems
    (4 prompts a step), so which groups fail, and which of them find a stored success, is
    known before the run, on any machine."""
    import json

    from rlrecipes.training.job import train
    from tests.conftest import compose
    from tests.helpers.scripted_model import chain, scripted_model

    data = tmp_path / "problems.jsonl"
    data.write_text("".join(json.dumps({"problem": p, "answer": a}) + "\n" for p, a in REPLAY_PROBLEMS))
    model = scripted_model(tmp_path / "model", chain(">", "Answer: 7"))
    cfg = compose(
        f"model.name_or_path={model}",
        "data.source=file",
        f"data.path={data}",
        "data.answer_style=auto",
        "rollout.tools=[calculator]",
        "rollout.tool_mode=rag_once",
        "recipe.replay.enabled=true",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "tools/turns" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    for r in steps:
        assert r["tools/turns"] == 1.0 and r["tools/calls_per_rollout"] == 0.0
        # 1+6 (gold 7) and 3+4 succeed in all 4 rollouts; 1+6 (gold 8) and 2+3 fail in all 4:
        # 2 failed groups every step, and 2 tasks (prompts: 1+6's, 3+4's) with stored successes
        assert r["replay/failed_groups"] == 2 and r["replay/buffered_tasks"] == 2
        assert r["accuracy"] == 0.5  # 8 of 16 rollouts right: the monitor, scored before any swap
    # step 1 draws before its successes are stored: the buffer is empty, 0 rows swapped; step 2:
    # 1+6 (gold 8) fails with the same prompt as 1+6 (gold 7), whose successes step 1 stored: 1
    # row swapped; 2+3's prompt has none stored: 0. So 0 + 1 over the two steps
    assert [r["replay/uses"] for r in steps] == [0, 1]
