"""The presets of the advantage-estimator recipes hold the values of the authors' scripts; each
test names the line it follows. The numbers are typed here from the scripts, not read from the
YAMLs.

MaxRL (experiment=maxrl_qwen3_1_7b_base): tajwarfahim/maxrl c0698eb,
qwen3_experiments/run_qwen3_training.sh ("l."), with the fork's verl defaults
verl/trainer/config/ppo_trainer.yaml ("yaml l.") and verl/workers/fsdp_workers.py, and the
paper's Table 6 (preprint at Zanette-Labs/MaxRL 8bafaa9).

REINFORCE++-baseline (experiment=reinforce_pp_r1_distill_qwen_1_5b): OpenRLHF/OpenRLHF 3c3be62,
examples/scripts/train_prorlv2_math_hybrid_engine.sh ("l."), with the defaults of
openrlhf/cli/train_ppo_ray.py ("cli l.").
"""

from __future__ import annotations

from functools import cache

import pytest
from omegaconf import OmegaConf

from rlrecipes.compose import compose_config
from rlrecipes.engine.grpo_args import plan_batches
from rlrecipes.training.plan import check_run
from tests.conftest import cli

MAXRL = "maxrl_qwen3_1_7b_base"
REINFORCE_PP = "reinforce_pp_r1_distill_qwen_1_5b"


@cache  # composing is the slow part; no test edits a config
def preset(name: str, *overrides: str):
    return compose_config("train", [f"experiment={name}", *overrides])


# ------------------------------------------------------------------------------------ MaxRL
def test_maxrl_preset_follows_run_qwen3_training_sh():
    cfg = preset(MAXRL)
    r, t, rollout = cfg.recipe, cfg.trainer, cfg.rollout
    assert (r.name, cfg.experiment) == ("maxrl", MAXRL)  # ADVANTAGE_ESTIMATOR=maxrl (l.141, 179)
    assert cfg.model.name_or_path == "Qwen/Qwen3-1.7B-Base"  # MODEL_PATH (l.134)
    assert (t.prompts_per_rollout, t.num_generations) == (256, 16)  # FULL_BATCH_SIZE l.86, rollouts l.90
    # PPO_MINI_BATCH_SIZE=256 (l.87): one update per rollout step, as Table 6 says
    assert t.updates_per_rollout == 1 and plan_batches(t).completions_per_update == 256 * 16
    assert (t.num_iterations, t.micro_batch_size) == (1, 4)  # PPO_EPOCHS l.115; PER_GPU_MINI_BATCH_SIZE l.108
    assert t.max_completion_length == 4096  # MAX_RESPONSE_LENGTH (l.93)
    assert t.learning_rate == 1e-6  # LEARNING_RATE (l.97)
    assert (r.epsilon, r.epsilon_high) == (0.2, None)  # CLIP_RATIO_LOW / HIGH 0.2 / 0.2 (l.117-118)
    assert t.max_grad_norm == 0.3  # GRAD_CLIP (l.119)
    assert r.beta == 0.0  # KL_COEFF=0.0, use_kl_loss=False (l.122, 192)
    assert r.entropy_coef == 0.0  # entropy_coeff: 0 (yaml l.237); Table 6
    assert r.loss_type == "bnpo"  # loss_agg_mode token-mean per micro-batch (yaml l.234)
    assert (t.temperature, t.top_p, t.top_k) == (1.0, 1.0, 0)  # yaml l.417-423 (vLLM top_k -1: off)
    # warmup_style constant, lr_warmup_steps -1 -> ratio 0.0 (yaml l.283-295)
    assert (t.lr_scheduler_type, t.warmup_steps, t.warmup_ratio) == ("constant", 0, 0.0)
    # AdamW(betas=(0.9, 0.999), weight_decay=0.01): fsdp_workers.py l.366-367, yaml l.301
    assert (t.adam_beta1, t.adam_beta2, t.weight_decay) == (0.9, 0.999, 0.01)
    assert cfg.seed == 79  # export SEED=79 (l.153)
    assert t.max_steps == 1000  # Table 6 "Training Steps 1000"; TOTAL_EPOCHS=5 (l.131)
    assert (t.checkpoints.every, t.eval.every) == (50, 50)  # save_freq=50, test_freq=50 (l.231, 234)
    assert t.checkpoints.keep_last is None  # max_actor_ckpt_to_keep=400 (l.232) > the 20 a run writes
    assert t.eval.before and t.eval.after  # val_before_train=True, val_on_last_step=True (l.222, 224)
    assert t.bf16 and t.gradient_checkpointing and not t.use_cpu  # yaml l.179; l.197
    assert (rollout.backend, rollout.vllm_tensor_parallel_size) == ("vllm", 1)  # l.203, l.113
    assert (rollout.vllm_gpu_memory_utilization, rollout.vllm_max_model_length) == (0.7, 32000)  # l.206, l.110
    assert not rollout.importance_sampling.enabled  # no rollout correction in the fork (App. E.3.2)


