"""The engine calls recipe hooks, and their edits take effect."""

import pytest
import torch

from rlrecipes.engine.hooks import EngineHook
from tests.conftest import compose


class Recorder(EngineHook):
    """Zeroes every advantage after scoring, and sees the sampler the engine trains with."""

    def __init__(self):
        self.batches, self.samplers = [], []

    def after_scoring(self, trainer, batch, rewards):
        batch["advantages"] = torch.zeros_like(batch["advantages"])
        self.batches.append({k: v for k, v in batch.items() if torch.is_tensor(v)})
        return batch

    def wrap_sampler(self, sampler):
        self.samplers.append(sampler)
        return sampler


def mixed_group_trainer(cfg, model_dir, tmp_path, hook):
    """A RecipeGRPOTrainer on the toy with `hook`, rewarded by a completion's place in its group,
    so that every group is mixed whatever the toy samples."""
    from datasets import Dataset

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model

    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(model_dir), cfg.model)
    rows = [
        {"prompt": render_prompt(it["problem"], "chat", tok), "answer": it["answer"], "id": it["id"]}
        for it in problems.train[:16]
    ]

    def position(completions, **_):
        return [float(i % cfg.trainer.num_generations) for i in range(len(completions))]

    return RecipeGRPOTrainer(
        model=model,
        reward_funcs=[position],
        args=build_grpo_config(cfg, tmp_path, {}, [1.0]),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        hooks=[hook],
    )


@pytest.mark.integration
def test_a_hooks_edits_are_what_the_step_trains_on(toy_model_dir, tmp_path):
    recorder = Recorder()
    cfg = compose("trainer.max_steps=1", "trainer.weight_decay=0.1")  # 0.1: update_ratio below
    trainer = mixed_group_trainer(cfg, toy_model_dir, tmp_path, recorder)
    trainer.train()
    [batch] = recorder.batches
    assert torch.all(batch["advantages"] == 0) and len(recorder.samplers) == 1
    # the edited batch is the one trained on: the rewards give every group nonzero advantages,
    # the hook zeroes them, and with no KL term the policy gradient is exactly 0
    [logged] = [row for row in trainer.state.log_history if "grad_norm" in row]
    assert logged["grad_norm"] == 0.0
    # so AdamW's moments are 0 and only the decoupled weight decay moved the weights: Δθ = -lr·wd·θ
    # HF decays only the decay group (not norms or biases): |Δθ| = lr·wd·|θ_decayed|, over |θ| of all
    lr, groups = logged["learning_rate"], trainer.optimizer.param_groups
    decayed = sum(
        (p.detach().double() / (1 - lr * 0.1)).square().sum() for g in groups if g["weight_decay"] for p in g["params"]
    )
    kept = sum(p.detach().double().square().sum() for g in groups if not g["weight_decay"] for p in g["params"])
    assert lr > 0 and kept > 0
    assert logged["update_ratio"] == pytest.approx(lr * 0.1 * (decayed / (decayed + kept)).sqrt().item(), rel=1e-4)


class BatchKeeper(EngineHook):
    """Keeps the scored batch, advantages as TRL computed them."""

    def __init__(self):
        self.batches = []

    def after_scoring(self, trainer, batch, rewards):
        self.batches.append(dict(batch))
        return batch


@pytest.mark.integration
@pytest.mark.parametrize("rows", [8, 0])  # a cap below the toy's 64-completion micro-batch, and every row (the default)
def test_policy_shift_is_the_steps_kl_on_its_own_batch(toy_model_dir, tmp_path, rows):
    import copy

    from rlrecipes.engine.policy_shift import k3_kl, probed_rows, rows_of

    keeper = BatchKeeper()
    cap = [f"trainer.policy_shift_rows={rows}"] if rows else []
    cfg = compose("trainer.max_steps=1", "trainer.learning_rate=1e-3", *cap)
    trainer = mixed_group_trainer(cfg, toy_model_dir, tmp_path, keeper)  # a nonzero gradient
    before = copy.deepcopy(trainer.model).eval()  # as TRL prepared it (its fused log-prob head)
    micro_batches = []
    remember = trainer.policy_shift.remember
    trainer.policy_shift.remember = lambda inputs: (micro_batches.append(dict(inputs)), remember(inputs))[1]
    trainer.train()
    assert trainer.args.gradient_accumulation_steps == 1  # one micro-batch: the step's whole batch is the one probed
    [whole] = micro_batches  # TRL's shuffle of the scored batch, the one the loss took and the probe cut
    index = probed_rows(whole, cfg.trainer.policy_shift_rows)
    assert (index is None) == (rows == 0)
    batch = whole if index is None else rows_of(whole, index)

    def logps(policy, batch):
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        with torch.no_grad():
            return trainer._get_per_token_logps_and_entropies(policy, ids, mask, batch["completion_ids"].size(1))[0]

    # "before" as the probe has it: the whole micro-batch's forward, cut to the probed rows (a pass over
    # the cut rows alone may differ in its last digits where a kernel's blocking follows the batch size)
    seen = logps(before, whole)
    expected = k3_kl(
        seen if index is None else seen[index], logps(trainer.model.eval(), batch), batch["completion_mask"]
    )
    [logged] = [row for row in trainer.state.log_history if "grad_norm" in row]
    assert expected > 0 and logged["policy_shift"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.integration
def test_a_probed_step_costs_one_log_prob_pass_on_a_model_without_dropout(toy_model_dir, tmp_path):
    """The loss's own forward is the probe's "before": probing adds the "after" pass only, after
    the first step's check against an eval pass (2 + 1 + 1 passes over 3 steps, not 2 x 3)."""
    passes = {}
    for every in (0, 1):
        cfg = compose("trainer.max_steps=3", f"trainer.policy_shift_every={every}")
        trainer = mixed_group_trainer(cfg, toy_model_dir, tmp_path / str(every), BatchKeeper())
        counted = []

        def counting(*args, counted=counted, forward=trainer._get_per_token_logps_and_entropies, **kwargs):
            counted.append(1)
            return forward(*args, **kwargs)

        trainer._get_per_token_logps_and_entropies = counting
        trainer.train()
        passes[every] = len(counted)
    assert passes[1] - passes[0] == 4
