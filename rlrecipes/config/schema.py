"""Typed configuration schema for `rlrecipes train`.

Every group in `conf/` is backed by one of these dataclasses, registered in Hydra's
ConfigStore (see `store.py`), so a misspelt key fails at composition time with the
list of valid keys instead of surfacing as a KeyError deep inside a training run.
Recipe-specific knobs live in each recipe's own dataclass (a subclass of
`RecipeConfig` next to the recipe's code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING


@dataclass
class ToyModelConfig:
    """A tiny causal LM built in-process (character tokenizer + small Qwen3/Llama).

    It is warm-started by supervised learning on the synthetic task until held-out
    accuracy stops improving, so that RL starts from a converged imitation policy.
    """

    architecture: str = "qwen3"  # qwen3 | llama (never qwen2: AutoTokenizer swaps its tokenizer)
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
    sft_max_new_tokens: int = 12  # greedy decoding length when measuring dev accuracy
    # Plateau rule: stop once the last `sft_patience` + 1 dev accuracies lie within
    # `sft_tolerance` of each other (the final model is kept, not the best point).
    sft_patience: int = 4
    sft_tolerance: float = 0.04
    seed: int = 0


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
    bias: str = "none"  # none | all | lora_only (peft's choices)
    # QLoRA: the frozen base in 4-bit NF4 (bitsandbytes, CUDA only)
    load_in_4bit: bool = False
    # also write a merged full model to RUN/model_merged (RUN/model holds the adapter)
    save_merged: bool = False


@dataclass
class ModelConfig:
    name: str = "toy"
    # Hub id or local folder. When null, `builder` makes a folder in the cache.
    name_or_path: Optional[str] = None
    builder: Optional[str] = None  # toy | smollm2_gguf
    dtype: str = "float32"  # float32 | bfloat16 | float16 | auto
    trust_remote_code: bool = False
    revision: Optional[str] = None
    toy: ToyModelConfig = field(default_factory=ToyModelConfig)
    lora: Optional[LoraConfig] = field(default_factory=LoraConfig)


@dataclass
class SyntheticTaskConfig:
    """Knobs of the in-process verifiable tasks (see `rlrecipes.data.synthetic`)."""

    task: str = "arithmetic"  # arithmetic | countdown
    num_train: int = 4000
    num_eval: int = 300
    # arithmetic: the i-th operand is drawn from [0, operand_max[i]];
    # countdown: numbers are drawn from [1, operand_max[0]] and there are `num_numbers`.
    operand_max: List[int] = field(default_factory=lambda: [99, 99])
    operations: str = "+"
    num_numbers: int = 3
    # The supervised warm-start imitates a flawed teacher: on this fraction of its
    # demonstrations it makes the task's systematic error (arithmetic: forgets carries;
    # countdown: uses a wrong operator). RL with the verifier can undo what SFT copied.
    teacher_error_rate: float = 0.75
    seed: int = 1234


@dataclass
class DataConfig:
    name: str = "arithmetic"
    source: str = "synthetic"  # synthetic | hub | file
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
    dedup: bool = False  # drop repeated problems (DAPO-Math-17k repeats each ~100x)
    max_examples: Optional[int] = None
    max_eval_examples: Optional[int] = None
    # prompt rendering
    template: str = "chat"  # plain | chat | qwen_math_cot | dapo
    system_prompt: Optional[str] = None
    answer_style: str = "auto"  # boxed | answer_line | gsm8k | auto


@dataclass
class TrainerConfig:
    """Optimisation and batching, in the papers' vocabulary.

    One *rollout step* samples `num_generations` completions for each of
    `prompts_per_rollout` prompts and then takes `updates_per_rollout` optimizer
    steps over them (verl's train batch vs. mini-batch). `max_steps` counts
    optimizer steps, as TRL does.
    """

    max_steps: int = 120
    learning_rate: float = 2e-4
    lr_scheduler_type: str = "constant"
    # extra scheduler arguments, e.g. +trainer.lr_scheduler_kwargs.min_lr_rate=0.1 for cosine_with_min_lr
    lr_scheduler_kwargs: Dict[str, Any] = field(default_factory=dict)
    warmup_steps: int = 0
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    max_grad_norm: float = 1.0
    prompts_per_rollout: int = 8
    num_generations: int = 8
    updates_per_rollout: int = 1
    micro_batch_size: int = 64  # completions per forward/backward on one device
    num_iterations: int = 1  # PPO epochs over each rollout batch
    max_completion_length: int = 12
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    logging_steps: int = 1
    # Full checkpoints (weights, optimizer, scheduler, RNG, data position, engine state) every
    # N optimizer steps, rounded up to a whole rollout step; `resume=true run_dir=RUN` continues
    # from the last complete one. null: none (SIGINT/SIGTERM still save one before stopping).
    save_steps: Optional[int] = None
    save_keep_last: Optional[int] = 2  # complete checkpoints kept; null = all
    save_best_metric: Optional[str] = None  # also keep the best by this metrics.jsonl key (higher is better)
    bf16: bool = False
    gradient_checkpointing: bool = False
    use_cpu: bool = True
    cpu_threads: Optional[int] = None  # torch intra-op threads; None = torch's default
    eval_before: bool = True
    eval_after: bool = True
    eval_every: Optional[int] = None  # also measure held-out accuracy every N steps (logged)
    eval_batch_size: int = 128
    # record each training example's accuracy (fraction of its group correct) every time
    # it is sampled, keyed by its id, to accuracy_history.json (one-shot RLVR's selection)
    record_accuracy_history: bool = False
    # a reward that raises or returns NaN/inf gives that completion this value and is counted
    # (reward_failures/<name> per step); past this share of completions the run stops with one line
    reward_fallback: float = 0.0
    reward_max_failure_rate: float = 0.05
    reward_timeout_s: Optional[float] = 300.0  # CPU seconds per reward call (one batch); null = no limit
    progress: bool = True  # rich live display


@dataclass
class RolloutConfig:
    backend: str = "hf"  # hf | vllm
    vllm_mode: str = "colocate"  # colocate | server
    vllm_gpu_memory_utilization: float = 0.3
    vllm_tensor_parallel_size: int = 1
    vllm_server_host: str = "0.0.0.0"
    vllm_server_port: int = 8000
    vllm_max_model_length: Optional[int] = None
    # TRL corrects for vLLM/trainer log-prob mismatch by default; none of the papers'
    # codebases did, so reproductions keep it off unless asked.
    importance_sampling_correction: bool = False


@dataclass
class RewardSpec:
    name: str = MISSING
    weight: float = 1.0


@dataclass
class RecipeConfig:
    """Algorithm knobs shared by every recipe; each recipe subclasses this."""

    name: str = MISSING
    loss_type: str = "grpo"  # grpo | dapo | bnpo | dr_grpo (TRL's aggregations)
    beta: float = 0.0  # k3 KL coefficient; 0 loads no reference model
    epsilon: float = 0.2
    epsilon_high: Optional[float] = None  # None = symmetric clip
    scale_rewards: str = "group"  # group | batch | none
    mask_truncated_completions: bool = False
    entropy_coef: float = 0.0
    rewards: List[RewardSpec] = field(default_factory=list)
    # Dynamic sampling (DAPO; an engine capability any recipe may switch on): drop groups whose
    # `dynamic_sampling_filter` reward is the same for every completion, and generate more
    # prompts until the batch holds trainer.prompts_per_rollout mixed groups.
    dynamic_sampling: bool = False
    dynamic_sampling_filter: str = "accuracy"  # DAPO filters on correctness, not the shaped score
    max_generation_rounds: int = 10  # generation rounds per step before giving up with an error
    prompts_per_generation_round: Optional[int] = None  # None = trainer.prompts_per_rollout


@dataclass
class TrainConfig:
    recipe: Any = MISSING
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    experiment: Optional[str] = None
    seed: int = 0
    run_dir: Optional[str] = None
    resume: bool = False  # continue run_dir from its last complete checkpoint
    output_root: str = "outputs"
    cache_dir: Optional[str] = None  # default: $RLRECIPES_CACHE or ~/.cache/rlrecipes
    # `rlrecipes eval` overrides run on the final model after training, into RUN/eval/
    # (e.g. [benchmark=aime24, protocol=dapo_avg32]); empty: none
    final_eval: List[str] = field(default_factory=list)
    # experiment trackers that receive the logged metrics: tensorboard, wandb, trackio
    # (several at once); empty: none. Run name = the run directory's name.
    report_to: List[str] = field(default_factory=list)