def test_maxrl_preset_trains_on_polaris_and_validates_on_math500():
    data = preset(MAXRL).data
    # examples/maxrl_data_preprocess/polaris.py: the hub id (l.38), its train split (l.43), the
    # problem and answer columns (l.51, 54)
    assert (data.name, data.source, data.path, data.split) == (
        "polaris",
        "hub",
        "POLARIS-Project/Polaris-Dataset-53K",
        "train",
    )
    assert (data.problem_field, data.answer_field) == ("problem", "answer")
    # math/test.parquet (l.129): math_500.py's HuggingFaceH4/MATH-500 test split (l.39, 45), folder ~/data/math (l.33)
    assert (data.eval_path, data.eval_split) == ("HuggingFaceH4/MATH-500", "test")
    # "Please reason step by step, and put your final answer within \boxed{}" (polaris.py l.46),
    # in the system turn here (the header says why); graded on the whole response (math_verify)
    assert (data.template, data.answer_style) == ("qwen_math_cot", "auto")


def test_maxrl_grpo_baseline_is_the_same_run_with_grpo_advantages():
    # l.143-144: ADVANTAGE_ESTIMATOR=grpo is the script's only other change
    grpo, maxrl = preset(MAXRL, "recipe=grpo"), preset(MAXRL)
    assert grpo.recipe.name == "grpo" and grpo.recipe.scale_rewards == "group"  # norm_adv_by_std_in_grpo
    assert OmegaConf.to_container(grpo.trainer) == OmegaConf.to_container(maxrl.trainer)
    assert OmegaConf.to_container(grpo.data) == OmegaConf.to_container(maxrl.data)
    for key in ("loss_type", "beta", "epsilon", "epsilon_high", "entropy_coef"):
        assert grpo.recipe[key] == maxrl.recipe[key], key
    assert check_run(grpo, hardware=False).max_steps == 1000  # the baseline passes every check of a run


# ----------------------------------------------------------------------- REINFORCE++-baseline
DAPO_ROWS = 17_398  # the preset's assumption (its header): the hub copy's size is not checked offline


