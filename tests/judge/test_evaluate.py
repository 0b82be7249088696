"""Judge evaluation through a scripted backend: both orders judged, SC@k, files written."""

import json

from rlrecipes.eval.judge import JudgeSettings, evaluate_judge
from rlrecipes.generation import Completion
from rlrecipes.judge.pairs import Pair


class ScriptedBackend:
    """A Backend that always prefers the first response (a position-biased judge)."""

    name = "scripted"

    def __init__(self):
        self.prompts = []

    def chunk_size(self, sampling):
        return 3

    def generate(self, prompts, sampling, seeds):
        self.prompts += list(prompts)
        return [[Completion("<think>x</think><answer>[[A]]</answer>", 9, "stop")] * sampling.n for _ in prompts]


def test_a_position_biased_judge_flips_every_pair(tmp_path):
    pairs = [Pair(str(i), f"q{i}", f"good{i}", f"bad{i}", "math" if i < 2 else "chat") for i in range(4)]
    backend = ScriptedBackend()
    settings = JudgeSettings(style="compact", template="plain", samples=3, temperature=1.0)
    summary = evaluate_judge(backend, None, pairs, settings, tmp_path, {"model": "m"}, log=lambda _: None)
    m = summary["metrics"]
    assert len(backend.prompts) == 8  # both orders of 4 pairs, in chunks of 3
    assert backend.prompts[:2] == ["q0\nA: good0\nB: bad0\nBetter?", "q0\nA: bad0\nB: good0\nBetter?"]
    assert (m["consistent_accuracy"], m["accuracy_mean_order"], m["flip_rate"]) == (0.0, 0.5, 1.0)
    assert set(m["by_category"]) == {"chat", "math"}
    records = [json.loads(x) for x in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 8 and records[1]["gold"] == "B" and records[1]["verdicts"] == ["A"] * 3
    assert json.loads((tmp_path / "summary.json").read_text())["settings"]["samples"] == 3
