"""bench_atlas (the method atlas of docs/atlas.md) on hand-made cells: the paired difference and its
interval, each claim's decision rule, the collapse and entropy-collapse definitions, the resumable
store, the budget check and every arm composing on the tasks it runs on; the e2e tier runs its smoke."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import bench_atlas as bench
import pytest

BENCHMARKS = Path(bench.__file__).resolve().parent
REPO = BENCHMARKS.parent
VERDICTS = {"supported", "contradicted", "not decided"}


def cell(arm, seed, greedy, task="toy", collapsed=False, entropy_collapsed=False, **pass_at_k):
    return {
        "task": task,
        "arm": arm,
        "seed": seed,
        "greedy": greedy,
        "pass_at_k": {k.replace("pass", "pass@"): v for k, v in pass_at_k.items()},
        "collapsed": collapsed,
        "entropy_collapsed": entropy_collapsed,
        "wall_seconds": 10.0,
    }


def arms_cells(task, values: dict[str, list], key="greedy", **flags) -> list[dict]:
    """Cells of each arm, one a seed, with `key` = the seed's value."""
    out = []
    for arm, per_seed in values.items():
        for seed, value in enumerate(per_seed):
            c = cell(arm, seed, value if key == "greedy" else 0.5, task, **flags.get(arm, {}).get(seed, {}))
            if key != "greedy":
                c["pass_at_k"][key] = value
            out.append(c)
    return out


# ------------------------------------------------------------------ the paired difference
def test_the_interval_of_paired_differences_by_hand():
    found = bench.interval([1.0, 2.0, 3.0])  # mean 2, sample stdev 1, t(0.975; 2 df) = 4.303
    assert found["n"] == 3 and found["mean"] == 2.0
    assert found["halfwidth"] == pytest.approx(4.303 / math.sqrt(3), abs=1e-4)
    assert found["interval"] == pytest.approx([2 - 4.303 / math.sqrt(3), 2 + 4.303 / math.sqrt(3)])
    assert bench.interval([])["interval"] is None


def test_paired_takes_the_same_seed_and_skips_a_seed_one_side_lacks():
    cells = [
        cell("grpo", 0, 0.50),
        cell("grpo", 1, 0.40),
        cell("nsr", 0, 0.70),
        cell("nsr", 1, 0.30),
        cell("nsr", 2, 0.90),  # no GRPO on seed 2: no pair
        {**cell("grpo", 2, 0.1), "error": "RuntimeError: boom"},  # an error is no measurement
    ]
    assert bench.paired(cells, "nsr", "grpo") == pytest.approx([0.20, -0.10])


def test_the_untrained_model_is_one_cell_paired_with_every_seed():
    cells = [cell("untrained", 0, 0.25), cell("ttrl", 0, 0.30), cell("ttrl", 1, 0.20), cell("ttrl", 2, 0.45)]
    assert bench.paired(cells, "ttrl", "untrained") == pytest.approx([0.05, -0.05, 0.20])


def test_pass_at_k_pairs_its_own_key():
    cells = [cell("grpo", 0, 0.5, pass64=0.8), cell("nsr", 0, 0.1, pass64=0.9)]
    assert bench.paired(cells, "nsr", "grpo", "pass@64") == pytest.approx([0.1])


# ------------------------------------------------------------------------ the decision rules
@pytest.mark.parametrize(
    "diffs, predicted, verdict",
    [
        ([0.10, 0.12, 0.11], "above", "supported"),
        ([-0.10, -0.12, -0.11], "above", "contradicted"),
        ([0.10, -0.10, 0.02], "above", "not decided"),
        ([0.10, -0.10, 0.02], "not_below", "supported"),  # the interval contains 0
        ([-0.10, -0.12, -0.11], "not_below", "contradicted"),
        ([0.5], "not_below", "not decided"),  # one seed: no interval
    ],
)
def test_the_side_of_zero_rule(diffs, predicted, verdict):
    assert bench.side(diffs, predicted)[0] == verdict


