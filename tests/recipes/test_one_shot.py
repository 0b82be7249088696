"""One-shot RLVR: duplication arithmetic, example picking, the paper presets, the loss
(PG + KL - entropy) on a hand-made distribution, and a tiny one-example run."""

import json
import math

import pytest
import torch

from rlrecipes.errors import UserError
from rlrecipes.recipes.one_shot import OneShot, copies_per_example, duplicate, pick
from tests.conftest import compose

ROWS = [{"id": str(i), "prompt": f"p{i}", "answer": str(i)} for i in range(6)]


@pytest.mark.parametrize("examples, copies", [(1, 128), (2, 64), (4, 32)])
def test_duplication_fills_128_rows_evenly(examples, copies):
    assert copies_per_example(examples, 128) == copies
    rows = duplicate(ROWS[:examples], 128)
    assert len(rows) == 128
    assert [rows.count(r) for r in ROWS[:examples]] == [copies] * examples
    assert rows[:copies] == [ROWS[0]] * copies  # blocks, as the paper's merged files


def test_uneven_split_names_the_key():
    with pytest.raises(UserError, match=r"recipe.rows=128 must be a positive multiple of the 3"):
        copies_per_example(3, 128)


@pytest.mark.integration
def test_training_rows_pick_examples_by_id_in_the_given_order():
    recipe = OneShot(compose("recipe=one_shot", "recipe.examples=[4,1]", "recipe.rows=4").recipe)
    assert [r["id"] for r in recipe.training_rows(ROWS)] == ["4", "4", "1", "1"]
    everything = OneShot(compose("recipe=one_shot").recipe)  # examples: null = the set as it is
    assert everything.training_rows(ROWS) == ROWS
    with pytest.raises(UserError, match="no training problem has id '9'"):
        pick(ROWS, ["9"])
    with pytest.raises(UserError, match="names an example twice"):
        pick(ROWS, ["1", "1"])


PRESETS_1_5B = {
    "one_shot_pi1_qwen2_5_math_1_5b": ["124"],
    "one_shot_pi13_qwen2_5_math_1_5b": ["682"],
    "one_shot_pi1_pi13_qwen2_5_math_1_5b": ["124", "682"],
    "one_shot_dsr_sub_qwen2_5_math_1_5b": None,
    "one_shot_format_dsr_sub_qwen2_5_math_1_5b": None,
}


@pytest.mark.integration
@pytest.mark.parametrize(
    "size, model, steps", [("1_5b", "Qwen/Qwen2.5-Math-1.5B", 2000), ("7b", "Qwen/Qwen2.5-Math-7B", 1000)]
)
@pytest.mark.parametrize("name", list(PRESETS_1_5B))
def test_presets_carry_the_papers_numbers(name, size, model, steps):
    from rlrecipes.compose import compose_config

    preset = name.replace("1_5b", size)
    cfg = compose_config("train", [f"experiment={preset}"])
    r, t = cfg.recipe, cfg.trainer
    assert cfg.experiment == preset
    assert r.name == "one_shot" and cfg.model.name_or_path == model and t.max_steps == steps
    assert (r.loss_type, r.beta, r.entropy_coef, r.epsilon, r.epsilon_high) == ("bnpo", 0.001, 0.001, 0.2, None)
    assert (t.learning_rate, t.lr_scheduler_type, t.warmup_steps, t.weight_decay, t.max_grad_norm) == (
        1e-6,
        "constant",
        0,
        0.01,
        1.0,
    )
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout, t.num_iterations) == (128, 8, 1, 1)
    assert (t.temperature, t.top_p, t.max_completion_length, t.checkpoints.every) == (0.6, 1.0, 3072, 20)
    assert (list(r.examples) if r.examples is not None else None) == PRESETS_1_5B[name]
    assert r.rows == 128 and cfg.data.name == "dsr_sub" and cfg.model.dtype == "float32"
    reward = "format" if "format" in name else "accuracy"
    assert [(s.name, s.weight) for s in r.rewards] == [(reward, 1.0)]


def test_format_baseline_rewards_a_boxed_answer_right_or_wrong():
    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import answer_verifier
    from rlrecipes.rewards import RewardContext

    cfg = compose_config("train", ["experiment=one_shot_format_dsr_sub_qwen2_5_math_1_5b"])
    ctx = RewardContext(verify=answer_verifier(cfg.data.answer_style), answer_style=cfg.data.answer_style)
    ((fn, weight),) = OneShot(cfg.recipe).reward_functions(ctx)
    texts = ["so v = \\boxed{12.8}", "so v = \\boxed{13}", "so v = 12.8"]
    assert fn(prompts=[""] * 3, completions=texts, answer=["12.8"] * 3) == [1.0, 1.0, 0.0]


