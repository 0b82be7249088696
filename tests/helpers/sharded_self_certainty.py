"""Run by tests/models/test_sharded_scoring.py as `torch.distributed.run --nproc_per_node 2
sharded_self_certainty.py MODE OUT_DIR` (gloo, CPU), MODE `fsdp2` or `zero3`: self-certainty
of a tiny model sharded that way, by both paths of `policy_self_certainty`, and INTUITOR's
offline scorer on a sharded policy. accelerate never enables FSDP or DeepSpeed on a CPU,
so the trainer around the hook is a stand-in holding what the hook reads. Each rank
writes OUT_DIR/rank<r>.json.
"""

import json
import os
import sys
from contextlib import nullcontext
from types import SimpleNamespace

import torch
import torch.distributed as dist
from transformers import LlamaConfig, LlamaForCausalLM

from rlrecipes.rewards.certainty import policy_self_certainty

# ZeRO-3 with every parameter partitioned (no small ones kept whole on each rank)
ZERO3 = {
    "train_micro_batch_size_per_gpu": 1,
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0},
}
SCORE = {"temperature": 0.8, "batch_size": 2, "chunk_tokens": 3}


def tiny_model(lora: bool = False, path: str | None = None):
    """The same weights on every call; optionally with a random LoRA adapter, or from `path`."""
    config = LlamaConfig(
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM.from_pretrained(path) if path else LlamaForCausalLM(config)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    return model.eval()


def shard(model, mode: str):
    """The module a trainer would run: FSDP2 shards it in place; under ZeRO-3 TRL and
    transformers call the engine's module, whose hooks gather each submodule's parameters."""
    if mode == "zero3":
        import deepspeed

        engine, *_ = deepspeed.initialize(model=model, config=ZERO3)
        return engine.module
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    for layer in inner.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def perturb(model, mode: str) -> None:
    """What training does to the policy: every weight moves."""
    parameters = list(model.parameters())
    gathered = nullcontext()
    if mode == "zero3":  # partitioned parameters are edited whole, then re-partitioned
        import deepspeed

        gathered = deepspeed.zero.GatheredParameters(parameters, modifier_rank=0)
    with torch.no_grad(), gathered:
        for p in parameters:
            p.add_(0.05)


def both_paths(mode: str, batch) -> dict:
    result = {}
    for lora in (False, True):
        name = "lora" if lora else "plain"
        expected = policy_self_certainty(tiny_model(lora), *batch, **SCORE)
        sharded = shard(tiny_model(lora), mode)
        try:  # first, before any forward has left FSDP's root parameters gathered
            chunked = policy_self_certainty(sharded, *batch, **SCORE)
            result[f"{name}_chunked_error"] = None
            result[f"{name}_chunked_difference"] = (chunked - expected).abs().max().item()
        except RuntimeError as exc:
            result[f"{name}_chunked_error"] = str(exc).splitlines()[0]
        got = policy_self_certainty(sharded, *batch, **SCORE, sharded=True)
        result[f"{name}_max_difference"] = (got - expected).abs().max().item()
        result[f"{name}_scores"] = got.tolist()
    return result


def stand_in_trainer(policy, mode: str):
    from accelerate.utils import DeepSpeedPlugin, FullyShardedDataParallelPlugin

    def gather(tensor):
        parts = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, tensor)
        return torch.cat(parts)

    state = SimpleNamespace(fsdp_plugin=FullyShardedDataParallelPlugin(fsdp_version=2), deepspeed_plugin=None)
    if mode == "zero3":
        state = SimpleNamespace(fsdp_plugin=None, deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=ZERO3))
    return SimpleNamespace(
        model=policy,
        ref_model=None,
        is_fsdp_enabled=mode == "fsdp2",
        is_deepspeed_enabled=mode == "zero3",
        temperature=SCORE["temperature"],
        num_generations=2,
        scale_rewards="group",
        reward_weights=torch.tensor([0.0]),
        args=SimpleNamespace(gradient_checkpointing_kwargs=None, trust_remote_code=False),
        accelerator=SimpleNamespace(
            state=state,
            torch_device_mesh=None,
            device=torch.device("cpu"),
            process_index=dist.get_rank(),
            unwrap_model=lambda m: m,
            gather=gather,
            autocast=nullcontext,
        ),
        log_metric=lambda name, value: None,
    )


def offline_scorer(out_dir: str, mode: str, batch) -> dict:
    """The hook reloads the initial model from its path and shards it as TRL shards its
    reference model; after the policy moves, it still scores the initial weights."""
    from rlrecipes.engine.policy_score import PolicyScoreAdvantage
    from rlrecipes.recipes.intuitor import batch_self_certainty

    path = os.path.join(out_dir, "initial_model")
    if dist.get_rank() == 0:
        tiny_model().save_pretrained(path)
    dist.barrier()
    policy = shard(tiny_model(path=path), mode).train()
    trainer = stand_in_trainer(policy, mode)
    prompt, prompt_mask, completion, completion_mask = batch
    scored = {
        "prompt_ids": prompt,
        "prompt_mask": prompt_mask,
        "completion_ids": completion,
        "completion_mask": completion_mask,
        "advantages": torch.zeros(len(prompt)),
    }
    seen = []
    hook = PolicyScoreAdvantage(
        lambda m, b, t: seen.append(batch_self_certainty(m, b, t, 2, 3)) or seen[-1], "self_certainty", scorer="offline"
    )
    hook.bind(trainer)
    perturb(policy, mode)
    hook.after_scoring(trainer, scored, None)
    expected = policy_self_certainty(tiny_model(), *batch, **SCORE)
    moved = policy_self_certainty(policy.eval(), *batch, **SCORE, sharded=True)
    return {
        "offline_frozen": type(hook.frozen).__name__,
        "offline_max_difference": (seen[0] - expected).abs().max().item(),
        "policy_moved_by": (moved - expected).abs().max().item(),
    }


def main(mode: str, out_dir: str) -> None:
    dist.init_process_group("gloo")
    g = torch.Generator().manual_seed(1)
    prompt, completion = torch.randint(1, 50, (4, 5), generator=g), torch.randint(1, 50, (4, 6), generator=g)
    prompt_mask, completion_mask = torch.ones_like(prompt), torch.ones_like(completion)
    prompt_mask[0, :2], completion_mask[1, 3:] = 0, 0  # left-padded prompt, short completion
    batch = (prompt, prompt_mask, completion, completion_mask)
    result = {"world_size": dist.get_world_size(), **both_paths(mode, batch), **offline_scorer(out_dir, mode, batch)}
    with open(os.path.join(out_dir, f"rank{dist.get_rank()}.json"), "w") as f:
        json.dump(result, f)
    dist.barrier()  # gloo's barrier also waits for every async all-gather FSDP2 left in flight
    dist.destroy_process_group()
    # Leave without finalizing the interpreter. The group's worker threads outlive
    # destroy_process_group (the sharded modules still hold the group), and a gloo worker thread that drops a finished all-gather's tensors during finalization
    # must take the GIL, is ended by pthread_exit inside a noexcept destructor, and aborts the
    # process (std::terminate, SIGABRT; 3 runs in 58 on a 2-core machine) after the results
    # above were written. Nothing is left to do but exit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
