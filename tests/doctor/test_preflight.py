"""The pre-flight (rlrecipes/doctor/preflight.py, rlrecipes/training/preflight.py): its verdict
on hand-made probes, its reading of a scored batch from a stand-in trainer, and a tiny run whose
scripted model is cut at the token limit, refused in one line."""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.doctor import thresholds as T
from rlrecipes.doctor.preflight import Probe, ProbeSettings, empty_share, judge, readable_share
from rlrecipes.training.preflight import RESULT_FILE, Preflight, PreflightRefused, completion_text, read_probe
from tests.conftest import TINY, cli, one_error_line

SETTINGS = ProbeSettings(max_completion_length=16, answer_style="boxed", answer_graded=True, template="chat")
HEALTHY = Probe(
    completions=64,
    truncated_share=0.1,
    reward_mean=0.4,
    reward_std=0.49,
    zero_std_groups=0.25,
    max_abs_advantage=1.7,
    extractable_share=0.9,
    logprob_gap=0.01,
)
FLAT = {"reward_mean": 0.0, "reward_std": 0.0, "zero_std_groups": 1.0, "max_abs_advantage": 0.0}


def test_a_healthy_probe_can_learn_and_says_what_it_saw():
    verdict = judge(HEALTHY, SETTINGS)
    assert verdict.refusal is None and verdict.warnings == []
    assert verdict.summary_line() == (
        "pre-flight (first rollout, before any update): 64 completions, 10% cut at the token limit, "
        "reward 0.4 ± 0.49, 25% of groups with one reward, answers readable in 90%, "
        "rollout/trainer log-prob gap 0.01: can learn"
    )


def test_every_completion_cut_and_no_advantage_is_refused_with_twice_the_limit():
    verdict = judge(replace(HEALTHY, truncated_share=1.0, **FLAT), SETTINGS)
    assert verdict.refusal.startswith("pre-flight: all 64 completions of the first rollout were cut at ")
    assert "trainer.max_completion_length=16 and every advantage is 0" in verdict.refusal
    assert "raise it, e.g. trainer.max_completion_length=32" in verdict.refusal
    assert verdict.refusal.endswith("(or --no-preflight to train anyway)") and "\n" not in verdict.refusal
    assert verdict.summary_line().endswith(": refused") and verdict.refused_as == "truncation"


def test_cut_completions_that_still_differ_in_reward_can_learn_with_a_warning():
    # e.g. the answer comes early and the model writes on: the groups still rank their completions
    verdict = judge(replace(HEALTHY, truncated_share=1.0), SETTINGS)
    assert verdict.refusal is None
    assert verdict.warnings == [
        "100% of the first rollout's completions were cut at trainer.max_completion_length=16: "
        "consider trainer.max_completion_length=32"
    ]


def test_a_tool_rollout_that_ran_out_of_turns_is_not_refused_as_cut():
    verdict = judge(replace(HEALTHY, truncated_share=1.0, **FLAT), replace(SETTINGS, multi_turn=True))
    assert verdict.refusal is None
    assert verdict.warnings[1] == (
        "100% of the first rollout's completions were cut at trainer.max_completion_length=16 or ran out of "
        "tool turns (rollout.max_turns): consider trainer.max_completion_length=32"
    )


def test_a_few_completions_ending_below_the_threshold_is_not_a_proof():
    share = T.PREFLIGHT_ALL_TRUNCATED - 0.01  # 94%: not every completion was cut
    verdict = judge(replace(HEALTHY, truncated_share=share, **FLAT), SETTINGS)
    assert verdict.refusal is None
    assert verdict.warnings[0].startswith("every advantage of the first rollout is 0 (reward 0 on all 64")
    assert verdict.warnings[1].startswith("94% of the first rollout's completions were cut")


def test_no_readable_answer_under_a_graded_reward_is_refused_naming_the_style_and_template():
    verdict = judge(replace(HEALTHY, extractable_share=0.0, **FLAT), SETTINGS)
    assert verdict.refused_as == "format"
    assert verdict.refusal == (
        "pre-flight: none of the first rollout's 64 completions holds an answer the grader reads "
        "(data.answer_style=boxed), so every reward is 0 and every advantage 0; check data.template=chat "
        "and data.system_prompt ask for the answer in that form, or set data.answer_style "
        "(or --no-preflight to train anyway)"
    )


# SmolLM2-135M-Instruct under data.template=plain (seed 101): 26 of 32 completions empty, reward 0
EMPTY = replace(HEALTHY, completions=32, empty_share=26 / 32, extractable_share=None, **FLAT)
UNGRADED_STYLE = replace(SETTINGS, answer_style=None, template="plain")  # the task's own verifier


def test_most_completions_empty_and_no_advantage_is_refused_as_the_template_naming_the_chat_one():
    verdict = judge(EMPTY, UNGRADED_STYLE)
    assert verdict.refused_as == "format"
    assert verdict.refusal == (
        "pre-flight: 26 of the first rollout's 32 completions are empty (the model ended its turn at once), "
        "so each group's completions scored alike and every advantage is 0; an instruct model answers in its "
        "chat turn: set data.template=chat (or --no-preflight to train anyway)"
    )
    assert "81% empty" in verdict.summary_line()


