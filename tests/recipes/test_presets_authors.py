"""The paper presets hold the values of the authors' code; each test names the line it follows.

Repositories and commits read: PRIME-RL/TTRL 1d2ec3d (v1, OpenRLHF) and 3e2cc93 (verl, with
verl's recipe/dapo vendored); ruixin31/Spurious_Rewards 33b9f85; sunblaze-ucb/Intuitor 3f0cdd7
(open-r1-intuitor, pinned to huggingface/trl 1bca495); ypwang61/One-Shot-RLVR 21ed529;
PeterGriffinJin/Search-R1 a14dc3a; ltzheng/SimpleTIR e7b5b44; RM-R1-UIUC/RM-R1 d4c2542 (with
volcengine/verl e49fb57, the commit its README pins); kanishkg/cognitive-behaviors 9c90d33;
Tongyi-Zhiwen/QwenLong-L1 38d0806. The verl forks' AdamW has weight decay 0.01 unless a script
sets it (Search-R1, cognitive-behaviors verl/workers/fsdp_workers.py:232; SimpleTIR :275;
RM-R1 rm_r1/verl/workers/fsdp_workers.py:238; QwenLong-L1 verl/verl/workers/fsdp_workers.py:278).
Every preset's own command (its header's) passes `rlrecipes train ... --dry-run`, which runs
every check of a run and builds TRL's whole GRPOConfig without loading anything.
"""

from functools import cache
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rlrecipes.cli import main
from rlrecipes.compose import compose_config
from rlrecipes.compose.compose import conf_dir
from rlrecipes.engine.grpo_args import plan_batches
from rlrecipes.engine.grpo_config import EngineGRPOConfig
from rlrecipes.recipes import get_recipe
from rlrecipes.training.plan import check_run

EXPERIMENTS = sorted(p.stem for p in (Path(conf_dir()) / "experiment").glob("*.yaml"))
TTRL_PRESETS = [name for name in EXPERIMENTS if name.startswith("ttrl_") and "_grpo_" not in name]


@cache  # composing is the slow part; no test edits a config
def preset(name: str, *overrides: str):
    return compose_config("train", [f"experiment={name}", *overrides])


def header_command(name: str) -> list[str]:
    """The overrides of the command a preset's header gives on its second line
    (`# rlrecipes train experiment=NAME ...`), up to its first bracketed remark."""
    line = (Path(conf_dir()) / "experiment" / f"{name}.yaml").read_text().splitlines()[1]
    assert line.startswith("# rlrecipes train "), line
    words = []
    for word in line.removeprefix("# rlrecipes train ").split():
        if word[0] in "([":
            break
        words.append(word)
    return words


@pytest.mark.integration
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_preset_command_passes_the_dry_run_and_builds_the_grpo_config(name, capsys):
    command = header_command(name)
    assert f"experiment={name}" in command
    with pytest.raises(SystemExit) as done:  # `rlrecipes train <command> --dry-run`
        main(["train", *command, "--dry-run"])
    assert done.value.code == 0, capsys.readouterr().out
    assert "checked 1 run(s)" in capsys.readouterr().out
    cfg = compose_config("train", command)
    args = check_run(cfg, hardware=False)  # what the dry run built
    assert isinstance(args, EngineGRPOConfig)  # a trl.GRPOConfig with the engine's fields
    assert (args.max_steps, args.loss_type, args.beta) == (cfg.trainer.max_steps, cfg.recipe.loss_type, cfg.recipe.beta)
    assert args.scheduler_steps == cfg.trainer.get("scheduler_steps")
    assert cfg.experiment == name  # a preset that extends another records its own name


# ------------------------------------------------------------------------------- TTRL v1
# code/scripts/ttrl_{aime,amc,math}_grpo_7b.sh at PRIME-RL/TTRL 1d2ec3d:
# (questions, --rollout_batch_size l.56, --num_episodes l.50)
TTRL_V1 = {
    "ttrl_v1_aime24_qwen2_5_math_7b": (30, 16, 60),
    "ttrl_v1_amc_qwen2_5_math_7b": (83, 64, 50),
    "ttrl_v1_math500_qwen2_5_math_7b": (500, 128, 40),
    "ttrl_grpo_math500_qwen2_5_math_7b": (500, 128, 40),  # the same script with the label reward
}