def test_an_undecided_claim_says_how_many_seeds_would_decide_it():
    # mean 0.1, sd 0.1414: t(n-1)/sqrt(n) < 0.7071 first at n = 11 (2.228 / 3.317 = 0.672; n = 10: 0.715)
    assert bench.seeds_to_decide([0.0, 0.2]) == 11
    verdict, found = bench.side([0.0, 0.2], "above")
    assert verdict == "not decided" and found["why"] == "at this mean and spread, 11 seeds would decide it"
    assert bench.seeds_to_decide([-0.2, 0.0]) == 11  # toward contradiction: deciding too
    assert bench.seeds_to_decide([0.1, -0.1]) is None
    assert bench.side([0.1, -0.1], "above")[1]["why"] == "its mean is 0: more seeds would not decide it"
    # mean 0.001, sd 0.1414: ~77,000 seeds at the normal's 1.96
    assert (
        bench.side([-0.099, 0.101], "above")[1]["why"]
        == "at this mean and spread, more than 1000 seeds would be needed"
    )


def test_the_count_rule():
    assert (
        bench.fewer(0, 2) == "supported" and bench.fewer(3, 2) == "contradicted" and bench.fewer(1, 1) == "not decided"
    )
    assert bench.combine("supported", "supported") == "supported"
    assert bench.combine("supported", "not decided") == "not decided"
    assert bench.combine("not decided", "contradicted") == "contradicted"


def claim(by_task, n):
    return bench.claim_verdicts(by_task)[str(n)]


def test_claim_1_reinforce_pp_collapses_less_and_is_not_worse():
    # pooled over both tasks: GRPO collapses on 2 seeds, REINFORCE++ on none; accuracy differences 0, +0.1, -0.05, 0
    toy = arms_cells("toy", {"grpo": [0.5, 0.5, 0.5], "reinforce_pp": [0.5, 0.6, 0.45]}, grpo={0: {"collapsed": True}})
    cd = arms_cells("countdown", {"grpo": [0.3], "reinforce_pp": [0.3]}, grpo={0: {"collapsed": True}})
    assert claim({"toy": toy, "countdown": cd}, 1)["verdict"] == "supported"
    assert claim({"toy": toy, "countdown": cd}, 1)["greedy_vs_grpo"]["n"] == 4
    more = arms_cells(
        "toy", {"grpo": [0.5, 0.5, 0.5], "reinforce_pp": [0.5, 0.6, 0.45]}, reinforce_pp={1: {"collapsed": True}}
    )
    assert claim({"toy": more}, 1)["verdict"] == "contradicted"
    same = arms_cells("toy", {"grpo": [0.5, 0.5, 0.5], "reinforce_pp": [0.5, 0.6, 0.45]})
    assert claim({"toy": same}, 1)["verdict"] == "not decided"  # 0 collapses each
    lower = arms_cells(
        "toy", {"grpo": [0.5, 0.6, 0.7], "reinforce_pp": [0.3, 0.41, 0.5]}, grpo={0: {"collapsed": True}}
    )
    assert claim({"toy": lower}, 1)["verdict"] == "contradicted"  # fewer collapses, but lower accuracy


def test_claim_2_nsr_keeps_pass_at_64_above_psr_and_grpo():
    above = arms_cells(
        "toy", {"grpo": [0.80, 0.82, 0.81], "psr": [0.70, 0.71, 0.72], "nsr": [0.95, 0.96, 0.96]}, "pass@64"
    )
    assert claim({"toy": above}, 2)["verdict"] == "supported"
    below_psr = arms_cells(
        "toy", {"grpo": [0.80, 0.82, 0.81], "psr": [0.99, 0.99, 0.98], "nsr": [0.90, 0.91, 0.90]}, "pass@64"
    )
    assert claim({"toy": below_psr}, 2)["verdict"] == "contradicted"
    mixed = arms_cells(
        "toy", {"grpo": [0.80, 0.82, 0.81], "psr": [0.90, 0.80, 0.85], "nsr": [0.90, 0.85, 0.84]}, "pass@64"
    )
    assert claim({"toy": mixed}, 2)["verdict"] == "not decided"


