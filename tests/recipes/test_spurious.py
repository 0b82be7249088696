"""Spurious Rewards: `reward=` picks the reward for any recipe, labels attach to rows,
`recipe.clip=false` really removes the clip (TRL's loss by hand), the presets, and tiny
runs with a stored majority label and with random rewards."""

import json
import math

import pytest

from rlrecipes.config import ConfigError
from rlrecipes.errors import UserError
from rlrecipes.recipes.spurious import Spurious, attach_labels
from tests.conftest import TINY, compose
from tests.helpers.scripted_model import LETTERED_DATA, lettered
from tests.helpers.trl_loss import trl_loss

REWARD_NAMES = {
    "ground_truth": "accuracy",
    "majority": "majority_label",
    "incorrect": "incorrect_label",
    "format": "format",
    "random": "random",
}


@pytest.mark.parametrize("option, name", list(REWARD_NAMES.items()))
def test_reward_option_sets_the_single_reward(option, name):
    r = compose("recipe=spurious", f"reward={option}").recipe
    assert [(x.name, x.weight) for x in r.rewards] == [(name, 1.0)]
    # bnpo: the scripts' token mean over packed micro-batches (--packing_samples --micro_train_batch_size 4)
    assert (r.loss_type, r.beta, r.epsilon, r.clip, r.gamma) == ("bnpo", 0.0, 0.2, True, 0.5)


def test_rewards_combine_with_any_recipe_and_bad_options_are_one_line():
    assert [x.name for x in compose("recipe=dapo", "reward=random").recipe.rewards] == ["random"]
    assert [x.name for x in compose("recipe=spurious").recipe.rewards] == ["accuracy"]  # ground truth
    with pytest.raises(
        ConfigError,
        match="unknown reward 'coin'; valid: format, ground_truth, incorrect, judge, judge_hybrid, majority, random",
    ):
        compose("recipe=spurious", "reward=coin")


def test_stored_label_rewards_need_a_labels_file():
    with pytest.raises(
        UserError, match="reward=incorrect needs recipe.labels=FILE.jsonl; build it with: rlrecipes spurious-labels"
    ):
        Spurious.validate(compose("recipe=spurious", "reward=incorrect"))


LABELS = {
    "a": {"majority": "4", "majority_correct": False, "incorrect": "4"},
    "b": {"majority": "5", "majority_correct": True, "incorrect": "6"},
    "c": {"majority": None, "majority_correct": False, "incorrect": None},
}
ROWS = [{"id": i, "prompt": f"p{i}", "answer": "x"} for i in "abcd"]  # d: not in the labels file


def test_labels_attach_to_rows_and_filter_as_the_paper_does():
    def labelled(kind, majority_only=True):
        return [(r["id"], r["label"]) for r in attach_labels(ROWS, LABELS, kind, majority_only)]

    assert labelled("majority") == [("a", "4"), ("b", "5")]
    assert labelled("incorrect") == [("a", "4")]  # only problems whose majority is wrong
    assert labelled("incorrect", majority_only=False) == [("a", "4"), ("b", "6")]


# ----------------------------------------------------------------- clipping, by hand
# Old log-probs 0, so each token's ratio r = exp(new log-prob). Completion 0: A = +1, ratios
# 1.10, 1.27, 1.29; completion 1: A = -1, ratios 0.70, 1.30 (third token padding).
# Per token -min(r A, clip(r, 0.8, 1.2) A):  -1.10 -1.20 -1.20 | +0.80 +1.30
#   bnpo, the token mean over the micro-batch's 5 tokens: (-3.50 + 2.10) / 5 = -0.28
# No clip, -r A:                          -1.10 -1.27 -1.29 | +0.70 +1.30
#   (-3.66 + 2.00) / 5 = -0.332, and every token has gradient -r A / 5


@pytest.mark.parametrize(
    "clip, loss, grad",
    [
        (True, (-3.50 + 2.10) / 5, [-1.10 / 5, 0.0, 0.0, 0.0, 1.30 / 5, 0.0]),
        (False, (-3.66 + 2.00) / 5, [-1.10 / 5, -1.27 / 5, -1.29 / 5, 0.70 / 5, 1.30 / 5, 0.0]),
    ],
)
def test_clip_switch_by_hand(clip, loss, grad, tmp_path):
    from rlrecipes.engine.grpo_args import build_grpo_config

    cfg = compose("recipe=spurious", "reward=random", f"recipe.clip={str(clip).lower()}")
    args = build_grpo_config(cfg, tmp_path, Spurious(cfg.recipe).grpo_overrides(), [1.0, 0.0])
    assert (args.epsilon == 0.2) is clip and (args.epsilon == math.inf) is not clip
    got, got_grad, metrics = trl_loss(args.loss_type, args.epsilon, args.epsilon_high or args.epsilon)
    assert got == pytest.approx(loss, abs=1e-6)
    assert got_grad.flatten().tolist() == pytest.approx(grad, abs=1e-6)
    assert (metrics["clip_ratio/region_mean"][0] > 0) is clip  # 3 of 5 tokens clipped with the clip on


