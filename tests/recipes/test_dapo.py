"""DAPO: configs (quick-start, ablation switches, paper preset), the clipped token-level
loss TRL computes for it (values by hand), and a tiny run where dynamic sampling refills."""

import json
import math

import pytest

from rlrecipes.rewards import RewardContext
from tests.conftest import compose
from tests.helpers.trl_loss import trl_loss


def test_quick_start_config_is_the_released_recipe():
    r = compose("recipe=dapo").recipe
    assert (r.loss_type, r.beta, r.epsilon, r.epsilon_high) == ("dapo", 0.0, 0.2, 0.28)
    assert r.mask_truncated_completions is False  # overlong filtering: off, as in the verl recipe
    ds = r.dynamic_sampling
    assert (r.soft_overlong_punishment, ds.enabled, ds.max_rounds) == (True, True, 10)
    assert ds.filter == "dapo_answer" and [x.name for x in r.rewards] == ["dapo_answer"]


def test_every_rung_of_the_ablation_ladder_is_one_override():
    naive = compose(
        "recipe=dapo",
        "recipe.loss_type=grpo",
        "recipe.epsilon_high=0.2",
        "recipe.soft_overlong_punishment=false",
        "recipe.dynamic_sampling.enabled=false",
        "recipe.mask_truncated_completions=true",
    ).recipe
    assert (naive.loss_type, naive.epsilon_high, naive.dynamic_sampling.enabled) == ("grpo", 0.2, False)


def test_paper_preset_has_the_spec_numbers():
    from rlrecipes.compose import compose_config

    cfg = compose_config("train", ["recipe=dapo", "experiment=dapo_paper"])  # no tiny overrides
    r, t = cfg.recipe, cfg.trainer
    assert (cfg.model.name_or_path, cfg.model.dtype) == ("Qwen/Qwen2.5-32B", "bfloat16")
    assert (cfg.data.path, cfg.data.dedup) == ("BytedTsinghua-SIA/DAPO-Math-17k", True)
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout) == (512, 16, 16)
    assert (t.learning_rate, t.lr_scheduler_type, t.warmup_steps) == (1e-6, "constant_with_warmup", 160)
    assert (t.weight_decay, t.max_grad_norm, t.temperature, t.top_p) == (0.1, 1.0, 1.0, 1.0)
    assert (t.max_completion_length, r.overlong_buffer_length, r.overlong_penalty_factor) == (20480, 4096, 1.0)
    assert (r.dynamic_sampling.prompts_per_round, r.dynamic_sampling.max_rounds) == (1536, 10)
    assert (r.epsilon, r.epsilon_high, r.beta, r.loss_type) == (0.2, 0.28, 0.0, "dapo")
    assert (cfg.rollout.backend, cfg.rollout.importance_sampling.enabled) == ("vllm", False)
    assert cfg.experiment == "dapo_paper"