def test_claim_3_both_covariance_arms_must_keep_entropy_at_no_cost():
    flags = {"grpo": {0: {"entropy_collapsed": True}, 1: {"entropy_collapsed": True}}}
    values = {"grpo": [0.5, 0.5, 0.5], "clip_cov": [0.5, 0.52, 0.49], "kl_cov": [0.51, 0.5, 0.5]}
    assert claim({"toy": arms_cells("toy", values, **flags)}, 3)["verdict"] == "supported"
    flags["kl_cov"] = {0: {"entropy_collapsed": True}, 1: {"entropy_collapsed": True}, 2: {"entropy_collapsed": True}}
    found = claim({"toy": arms_cells("toy", values, **flags)}, 3)
    assert found["verdict"] == "contradicted" and found["clip_cov"]["verdict"] == "supported"
    assert claim({"toy": arms_cells("toy", values)}, 3)["verdict"] == "not decided"  # no collapses on any side


@pytest.mark.parametrize(
    "n, arm, values, verdict",
    [
        (4, "ttrl", [0.30, 0.32, 0.31], "supported"),  # above the untrained 0.20
        (4, "ttrl", [0.10, 0.12, 0.11], "contradicted"),
        (5, "intuitor", [0.30, 0.10, 0.22], "not decided"),
        (6, "spurious", [0.25, 0.15, 0.20], "supported"),  # contains 0: does not hurt
        (6, "spurious", [0.10, 0.12, 0.11], "contradicted"),
    ],
)
def test_claims_4_to_6_against_the_untrained_model(n, arm, values, verdict):
    cells = [cell("untrained", 0, 0.20, "smollm2"), *arms_cells("smollm2", {arm: values})]
    assert claim({"smollm2": cells}, n)["verdict"] == verdict


def test_claim_4_quotes_how_often_the_starting_models_majority_is_right():
    start = {**cell("untrained", 0, 0.20, "smollm2", pass1=0.25, pass8=0.5), "majority": 0.3, "pass_problems": 50}
    cells = [start, *arms_cells("smollm2", {"ttrl": [0.30, 0.32, 0.31]})]
    found = claim({"smollm2": cells}, 4)
    assert found["verdict"] == "supported"
    assert (
        found["starting_model"]
        == "its majority answer of 8 samples is right on 0.300 of 50 problems, one sample on 0.250"
    )
    assert "starting_model" not in claim({"smollm2": cells[1:]}, 4)  # no scored start: nothing said


def test_the_majority_answer_is_right_by_ttrls_own_vote_rule():
    from types import SimpleNamespace

    from rlrecipes.grading import extract_answer

    def verify(text, gold):
        return extract_answer(text, "boxed") == str(gold)

    problems = SimpleNamespace(answer_style="boxed", verify=verify)
    texts = [
        ["\\boxed{4}", "\\boxed{4}", "\\boxed{5}"],  # majority 4, right
        ["\\boxed{7}", "\\boxed{7}", "\\boxed{6}"],  # majority 7, wrong (gold 6)
        # recipe.vote=exact, recipe=ttrl's default (the TTRL code's Counter): the missing answer, counted
        # as "", wins 2 to 1 and is no right label (under the equivalence vote 2 would win)
        ["no answer", "\\boxed{2}", "no answer"],
        ["\\boxed{1}", "\\boxed{3}", "\\boxed{3}"],  # majority 3, wrong (gold 1)
    ]
    items = [{"answer": 4}, {"answer": 6}, {"answer": 2}, {"answer": 1}]
    assert bench.majority_right(texts, items, problems) == {"majority": 0.25}  # 1 of 4
    assert bench.majority_right(texts, items, SimpleNamespace(answer_style=None, verify=verify)) == {}


