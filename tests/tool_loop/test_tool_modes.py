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


@pytest.mark.integration
def test_tiny_runs_with_rag_once_and_replay(tmp_path):
    """Two steps of `train` with rag_once (no tool turn: one turn, no calls) and experience
    replay switched on (its counters logged every step)."""
    import json

    from rlrecipes.training.job import train
    from tests.conftest import compose

    cfg = compose(
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
        assert r["replay/uses"] >= 0 and "replay/failed_groups" in r