def test_dapo_math_rows_load_deduplicated_with_their_instruction(shared_data):
    """The DAPO AIME parquet has DAPO-Math-17k's row format (verl records, 30 problems x 32):
    the data config reads it as it would read the hub copy."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import DAPO_INSTRUCTION

    path = shared_data / "aime24" / "DAPO" / "aime-2024.parquet"
    cfg = compose("data=dapo_math_17k", "data.source=file", f"data.path={path}")
    problems = load_problem_set(cfg.data)
    assert len(problems.train) == 30 and "930 duplicates removed" in problems.report
    first = problems.train[0]
    assert first["problem"].startswith(DAPO_INSTRUCTION.split("{problem}")[0]) and first["answer"] == "540"
    assert first["problem"].endswith('Remember to put your answer on its own line after "Answer:".')


def test_soft_overlong_switch_adds_the_penalty_reward_with_its_factor():
    from rlrecipes.recipes import get_recipe

    recipe_cfg = compose("recipe=dapo", "recipe.overlong_penalty_factor=0.5").recipe
    ctx = RewardContext(verify=lambda c, g: False, max_completion_length=12, recipe=recipe_cfg)
    rewards = get_recipe("dapo")(recipe_cfg).reward_functions(ctx)
    assert [(fn.__name__, w) for fn, w in rewards] == [("dapo_answer", 1.0), ("overlong", 0.5)]
    recipe_cfg.soft_overlong_punishment = False
    assert [fn.__name__ for fn, _ in get_recipe("dapo")(recipe_cfg).reward_functions(ctx)] == ["dapo_answer"]


# ------------------------------------------------------------------ the loss, by hand
# Two completions, old log-probs 0, so the ratio r of each token is exp(new log-prob).
# Completion 0 has advantage +1 and ratios 1.10, 1.27, 1.29; completion 1 has advantage
# -1 and ratios 0.70, 1.30 (its third token is padding). Per token, -min(r A, clip(r) A):
#   eps_high 0.28 (clip to [0.8, 1.28]): -1.10, -1.27, -1.28 | +0.80, +1.30
#     only 1.29 is clipped on the positive side; 0.70 is clipped to 0.8 on the negative side
#   eps_high 0.20 (clip to [0.8, 1.20]): -1.10, -1.20, -1.20 | +0.80, +1.30
# Token-level ("dapo"): sum / 5 tokens -> -1.55 / 5 = -0.31 (0.28) and -1.40 / 5 = -0.28 (0.20).
# Sequence-level ("grpo"): mean(-3.65/3, 2.10/2) = mean(-1.216667, 1.05) = -0.083333.


def test_clip_higher_token_level_loss_by_hand():
    loss, grad, metrics = trl_loss("dapo", 0.2, 0.28)
    assert loss == pytest.approx(-1.55 / 5, abs=1e-6)
    # d/dlogp of -r is -r (r = exp(logp)); clipped tokens and padding get no gradient
    expected = [-1.10 / 5, -1.27 / 5, 0.0, 0.0, 1.30 / 5, 0.0]
    assert grad.flatten().tolist() == pytest.approx(expected, abs=1e-6)
    # one of 5 tokens clipped high (1.29, A>0), one clipped low (0.70, A<0)
    assert metrics["clip_ratio/high_mean"] == [pytest.approx(0.2)]
    assert metrics["clip_ratio/low_mean"] == [pytest.approx(0.2)]


def test_asymmetric_clip_only_changes_tokens_past_the_upper_bound():
    assert trl_loss("dapo", 0.2, 0.20)[0] == pytest.approx(-1.40 / 5, abs=1e-6)
    # the gap is the two positive tokens with r in (1.20, 1.29]: (1.27-1.20) + (1.28-1.20)
    assert trl_loss("dapo", 0.2, 0.20)[0] - trl_loss("dapo", 0.2, 0.28)[0] == pytest.approx(0.15 / 5, abs=1e-6)


def test_token_level_differs_from_sequence_mean():
    assert trl_loss("grpo", 0.2, 0.28)[0] == pytest.approx((-3.65 / 3 + 2.10 / 2) / 2, abs=1e-6)


def test_recipe_maps_onto_trl(tmp_path):
    from rlrecipes.engine.grpo_args import build_grpo_config

    args = build_grpo_config(compose("recipe=dapo"), tmp_path, {}, [1.0, 1.0, 0.0])
    assert (args.loss_type, args.epsilon, args.epsilon_high, args.beta) == ("dapo", 0.2, 0.28, 0.0)
    assert args.mask_truncated_completions is False


# ------------------------------------------------------------------- end to end
# Which groups are mixed is scripted (tests/helpers/multiprocess_entry.py: by the prompt's CRC32 and the
# completion's place in its group, whatever the model samples), so the rounds each step needs
# are the same on every machine; the sampled completions still feed dapo_answer, the overlong
# penalty and the loss.
SCRIPTED_FILTER = [
    "recipe.rewards=[{name: dapo_answer, weight: 1.0}, {name: scripted_groups, weight: 1.0}]",
    "recipe.dynamic_sampling.filter=scripted_groups",
]


@pytest.mark.integration
def test_tiny_dapo_run_refills_the_batch(toy_model_dir, tmp_path):
    import tests.helpers.multiprocess_entry  # noqa: F401  (registers the scripted_groups reward)
    from rlrecipes.training.job import train

    cfg = compose(
        "recipe=dapo",
        *SCRIPTED_FILTER,
        "trainer.max_steps=3",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        "trainer.max_completion_length=16",
        "recipe.overlong_buffer_length=4",
    )
    summary = train(cfg, tmp_path, log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "dynamic_sampling/rounds" in r]
    assert len(steps) == 3 and summary["steps"] == 3
    for r in steps:
        assert r["dynamic_sampling/prompts_kept"] == 4
        assert r["dynamic_sampling/prompts_generated"] == 4 * r["dynamic_sampling/rounds"]
        filtered = 1 - (4 + r["dynamic_sampling/surplus_discarded"]) / r["dynamic_sampling/prompts_generated"]
        assert r["dynamic_sampling/filtered_fraction"] == pytest.approx(filtered)
        for key in (
            "clip_ratio_low",
            "clip_ratio_high",
            "truncated_fraction",
            "completion_length_mean",
            "entropy",
            "rewards/dapo_answer/mean",
            "rewards/overlong/mean",
            "overlong/penalized_fraction",
        ):
            assert key in r and not math.isnan(r[key])
    # the refill is visible: some step needed more than one generation round
    assert max(r["dynamic_sampling/rounds"] for r in steps) > 1