def test_claim_7_dapo_not_below_grpo_on_smollm2():
    fine = arms_cells("smollm2", {"grpo": [0.3, 0.4, 0.5], "dapo": [0.35, 0.38, 0.5]})
    assert claim({"smollm2": fine}, 7)["verdict"] == "supported"
    worse = arms_cells("smollm2", {"grpo": [0.3, 0.4, 0.5], "dapo": [0.2, 0.31, 0.4]})
    assert claim({"smollm2": worse}, 7)["verdict"] == "contradicted"
    assert claim({"toy": worse}, 7)["verdict"] == "not decided"  # only SmolLM2's cells count


def test_a_claim_whose_task_is_incomplete_waits_for_it():
    cells = [cell("untrained", 0, 0.20, "smollm2"), *arms_cells("smollm2", {"ttrl": [0.3, 0.32, 0.31]})]
    claims = bench.waiting(bench.claim_verdicts({"smollm2": cells}), {"smollm2": "4 of 25 cells"})
    assert claims["4"]["verdict"] == "not decided" and claims["4"]["waiting_for"] == ["smollm2 (4 of 25 cells)"]
    assert claims["1"]["waiting_for"] == ["smollm2 (4 of 25 cells)"]  # claim 1 pools every task
    assert "waiting_for" not in bench.waiting(bench.claim_verdicts({}), {"countdown": "1 of 22 cells"})["2"]


# ------------------------------------------------------------------------------ the definitions
def test_moving_average_by_hand():
    assert bench.moving_average([1.0, 2.0, 3.0], window=2) == [1.0, 1.5, 2.5]


def test_collapse_is_the_moving_average_ending_below_half_its_peak():
    assert bench.collapsed([0.8] * 10 + [0.0] * 10, [1.0] * 20)  # ends at 0 against a peak of 0.8
    assert not bench.collapsed([0.8] * 10 + [0.2] * 5 + [0.8] * 10, [1.0] * 25)  # a dip it recovers from
    assert not bench.collapsed([0.8] * 10 + [0.4] * 10, [1.0] * 20)  # exactly half: not below it
    assert not bench.collapsed([0.0] * 10, [1.0] * 10)  # never above 0: nothing to collapse from
    assert bench.collapsed([0.5] * 5, [1.0, float("nan"), 1.0, 1.0, 1.0])  # a non-finite loss
    assert bench.collapsed([0.5] * 5, [1.0, 1.0, float("inf"), 1.0, 1.0])
    assert not bench.collapsed([0.5, None, 0.5], [None, 1.0, 1.0])  # not logged is not non-finite


def test_entropy_collapse_is_the_last_tenth_below_a_tenth_of_the_first_ten_steps():
    first = [1.0] * 10
    assert bench.entropy_collapsed(first + [0.5] * 8 + [0.05, 0.05])  # last 10 % (2 of 20 steps): 0.05 < 0.1
    assert not bench.entropy_collapsed(first + [0.05] * 8 + [0.1, 0.1])  # exactly a tenth: not below
    assert not bench.entropy_collapsed(first + [0.5] * 8 + [0.01, 0.5])  # the last 10 % is two steps: mean 0.255
    assert bench.entropy_collapsed([1.0, 0.05])  # two steps: the last one against the mean of both
    assert not bench.entropy_collapsed([None, None])


# ------------------------------------------------------------------------------ references, figures
def test_rollout_correction_arms_compare_with_their_own_model_on_the_toy():
    toy, smollm2 = bench.TASKS["toy"], bench.TASKS["smollm2"]
    assert bench.references(toy, "vllm_mask", list(toy.arms)) == ["vllm_none"]
    assert bench.references(toy, "vllm_none", list(toy.arms)) == []  # another model than GRPO's
    assert bench.references(smollm2, "vllm_mask", ["grpo", "vllm_mask", "untrained"]) == ["grpo", "untrained"]
    assert bench.references(toy, "nsr", list(toy.arms)) == ["grpo", "untrained"]
    assert bench.references(smollm2, "ttrl", list(smollm2.arms)) == ["grpo", "untrained"]
    assert bench.arm_settings(toy, "vllm_none") == ["model=toy_vllm", "rollout=vllm"]
    assert bench.arm_settings(bench.TASKS["factbase"], "grpo") == []  # Search-R1's preset is the reference