def test_empty_completions_under_a_chat_template_name_the_system_prompt_and_the_models_template():
    verdict = judge(EMPTY, replace(UNGRADED_STYLE, template="qwen_math_cot"))
    assert verdict.refusal.endswith(
        "every advantage is 0; check data.template=qwen_math_cot, data.system_prompt and the model's own chat "
        "template (or --no-preflight to train anyway)"
    )


def test_empty_completions_come_before_unreadable_answers_they_explain():
    verdict = judge(replace(EMPTY, extractable_share=0.0), SETTINGS)
    assert verdict.refusal.startswith("pre-flight: 26 of the first rollout's 32 completions are empty")


def test_fewer_than_half_empty_or_a_batch_that_teaches_is_not_refused():
    assert judge(replace(EMPTY, empty_share=0.5), UNGRADED_STYLE).refused_as == "format"  # 16 of 32: half
    below = replace(EMPTY, empty_share=T.PREFLIGHT_EMPTY_MOST - 1 / 32)  # 15 of 32
    assert judge(below, UNGRADED_STYLE).refusal is None
    assert "47% empty" in judge(below, UNGRADED_STYLE).summary_line()
    teaching = judge(replace(EMPTY, max_abs_advantage=1.2, zero_std_groups=0.5), UNGRADED_STYLE)
    assert teaching.refusal is None
    assert teaching.warnings == [
        "81% of the first rollout's completions are empty (the model ended its turn at once): an instruct "
        "model answers in its chat turn: set data.template=chat"
    ]


def test_empty_share_by_hand():
    assert empty_share(["", " \n\t", "4", "Answer: 5"]) == 0.5
    assert empty_share(["4"]) == 0.0 and empty_share([]) is None


@pytest.mark.parametrize(
    "settings, probe",
    [
        (replace(SETTINGS, answer_graded=False), {}),  # label-free rewards read no answer
        (replace(SETTINGS, answer_style=None), {"extractable_share": None}),  # the set's own verifier
        (SETTINGS, {"max_abs_advantage": 0.3}),  # a reward that varies (format) still teaches
    ],
)
def test_unreadable_answers_are_not_refused_where_they_do_not_decide_the_reward(settings, probe):
    values = {**FLAT, "extractable_share": 0.0, **probe}
    assert judge(replace(HEALTHY, **values), settings).refusal is None


def test_warnings_for_what_can_learn_but_looks_wrong():
    probe = replace(HEALTHY, zero_std_groups=0.95, extractable_share=0.05, logprob_gap=0.2)
    assert judge(probe, SETTINGS).warnings == [
        "95% of the first rollout's groups gave every completion one reward: those groups teach nothing "
        "(data too easy or too hard for this model)",
        "only 5% of the first rollout's completions hold an answer the grader reads (data.answer_style=boxed): "
        "check data.template=chat",
        "rollout/trainer log-prob gap 0.2 on the first rollout (> 0.1): vLLM samples with other weights or "
        "numerics than the trainer's; see rollout.importance_sampling",
    ]


def test_readable_share_by_hand():
    texts = ["Answer: 3", "I do not know", "so\nAnswer: 5"]
    assert readable_share(texts, "answer_line") == pytest.approx(2 / 3)
    assert readable_share(["so $\\boxed{2}$", "2"], "boxed") == 0.5
    assert readable_share(texts, None) is None and readable_share([], "boxed") is None


def test_a_conversation_is_read_as_its_messages_text():
    assert completion_text([{"role": "assistant", "content": "Answer: 4"}, {"role": "tool", "content": "x"}]) == (
        "Answer: 4\nx"
    )
    assert completion_text("Answer: 4") == "Answer: 4"


# ------------------------------------------------------------------ the hook, on a stand-in trainer


def stand_in(step=0, training=True, main=True, completions=("Answer: 1", "Answer: 2", " \n", "Answer: 4")):
    """TRL's state after scoring a first round of two groups of two on one process."""
    metrics = defaultdict(list)
    metrics.update(
        {
            "completions/clipped_ratio": [0.25],
            "reward": [0.5],
            "reward_std": [0.5774],
            "frac_reward_zero_std": [0.5],
        }
    )
    logs = {"completion": deque(["an earlier round's", *completions], maxlen=8)}
    return SimpleNamespace(
        state=SimpleNamespace(global_step=step),
        model=SimpleNamespace(training=training),
        accelerator=SimpleNamespace(is_main_process=main, gather=lambda t: t),
        _metrics={"train": metrics},
        _logs=logs,
    )


