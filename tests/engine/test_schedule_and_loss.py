"""`RecipeGRPOTrainer`'s two additions to TRL, on a real trainer: a learning-rate schedule
longer than the run (`trainer.scheduler_steps`, OpenRLHF's sizing) and the loss without old
log-probs (`loss_without_old_logps`, Spurious Rewards' no-clip objective). Values by hand."""

import pytest
import torch

from rlrecipes.errors import ConfigError
from tests.conftest import compose


def make_trainer(model_dir, tmp_path, *overrides, grpo_overrides=None):
    from datasets import Dataset

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model
    from rlrecipes.rewards import RewardContext, build_reward

    cfg = compose(*overrides)
    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(model_dir), cfg.model)
    rows = [{"prompt": it["problem"], "answer": it["answer"], "id": it["id"]} for it in problems.train[:16]]
    return RecipeGRPOTrainer(
        model=model,
        reward_funcs=[build_reward("accuracy", RewardContext(verify=problems.verify))],
        args=build_grpo_config(cfg, tmp_path, grpo_overrides or {}, [1.0]),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
    )


def lrs_applied(trainer, steps):
    """The learning rate of each of the run's optimizer updates, from the scheduler HF builds
    for a run of `steps` steps (Trainer._inner_training_loop: create_scheduler(max_steps))."""
    trainer.create_optimizer_and_scheduler(num_training_steps=steps)
    applied = []
    for _ in range(steps):
        applied.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
    return applied


COSINE = ["trainer.lr_scheduler_type=cosine_with_min_lr", "+trainer.lr_scheduler_kwargs.min_lr_rate=0.1"]


@pytest.mark.integration
def test_schedule_spans_scheduler_steps_not_the_run(toy_model_dir, tmp_path):
    # lr 1e-3, warm-up ratio 0.1, floor 0.1 x lr; the run trains 12 steps.
    # lr(k) = 1e-3 * (0.1 + 0.9 * 0.5 * (1 + cos(pi * (k - w) / (T - w)))) after w warm-up steps;
    # update 12 uses lr(11).
    run = [*COSINE, "trainer.learning_rate=1e-3", "trainer.warmup_ratio=0.1", "trainer.max_steps=12"]
    # T = 20: w = ceil(0.1 * 20) = 2; lr(11): (11 - 2) / 18 = 0.5, cos(pi / 2) = 0 -> 1e-3 * 0.55
    longer = lrs_applied(make_trainer(toy_model_dir, tmp_path, *run, "trainer.scheduler_steps=20"), 12)
    assert longer[-1] == pytest.approx(5.5e-4, rel=1e-6)
    assert longer[1] == pytest.approx(1e-3 * 1 / 2, rel=1e-6)  # warm-up, lr(1) = 1/w
    # T = 12 (null: the run's length): w = ceil(1.2) = 2; (11 - 2) / 10 = 0.9, cos(0.9 pi) =
    # -0.9510565 -> 1e-3 * (0.1 + 0.9 * 0.5 * 0.0489435) = 1.2202457e-4
    default = lrs_applied(make_trainer(toy_model_dir, tmp_path, *run), 12)
    assert default[-1] == pytest.approx(1.2202457e-4, rel=1e-6)


@pytest.mark.integration
def test_ttrl_v1_schedule_ends_near_half_the_peak(toy_model_dir, tmp_path):
    # experiment=ttrl_v1_aime24_qwen2_5_math_7b's schedule: 5e-7, cosine to 0.1 x lr over
    # 1800 steps, 3% warm-up (ceil(54.0) = 54), 960 steps trained. Update 960 uses lr(959):
    # (959 - 54) / 1746 = 0.5183276, cos(0.5183276 pi) = -0.0575466,
    # 0.1 + 0.9 * 0.5 * (1 - 0.0575466) = 0.5241043 -> 2.6205213e-7
    schedule = [*COSINE, "trainer.learning_rate=5e-7", "trainer.warmup_ratio=0.03", "trainer.max_steps=960"]
    trainer = make_trainer(toy_model_dir, tmp_path, *schedule, "trainer.scheduler_steps=1800")
    lrs = lrs_applied(trainer, 960)
    assert lrs[-1] == pytest.approx(2.6205213e-7, rel=1e-6)
    assert lrs[54] == pytest.approx(5e-7) and lrs[53] < 5e-7  # the warm-up is 3% of 1800, not of 960


@pytest.mark.integration
def test_scheduler_steps_shorter_than_the_run_is_refused():
    from rlrecipes.engine.grpo_args import scheduler_horizon

    assert scheduler_horizon(compose("trainer.max_steps=12", "trainer.scheduler_steps=12").trainer) == 12
    with pytest.raises(ConfigError, match="trainer.scheduler_steps=10 is shorter than trainer.max_steps=12"):
        scheduler_horizon(compose("trainer.max_steps=12", "trainer.scheduler_steps=10").trainer)