def test_task_figures_count_collapses_and_pair_with_grpo():
    cells = arms_cells(
        "toy", {"grpo": [0.5, 0.6], "nsr": [0.6, 0.8]}, nsr={1: {"collapsed": True, "entropy_collapsed": True}}
    )
    cells.append({**cell("nsr", 2, None), "error": "ValueError: x"})
    figures = bench.task_figures(bench.TASKS["toy"], cells, ["grpo", "nsr"])
    nsr = figures["nsr"]
    assert nsr["greedy"]["mean"] == 0.7 and nsr["collapses"] == 1 and nsr["entropy_collapses"] == 1
    assert nsr["paired"]["grpo"]["greedy"]["mean"] == 0.15 and nsr["paired"]["grpo"]["greedy"]["n"] == 2
    assert nsr["errors"] == ["seed 2: ValueError: x"] and nsr["cells"] == 3
    assert figures["grpo"]["paired"] == {}


def test_an_arm_that_trained_exactly_as_its_reference_is_named_so():
    def run(arm, seed, reward):
        return {**cell(arm, seed, 0.5, pass64=0.9), "reward_mean": reward, "entropy": [0.1, 0.1], "loss": [0.0, 0.0]}

    cells = [run("vllm_none", s, [0.2, 0.4]) for s in (0, 1)] + [run("vllm_mask", s, [0.2, 0.4]) for s in (0, 1)]
    cells += [run("vllm_truncate", 0, [0.2, 0.4]), run("vllm_truncate", 1, [0.2, 0.41])]  # one step differs
    planned = ["vllm_none", "vllm_truncate", "vllm_mask"]
    figures = bench.task_figures(bench.TASKS["toy"], cells, planned)
    assert figures["vllm_mask"]["identical_to"] == ["vllm_none"]
    assert figures["vllm_truncate"]["identical_to"] == []
    assert figures["vllm_none"]["identical_to"] == []  # no reference on the toy
    assert bench.identical_to(cells[:3], "vllm_mask", "vllm_none")  # seed 0 alone: the same run
    assert not bench.identical_to(cells[2:4], "vllm_mask", "vllm_none")  # the reference's seeds are missing


def test_an_arm_without_reward_signal_by_construction_is_labelled():
    cells = [cell("untrained", 0, 0.2, "smollm2"), *arms_cells("smollm2", {"spurious": [0.2, 0.3]})]
    figures = bench.task_figures(bench.TASKS["smollm2"], cells, ["untrained", "spurious"])
    assert figures["spurious"]["no_reward_signal"] == bench.RANDOM_REWARD
    assert figures["untrained"]["no_reward_signal"] is None


def test_every_arm_has_a_paper_and_its_card_exists():
    for arm in bench.ARMS:
        assert arm.paper
        assert arm.card is None or (REPO / arm.card).is_file(), arm.card
    assert set(bench.CLAIM_ARMS) <= set(bench.ARM)


# ------------------------------------------------------------------------------ budget and composing
def base(task):
    args = Namespace(overrides=[], steps=0)
    return [*bench.task_settings(task, args), f"trainer.max_steps={bench.steps_of(task, args)}"]


def test_an_arm_that_changes_the_budget_is_refused():
    task = dataclasses.replace(
        bench.TASKS["toy"], arm_overrides={"grpo": ("recipe=grpo", "trainer.prompts_per_rollout=4")}
    )
    with pytest.raises(SystemExit, match=r"toy/grpo changes the budget \(trainer.prompts_per_rollout 8 -> 4\)"):
        bench.check_arms(task, ["grpo"], base(task), plan=False)
    bench.check_arms(bench.TASKS["toy"], ["grpo"], base(task), plan=False)  # the shipped arm is not