@pytest.mark.parametrize("name", sorted(TTRL_V1))
def test_ttrl_v1_presets_follow_the_openrlhf_scripts(name):
    questions, prompts, episodes = TTRL_V1[name]
    cfg = preset(name)
    r, t = cfg.recipe, cfg.trainer
    # l.83 --packing_samples + l.48 --micro_train_batch_size 4: PolicyLoss (models/loss.py l.48)
    # averages the tokens of each packed micro-batch of 4 samples (action_mask=None,
    # env/ttt_samples_maker.py l.403, 412)
    assert (r.loss_type, t.micro_batch_size) == ("bnpo", 4)
    # l.57 --n_samples_per_prompt 16: ttt_samples_maker.py keeps the first 16 of the votes
    # (l.222-236) and votes among those 16 (l.305-310), so 16 samples vote and train
    assert t.num_generations == 16 and r.get("n_train", 16) == 16
    # l.49 --train_batch_size 16 samples per optimizer step
    assert plan_batches(t).completions_per_update == 16
    assert t.prompts_per_rollout == prompts  # l.56
    # the LR schedule: controller/naive_controller.py l.85-91 sizes it as
    # num_episodes * (len(data) * n_samples_per_prompt // train_batch_size) ...
    assert t.scheduler_steps == {30: 1800, 83: 4150, 500: 20000}[questions] == episodes * (questions * 16 // 16)
    # ... while the prompt loader drops the incomplete batch (l.315-321): fewer steps train
    updates = prompts * 16 // 16
    assert t.updates_per_rollout == updates
    assert t.max_steps == {30: 960, 83: 3200, 500: 15360}[questions] == episodes * (questions // prompts) * updates
    # trainer/ppo_actor.py l.304-310: cosine_with_min_lr, min_lr = 0.1 x lr, warm-up
    # ceil(0.03 x schedule length) (--lr_warmup_ratio default 0.03)
    assert (t.lr_scheduler_type, dict(t.lr_scheduler_kwargs), t.warmup_ratio) == (
        "cosine_with_min_lr",
        {"min_lr_rate": 0.1},
        0.03,
    )
    assert (t.learning_rate, r.beta, t.adam_beta2, t.weight_decay) == (5e-7, 0.0, 0.95, 0.0)  # l.72, 74; defaults
    assert t.temperature == 1.0 and t.max_completion_length == 3072  # l.66, 63


def test_ttrl_gold_label_preset_is_the_same_rl_rewarded_by_the_labels():
    gold, ttrl = preset("ttrl_grpo_math500_qwen2_5_math_7b"), preset("ttrl_v1_math500_qwen2_5_math_7b")
    # --verify_task math (auto_verify.py l.14-16) in place of "ttt" (script l.46)
    assert gold.recipe.name == "grpo" and [(x.name, x.weight) for x in gold.recipe.rewards] == [("accuracy", 1.0)]
    assert OmegaConf.to_container(gold.trainer) == OmegaConf.to_container(ttrl.trainer)
    assert OmegaConf.to_container(gold.data) == OmegaConf.to_container(ttrl.data)
    for key in ("loss_type", "beta", "epsilon", "epsilon_high", "scale_rewards", "entropy_coef"):
        assert gold.recipe[key] == ttrl.recipe[key], key


@pytest.mark.parametrize("name", TTRL_PRESETS)
def test_ttrl_presets_vote_by_exact_strings_as_the_code_does(name):
    # v1 qwen_eval.py l.151-155 and verl ttt_metrics.py: a Counter over extracted answer strings
    assert preset(name).recipe.vote == "exact"
    # the recipe default decides: no preset states its own rule
    assert "vote" not in (OmegaConf.load(Path(conf_dir()) / "experiment" / f"{name}.yaml").get("recipe") or {})


@pytest.mark.parametrize("name", TTRL_PRESETS)
def test_ttrl_loss_averages_the_authors_micro_batches(name):
    # TTRL trains on the first n_train of each group's num_generations samples (GroupSubset
    # drops the rest before the batch is split), so a micro-batch of micro_batch_size
    # generated rows trains micro_batch_size x n_train / num_generations of them.
    # v1: the packed micro-batch of 4 (ttrl_*_grpo_7b.sh l.48, 83); verl: token-mean per
    # micro-batch (dp_actor.py l.294-298) of ppo_micro_batch_size_per_gpu 2 (aime.sh l.29, 58)
    cfg = preset(name)
    t, r = cfg.trainer, cfg.recipe
    assert r.loss_type == "bnpo"
    assert t.micro_batch_size * r.n_train // t.num_generations == (4 if "_v1_" in name else 2)


# ------------------------------------------------------------------------ Spurious Rewards
@pytest.mark.parametrize("size", ["7b", "1_5b"])
def test_spurious_presets_follow_the_script(size):
    # code/scripts/rlvr_deepscaler_grpo_qwen_random.sh at ruixin31/Spurious_Rewards 33b9f85
    cfg = preset(f"spurious_qwen2_5_math_{size}", "reward=random")
    r, t = cfg.recipe, cfg.trainer
    # l.80 --packing_samples + l.41 --micro_train_batch_size 4: token mean per packed micro-batch
    # of 4 (naive_samples_maker.py l.596 action_mask=None; loss.py l.48)
    assert (r.loss_type, t.micro_batch_size) == ("bnpo", 4)
    assert (t.prompts_per_rollout, t.num_generations) == (64, 16)  # l.51-52
    assert plan_batches(t).completions_per_update == 128  # l.42 --train_batch_size 128
    assert (t.checkpoints.every, t.checkpoints.keep_last) == (50 * t.updates_per_rollout, 1)  # l.46, l.75
    assert (t.lr_scheduler_type, t.warmup_ratio, t.learning_rate) == ("constant", 0.0, 5e-7)  # l.44-45, l.3


def test_spurious_clip_ablation_trains_the_authors_objective():
    def overrides(*extra):
        cfg = preset("spurious_qwen2_5_math_7b", "reward=random", *extra)
        return get_recipe("spurious")(cfg.recipe).grpo_overrides()

    inf = float("inf")
    assert overrides() == {}  # clipped PPO (loss.py l.28-49)
    # --use_policy_loss_wo_old_log_probs (train_ppo_naive.py l.195, ppo_trainer.py l.127-128):
    # PolicyLossWoOldLogProbs, -exp(log_probs) * A with no clip (loss.py l.51-73)
    assert overrides("recipe.clip=false") == {"epsilon": inf, "epsilon_high": inf, "loss_without_old_logps": True}
    assert overrides("recipe.clip=false", "recipe.no_clip_objective=ratio") == {"epsilon": inf, "epsilon_high": inf}


# -------------------------------------------------------------------------------- INTUITOR
@pytest.mark.parametrize(
    "size, lr, beta, prompts, generations, steps",
    [("3b", 3e-6, 0.005, 128, 7, 58), ("1_5b", 3e-6, 0.005, 128, 7, 58), ("7b", 1e-6, 0.01, 64, 14, 117)],
)
def test_intuitor_grpo_baselines_follow_the_open_r1_configs(size, lr, beta, prompts, generations, steps):
    # open-r1-intuitor/recipes/Qwen2.5-{3B,7B}/grpo/config_demo.yaml at sunblaze-ucb/Intuitor 3f0cdd7
    cfg = preset(f"intuitor_grpo_qwen2_5_{size}_math")
    r, t = cfg.recipe, cfg.trainer
    assert r.name == "grpo" and [(x.name, x.weight) for x in r.rewards] == [("accuracy", 1.0)]  # l.43-46
    assert (t.learning_rate, r.beta, t.num_generations) == (lr, beta, generations)  # l.23, l.15, l.33
    # 7 processes (run_grpo.sh l.14) x 4 per device (l.39) x 32 accumulation (l.18) completions
    assert t.prompts_per_rollout * t.num_generations == 7 * 4 * 32 and t.prompts_per_rollout == prompts
    assert (t.updates_per_rollout, t.micro_batch_size) == (1, 4)
    assert t.max_steps == steps == 7500 // prompts  # num_train_epochs 1 (l.34) over MATH's 7,500
    assert (t.lr_scheduler_type, t.warmup_ratio, t.max_completion_length) == ("cosine", 0.1, 3072)  # l.29, 51, 31
    # TRL 1bca495 (the fork's pin): loss_type default bnpo (grpo_config.py l.345-346), temperature 0.9
    assert (r.loss_type, t.temperature, cfg.seed) == ("bnpo", 0.9, 7)  # seed: l.50
    assert (t.checkpoints.every, t.checkpoints.keep_last) == (10, 6)  # l.49, l.48


def test_intuitor_grpo_baseline_differs_from_intuitor_only_in_the_reward():
    grpo, intuitor = preset("intuitor_grpo_qwen2_5_3b_math"), preset("intuitor_qwen2_5_3b_math")
    assert OmegaConf.to_container(grpo.trainer) == OmegaConf.to_container(intuitor.trainer)
    assert OmegaConf.to_container(grpo.data) == OmegaConf.to_container(intuitor.data)
    assert (grpo.recipe.loss_type, grpo.recipe.beta, grpo.seed) == (
        intuitor.recipe.loss_type,
        intuitor.recipe.beta,
        intuitor.seed,
    )
    assert [x.weight for x in intuitor.recipe.rewards] == [0.0]  # INTUITOR: accuracy is a monitor only


def test_intuitor_grpo_reward_grades_against_the_answer_boxed_in_the_solution():
    # MATH-lighteval has no answer column; open-r1's accuracy_reward parses the gold from the
    # worked `solution` (rewards.py l.45-48), as the `accuracy` reward does with its last box
    from rlrecipes.data.problems import answer_verifier

    cfg = preset("intuitor_grpo_qwen2_5_3b_math")
    assert cfg.data.answer_field == "solution"
    verify = answer_verifier(cfg.data.answer_style)
    solution = r"Squaring gives $x^2 = 4$, and $x > 0$, so $x = \boxed{2}$."
    assert verify(r"... so the answer is \boxed{2}.", solution)
    assert not verify(r"... so the answer is \boxed{4}.", solution)


# ------------------------------------------------------------------------- one-shot RLVR
@pytest.mark.integration
@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if n.startswith("one_shot_")])
def test_one_shot_presets_keep_what_model_selection_needs(name):
    t = preset(name).trainer
    # scripts/train/training_1.5b_pi1_r128.sh l.47-48: save_freq=20, test_freq=20 (MATH500)
    assert (t.checkpoints.every, t.eval.every) == (20, 20)
    # not all ~100 checkpoints: the best held-out MATH500 one and the last
    assert (t.checkpoints.keep_last, t.checkpoints.best_metric) == (1, "heldout_accuracy")


