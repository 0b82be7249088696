"""QwenLong-L1's curriculum rules by hand: the input-length filter, the retrospective sampling
selection and weights, a phase's prepared data, and the phase settings' checks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.training.curriculum import Carried, carried_rows, filter_by_length, retrospective_selection


def words(text: str) -> int:
    return len(text.split())


def test_the_length_filter_keeps_prompts_within_the_limit_and_counts_the_rest():
    items = [{"id": "1", "problem": "one two"}, {"id": "2", "problem": "a b c d"}, {"id": "3", "problem": "x y z"}]
    kept = filter_by_length(items, 3, words)
    assert [i["id"] for i in kept.kept] == ["1", "3"] and kept.left_out == 1
    assert kept.report(3) == "2 of 3 prompts within 3 tokens (1 longer left out)"
    none = filter_by_length(items, 1, words)
    assert (none.kept, none.left_out, none.shortest) == ([], 3, 2)
    assert filter_by_length(items, None, words).kept == items  # no limit: everything


@pytest.mark.integration
def test_the_toy_counts_its_prompts_under_the_chat_template():
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models.toy import build_tokenizer

    tok = build_tokenizer()

    def tokens(problem: str) -> int:  # <|user|> and <|assistant|> are one token each, then one per character
        return len(tok(render_prompt(problem, "chat", tok), add_special_tokens=False)["input_ids"])

    items = [{"id": p, "problem": p} for p in ("7+5", "17+5", "37+48")]
    assert [tokens(i["problem"]) for i in items] == [5, 6, 7]
    assert [i["id"] for i in filter_by_length(items, 6, tokens).kept] == ["7+5", "17+5"]


# phase 1: a never solved (difficulty 1/0.125 = 8), b 0.375 (but phase 2 solved it: not hard
# any more), c solved, d never scored (unknown, not hard), e exactly 0.5 (not below), h never
# solved (ties with a: a was sampled first). phase 2: f 0.4 (2.5), g 0.2 (5).
PHASE1 = {"a": [0.0, 0.0], "b": [0.25, 0.5], "c": [1.0], "d": [None], "e": [0.5], "h": [0.0]}
PHASE2 = {"b": [1.0], "f": [0.4], "g": [0.2, None, 0.2]}


def test_retrospective_sampling_carries_the_last_phases_hard_examples_weighted_by_inverse_mean_reward():
    chosen = retrospective_selection([("p1", PHASE1), ("p2", PHASE2)], hard_below=0.5, reward_floor=0.125, max_copies=5)
    assert chosen == [
        Carried("a", "p1", 0.0, 8.0, 5),  # round(8) capped at max_copies
        Carried("h", "p1", 0.0, 8.0, 5),
        Carried("g", "p2", pytest.approx(0.2), pytest.approx(5.0), 5),
        Carried("f", "p2", 0.4, 2.5, 3),  # round(2.5) = 3 (half up)
    ]
    top = retrospective_selection([("p1", PHASE1), ("p2", PHASE2)], 0.5, 0.125, 5, max_examples=3)
    assert [c.id for c in top] == ["a", "h", "g"]
    rows = {k: {"id": k, "problem": k, "answer": "1"} for k in "afgh"}
    assert [r["id"] for r in carried_rows(top[2:], rows)] == ["g"] * 5


def phase_pipeline(tmp_path: Path, *overrides: str):
    from rlrecipes.training.stages import compose_pipeline, plan

    cfg = compose_pipeline(["pipeline=toy_length_curriculum", f"run_dir={tmp_path}", *overrides])
    return cfg, plan(cfg)


@pytest.mark.integration
def test_a_phase_reads_its_prepared_data_and_is_checked_on_its_own():
    from rlrecipes.training.stages import check_phase, stage_config

    _, steps = phase_pipeline(Path("/p"))
    phase2 = steps[2]
    argv = phase2.argv(Path("/p"), steps)
    assert "data.path=/p/3-phase2-data/train.jsonl" in argv and "trainer.record_accuracy_history=true" in argv
    checked = stage_config(phase2, Path("/p"), steps, for_check=True)
    assert checked.data.source == "synthetic" and not checked.trainer.record_accuracy_history
    with pytest.raises(ConfigError, match="stage phase1: phase: only a train stage can be a curriculum phase"):
        check_phase(replace(steps[1], command="sft"), steps[:1])
    with pytest.raises(
        ConfigError, match=r"retrospective.phases: 'warmup' is not an earlier phase; earlier phases: phase1"
    ):
        phase_pipeline(Path("/p"), "pipeline.stages.2.phase.retrospective.phases=[warmup]")
    with pytest.raises(ConfigError, match=r"reward_floor=0.0: use a value in \(0, 1\]"):
        phase_pipeline(Path("/p"), "pipeline.stages.2.phase.retrospective.reward_floor=0")


@pytest.mark.integration
def test_a_phase_writes_its_data_and_refuses_a_limit_that_leaves_nothing(tmp_path):
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models.toy import build_tokenizer
    from rlrecipes.training.phase_data import prepare
    from rlrecipes.training.stages import stage_config
    from tests.conftest import TINY

    build_tokenizer().save_pretrained(tmp_path / "model")
    _, steps = phase_pipeline(tmp_path, *TINY)
    phase1 = steps[1]
    cfg = stage_config(phase1, tmp_path, steps, phase_data=False)
    cfg.model.name_or_path = str(tmp_path / "model")  # stands for model_from's folder: a tokenizer alone
    lines: list[str] = []
    record = prepare(phase1, tmp_path, steps, cfg, lines.append)
    # "a+b" with both operands two-digit is 7 tokens, over the limit 6; the others are 5 or 6
    train = load_problem_set(cfg.data).train
    long = [p for p in train if len(p["problem"]) == 5]
    rows = [json.loads(x) for x in (tmp_path / "2-phase1-data" / "train.jsonl").read_text().splitlines()]
    assert (record["problems"], record["left_out_by_length"], len(rows)) == (1200, len(long), 1200 - len(long))
    assert all(len(r["problem"]) <= 4 for r in rows) and len(long) > 0
    heldout = (tmp_path / "2-phase1-data" / "heldout.jsonl").read_text().splitlines()
    assert len(heldout) == 64  # the held-out set is not filtered
    assert lines[0] == (
        f"stage phase1: input-length limit: {len(rows)} of 1200 prompts within 6 tokens ({len(long)} longer left out)"
    )
    again: list[str] = []
    assert prepare(phase1, tmp_path, steps, cfg, again.append) == record and "kept" in again[0]  # written once

    tight_cfg, tight_steps = phase_pipeline(tmp_path, *TINY, "pipeline.stages.1.phase.max_input_tokens=4")
    with pytest.raises(
        ConfigError,
        match=r"stage phase1: phase.max_input_tokens=4 leaves no training examples \(the shortest of 1200 prompts has 5 tokens\)",
    ):
        prepare(tight_steps[1], tmp_path / "other", tight_steps, cfg, lines.append)


@pytest.mark.integration
def test_a_long_documents_phase_keeps_the_documents_within_its_limit(tmp_path):
    from rlrecipes.models.toy import build_tokenizer
    from rlrecipes.training.phase_data import prepare
    from rlrecipes.training.stages import compose_pipeline, plan, stage_config

    build_tokenizer().save_pretrained(tmp_path / "model")
    sizes = ["data.synthetic.num_train=100", "data.synthetic.num_eval=50"]  # 20 + 10 people, 5 counts each
    steps = plan(compose_pipeline(["pipeline=toy_long_documents", f"run_dir={tmp_path}", *sizes]))
    cfg = stage_config(steps[1], tmp_path, steps, phase_data=False)
    cfg.model.name_or_path = str(tmp_path / "model")  # stands for model_from's folder: a tokenizer alone
    record = prepare(steps[1], tmp_path, steps, cfg, lambda _: None)
    # 50 + 22 n tokens with n distractors: the limit 94 keeps n = 0, 1, 2 (60 of 100), leaves out 4 and 8
    assert (record["max_input_tokens"], record["kept"], record["left_out_by_length"]) == (94, 60, 40)
    rows = [json.loads(x) for x in (tmp_path / "2-phase1-data" / "train.jsonl").read_text().splitlines()]
    assert sorted({r["problem"].count("\n") - 1 for r in rows}) == [0, 1, 2]  # passages - 1 = distractors
    assert len((tmp_path / "2-phase1-data" / "heldout.jsonl").read_text().splitlines()) == 50


def test_a_phase_refuses_a_task_graded_by_its_own_verifier(tmp_path):
    """A phase's data is rewritten as problem/answer rows graded by answer match: Countdown
    (any expression reaching the target is right) would lose its verifier, so it is refused."""
    from rlrecipes.training.phase_data import prepare
    from rlrecipes.training.stages import stage_config

    _, steps = phase_pipeline(tmp_path)
    cfg = stage_config(steps[1], tmp_path, steps, phase_data=False)
    cfg.data.synthetic.task = "countdown"
    with pytest.raises(ConfigError, match="stage phase1: data=countdown is checked by its own verifier"):
        prepare(steps[1], tmp_path, steps, cfg, lambda _: None)
    assert not (tmp_path / "2-phase1-data").exists()  # refused before anything is written