@pytest.mark.parametrize("name", [n for n, t in bench.TASKS.items() if not t.gpu])
@pytest.mark.integration  # composes every arm's config: seconds each
def test_every_arm_composes_on_every_task_it_is_planned_for(name):
    task = bench.TASKS[name]
    budget = bench.check_arms(task, list(task.arms), base(task), plan=False)
    assert budget["trainer.max_steps"] == task.steps


@pytest.mark.integration  # composes every arm's config: seconds each
def test_every_arm_passes_the_dry_run_on_the_gpu_preset():
    """`rlrecipes train experiment=atlas_qwen2_5_math_1_5b <arm> --dry-run`: compose_config + plan_run
    without this machine's hardware, as the dry run does."""
    task = bench.TASKS["qwen_math_gpu"]
    budget = bench.check_arms(task, list(task.arms), base(task), plan=True)
    assert budget == {
        "trainer.prompts_per_rollout": 32,
        "trainer.num_generations": 8,
        "trainer.updates_per_rollout": 2,  # every arm: with one, every ratio is 1 (bench_atlas.UPDATES)
        "trainer.max_steps": 200,
        "trainer.learning_rate": 1e-5,
    }


# ------------------------------------------------------------------------------ the store
def fake_cell(ran: list, failing: set):
    """bench_atlas.run_in_child without training: a cell of an arm in `failing` ends with an error."""

    def run_in_child(c, scorer=None):
        ran.append((c.arm, c.seed))
        if c.arm in failing:
            return {"error": "RuntimeError: boom", "wall_seconds": 1.0}
        return {
            "greedy": 0.5,
            "pass_at_k": {"pass@1": 0.4, "pass@8": 0.6, "pass@64": 0.7},
            "heldout": 10,
            "collapsed": False,
            "entropy_collapsed": False,
            "wall_seconds": 1.0,
        }

    return run_in_child


@pytest.fixture
def smoke(tmp_path, monkeypatch):
    """`bench_atlas.main --smoke` into tmp_path with cells that do not train: returns (run, the folder);
    run(*argv, failing=arms) returns the cells it ran."""
    ran: list = []
    failing: set = set()
    monkeypatch.setattr(bench, "run_in_child", fake_cell(ran, failing))

    def run(*argv, fail=()):
        ran.clear()
        failing.clear()
        failing.update(fail)
        bench.main(["--smoke", "--results-dir", str(tmp_path), *argv])
        return list(ran)

    return run, tmp_path


@pytest.mark.integration  # composes every arm's config: seconds each
def test_a_rerun_runs_only_the_cells_not_stored(smoke):
    run, folder = smoke
    assert run() == [("grpo", 0), ("reinforce_pp", 0), ("grpo", 1), ("reinforce_pp", 1)]
    store = folder / "atlas_toy.cells.jsonl"
    lines = store.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "settings" and len(lines) == 5
    store.write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])  # two cells stored, the third cut by a kill
    assert run() == [("grpo", 1), ("reinforce_pp", 1)]
    assert len(bench.read_store(store)[1]) == 4
    record = json.loads((folder / "atlas_toy.json").read_text())
    assert set(record["result"]["arms"]) == {"grpo", "reinforce_pp"}
    assert run() == []  # all stored: nothing runs, the result is written again


@pytest.mark.integration  # composes every arm's config: seconds each
def test_a_rerun_with_other_settings_is_refused_in_one_line(smoke):
    run, folder = smoke
    run()
    with pytest.raises(SystemExit) as refused:
        run("--steps", "3")
    message = str(refused.value)
    assert "atlas_toy.cells.jsonl holds cells of other settings (steps 2 -> 3" in message and "\n" not in message
    assert "--restart" in message
    assert run("--steps", "3", "--restart") == [("grpo", 0), ("reinforce_pp", 0), ("grpo", 1), ("reinforce_pp", 1)]