def test_one_shot_full_set_baseline_is_the_pi1_run_on_all_of_dsr_sub():
    # scripts/train/training_1.5b_dsr_sub.sh differs from the π1 script in l.10 (the data) only
    full, pi1 = preset("one_shot_dsr_sub_qwen2_5_math_1_5b"), preset("one_shot_pi1_qwen2_5_math_1_5b")
    assert full.recipe.examples is None and [str(x) for x in pi1.recipe.examples] == ["124"]
    assert OmegaConf.to_container(full.trainer) == OmegaConf.to_container(pi1.trainer)


# ------------------------------------------------------------------------------------ DAPO
def test_dapo_paper_budget_and_checkpoints():
    cfg = preset("dapo_paper")
    t = cfg.trainer
    # run_dapo_qwen2.5_32b.sh: one epoch (l.130) of the 1,791,700-row file in generation
    # batches of 1536 (l.29) = 1166 batches: the budget counts generation batches, and
    # max_steps is only the ceiling when every rollout step fills from one batch
    assert cfg.recipe.dynamic_sampling.max_batches == 1_791_700 // 1536 == 1166  # verl drops the last, partial batch
    assert t.updates_per_rollout == 16 and t.max_steps == 1166 * 16
    assert (t.checkpoints.every, t.checkpoints.keep_last) == (50 * 16, 1)  # the final model is what the paper scores


