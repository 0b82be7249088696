"""The tool recipes' CPU toys against fair controls: same warm-started model, same RL steps,
same seeds, only the tool's use changed.

  tir_toy (big arithmetic, rlrecipes/data/bigarith.py):
    tool:         the preset: the calculator runs, its result is masked out of the loss;
    no_tool:      no tool turn (rollout.tool_mode=off; the pre-flight off, NO_TOOL): the model must
                  answer in its head;
    broken_tool:  the calculator refuses every problem (rollout.tool_kwargs.calculator.
                  max_digits=1): it still runs and answers, with nothing the model can use;
    no_masking:   the calculator's result is trained on (rollout.mask_tool_output=false).
  search_r1_toy (the fact base, rlrecipes/data/factbase.py):
    search:       the preset: the model searches while it answers;
    rag_once:     the question is searched once before the model writes, the passage put after
                  the prompt, and the same RL trains it with no search of its own
                  (rollout.tool_mode=rag_once; Search-R1's RAG baseline, trained as well);
    no_tool:      no search at all (as tir_toy's no_tool);
    broken_tool:  the search returns a random passage (rollout.tool_kwargs.search.retriever=random);
    no_masking:   the retrieved passages are trained on (Search-R1's masking ablation).

Expected if the capability works: `tool` and `search` gain, `search` beats `rag_once` on 2-hop
questions (one retrieval with the question cannot find the teacher's passage: the fact base
guarantees it), `no_tool` and `broken_tool` do not improve.

Per arm and seed: held-out greedy accuracy before and after (through the run's own tool loop),
the last step's tool calls per rollout and answer rate; for the fact base, 1-hop and 2-hop
exact match after RL and real searches per held-out question. Prints one JSON line.

Every arm starts from build 0 of its toy (`model.toy.seed=0`, the shipped toy), so its ± is the
spread over training seeds on one build. Each further build of `--builds` (another
`model.toy.seed`, built here: ~10 minutes for the tir toy, ~45 for the fact base's on 2 cores)
trains each toy's headline arm (`tool`, `search`) over the same seeds: `builds` records every
build's gain and how far the builds' mean gains lie apart, beside the largest seed stdev.

A full run keeps every finished run (benchkit.KeptRuns: outputs/kept-runs/tools/runs.jsonl, by its
overrides and its starting model's content digest), so a rerun after a kill, or in a later session, trains
only the runs still missing; the record says how many runs it used, the commits that trained them
and their training time.

Usage: python benchmarks/bench_tools.py [--quick | --smoke] [--steps N] [--seeds 0 1 2] [--toys tir_toy search_r1_toy]
       [--builds 0 1] [overrides ...]   (the result: benchmarks/results/tools.json)
Full mode: `python benchmarks/bench_tools.py` (3 seeds, 20 steps, 9 arms, 2 builds; its time: MODES).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench_build_spread import across, build_gain
from benchkit import (
    KeptRuns,
    kept_runs_folder,
    parse_bench_args,
    save_result,
    starting_model,
    stats,
    train_in_scratch,
)

# The no-tool arms train with the pre-flight off: without its tool a toy may write to the completion
# limit on every rollout of the first batch, and the pre-flight then refuses the run (the shipped
# fact-base toy, seed 2: every completion cut at 320 tokens, every advantage 0), a chance of the
# seed; the control trains its 20 steps on every seed instead, and its "nothing learned" is measured
NO_TOOL = ["rollout.tool_mode=off", "trainer.preflight=false"]
ARMS = {
    "tir_toy": {
        "tool": [],
        "no_tool": NO_TOOL,
        "broken_tool": ["+rollout.tool_kwargs.calculator.max_digits=1"],
        "no_masking": ["rollout.mask_tool_output=false"],
    },
    "search_r1_toy": {
        "search": [],
        "rag_once": ["rollout.tool_mode=rag_once"],
        "no_tool": NO_TOOL,
        "broken_tool": ["+rollout.tool_kwargs.search.retriever=random"],
        "no_masking": ["rollout.mask_tool_output=false"],
    },
}


# Controls whose ceiling is below 1 by construction (the README quotes it beside their gain)
CEILING_WHY = {
    (
        "search_r1_toy",
        "rag_once",
    ): "one retrieval with the question never finds a 2-hop answer: at most the 1-hop share",
}


def ceiling(toy: str, arm: str, held_out: list[dict]) -> dict | None:
    """The highest held-out accuracy `arm` can reach on `held_out` by construction, with why; None
    where nothing caps it. rag_once on the fact base: the 1-hop questions' share (factbase.py's
    guarantee that one search with a 2-hop question never retrieves the teacher's passage)."""
    why = CEILING_WHY.get((toy, arm))
    if why is None:
        return None
    return {"accuracy": round(sum(it["hops"] == 1 for it in held_out) / len(held_out), 4), "why": why}