def test_reinforce_pp_preset_follows_the_prorl_v2_script():
    cfg = preset(REINFORCE_PP)
    r, t, rollout = cfg.recipe, cfg.trainer, cfg.rollout
    assert (r.name, cfg.experiment) == ("reinforce_pp", REINFORCE_PP)  # --algo.advantage.estimator (l.42)
    assert cfg.model.name_or_path == "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"  # MODEL_PATH (l.22)
    assert (t.prompts_per_rollout, t.num_generations) == (512, 16)  # --rollout.batch_size, n_samples (l.53-54)
    # --train.batch_size 1024 samples (l.52) per optimizer step: 512 x 16 / 1024 updates
    assert t.updates_per_rollout == 8 and plan_batches(t).completions_per_update == 1024
    assert t.num_iterations == 1  # --train.max_epochs default 1 (cli l.378)
    assert (r.epsilon, r.epsilon_high) == (0.2, 0.27)  # --actor.eps_clip_low_high 0.2 0.27 (l.45)
    assert r.beta == 1e-4  # --algo.kl.init_coef 1e-4, --algo.kl.use_loss (l.38, 40)
    assert r.loss_type == "dapo"  # token-level loss over the batch's tokens (openrlhf/models/loss.py l.29-32)
    assert r.entropy_coef == 0.0  # --actor.entropy_coef default None: no entropy term (cli l.431-436)
    assert not r.dynamic_sampling.enabled  # l.43-44 has no counterpart: the recipe refuses it
    assert [(x.name, x.weight) for x in r.rewards] == [("accuracy", 1.0)]  # math_reward_func.py (l.27)
    assert t.learning_rate == 1e-6  # --actor.adam.lr (l.61)
    assert (t.max_completion_length, rollout.vllm_max_model_length) == (8192, 9216)  # l.58, l.57
    assert (t.temperature, t.top_p, t.top_k, cfg.seed) == (1.0, 1.0, 0, 42)  # cli l.398-400
    # cli l.466-474: betas (0.9, 0.95), weight decay 0, cosine_with_min_lr, warm-up 0.03, min lr 0.1 x, max_norm 1
    assert (t.adam_beta1, t.adam_beta2, t.weight_decay, t.max_grad_norm) == (0.9, 0.95, 0.0, 1.0)
    assert (t.lr_scheduler_type, dict(t.lr_scheduler_kwargs)) == ("cosine_with_min_lr", {"min_lr_rate": 0.1})
    assert (t.warmup_ratio, t.warmup_steps) == (0.03, 0)
    # --ckpt.save_steps 5 and --eval.steps 5 rollout steps (l.50, 66); --ckpt.max_num default 3 (cli l.292)
    assert (t.checkpoints.every, t.eval.every, t.checkpoints.keep_last) == (5 * 8, 5 * 8, 3)
    assert not t.eval.before  # OpenRLHF validates only at multiples of --eval.steps
    assert t.bf16 and t.gradient_checkpointing and not t.use_cpu  # --ds.param_dtype bf16 (l.60), l.70
    # --vllm.tensor_parallel_size 1 (l.35), --vllm.gpu_memory_utilization 0.75 (l.37)
    assert (rollout.backend, rollout.vllm_tensor_parallel_size, rollout.vllm_gpu_memory_utilization) == (
        "vllm",
        1,
        0.75,
    )
    # --algo.advantage.is_correction_enable, threshold 0.5 5.0, type icepop (l.76-78): the ratio
    # zeroed outside [0.5, 5] (loss.py l.200-205), TRL's token_mask
    ic = rollout.importance_sampling
    assert (ic.enabled, ic.mode, ic.clip_min, ic.clip_max) == (True, "token_mask", 0.5, 5.0)


def test_reinforce_pp_preset_reads_openrlhfs_dapo_copy_with_the_scripts_keys():
    data = preset(REINFORCE_PP).data
    # DATASET_PATH (l.23), --data.input_key prompt, --data.label_key label (l.63-64)
    assert (data.source, data.path, data.problem_field, data.answer_field) == (
        "hub",
        "OpenRLHF/dapo-math-17k",
        "prompt",
        "label",
    )
    # --data.apply_chat_template (l.69): the prompt is the user turn; math_reward_func.py grades
    # the last \boxed{} only (l.36)
    assert (data.template, data.answer_style) == ("chat", "boxed")
    # --eval.dataset (l.65), read with the same keys from --eval.split's default "train" (cli l.536)
    assert (data.eval_path, data.eval_split) == ("OpenRLHF/aime-2024", "train")