def test_dapo_naive_grpo_row_switches_every_technique_off():
    cfg = preset("dapo_grpo_paper")
    r = cfg.recipe
    assert (r.loss_type, r.epsilon, r.epsilon_high) == ("grpo", 0.2, 0.2)
    assert not r.dynamic_sampling.enabled and not r.soft_overlong_punishment
    # run_dapo_early_qwen2.5_32b.sh l.27, l.129: one epoch of the 1,791,700 rows in batches of 512
    assert cfg.trainer.max_steps == 3499 * 16
    dapo = preset("dapo_paper")
    assert (cfg.model.name_or_path, cfg.data.path) == (dapo.model.name_or_path, dapo.data.path)


# -------------------------------------------------------------------------------- SimpleTIR
# ltzheng/SimpleTIR e7b5b44: README.md's 7B command (l.60-71) over train.sh's defaults.
def test_simpletir_preset_follows_the_readme_command_and_train_sh():
    from rlrecipes.tool_loop.build import settings_from_config
    from rlrecipes.tool_loop.rollout import find_stop
    from rlrecipes.tools import ToolSpec, tool_options

    cfg = preset("simpletir_qwen2_5_7b_base")
    assert (cfg.recipe.name, cfg.model.name_or_path) == ("tir", "Qwen/Qwen2.5-7B")
    assert cfg.data.path == "agentica-org/DeepScaleR-Preview-Dataset"  # README l.67 deepscaler/train
    t = cfg.trainer
    # train.sh:3, :22, :11 (512 / 128), :10, :18, README l.61
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout) == (512, 16, 4)
    # README l.61-62: --max_response_length 8000 per generation call (vllm_rollout_spmd.py:136),
    # --max_prompt_length 16000 for the whole response (agent_utils.py:293-297); the engine
    # holds both (vllm_rollout_spmd.py:100-101)
    assert (t.learning_rate, t.temperature, t.max_completion_length) == (1e-6, 1.0, 16000)
    assert (cfg.rollout.max_turn_tokens, cfg.rollout.vllm_max_model_length) == (8000, 16000 + 8000)
    # truncate_content(stdout, 512) (agent_utils.py:630), then data.max_obs_length (train.sh:418)
    assert (cfg.rollout.max_tool_result_chars, cfg.rollout.max_tool_result_tokens) == (512, 4096)
    assert (t.adam_beta1, t.adam_beta2, t.weight_decay) == (0.9, 0.99, 0.01)  # fsdp_workers.py:274-275
    assert t.checkpoints.every == 10 * t.updates_per_rollout  # --save_freq 10 (README l.64)
    r = cfg.recipe  # train.sh:15, :16, :13; :36 with README l.71 (3 x 512); README l.69
    assert (r.beta, r.entropy_coef, r.epsilon, r.epsilon_high) == (0.0, 0.0, 0.2, 0.28)
    ds = r.dynamic_sampling
    assert (ds.enabled, ds.prompts_per_round, r.mask_truncated_completions) == (True, 1536, True)
    settings = settings_from_config(cfg)
    # README l.66 (--max_turns 5: 4 turns with code, then the last), l.70; agent_utils.py:573; train.sh:419
    assert (settings.max_turns, settings.void_turn_masking, settings.answer_mark) == (4, True, "\\boxed{")
    assert settings.mask_tool_output and list(cfg.rollout.tools) == ["python"]
    python = tool_options("python", cfg.rollout.tool_kwargs.python)
    assert (python.open, python.close, python.wrap) == ("```", "```", "\nCode execution result: {}\n")  # l.570, l.631
    fence = ToolSpec("python", python.open, python.close, python.wrap, str)
    stop = find_stop("Let me check.\n```py\nprint(2**10)\n```\n", [fence], cfg.rollout.answer_close)
    assert stop.query == "py\nprint(2**10)\n"  # the python tool drops the info string "py"