def held_out_questions(toy: str, extra: list[str]) -> list[dict]:
    """The held-out problems every arm of `toy` is measured on (its recipe's problem set)."""
    from rlrecipes.compose import compose_config
    from rlrecipes.training.plan import plan_run

    cfg = compose_config("train", [f"experiment={toy}", *extra])
    return plan_run(cfg, None, hardware=False).recipe.problem_set(cfg.data).eval


def by_hops(overrides: list[str]):
    """What to read from a finished fact-base run: greedy exact match by hops and real searches
    per question, through the run's own tool loop (and, for rag_once, its retrieval), on the
    held-out questions."""

    def inspect(run_dir) -> dict:
        from rlrecipes.compose import compose_config
        from rlrecipes.data.templates import render_prompt
        from rlrecipes.models import load_model
        from rlrecipes.recipes.search_r1 import SearchR1
        from rlrecipes.tool_loop.build import retrieve_once, tool_rollout_from_config
        from rlrecipes.tool_loop.greedy import greedy_tool_rows

        cfg = compose_config("train", overrides)
        problems = SearchR1(cfg.recipe).problem_set(cfg.data)
        model, tok = load_model(str(run_dir / "model"), cfg.model)
        rollout = tool_rollout_from_config(cfg, tok)
        retrieve = retrieve_once(cfg.rollout, tok)
        prompts = [render_prompt(it["problem"], cfg.data.template, tok) for it in problems.eval]
        if retrieve is not None:
            prompts = [retrieve(p, it["problem"]) for p, it in zip(prompts, problems.eval)]
        rows = greedy_tool_rows(model, tok, rollout, prompts, batch_size=cfg.trainer.eval.batch_size)
        out = {}
        for hops in (1, 2):
            pairs = [(row, it) for row, it in zip(rows, problems.eval) if it["hops"] == hops]
            hits = sum(problems.verify(rollout.model_text(row), it["answer"]) for row, it in pairs)
            out[f"em_{hops}hop"] = round(hits / len(pairs), 4)
        out["searches_per_question"] = round(sum(row.tool_calls for row in rows) / len(rows), 3)
        return out

    return inspect


def run(kept: KeptRuns, toy: str, arm: list[str], seed: int, steps: int, extra: list[str]) -> dict:
    """One arm's run on one seed: the kept one when an earlier invocation trained it."""
    from rlrecipes.compose import compose_config

    overrides = [f"experiment={toy}", f"seed={seed}", f"trainer.max_steps={steps}", *arm, *extra]
    start = model_identity(starting_model(compose_config("train", overrides)))  # a toy rebuilt since: trains anew
    return kept.run({"overrides": overrides, "starting_model": start}, lambda: train_and_read(toy, overrides))


def model_identity(folder: str | Path) -> str:
    """Which model a run starts from, whatever folder or cache holds it: the first 16 hex digits of
    the model cache's own content digest (rlrecipes_content.sha256: every file but that one)."""
    from rlrecipes.integrity import content_digest
    from rlrecipes.models.cache import CONTENT_HASH

    folder = Path(folder)
    if not any(folder.iterdir()):
        raise FileNotFoundError(f"{folder} holds no model files")
    return content_digest(folder, exclude=(CONTENT_HASH,))[:16]