# ------------------------------------------------------------------ loss without old log-probs
# Two completions: A = +1 over three tokens, A = -1 over two (the third is padding).
# Policy probabilities pi and old-policy probabilities pi_old per token:
PI = [[0.5, 0.8, 0.9], [0.3, 0.65, 1.0]]
PI_OLD = [[0.4, 0.8, 0.6], [0.5, 0.5, 1.0]]  # ratios pi / pi_old: 1.25 1.0 1.5 | 0.6 1.3
# bnpo: the token mean over the micro-batch's 5 tokens. d loss / d log pi per token:
# - authors (-pi * A):              -pi * A / 5       = -0.10 -0.16 -0.18 | +0.06 +0.13
# - unclipped ratio (-r * A):       -r * A / 5        = -0.25 -0.20 -0.30 | +0.12 +0.26
# - clipped, eps 0.2: 1.25 and 1.5 clip for A > 0, 0.6 clips (to 0.8) for A < 0:
#                                                       0    -0.20  0    |  0    +0.26
# losses: authors (-(0.5 + 0.8 + 0.9) + (0.3 + 0.65)) / 5 = -0.25;
# ratio (-(1.25 + 1.0 + 1.5) + (0.6 + 1.3)) / 5 = -0.37; clipped (-(1.2 + 1.0 + 1.2) + (0.8 + 1.3)) / 5 = -0.26
CASES = {
    "authors": (-0.25, [-0.10, -0.16, -0.18, 0.06, 0.13, 0.0]),
    "ratio": (-0.37, [-0.25, -0.20, -0.30, 0.12, 0.26, 0.0]),
    "clipped": (-0.26, [0.0, -0.20, 0.0, 0.0, 0.26, 0.0]),
}


@pytest.mark.integration
@pytest.mark.parametrize("objective", sorted(CASES))
def test_spurious_no_clip_objective_gradient_by_hand(objective, toy_model_dir, tmp_path):
    from rlrecipes.recipes.spurious import Spurious

    overrides = ["recipe=spurious", "reward=random", "recipe.loss_type=bnpo", "recipe.beta=0.0"]
    if objective != "clipped":
        overrides += ["recipe.clip=false", f"recipe.no_clip_objective={objective}"]
    recipe = Spurious(compose(*overrides).recipe)
    trainer = make_trainer(toy_model_dir, tmp_path, *overrides, grpo_overrides=recipe.grpo_overrides())
    assert trainer.args.loss_without_old_logps is (objective == "authors")
    logps = torch.tensor(PI).log().requires_grad_()
    # the model's forward pass is replaced by the hand-made log-probs (TRL's own loss runs)
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: (logps, torch.zeros(2, 3), None)
    trainer.current_gradient_accumulation_steps = 1
    inputs = {
        "prompt_ids": torch.ones(2, 1, dtype=torch.long),
        "prompt_mask": torch.ones(2, 1, dtype=torch.long),
        "completion_ids": torch.ones(2, 3, dtype=torch.long),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
        "advantages": torch.tensor([1.0, -1.0]),
        "num_items_in_batch": torch.tensor(5.0),
        "old_per_token_logps": torch.tensor(PI_OLD).log(),
    }
    loss = trainer.compute_loss(trainer.model, inputs)
    loss.backward()
    expected_loss, expected_grad = CASES[objective]
    assert loss.item() == pytest.approx(expected_loss, abs=1e-6)
    assert logps.grad.flatten().tolist() == pytest.approx(expected_grad, abs=1e-6)


@pytest.mark.integration
def test_a_training_run_follows_the_longer_schedule(toy_model_dir, tmp_path):
    import json

    from rlrecipes.training.job import train

    # 2 steps of a 4-step cosine without warm-up: the rate logged at step 2 is the one its
    # update used, lr(1) = 1e-3 * (0.1 + 0.9 * 0.5 * (1 + cos(pi / 4))) = 8.681981e-4
    # (a schedule ending with the run: 1e-3 * (0.1 + 0.9 * 0.5 * (1 + cos(pi / 2))) = 5.5e-4)
    cfg = compose(*COSINE, "trainer.learning_rate=1e-3", "trainer.scheduler_steps=4", "trainer.eval.before=false")
    train(cfg, tmp_path, log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    logged = [r["learning_rate"] for r in rows if "learning_rate" in r]
    assert logged[-1] == pytest.approx(8.681981e-4, rel=1e-6)