def _trainer(toy_model_dir, tmp_path):
    """A RecipeGRPOTrainer with the one-shot recipe's loss settings on the toy model."""
    from datasets import Dataset

    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model

    cfg = compose("recipe=one_shot", "trainer.temperature=0.6", f"model.name_or_path={toy_model_dir}")
    recipe = OneShot(cfg.recipe)
    model, tokenizer = load_model(str(toy_model_dir), cfg.model)
    args = build_grpo_config(cfg, tmp_path, recipe.grpo_overrides(), [1.0])
    assert args.loss_type == "bnpo" and args.use_bias_correction_kl is False

    def reward(completions, **_):
        return [0.0] * len(completions)

    return RecipeGRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "1+1", "answer": "2"}]),
        processing_class=tokenizer,
    )


@pytest.mark.integration
def test_loss_is_pg_plus_kl_minus_entropy_on_a_hand_made_distribution(toy_model_dir, tmp_path):
    """Every position predicts p = (1/2, 1/4, 1/4) over tokens a, b, c (zero weights, bias
    = T log p so the temperature-scaled logits are log p). Entropy H = 1.5 ln 2.
    Two completions: [a, b] with advantage +1 and [c] with advantage -1; first update, so
    ratio = 1 and the PG term per token is -A; token mean over the micro-batch (bnpo):
    (-1 - 1 + 1) / 3 = -1/3 (a per-sequence mean would give 0). The reference assigns
    twice the probability, so k3 = e^{ln 2} - ln 2 - 1 = 1 - ln 2 on every token.
    loss = -1/3 + 0.001 (1 - ln 2) - 0.001 * 1.5 ln 2."""
    trainer = _trainer(toy_model_dir, tmp_path)
    model = trainer.model
    vocab, hidden = model.config.vocab_size, model.config.hidden_size
    a, b, c = 5, 6, 7
    p = torch.full((vocab,), 0.0)
    p[[a, b, c]] = torch.tensor([0.5, 0.25, 0.25])
    head = torch.nn.Linear(hidden, vocab, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.where(p > 0, 0.6 * torch.log(p.clamp(min=1e-30)), torch.tensor(-1e4)))
    model.lm_head = head
    logp = torch.log(torch.tensor([[0.5, 0.25], [0.25, 0.25]]))  # of a, b and of c (+ padding)
    inputs = {
        "prompt_ids": torch.tensor([[a, b], [a, b]]),
        "prompt_mask": torch.ones(2, 2, dtype=torch.long),
        "completion_ids": torch.tensor([[a, b], [c, c]]),
        "completion_mask": torch.tensor([[1, 1], [1, 0]]),
        "advantages": torch.tensor([1.0, -1.0]),
        "ref_per_token_logps": logp + math.log(2.0),
        "num_items_in_batch": torch.tensor(3.0),
    }
    model.eval()  # no gradient-accumulation scaling; the loss formula is the same
    loss = trainer._compute_loss(model, inputs).item()
    entropy = 1.5 * math.log(2.0)
    expected = -1 / 3 + 0.001 * (1 - math.log(2.0)) - 0.001 * entropy
    assert loss == pytest.approx(expected, abs=1e-6)
    # the entropy term's sign: without the bonus the loss is higher by exactly 0.001 * H
    trainer.entropy_coef = 0.0
    assert trainer._compute_loss(model, inputs).item() == pytest.approx(expected + 0.001 * entropy, abs=1e-6)


@pytest.mark.integration
def test_one_example_run_makes_every_row_a_copy_and_its_own_group(toy_model_dir, tmp_path):
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.training.job import train

    cfg = compose(
        "recipe=one_shot",
        "recipe.rows=8",
        "trainer.max_steps=2",
        "trainer.prompts_per_rollout=4",
        "trainer.record_accuracy_history=true",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        f"model.name_or_path={toy_model_dir}",
    )
    example = load_problem_set(cfg.data).train[0]["id"]
    cfg.recipe.examples = [example]
    summary = train(cfg, tmp_path, log=lambda _: None)
    assert summary["num_train_problems"] == 8  # rows: 8 copies of one problem
    history = json.loads((tmp_path / "accuracy_history.json").read_text())
    # 2 steps x 4 prompts, all copies of the one example, each scored as its own group of 4
    assert list(history) == [example] and len(history[example]) == 8


def test_pi1_preset_trains_on_128_copies_of_the_wind_sail_problem(shared_data):
    """The preset's data (DSR-sub, ids from extra_info.index) -> π1's row, duplicated."""
    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set

    pool = shared_data / "one_shot_rlvr" / "One-Shot-RLVR"
    cfg = compose_config(
        "train",
        [
            "experiment=one_shot_pi1_pi13_qwen2_5_math_1_5b",
            f"data.path={pool / 'dsr_sub.parquet'}",
            "data.eval_path=null",
        ],
    )
    problems = load_problem_set(cfg.data)
    # row 265's label is "" (verl scores it 0 every time); the loader reports and skips it
    assert len(problems.train) == 1208 and "row 265" in problems.report
    rows = OneShot(cfg.recipe).training_rows(problems.train)
    assert len(rows) == 128 and [r["id"] for r in rows[::64]] == ["124", "682"]
    assert rows[0]["problem"].startswith("The pressure \\( P \\) exerted by wind on a sail")
    assert (rows[0]["answer"], rows[64]["answer"]) == ("12.8", "\\frac{4}{3}")