def train_and_read(toy: str, overrides: list[str]) -> dict:
    summary = train_in_scratch(overrides, by_hops(overrides) if toy == "search_r1_toy" else None)
    last = [r for r in summary["rows"] if "tools/calls_per_rollout" in r][-1]
    return {
        "before": summary["accuracy_before"],
        "after": summary["accuracy_after"],
        "calls_per_rollout": last["tools/calls_per_rollout"],
        "answer_rate": last["tools/answer_rate"],
        **summary.get("inspected", {}),
    }


def describe(runs: list[dict]) -> dict:
    out = {
        "accuracy_before": [round(r["before"], 4) for r in runs],
        "accuracy_after": [round(r["after"], 4) for r in runs],
        "accuracy_after_stats": stats([r["after"] for r in runs]),
        "gain_points_mean": round(100 * statistics.mean(r["after"] - r["before"] for r in runs), 2),
        "last_step_calls_per_rollout": [round(r["calls_per_rollout"], 3) for r in runs],
        "last_step_answer_rate": [round(r["answer_rate"], 3) for r in runs],
    }
    for key in ("em_1hop", "em_2hop", "searches_per_question"):
        if key in runs[0]:
            out[key] = [r[key] for r in runs]
            out[f"{key}_stats"] = stats([r[key] for r in runs])
    return out


def spread_over_builds(build0: dict, others: dict[int, dict]) -> dict:
    """The headline arm's gain on every build (build 0's from the arms' own runs) and across them,
    recorded as bench_build_spread records a build."""
    arms = {0: build0, **others}
    builds = {str(b): build_gain(arm["accuracy_before"], arm["accuracy_after"]) for b, arm in arms.items()}
    return {"builds": builds, "across_builds": across(builds)}


MODES = {
    # 9 arms x 3 seeds x 20 steps. Measured end to end (2026-12-05, c24d178, 2 cores at load 3-4):
    # 109 minutes, of which 44 were the fact-base toy's warm-start (now shipped); the tir arms take
    # ~1 minute per run, the search arms 3-10 minutes. Build 1: its two warm-starts (~55 minutes),
    # then the two headline arms' 6 runs
    "full": {"seeds": [0, 1, 2], "steps": 20, "toys": list(ARMS), "builds": [0, 1]},
    "quick": {"seeds": [0], "builds": [0]},
    "smoke": {"seeds": [0], "steps": 2},
}


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    unknown = sorted(set(args.toys) - set(ARMS))
    if unknown:
        raise SystemExit(f"--toys {unknown[0]} is unknown; valid: {', '.join(ARMS)}")
    if 0 not in args.builds:
        raise SystemExit(f"--builds {args.builds}: must include 0 (the shipped toy every arm starts from)")
    kept = KeptRuns(kept_runs_folder(args), args.commit)
    results = {
        toy: {
            name: describe([run(kept, toy, arm, seed, args.steps, args.overrides) for seed in args.seeds])
            for name, arm in ARMS[toy].items()
        }
        for toy in args.toys
    }
    held_out = {toy: held_out_questions(toy, args.overrides) for toy in results}
    for toy, arm in CEILING_WHY:
        if toy in results:
            results[toy][arm]["ceiling"] = ceiling(toy, arm, held_out[toy])
    record = {
        "setting": f"{args.steps} RL steps per arm from one warm-started toy",
        "heldout": {toy: len(problems) for toy, problems in held_out.items()},
        "toys": results,
    }
    others = [b for b in args.builds if b != 0]
    if others:
        record["builds"] = {}
        for toy in args.toys:
            headline, arm = next(iter(ARMS[toy].items()))
            runs = {
                b: describe(
                    [
                        run(kept, toy, arm, seed, args.steps, [f"model.toy.seed={b}", *args.overrides])
                        for seed in args.seeds
                    ]
                )
                for b in others
            }
            record["builds"][toy] = {"arm": headline, **spread_over_builds(results[toy][headline], runs)}
    record["kept_runs"] = kept.provenance()
    save_result(args, record)


if __name__ == "__main__":
    main()
