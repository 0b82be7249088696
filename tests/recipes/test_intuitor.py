"""INTUITOR: config and paper presets, and tiny runs whose only training signal is the
policy's self-certainty (online, and the frozen-scorer ablation)."""

import json
import math

import pytest
import torch

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError
from rlrecipes.recipes.intuitor import Intuitor
from rlrecipes.rewards import RewardContext
from tests.conftest import compose
from tests.helpers.scripted_model import ASSISTANT, chain, scripted_model

PROMPT_3B = (
    "You are a helpful AI Assistant, designed to provided well-reasoned and detailed responses. You FIRST "
    "think about the reasoning process step by step and then provide the user with the answer. Please "
    "enclose your final answer in the box: \\boxed{Your Answer}."
)


def test_recipe_keeps_accuracy_for_monitoring_only():
    r = compose("recipe=intuitor").recipe
    assert [(x.name, x.weight) for x in r.rewards] == [("accuracy", 0.0)]
    assert (r.beta, r.epsilon, r.scale_rewards, r.scorer) == (0.005, 0.2, "group", "online")


@pytest.mark.parametrize(
    "preset, model, prompts, group, lr, beta, steps, prompt",
    [
        (
            "intuitor_qwen2_5_3b_math",
            "Qwen/Qwen2.5-3B",
            128,
            7,
            3e-6,
            0.005,
            58,
            PROMPT_3B + " Please stop generation immediately after outputing the box.",
        ),
        ("intuitor_qwen2_5_1_5b_math", "Qwen/Qwen2.5-1.5B", 128, 7, 3e-6, 0.005, 58, PROMPT_3B),
        (
            "intuitor_qwen2_5_7b_math",
            "Qwen/Qwen2.5-7B",
            64,
            14,
            1e-6,
            0.01,
            117,
            "You are a helpful AI Assistant, designed to provided well-reasoned and detailed responses. Please provide "
            "a step-by-step solution to the following problem.",
        ),
    ],
)
def test_presets_carry_the_papers_numbers(preset, model, prompts, group, lr, beta, steps, prompt):
    from rlrecipes.compose import compose_config

    cfg = compose_config("train", [f"experiment={preset}"])
    r, t = cfg.recipe, cfg.trainer
    assert (r.name, cfg.model.name_or_path, cfg.data.path) == ("intuitor", model, "DigitalLearningGmbH/MATH-lighteval")
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout) == (prompts, group, 1)
    assert (t.learning_rate, r.beta, t.max_steps, cfg.data.system_prompt) == (lr, beta, steps, prompt)
    assert (t.lr_scheduler_type, t.warmup_ratio, t.temperature, t.max_completion_length) == ("cosine", 0.1, 0.9, 3072)
    assert (t.adam_beta1, t.adam_beta2, r.epsilon, r.scorer) == (0.9, 0.999, 0.2, "online")
    assert [(x.name, x.weight) for x in r.rewards] == [("accuracy", 0.0)]


def test_bad_scorer_is_one_line():
    ctx = RewardContext(verify=lambda c, g: False)
    with pytest.raises(UserError, match="recipe.scorer='ema'; valid: online, offline"):
        Intuitor(compose("recipe=intuitor", "recipe.scorer=ema").recipe).hooks(ctx)


# A scripted policy (tests/helpers/scripted_model.py) whose completions differ only in certainty: it
# opens with one of 16 letters drawn uniformly, each followed by "Answer: 142" with a logit
# margin of its own (certain in every case, but the larger the margin, the higher the
# self-certainty). Every completion answers 142; which letters are drawn is chance, but a step
# whose 4 groups hold no two different letters has probability 16^-12 (4e-15), and on a given
# torch version the draws are the same on every machine (an exactly uniform distribution).
LETTERS = "bcdfghijklmopqtu"


def certainty_choice_model(folder):
    script = {ASSISTANT: list(LETTERS), **{c: "A" for c in LETTERS}, **chain("A", "nswer: 142")}
    return scripted_model(folder, script, margins={c: 200 + 10 * i for i, c in enumerate(LETTERS)})


