"""The figures bench_priming computes from samples, and the pipelines bench_curriculum runs per arm
(no model is built: sampling is replaced by fixed texts, pipelines are only composed and planned)."""

from __future__ import annotations

from types import SimpleNamespace

import bench_curriculum
import bench_priming
import pytest

from rlrecipes.training.stages import plan

SEARCH = "try 3+5=8 no\ntry 3*5=15 ok\nAnswer: 3*5"  # verification and backtracking, no subgoal or backward step
PLAIN = "Answer: 3+5"


def test_pass_at_k_and_behaviour_shares_are_computed_per_problem_and_per_sample(monkeypatch):
    # problem a: 2 of 8 samples right (both search traces); problem b: none right, 2 search traces
    texts = [[SEARCH, SEARCH, *[PLAIN] * 6], [SEARCH, SEARCH, *[PLAIN] * 6]]
    monkeypatch.setattr(bench_priming, "sample_completions", lambda *a, **k: texts)
    items = [{"answer": "3,5=15"}, {"answer": "3,5=8"}]
    cfg = SimpleNamespace(trainer=SimpleNamespace(temperature=1.0))
    right = lambda text, gold: gold == "3,5=15" and text == SEARCH  # noqa: E731
    figures = bench_priming.sampled_figures("model", cfg, items, 8, right)
    # pass@1 = (2/8 + 0)/2; pass@4 = (1 - C(6,4)/C(8,4))/2 = (1 - 15/70)/2; pass@8 = (1 + 0)/2
    assert figures["pass@1"] == 0.125
    assert figures["pass@4"] == 0.3929
    assert figures["pass@8"] == 0.5
    assert figures["verification"] == figures["backtracking"] == figures["any_behaviour"] == 0.25  # 4 of 16
    assert figures["subgoal_setting"] == figures["backward_chaining"] == 0.0
    # every step's arithmetic holds; on b (target 8) both verdicts are wrong: 4 of 8 right, 2 of 4 oks
    assert figures["steps_right"] == 1.0 and figures["verdicts_right"] == 0.5 and figures["oks_right"] == 0.5
    texts[:] = [[PLAIN]]  # what the stubbed sampler returns next
    plain = bench_priming.sampled_figures("model", cfg, items[:1], 1, right)
    assert not {"steps_right", "verdicts_right", "oks_right"} & set(plain)  # nothing to check: left out


def test_gains_are_after_minus_before_in_points_per_seed():
    runs = [
        {"before": {"greedy_accuracy": 0.2, "pass@8": 0.5}, "after": {"greedy_accuracy": 0.3, "pass@8": 0.5}},
        {"before": {"greedy_accuracy": 0.2, "pass@8": 0.4}, "after": {"greedy_accuracy": 0.5, "pass@8": 0.6}},
    ]
    for r in runs:
        r.update(rl_seconds=1.0, cpu_seconds=2.0)
    runs[1]["after"]["verdicts_right"] = 0.25  # a figure the first seed lacks: over the seeds that have it
    out = bench_priming.summarise(runs)
    assert out["after"]["verdicts_right"]["mean"] == 0.25
    assert out["greedy_accuracy_gain_points"]["mean"] == 20.0  # (10 + 30) / 2
    assert out["pass@8_gain_points"]["mean"] == 10.0  # (0 + 20) / 2
    assert out["after"]["greedy_accuracy"]["max"] == 0.5


ARGS = SimpleNamespace(
    warmup_steps=5,
    phase1_steps=7,
    phase2_steps=11,
    distractors=[0, 3],
    num_train=60,
    num_eval=30,
)


@pytest.mark.parametrize("arm", bench_curriculum.ARMS)
def test_every_arm_has_the_same_warm_up_and_total_rl_steps(arm):
    stages = plan(bench_curriculum.pipeline_for(arm, 3, ARGS, [], (6, 7)))

    def steps(stage) -> int:  # the last trainer.max_steps on its command line wins
        return int([o for o in stage.overrides if o.startswith("trainer.max_steps=")][-1].split("=")[1])

    assert stages[0].name == "warmup" and steps(stages[0]) == 5
    assert sum(steps(s) for s in stages[1:]) == 18
    assert all("seed=3" in s.overrides for s in stages)
    assert all("data.synthetic.distractors=[0,3]" in s.overrides for s in stages)
    assert stages[-1].phase.max_input_tokens == 7


def test_the_arms_differ_in_phases_and_retrospective_sampling_only():
    plain, retro, longest = (plan(bench_curriculum.pipeline_for(a, 0, ARGS, [], (6, 7))) for a in bench_curriculum.ARMS)
    assert [s.name for s in plain] == [s.name for s in retro] == ["warmup", "phase1", "phase2"]
    assert plain[1].phase.max_input_tokens == 6
    assert not plain[2].phase.retrospective.enabled and retro[2].phase.retrospective.enabled
    assert [s.name for s in longest] == ["warmup", "phase2"] and longest[1].model_from == "warmup"
    assert not longest[1].phase.retrospective.enabled


def test_the_phase_limits_are_the_longest_documents_of_each_phase_in_the_toys_tokens():
    args = SimpleNamespace(distractors=[0, 1, 2, 4, 8], short_distractors=2, num_train=100, num_eval=50)
    # <|user|> <|assistant|>, the question's 26 characters, 22 a passage with its newline: 50 + 22 n
    assert bench_curriculum.phase_limits(args) == (94, 226)


def test_differences_are_points_seed_by_seed_at_a_distractor_count():
    runs = {
        "curriculum": [{"overall": 0.5, "by_distractors": {"8": 0.25}}, {"overall": 0.6, "by_distractors": {"8": 0.5}}],
        "longest": [{"overall": 0.4, "by_distractors": {"8": 0.25}}, {"overall": 0.4, "by_distractors": {"8": 0.25}}],
    }
    assert bench_curriculum.difference(runs, "curriculum", "longest", "8")["mean"] == 12.5  # (0 + 25) / 2
    assert bench_curriculum.difference(runs, "curriculum", "longest", None)["mean"] == 15.0  # (10 + 20) / 2
    assert bench_curriculum.difference(runs, "curriculum_retro", "curriculum", "8") is None  # an arm not run
