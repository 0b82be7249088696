"""The engine calls recipe hooks with the whole rollout batch, and their edits take effect."""

import pytest
import torch

from rlrecipes.engine.hooks import EngineHook
from tests.conftest import compose


class Recorder(EngineHook):
    needs_global_view = True

    def __init__(self):
        self.views, self.batches = [], []

    def transform_rewards(self, trainer, rewards, view):
        self.views.append(view)
        return torch.ones_like(rewards)  # every completion "correct": zero advantages

    def after_scoring(self, trainer, batch, rewards):
        self.batches.append({k: v for k, v in batch.items() if torch.is_tensor(v)})
        return batch


@pytest.mark.integration
def test_hooks_see_whole_groups_and_edit_rewards(toy_model_dir, tmp_path):
    from datasets import Dataset

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model
    from rlrecipes.rewards import RewardContext, build_reward

    cfg = compose("trainer.max_steps=1")
    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(toy_model_dir), cfg.model)
    rows = [
        {"prompt": render_prompt(it["problem"], "chat", tok), "answer": it["answer"], "id": it["id"]}
        for it in problems.train[:16]
    ]
    accuracy = build_reward("accuracy", RewardContext(verify=problems.verify))
    recorder = Recorder()
    trainer = RecipeGRPOTrainer(
        model=model,
        reward_funcs=[accuracy],
        args=build_grpo_config(cfg, tmp_path, {}, [1.0]),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        hooks=[recorder],
    )
    trainer.train()
    [view] = recorder.views
    g = cfg.trainer.num_generations
    assert view.num_generations == g and view.reward_names == ["accuracy"]
    assert len(view.completions) == cfg.trainer.prompts_per_rollout * g
    # groups are consecutive: every group shares one prompt and one id
    for start in range(0, len(view.completions), g):
        assert len(set(view.columns["id"][start : start + g])) == 1
        assert len(set(view.prompts[start : start + g])) == 1
    [batch] = recorder.batches
    assert torch.all(batch["advantages"] == 0)  # the hook's constant rewards were used
    assert torch.all(trainer.last_rewards == 1)