def test_reinforce_pp_run_length_is_openrlhfs_for_the_assumed_rows():
    t = preset(REINFORCE_PP).trainer
    episodes, rollout_batch, n, train_batch = 100, 512, 16, 1024  # l.56, 53, 54, 52
    # openrlhf/trainer/ppo_trainer.py l.72-78 sizes the LR schedule from the data ...
    assert t.scheduler_steps == DAPO_ROWS * n // train_batch * episodes == 27_100
    # ... and an episode is one pass over the prompts; here only whole rollout batches train
    assert t.max_steps == episodes * (DAPO_ROWS // rollout_batch) * (rollout_batch * n // train_batch) == 26_400


def test_reinforce_pp_header_names_the_settings_it_cannot_follow():
    from rlrecipes.compose.compose import conf_dir

    header = (conf_dir() / "experiment" / f"{REINFORCE_PP}.yaml").read_text()
    for flag in ("Dynamic filtering (l.43-44)", "k2 (l.41", "stop_properly_penalty_coef 0.0 (l.80)", "(l.67-68)"):
        assert flag in header, flag


# --------------------------------------------------------------------- what TRL is given
def test_each_preset_builds_trl_config_with_the_scripts_values():
    maxrl = check_run(preset(MAXRL), hardware=False)  # the GRPOConfig the dry run builds
    assert (maxrl.loss_type, maxrl.beta, maxrl.epsilon, maxrl.max_grad_norm) == ("bnpo", 0.0, 0.2, 0.3)
    assert (maxrl.num_generations, maxrl.generation_batch_size, maxrl.per_device_train_batch_size) == (16, 4096, 4)
    assert (maxrl.learning_rate, maxrl.weight_decay, maxrl.max_steps, maxrl.seed) == (1e-6, 0.01, 1000, 79)
    assert maxrl.bf16 and maxrl.gradient_checkpointing and not maxrl.vllm_importance_sampling_correction

    rpp = check_run(preset(REINFORCE_PP), hardware=False)
    assert (rpp.loss_type, rpp.beta, rpp.epsilon, rpp.epsilon_high) == ("dapo", 1e-4, 0.2, 0.27)
    assert (rpp.num_generations, rpp.generation_batch_size) == (16, 512 * 16)  # l.53-54
    assert (rpp.lr_scheduler_type, rpp.lr_scheduler_kwargs, rpp.scheduler_steps) == (
        "cosine_with_min_lr",
        {"min_lr_rate": 0.1},
        27_100,
    )
    assert (rpp.adam_beta2, rpp.weight_decay, rpp.max_steps, rpp.seed) == (0.95, 0.0, 26_400, 42)
    assert (rpp.vllm_importance_sampling_correction, rpp.vllm_importance_sampling_mode) == (True, "token_mask")
    assert (rpp.vllm_importance_sampling_clip_min, rpp.vllm_importance_sampling_clip_max) == (0.5, 5.0)


@pytest.mark.parametrize(
    "name, rows",
    [
        (
            MAXRL,
            [
                "recipe maxrl",
                "model Qwen/Qwen3-1.7B-Base",
                "loss_type=bnpo beta=0.0 epsilon=0.2",
                "learning_rate=1e-06 weight_decay=0.01 max_grad_norm=0.3",
                "constant over 1000 steps",
                "256 prompts x 16 completions = 4096 per rollout step; 1 update(s) of 4096",
                "max_completion_length=4096 temperature=1.0 rollout=vllm",
                "advantages: maxrl",
            ],
        ),
        (
            REINFORCE_PP,
            [
                "recipe reinforce_pp",
                "model deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
                "loss_type=dapo beta=0.0001 epsilon=0.2 / 0.27",
                "rollout correction token_mask in [0.5, 5.0]",
                "learning_rate=1e-06 weight_decay=0 max_grad_norm=1",
                "cosine_with_min_lr (min_lr_rate=0.1) over 27100 steps",
                "512 prompts x 16 completions = 8192 per rollout step; 8 update(s) of 1024",
                "max_completion_length=8192 temperature=1.0 rollout=vllm",
                "advantages: reinforce_pp",
            ],
        ),
    ],
)
def test_dry_run_prints_the_recipe_and_the_trl_config(name, rows, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    code, out = cli(capsys, "train", f"experiment={name}", "--dry-run")
    text = " ".join(out.replace("│", " ").split())  # the table's cells, unwrapped
    assert code == 0 and "checked 1 run(s)" in text, out
    for row in rows:
        assert row in text, row


def test_the_headers_evaluation_commands_compose():
    # MaxRL's validation: 32 samples at T = 0.6, top-p 0.95 (l.109, 210-214), 4096 new tokens
    maxrl = compose_config(
        "eval",
        [
            "model.name_or_path=RUN/model",
            "benchmark=aime25",
            "protocol.num_samples=32",
            "protocol.temperature=0.6",
            "protocol.top_p=0.95",
            "protocol.max_new_tokens=4096",
        ],
    )
    assert (maxrl.protocol.num_samples, maxrl.protocol.temperature, maxrl.protocol.top_p) == (32, 0.6, 0.95)
    # ProRL v2's: AIME 2024, 4 samples at T = 1.0 (l.65-68) with the training prompt and grader
    rpp = compose_config(
        "eval",
        [
            "model.name_or_path=RUN/model",
            "benchmark=aime24",
            "protocol.template=chat",
            "protocol.answer_style=boxed",
            "protocol.num_samples=4",
            "protocol.temperature=1.0",
            "protocol.max_new_tokens=8192",
        ],
    )
    assert (rpp.protocol.num_samples, rpp.protocol.temperature, rpp.protocol.answer_style) == (4, 1.0, "boxed")