@pytest.mark.integration  # composes every arm's config: seconds each
def test_a_changed_arm_is_named_in_the_refusal(smoke, monkeypatch):
    run, folder = smoke
    run()
    arm = dataclasses.replace(bench.ARM["grpo"], overrides=("recipe=grpo", "recipe.epsilon=0.3"))
    monkeypatch.setitem(bench.ARM, "grpo", arm)
    with pytest.raises(SystemExit, match=r"arm grpo \['recipe=grpo'\] -> \['recipe=grpo', 'recipe.epsilon=0.3'\]"):
        run()


@pytest.mark.integration  # composes every arm's config: seconds each
def test_errors_are_kept_until_retried(smoke):
    run, folder = smoke
    assert run("--arms", "grpo", fail={"grpo"}) == [("grpo", 0), ("grpo", 1)]
    assert not (folder / "atlas_toy.json").exists()  # reinforce_pp's cells are still missing
    assert run("--arms", "grpo") == []  # a cell that ended with an error is stored
    assert run("--retry-errors") == [("grpo", 0), ("reinforce_pp", 0), ("grpo", 1), ("reinforce_pp", 1)]
    assert json.loads((folder / "atlas_toy.json").read_text())["result"]["arms"]["grpo"]["errors"] == []


@pytest.mark.integration  # composes every arm's config: seconds each
def test_the_plan_prints_the_cells_and_runs_nothing(smoke, capsys):
    run, folder = smoke
    run("--arms", "grpo")
    capsys.readouterr()
    assert run("--plan") == []
    out = capsys.readouterr().out
    assert "toy: 2 of 4 cells stored, 2 steps each" in out
    assert "grpo              0:done 1:done" in out and "reinforce_pp      0:todo 1:todo" in out


def test_unknown_names_and_an_unplanned_gpu_run_are_refused_in_one_line():
    with pytest.raises(SystemExit, match=r"^--arms foo is unknown; valid: untrained, grpo, "):
        bench.main(["--smoke", "--arms", "foo"])
    with pytest.raises(SystemExit, match=r"^--tasks bar is unknown; valid: toy, smollm2, countdown, factbase"):
        bench.main(["--smoke", "--tasks", "bar"])
    with pytest.raises(SystemExit, match="is planned here, not run: add --plan"):
        bench.main(["--smoke", "--tasks", "qwen_math_gpu"])


# ------------------------------------------------------------------------------ e2e: the smoke run
@pytest.mark.e2e
def test_the_smoke_run_stores_its_cells_and_figures(tmp_path):
    command = [sys.executable, str(BENCHMARKS / "bench_atlas.py"), "--smoke", "--results-dir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    header, cells = bench.read_store(tmp_path / "atlas_toy.cells.jsonl")
    assert header["settings"]["steps"] == 2 and header["settings"]["heldout"] == 10
    assert sorted((c["arm"], c["seed"]) for c in cells) == [
        ("grpo", 0),
        ("grpo", 1),
        ("reinforce_pp", 0),
        ("reinforce_pp", 1),
    ]
    for c in cells:
        assert "error" not in c, c["error"]
        assert c["heldout"] == 10 and set(c["pass_at_k"]) == {"pass@1", "pass@8", "pass@64"}
        assert len(c["reward_mean"]) == len(c["entropy"]) == 2 and c["commit"]
    record = json.loads((tmp_path / "atlas_toy.json").read_text())
    assert record["bench"] == "atlas_toy" and record["mode"] == "smoke"
    rpp = record["result"]["arms"]["reinforce_pp"]
    assert {"greedy", "pass@1", "pass@8", "pass@64", "collapses", "entropy_collapses", "mean_wall_seconds"} <= set(rpp)
    assert rpp["paired"]["grpo"]["greedy"]["n"] == 2
    claims = json.loads((tmp_path / "atlas_claims.json").read_text())["result"]
    assert set(claims) == {str(n) for n in range(1, 8)} and {c["verdict"] for c in claims.values()} <= VERDICTS
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)  # resumes: nothing to train
    assert again.returncode == 0 and "seed 0:" not in again.stderr