# ------------------------------------------------------------------------------- Search-R1
# PeterGriffinJin/Search-R1 a14dc3a, scripts/nq_hotpotqa/v0.2/train_grpo.sh (l. below) with
# verl's defaults of that fork (verl/trainer/config/ppo_trainer.yaml, verl/workers/fsdp_workers.py)
@pytest.mark.parametrize(("name", "model"), [("search_r1_qwen2_5_3b_base", "3B"), ("search_r1_qwen2_5_7b_base", "7B")])
def test_search_r1_presets_follow_the_v0_2_grpo_script(name, model):
    cfg = preset(name)
    r, t, rollout = cfg.recipe, cfg.trainer, cfg.rollout
    assert cfg.model.name_or_path == f"Qwen/Qwen2.5-{model}"  # BASE_MODEL, l.8 / l.12
    assert (cfg.data.path, cfg.data.answer_field, cfg.data.template) == (
        "PeterJinGo/nq_hotpotqa_train",  # scripts/nq_hotpotqa/README.md l.7
        "golden_answers",
        "search_r1",  # qa_search_train_merge.py l.32-36
    )
    assert (t.prompts_per_rollout, t.num_generations) == (512, 5)  # l.31, l.59 (n_agent)
    # ppo_mini_batch_size 256 (l.45) is scaled by rollout.n = 1 (fsdp_workers.py l.100), not n_agent:
    # 512 x 5 trajectories / 256 = 10 updates per rollout step. total_training_steps=1005 (l.73),
    # but the step counter starts at 1 and the loop returns once the raised counter reaches 1005
    # (ray_trainer.py:673, 843-845): steps 1..1004 train
    assert (t.updates_per_rollout, t.max_steps) == (10, 1004 * 10)
    # l.42; AdamW's weight decay, fsdp_workers.py:232
    assert (t.learning_rate, t.lr_scheduler_type, t.weight_decay) == (1e-6, "constant_with_warmup", 0.01)
    # l.43: int(0.285 x total_training_steps) (fsdp_workers.py:234-236); verl steps its scheduler
    # once per rollout step (:381)
    assert t.warmup_steps == int(0.285 * 1005) * 10
    # save_freq=100 and test_freq=100 rollout steps (l.68-69): global_steps % 100 == 0 (ray_trainer.py:825-834)
    assert (t.checkpoints.every, t.eval.every) == (100 * 10, 100 * 10)
    assert (t.temperature, t.top_p) == (1.0, 0.95)  # l.60; ppo_trainer.yaml l.71
    assert (r.beta, r.loss_type, r.entropy_coef) == (0.001, "bnpo", 0.001)  # l.56-57; ppo_trainer.yaml l.35
    assert (list(rollout.tools), rollout.max_turns, rollout.max_tool_result_tokens) == (["search"], 4, 500)  # l.76, 36
    assert rollout.mask_tool_output and rollout.tool_mode == "loop"  # state_masking, l.61
    # data.max_response_length=500 (l.34): each generation call's max_tokens (vllm_rollout.py:108),
    # the engine's length prompt_length + response_length = 4096 + 500 (vllm_rollout.py:99)
    assert (rollout.max_turn_tokens, rollout.vllm_max_model_length) == (500, 4096 + 500)
    # an invalid search turn: generation.py:396-398's observation, and the loop goes on (:399)
    assert rollout.invalid_action_note == (
        "\nMy previous action is invalid. If I want to search, I should put the query between <search> and "
        "</search>. If I want to give the final answer, I should put the answer between <answer> and "
        "</answer>. Let me try again.\n"
    )
    search = rollout.tool_kwargs.search
    assert (search.retriever, search.url, search.topk) == ("http", "http://127.0.0.1:8000/retrieve", 3)  # l.77-78


