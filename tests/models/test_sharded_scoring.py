"""Self-certainty of a sharded model (FSDP2 on CPU, 2 gloo processes): the forward path
matches the unsharded chunked path; the chunked path cannot run on the shards; the offline
scorer shards a reloaded initial model and scores with it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("fsdp_self_certainty.py")


@pytest.mark.slow
def test_fsdp_sharded_self_certainty_matches_the_unsharded_model(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SCRIPT.parents[2])}
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--standalone", str(SCRIPT), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["world_size"] for r in ranks] == [2, 2]  # really two processes
    for name in ("plain", "lora"):
        for r in ranks:
            assert r[f"{name}_max_difference"] < 1e-6
            # what the forward path is for: submodules called directly see only this rank's shards
            assert "DTensor" in r[f"{name}_chunked_error"]
        assert ranks[0][f"{name}_scores"] == ranks[1][f"{name}_scores"]
    for r in ranks:  # INTUITOR's offline scorer: a reloaded, sharded initial model, not a deepcopy
        assert r["offline_frozen_is_sharded"] and r["offline_max_difference"] < 1e-6
        assert r["policy_moved_by"] > 1e-3  # ...so scoring the moved policy would have been caught
