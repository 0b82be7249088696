"""Self-certainty of sharded models, 2 gloo processes on CPU (FSDP2 and DeepSpeed ZeRO-3):
the forward path matches the unsharded chunked path, and the offline scorer shards a
reloaded initial model (a deepcopy of an FSDP module fails) and scores with it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "helpers" / "sharded_self_certainty.py"


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["fsdp2", "zero3"])
def test_sharded_self_certainty_matches_the_unsharded_model(mode, tmp_path):
    if mode == "zero3":
        pytest.importorskip("deepspeed")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SCRIPT.parents[2])}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(SCRIPT),
            mode,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["world_size"] for r in ranks] == [2, 2]  # really two processes
    for name in ("plain", "lora"):
        for r in ranks:
            assert r[f"{name}_max_difference"] < 1e-6
            if mode == "fsdp2":  # why the forward path exists: FSDP's submodules hold only this rank's shards
                assert "DTensor" in r[f"{name}_chunked_error"]
        assert ranks[0][f"{name}_scores"] == ranks[1][f"{name}_scores"]
    for r in ranks:  # INTUITOR's offline scorer: a reloaded, sharded initial model
        assert r["offline_frozen"] == {"fsdp2": "FSDPLlamaForCausalLM", "zero3": "DeepSpeedEngine"}[mode]
        assert r["offline_max_difference"] < 1e-6
        assert r["policy_moved_by"] > 1e-3  # ...so scoring the moved policy would have been caught