def test_search_r1_rag_training_control_differs_only_in_the_tool_mode():
    search, rag = preset("search_r1_qwen2_5_3b_base"), preset("search_r1_qwen2_5_3b_base", "rollout.tool_mode=rag_once")
    assert rag.rollout.tool_mode == "rag_once"
    assert OmegaConf.to_container(search.trainer) == OmegaConf.to_container(rag.trainer)
    assert check_run(rag, hardware=False).max_steps == 10040  # the control passes every check of a run


def test_search_r1_switches_back_to_ending_the_rollout_at_an_invalid_turn():
    cfg = preset("search_r1_qwen2_5_3b_base", "rollout.invalid_action_note=null", "rollout.max_turn_tokens=null")
    assert (cfg.rollout.invalid_action_note, cfg.rollout.max_turn_tokens) == (None, None)
    assert check_run(cfg, hardware=False).max_steps == 10040


# ----------------------------------------------------------------------------------- RM-R1
# rm_r1/scripts/RLVR/local/train_rm_r1_rlvr_qwen2.5_instruct_7b.sh (l. below) with
# rm_r1/verl/trainer/config/ppo_trainer.yaml and verl e49fb57
def test_rm_r1_preset_follows_the_rlvr_script_and_its_data():
    cfg = preset("rm_r1_qwen2_5_7b_instruct")
    r, t = cfg.recipe, cfg.trainer
    assert (r.name, r.pairs) == ("j1", "gaotang/RM-R1-after-Distill-RLVR")  # l.35
    # the data's written prompts (rl_dataset.py:52-59), each pair once in the file's order
    # (mix_data.py:146-153), rewarded by lm_as_judge.py's last-80-characters check (l.31-32)
    assert (r.pair_orders, r.prompt_field, r.chosen_field, r.rejected_field, r.label_field) == (
        "one",
        "context_messages",
        None,
        None,
        "winner",
    )
    assert [(x.name, x.weight) for x in r.rewards] == [("rm_r1_verdict", 1.0)] and r.wrong_reward == -1.0
    assert cfg.data.system_prompt.startswith("Please act as an impartial judge and evaluate the quality")
    assert cfg.data.system_prompt.endswith(
        "<eval>\n  include direct comparisons supported by <quote_A>...</quote_A> "
        "or <summary_A>...</summary_A>, and <quote_B>...</quote_B>, or "
        "<summary_B>...</summary_B> tags\n</eval>\n\n<answer>[[A/B]]</answer>"
    )
    assert t.num_generations == 7  # rollout.n: 7, ppo_trainer.yaml:95
    # l.15, 16 (128 prompts x rollout.n per mini-batch), 10, 20, 21
    assert (t.prompts_per_rollout, t.updates_per_rollout, t.learning_rate) == (1024, 8, 1e-6)
    assert (t.max_completion_length, t.micro_batch_size, cfg.rollout.vllm_max_model_length) == (8192, 4, 4096 + 8192)
    assert (t.lr_scheduler_type, t.warmup_steps, t.warmup_ratio, t.temperature) == ("constant", 0, 0.0, 1.0)
    assert (r.beta, r.entropy_coef, r.loss_type) == (0.001, 0.0, "bnpo")  # yaml l.35-38; l.70; core_algos.py:301
    assert t.weight_decay == 0.01  # rm_r1/verl/workers/fsdp_workers.py:238
    assert t.checkpoints.every == 100 * t.updates_per_rollout  # SAVE_EVERY_STEP=100 rollout steps (l.13, 66)
    assert check_run(cfg, hardware=False).num_generations == 7


