"""Run by tests/models/test_sharded_scoring.py under `torch.distributed.run --nproc_per_node 2`
(gloo, CPU): self-certainty of a tiny model sharded with FSDP2, each rank writing
`RESULT_DIR/rank<r>.json`. Also INTUITOR's offline scorer on a sharded policy: accelerate
never enables FSDP on CPU, so the trainer around it is a stand-in holding what the hook reads.
"""

import json
import os
import sys
from contextlib import nullcontext
from types import SimpleNamespace

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from transformers import LlamaConfig, LlamaForCausalLM

from rlrecipes.rewards.certainty import policy_self_certainty


def tiny_pair(lora: bool):
    """Two identical models (one to shard, one kept whole), optionally with a random LoRA adapter."""
    config = LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    models = []
    for _ in range(2):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
        if lora:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
        models.append(model.eval())
    return models


def shard(model, mesh):
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    for layer in inner.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def offline_scorer_on_a_sharded_policy(out_dir: str, mesh, batch) -> dict:
    """The hook reloads the initial model from its path and shards it as TRL shards its
    reference model; after the policy moves, it still scores the initial weights."""
    from accelerate.utils import FullyShardedDataParallelPlugin

    from rlrecipes.engine.policy_score import PolicyScoreAdvantage
    from rlrecipes.recipes.intuitor import batch_self_certainty

    initial, _ = tiny_pair(False)
    path = os.path.join(out_dir, "initial_model")
    if dist.get_rank() == 0:
        initial.save_pretrained(path)
    dist.barrier()
    policy = shard(LlamaForCausalLM.from_pretrained(path), mesh).train()
    prompt, prompt_mask, completion, completion_mask = batch
    scored = {"prompt_ids": prompt, "prompt_mask": prompt_mask, "completion_ids": completion,
              "completion_mask": completion_mask, "advantages": torch.zeros(len(prompt))}
    local = []

    def gather(tensor):
        parts = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, tensor)
        return torch.cat(parts)

    trainer = SimpleNamespace(
        model=policy, ref_model=None, is_fsdp_enabled=True, is_deepspeed_enabled=False, temperature=0.8,
        num_generations=2, scale_rewards="group", reward_weights=torch.tensor([0.0]),
        args=SimpleNamespace(gradient_checkpointing_kwargs=None, trust_remote_code=False),
        accelerator=SimpleNamespace(state=SimpleNamespace(fsdp_plugin=FullyShardedDataParallelPlugin(fsdp_version=2)),
                                    torch_device_mesh=None, device=torch.device("cpu"),
                                    process_index=dist.get_rank(), unwrap_model=lambda m: m, gather=gather,
                                    autocast=nullcontext),
        log_metric=lambda name, value: None)
    hook = PolicyScoreAdvantage(lambda m, b, t: local.append(batch_self_certainty(m, b, t, 2, 3)) or local[-1],
                                "self_certainty", scorer="offline")
    hook.bind(trainer)
    with torch.no_grad():  # "training" moves the policy
        for p in policy.parameters():
            p.add_(0.05)
    hook.after_scoring(trainer, scored, None)
    expected = policy_self_certainty(initial.eval(), *batch, temperature=0.8, batch_size=2, chunk_tokens=3)
    moved = policy_self_certainty(policy.eval(), *batch, temperature=0.8, batch_size=2, chunk_tokens=3, sharded=True)
    return {"offline_frozen_is_sharded": type(hook.frozen).__name__.startswith("FSDP"),
            "offline_max_difference": (local[0] - expected).abs().max().item(),
            "policy_moved_by": (moved - expected).abs().max().item()}


def main(out_dir: str) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    g = torch.Generator().manual_seed(1)
    prompt, completion = torch.randint(1, 50, (4, 5), generator=g), torch.randint(1, 50, (4, 6), generator=g)
    prompt_mask, completion_mask = torch.ones_like(prompt), torch.ones_like(completion)
    prompt_mask[0, :2], completion_mask[1, 3:] = 0, 0
    batch = (prompt, prompt_mask, completion, completion_mask)
    result = {"world_size": world}
    for lora in (False, True):
        whole, sharded = tiny_pair(lora)
        expected = policy_self_certainty(whole, *batch, temperature=0.8, batch_size=2, chunk_tokens=3)
        sharded = shard(sharded, mesh)
        name = "lora" if lora else "plain"
        try:  # first, before any forward has left the root's parameters gathered
            policy_self_certainty(sharded, *batch, temperature=0.8, batch_size=2, chunk_tokens=3)
            result[f"{name}_chunked_error"] = None
        except RuntimeError as exc:
            result[f"{name}_chunked_error"] = str(exc).splitlines()[0]
        got = policy_self_certainty(sharded, *batch, temperature=0.8, batch_size=2, chunk_tokens=3, sharded=True)
        result[f"{name}_max_difference"] = (got - expected).abs().max().item()
        result[f"{name}_scores"] = got.tolist()
    result.update(offline_scorer_on_a_sharded_policy(out_dir, mesh, batch))
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