def test_the_probe_is_read_from_trls_metrics_the_logged_completions_and_the_advantages():
    batch = {"advantages": torch.tensor([[0.0, -0.5], [0.7, 0.1], [0.0, 0.0], [0.0, 0.0]])}  # per token
    probe = read_probe(stand_in(), batch, "answer_line")
    assert probe == Probe(
        completions=4,
        truncated_share=0.25,
        reward_mean=0.5,
        reward_std=0.5774,
        zero_std_groups=0.5,
        max_abs_advantage=pytest.approx(0.7),
        extractable_share=0.75,  # " \n" has no answer line; the earlier round's text is not read
        logprob_gap=None,  # no vllm/logprob_gap: transformers rollouts
        empty_share=0.25,  # " \n"
    )


def hook(tmp_path, settings=SETTINGS):
    lines, summary = [], {}
    return Preflight(settings, tmp_path, lines.append, summary), lines, summary


def test_the_hook_logs_and_stores_its_verdict_once(tmp_path):
    preflight, lines, summary = hook(tmp_path)
    trainer, batch = stand_in(), {"advantages": torch.tensor([0.5, -0.5, 0.0, 0.0])}
    assert preflight.after_scoring(trainer, batch, None) is batch
    assert lines[0].startswith("pre-flight (first rollout, before any update): 4 completions, 25% cut")
    assert json.loads((tmp_path / RESULT_FILE).read_text()) == summary["preflight"]
    assert summary["preflight"]["refusal"] is None
    preflight.after_scoring(trainer, batch, None)  # the second round: judged once only
    assert len(lines) == 1


def test_the_hook_refuses_on_every_process_and_writes_on_the_main_one(tmp_path):
    cut = {"advantages": torch.zeros(4)}
    for main in (True, False):
        trainer = stand_in(main=main)
        trainer._metrics["train"]["completions/clipped_ratio"] = [1.0]
        preflight, lines, _ = hook(tmp_path / str(main))
        (tmp_path / str(main)).mkdir()
        with pytest.raises(PreflightRefused, match="trainer.max_completion_length=32") as refused:
            preflight.after_scoring(trainer, cut, None)
        assert refused.value.refused_as == "truncation"
        assert (tmp_path / str(main) / RESULT_FILE).exists() == main and bool(lines) == main


@pytest.mark.parametrize("trainer", [stand_in(step=3), stand_in(training=False)], ids=["resumed", "evaluating"])
def test_a_resumed_run_or_a_held_out_pass_is_not_judged(tmp_path, trainer):
    preflight, lines, summary = hook(tmp_path)
    trainer._metrics["train"]["completions/clipped_ratio"] = [1.0]  # would be refused at step 0
    preflight.after_scoring(trainer, {"advantages": torch.zeros(4)}, None)
    assert lines == [] and summary == {}


# ------------------------------------------------------------------------------ a tiny run


@pytest.mark.integration
def test_a_run_cut_at_its_token_limit_is_refused_in_one_line_and_trains_with_no_preflight(tmp_path, capsys):
    from tests.helpers.scripted_model import answering, scripted_model

    base = scripted_model(tmp_path / "model", answering("95"))  # "Answer: 95": 10 tokens, cut at 4
    args = [*TINY, f"model.name_or_path={base}", "trainer.max_completion_length=4", "trainer.eval.before=false"]
    code, out = cli(capsys, "train", *args, f"run_dir={tmp_path / 'refused'}")
    assert code != 0
    line = one_error_line(out)
    assert "all 16 completions of the first rollout were cut at trainer.max_completion_length=4" in line
    assert "trainer.max_completion_length=8" in line
    code, out = cli(capsys, "train", "--no-preflight", *args, f"run_dir={tmp_path / 'trained'}")
    assert code == 0, out
    summary = json.loads((tmp_path / "trained" / "summary.json").read_text())
    assert summary["steps"] == 2 and "preflight" not in summary


@pytest.mark.integration
def test_a_model_that_ends_its_turn_at_once_under_the_plain_template_is_refused_naming_the_chat_one(tmp_path, capsys):
    from tests.helpers.scripted_model import scripted_model

    base = scripted_model(tmp_path / "model", {})  # no successor for any token: every completion ends at once
    args = [*TINY, f"model.name_or_path={base}", "data.template=plain", "trainer.eval.before=false"]
    code, out = cli(capsys, "train", *args, f"run_dir={tmp_path / 'refused'}")
    assert code != 0
    line = one_error_line(out)
    assert "16 of the first rollout's 16 completions are empty" in line and "set data.template=chat" in line
    probe = json.loads((tmp_path / "refused" / RESULT_FILE).read_text())["probe"]
    assert probe["empty_share"] == 1.0


@pytest.mark.parametrize(
    "overrides, multi_turn, graded",
    [((), False, True), (("rollout.tools=[calculator]",), True, True), (("recipe=intuitor",), False, False)],
)
def test_the_runs_settings_name_the_limit_the_turns_and_whether_answers_are_graded(overrides, multi_turn, graded):
    from rlrecipes.training.job import _probe_settings
    from tests.conftest import compose

    cfg = compose("trainer.max_completion_length=24", *overrides)
    settings = _probe_settings(SimpleNamespace(cfg=cfg, problems=SimpleNamespace(answer_style="answer_line")))
    assert settings == ProbeSettings(24, "answer_line", graded, str(cfg.data.template), multi_turn)