# ----------------------------------------------------------------------- Cognitive Behaviors
@pytest.mark.parametrize("model", ["qwen2_5_3b", "llama3_2_3b"])
def test_cognitive_behaviors_rl_follows_the_script_and_its_verl(model):
    # scripts/train_tiny_zero_n4_cd.sh (l.) with the fork's verl/trainer/config/ppo_trainer.yaml (config l.)
    r, t = preset(f"cognitive_behaviors_{model}").recipe, preset(f"cognitive_behaviors_{model}").trainer
    # token mean per micro-batch (core_algos.py:192), / gradient accumulation (dp_actor.py:271)
    assert (r.loss_type, t.micro_batch_size) == ("bnpo", 4)  # l.11: 4 / 4 GPUs x rollout.n 4
    assert (r.epsilon, r.epsilon_high, r.entropy_coef, r.beta) == (0.2, None, 0.001, 0.001)  # config l.28-29, l.20
    assert (t.adam_beta1, t.adam_beta2, t.weight_decay, t.max_grad_norm) == (0.9, 0.999, 0.01, 1.0)  # :231-232, l.27
    assert (t.learning_rate, t.lr_scheduler_type, t.warmup_steps) == (1e-6, "constant", 0)  # l.9; config l.38-40
    assert (t.temperature, t.top_p, t.max_completion_length) == (1.0, 1.0, 1024)  # config l.63, 65; l.7
    # save_freq=10 (l.30) rollout steps of 2 updates: the checkpoints behavioral_evals.sh reads (l.16)
    assert (t.checkpoints.every, t.max_steps) == (10 * 2, 250 * 2)


# ----------------------------------------------------------------------------- QwenLong-L1
def test_qwenlong_rl_phases_use_the_authors_three_reward_rules():
    from rlrecipes.training.stages import compose_pipeline, plan, stage_config

    steps = plan(compose_pipeline(["pipeline=qwenlong_l1_32b", "warmup.data.path=w.jsonl"]))
    for step in steps[1:]:  # the two RL phases
        cfg = stage_config(step, Path("/p"), steps, for_check=True)
        r, t = cfg.recipe, cfg.trainer
        # reward_score/__init__.py:43-51 routes each domain to its rule; the judge (README l.224, 238)
        assert [(x.name, x.weight, dict(x.options)) for x in r.rewards] == [
            ("docqa", 1.0, {"model": "Qwen/Qwen2.5-1.5B-Instruct"}),
            ("accuracy", 0.0, {}),
        ]
        assert r.dynamic_sampling.filter == "docqa"  # algorithm.filter_groups.metric=acc (l.25): score == 1
        assert (r.entropy_coef, t.weight_decay) == (0.001, 0.01)  # ppo_trainer.yaml:40; fsdp_workers.py:278
        assert t.checkpoints.every == 5 * t.updates_per_rollout  # save_freq=5 (l.68)