@pytest.mark.parametrize("size, model", [("7b", "Qwen/Qwen2.5-Math-7B"), ("1_5b", "Qwen/Qwen2.5-Math-1.5B")])
def test_presets_carry_the_papers_numbers(size, model):
    from rlrecipes.compose import compose_config
    from rlrecipes.engine.grpo_args import plan_batches

    cfg = compose_config("train", [f"experiment=spurious_qwen2_5_math_{size}", "reward=random"])
    r, t = cfg.recipe, cfg.trainer
    assert (r.name, cfg.model.name_or_path) == ("spurious", model)
    assert cfg.data.path == "agentica-org/DeepScaleR-Preview-Dataset"
    assert [x.name for x in r.rewards] == ["random"] and r.gamma == 0.5
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout) == (64, 16, 8)
    assert plan_batches(t).completions_per_update == 128  # train_batch_size
    assert (t.learning_rate, t.lr_scheduler_type, t.warmup_ratio, t.warmup_steps) == (5e-7, "constant", 0.0, 0)
    assert (t.adam_beta1, t.adam_beta2, t.weight_decay, t.temperature) == (0.9, 0.95, 0.0, 1.0)
    assert (r.loss_type, r.beta, r.entropy_coef, r.epsilon, t.max_completion_length) == ("bnpo", 0.0, 0.0, 0.2, 3072)
    assert t.max_steps == 150 * 8  # 150 rollout steps (the May-2025 PDF's Fig. 1)


# Problems whose plain prompt ends in a letter; a scripted policy (tests/helpers/scripted_model.py)
# answers each letter with its own digit, on every machine: 5 and 7 right, 6 and 3 wrong.
LETTERED = [("2+3 g", "5"), ("4+4 h", "8"), ("1+6 k", "7"), ("9+0 m", "9")]
ANSWERS = {"g": "5", "h": "6", "k": "7", "m": "3"}


@pytest.mark.integration
def test_tiny_run_on_majority_labels_built_from_the_model(tmp_path):
    from rlrecipes.commands.spurious_labels import label_problems
    from rlrecipes.training.job import train

    data, model = lettered(LETTERED, ANSWERS, tmp_path)
    few = [f"model.name_or_path={model}", f"data.path={data}", *LETTERED_DATA]
    rows = label_problems([*TINY, *few], samples=4, max_new_tokens=12)
    assert [(r["id"], r["num_samples"], r["majority_count"]) for r in rows] == [(str(i), 4, 4) for i in range(4)]
    assert [r["majority"] for r in rows] == ["5", "6", "7", "3"]
    assert [r["majority_correct"] for r in rows] == [True, False, True, False]
    assert [r["incorrect"] for r in rows] == [None, "6", None, "3"]  # a wrong majority is its own incorrect label
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = compose(
        "recipe=spurious",
        "reward=majority",
        f"recipe.labels={labels}",
        *few,
        "trainer.max_steps=1",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    recipe = Spurious(cfg.recipe)
    assert len(recipe.training_rows([{"id": r["id"], "prompt": "p", "answer": "a"} for r in rows])) == 4
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    [row] = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[:1]]
    # the step trains on all four problems and the policy repeats each one's own label, so a
    # reward that reads each problem's own label is 1 (the labels differ: a label lost or taken
    # from another problem reads 0 there) while gold accuracy is 2 of 4 ...
    assert row["rewards/majority_label/mean"] == 1.0 and row["accuracy"] == 0.5
    # ... and it alone is trained on: the gold monitor weighs 0
    assert row["reward_mean"] == 1.0
    # the labels travel with the run: a copy and its digest
    import hashlib

    assert (tmp_path / "run" / "inputs" / "labels.jsonl").read_bytes() == labels.read_bytes()
    assert summary["inputs"] == {"labels.jsonl": hashlib.sha256(labels.read_bytes()).hexdigest()}


@pytest.mark.integration
def test_tiny_random_reward_run_without_clipping(toy_model_dir, tmp_path):
    from rlrecipes.training.job import train

    # two updates per rollout: the second is off-policy, where a clip could bind
    cfg = compose(
        "recipe=spurious",
        "reward=random",
        "recipe.clip=false",
        "trainer.max_steps=4",
        "trainer.updates_per_rollout=2",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    train(cfg, tmp_path, log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "rewards/random/mean" in r]
    assert len(steps) == 2  # one rollout per two optimizer steps
    assert all(0 < r["rewards/random/mean"] < 1 for r in steps)
    assert all(r.get("clip_ratio_region", 0.0) == 0.0 for r in rows)
