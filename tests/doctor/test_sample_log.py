"""`trainer.log_samples_every`: the hook that writes RUN/samples/step_N.jsonl, on a hand-made
scored batch (TRL's keys and padding) and a stand-in trainer: no model."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.config.checks import check_train_values
from rlrecipes.errors import ConfigError
from rlrecipes.step_samples import read_step, stored_steps
from rlrecipes.training import sample_log
from rlrecipes.training.sample_log import SampleLog
from tests.conftest import compose

PAD, EOS = 0, 1


class Letters:
    """Token k >= 2 is the letter chr(ord('a') + k - 2); 0 pads, 1 ends (both special)."""

    pad_token_id, eos_token_id = PAD, EOS

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(ord("a") + t - 2) for t in ids if t > EOS or not skip_special_tokens)


def stand_in(step=0, training=True, main=True, inputs=None):
    return SimpleNamespace(
        state=SimpleNamespace(global_step=step),
        model=SimpleNamespace(training=training),
        accelerator=SimpleNamespace(is_main_process=main, process_index=0),
        num_generations=2,
        reward_func_names=["accuracy", "format"],
        last_inputs=inputs or [{"answer": "7"}, {"answer": "7"}, {"answer": 12}, {"answer": 12}],
        processing_class=Letters(),
        eos_token_ids=[EOS],
    )


def scored_batch(tool_mask=None):
    """Two groups of two. Prompts left-padded: "ab", "ab", "cde", "cde". Completions:
    0 "fg" then EOS (ended); 1 "fghi" (4 tokens, no EOS: cut); 2 "h" then EOS; 3 masked by
    mask_truncated_completions (mask all 0): "hhhh", cut."""
    batch = {
        "prompt_ids": torch.tensor([[PAD, 2, 3], [PAD, 2, 3], [4, 5, 6], [4, 5, 6]]),
        "prompt_mask": torch.tensor([[0, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]]),
        "completion_ids": torch.tensor([[7, 8, EOS, PAD], [7, 8, 9, 10], [9, EOS, PAD, PAD], [9, 9, 9, 9]]),
        "completion_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]]),
        "advantages": torch.tensor([0.5, -0.5, 1.0, -1.0]),
    }
    if tool_mask is not None:
        batch["tool_mask"] = tool_mask
    return batch


REWARDS = torch.tensor([[1.0, 0.5], [0.0, math.nan], [1.0, 1.0], [0.0, 0.0]])


def test_a_step_is_written_as_text_with_rewards_advantages_and_cuts(tmp_path):
    SampleLog(tmp_path, every=10).after_scoring(stand_in(), scored_batch(), REWARDS)
    found = read_step(tmp_path, 1)
    assert found.skipped == []
    assert [(r["group"], r["prompt"], r["completion"], r["length"], r["truncated"]) for r in found.rows] == [
        (0, "ab", "fg", 3, False),
        (0, "ab", "fghi", 4, True),
        (1, "cde", "h", 2, False),
        (1, "cde", "hhhh", 4, True),
    ]
    assert [r["rewards"] for r in found.rows] == [
        {"accuracy": 1.0, "format": 0.5},
        {"accuracy": 0.0, "format": None},  # NaN: the function did not apply
        {"accuracy": 1.0, "format": 1.0},
        {"accuracy": 0.0, "format": 0.0},
    ]
    assert [r["advantage"] for r in found.rows] == [0.5, -0.5, 1.0, -1.0]
    assert [r["answer"] for r in found.rows] == ["7", "7", "12", "12"] and all(r["step"] == 1 for r in found.rows)
    assert "turns" not in found.rows[0]


def test_tool_turns_say_who_wrote_what(tmp_path):
    # completion 0 "fg" + EOS: f by the model, g by a tool, the EOS (no text) left out
    mask = torch.tensor([[1, 0, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]])
    SampleLog(tmp_path, every=1).after_scoring(stand_in(), scored_batch(mask), REWARDS)
    turns = read_step(tmp_path, 1).rows[0]["turns"]
    assert turns == [{"by": "model", "text": "f"}, {"by": "tool", "text": "g"}]


def test_steps_1_n_2n_are_written_once_each_and_only_in_training(tmp_path):
    log = SampleLog(tmp_path, every=10)
    for global_step in range(0, 20):  # these rollouts feed steps 1..20
        log.after_scoring(stand_in(global_step), scored_batch(), REWARDS)
        if global_step == 9:  # dynamic sampling's second round of step 10: not written again
            log.after_scoring(stand_in(global_step, inputs=[{"answer": "x"}] * 4), scored_batch(), REWARDS)
    log.after_scoring(stand_in(29, training=False), scored_batch(), REWARDS)  # an evaluation batch
    assert stored_steps(tmp_path) == [1, 10, 20]
    assert read_step(tmp_path, 10).rows[0]["answer"] == "7"  # the step's first round


def test_only_the_main_process_writes(tmp_path):
    SampleLog(tmp_path, every=1).after_scoring(stand_in(main=False), scored_batch(), REWARDS)
    assert stored_steps(tmp_path) == []


def test_whole_groups_are_kept_up_to_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(sample_log, "MAX_COMPLETIONS", 3)  # 3 // 2 = one whole group of 2
    SampleLog(tmp_path, every=1).after_scoring(stand_in(), scored_batch(), REWARDS)
    assert [r["completion"] for r in read_step(tmp_path, 1).rows] == ["fg", "fghi"]


def test_per_token_advantages_show_their_mean_over_the_completion(tmp_path):
    batch = scored_batch()
    batch["advantages"] = torch.tensor([[1.0, 2.0, 3.0, 9.0]] * 4)  # GAE: one per token
    SampleLog(tmp_path, every=1).after_scoring(stand_in(), batch, REWARDS)
    assert read_step(tmp_path, 1).rows[0]["advantage"] == 2.0  # (1 + 2 + 3) / 3: its 3 tokens


@pytest.mark.parametrize("value, ok", [(0, True), (5, True), (-1, False)])
def test_log_samples_every_is_checked(value, ok):
    cfg = compose(f"trainer.log_samples_every={value}")
    if ok:
        check_train_values(cfg)
    else:
        with pytest.raises(ConfigError, match=r"^trainer.log_samples_every=-1 must be at least 0$"):
            check_train_values(cfg)
