import pytest

from rlrecipes.config.schema import TrainerConfig
from rlrecipes.engine.grpo_args import build_grpo_config, plan_batches
from rlrecipes.errors import UserError
from tests.conftest import compose, structured


def trainer(**kw):
    return structured(TrainerConfig, **kw)


def test_batch_plan_matches_verl_train_and_mini_batches():
    # DAPO: 512 prompts x 16 samples, 16 updates of 512 completions, micro-batch 8 on 64 GPUs
    plan = plan_batches(
        trainer(prompts_per_rollout=512, num_generations=16, updates_per_rollout=16, micro_batch_size=8),
        num_processes=64,
    )
    assert plan.completions_per_rollout == 8192 and plan.completions_per_update == 512
    assert (plan.per_device_batch, plan.grad_accum, plan.steps_per_generation) == (8, 1, 16)
    # quick-start: 8 x 8 = 64 completions, one update, one micro-batch on one CPU
    plan = plan_batches(trainer(prompts_per_rollout=8, num_generations=8, micro_batch_size=64))
    assert (plan.per_device_batch, plan.grad_accum, plan.steps_per_generation) == (64, 1, 1)
    # micro-batch smaller than an update: gradient accumulation
    plan = plan_batches(trainer(prompts_per_rollout=8, num_generations=8, updates_per_rollout=2, micro_batch_size=8))
    assert (plan.per_device_batch, plan.grad_accum, plan.steps_per_generation) == (8, 4, 8)


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(num_generations=1), "num_generations must be at least 2"),
        (dict(prompts_per_rollout=3, num_generations=3, updates_per_rollout=2), "updates_per_rollout=2 must divide"),
        (dict(prompts_per_rollout=8, num_generations=8, micro_batch_size=48), "micro_batch_size=48"),
    ],
)
def test_impossible_batches_fail_with_the_key(kw, message):
    with pytest.raises(UserError, match=message):
        plan_batches(trainer(**kw))


def test_grpo_config_sets_paper_values_not_trl_defaults(tmp_path):
    cfg = compose("recipe.beta=0.04")
    args = build_grpo_config(cfg, tmp_path, {}, [1.0])
    assert args.loss_type == "grpo" and args.beta == 0.04 and args.epsilon == 0.2
    assert args.bf16 is False and args.use_vllm is False
    assert args.vllm_importance_sampling_correction is False
    assert args.remove_unused_columns is False and args.report_to == []
    assert args.num_generations == cfg.trainer.num_generations


def test_vllm_rollout_without_vllm_is_a_clear_error(tmp_path, monkeypatch):
    # vLLM is installed wherever `make install` ran: hide it from the check, as a machine without it would
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real_find_spec(name, *a)
    )
    with pytest.raises(UserError, match="rollout=vllm needs vLLM"):
        build_grpo_config(compose("rollout=vllm"), tmp_path, {}, [1.0])


def test_ttrl_v1_schedule_keeps_openrlhfs_floor(tmp_path):
    from rlrecipes.compose import compose_config

    cfg = compose_config(
        "train", ["experiment=ttrl_v1_amc_qwen2_5_math_7b", "rollout=hf", "trainer.use_cpu=true", "trainer.bf16=false"]
    )
    args = build_grpo_config(cfg, tmp_path, {}, [1.0])
    assert args.lr_scheduler_type == "cosine_with_min_lr" and args.lr_scheduler_kwargs == {"min_lr_rate": 0.1}


def test_combinations_trl_rejects_are_one_line(tmp_path):
    # valid one by one, rejected together by TRL: 64 completions do not split into groups of 7
    cfg = compose("trainer.num_generations=8")
    with pytest.raises(UserError, match="^TRL rejects these settings: "):
        build_grpo_config(cfg, tmp_path, {"num_generations": 7}, [1.0])