@pytest.mark.integration
@pytest.mark.parametrize("scorer", ["online", "offline"])
def test_tiny_run_trains_on_self_certainty_alone(scorer, tmp_path):
    from rlrecipes.training.job import train

    cfg = compose(
        f"model.name_or_path={certainty_choice_model(tmp_path / 'model')}",
        "data.max_examples=4",  # 68+42, 75+67, 6+27, 91+33: each step answers all four, 75+67 rightly
        "recipe=intuitor",
        f"recipe.scorer={scorer}",
        "trainer.max_steps=2",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        "recipe.score_batch_size=3",
        "recipe.score_chunk_tokens=5",
    )
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "self_certainty/mean" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    for r in steps:
        # KL(U || p) is positive (and finite: the logits are); the letters' margins differ
        assert 0 < r["self_certainty/mean"] < math.inf and r["self_certainty/std"] > 0
        assert r["reward_mean"] == 0.0  # the accuracy reward weighs 0: TRL's own advantages are all 0
        # ... although 4 of the 16 completions are right (a weight of 1 would have shown as reward)
        assert r["accuracy"] == 0.25
    # ... and still the policy moves at step 1, where the KL term has no gradient yet (policy ==
    # reference): the signal is self-certainty
    assert steps[0]["grad_norm"] > 0


class BatchSpy(EngineHook):
    """Keeps the scored training batches (with the advantages the loss will use)."""

    def __init__(self):
        self.batches = []

    def after_scoring(self, trainer, batch, rewards):
        if trainer.model.training:
            self.batches.append({k: v.clone() if torch.is_tensor(v) else v for k, v in batch.items()})
        return batch


def completion_logprob(model, batch):
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attention).logits[:, batch["prompt_ids"].size(1) - 1 : -1]
    per_token = torch.log_softmax(logits.float(), -1).gather(-1, batch["completion_ids"].unsqueeze(-1)).squeeze(-1)
    return (per_token * batch["completion_mask"]).sum(-1)


@pytest.mark.integration
def test_one_step_makes_the_more_certain_completions_more_likely(tmp_path, monkeypatch):
    """The direction of the update, on the letter-choice policy above. Only the draw of the
    opening letter is uncertain (every later token has probability 1 before and after the
    step), and the step's first Adam update moves each letter's logit by about the learning
    rate against the sign of its gradient, i.e. with the sign of the letter's summed advantage.
    So the advantage-weighted log-likelihood rises, and the most certain letter drawn in a
    mixed group (above its group's mean wherever it appears) gains on the least certain one."""
    from rlrecipes.models import load_model
    from rlrecipes.training.job import train

    spy = BatchSpy()
    hooks = Intuitor.hooks
    monkeypatch.setattr(Intuitor, "hooks", lambda self, ctx: [*hooks(self, ctx), spy])
    model = certainty_choice_model(tmp_path / "model")
    cfg = compose(
        f"model.name_or_path={model}",
        "recipe=intuitor",
        "trainer.max_steps=1",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        "trainer.learning_rate=1e-3",
        "recipe.beta=0.0",
    )
    train(cfg, tmp_path / "run", log=lambda _: None)
    batch = spy.batches[0]
    before = completion_logprob(load_model(str(model), cfg.model)[0], batch)
    after = completion_logprob(load_model(str(tmp_path / "run" / "model"), cfg.model)[0], batch)
    change, advantages = after - before, batch["advantages"]
    assert (change * advantages).sum() > 0
    _, tokenizer = load_model(str(model), cfg.model)
    letters = [LETTERS.index(tokenizer.convert_ids_to_tokens(int(row[0]))) for row in batch["completion_ids"]]
    mixed = [i for i in range(len(letters)) if advantages[i] != 0]  # a one-letter group's rows have 0
    most, least = max(mixed, key=letters.__getitem__), min(mixed, key=letters.__getitem__)
    assert change[most] > change[least]
