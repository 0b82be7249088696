"""The eval config: presets reproduce the papers' settings, typos fail with valid keys."""

from pathlib import Path

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.compose.compose import conf_dir
from rlrecipes.errors import ConfigError
from rlrecipes.eval.benchmarks import BENCHMARKS, SUITES, resolve_benchmarks
from rlrecipes.eval.overrides import rewrite_benchmark_list


@pytest.mark.integration
@pytest.mark.parametrize(
    "protocol, expected",
    [
        ("qwen_math_cot", dict(template="qwen_math_cot", num_samples=1, temperature=0.0, max_new_tokens=3072)),
        ("avg8_t06", dict(template="qwen_math_cot", num_samples=8, temperature=0.6, top_p=1.0, max_new_tokens=3072)),
        (
            "dapo_avg32",
            dict(
                template="dapo",
                answer_style="answer_line",
                num_samples=32,
                temperature=1.0,
                top_p=0.7,
                max_new_tokens=20480,
            ),
        ),
        ("ttrl", dict(template="chat", num_samples=16, temperature=0.6, top_p=0.95, max_new_tokens=3072)),
        ("default", dict(num_samples=1, temperature=0.0, max_new_tokens=None)),
    ],
)
def test_protocol_presets(protocol, expected):
    cfg = compose_config("eval", [f"protocol={protocol}"])
    assert cfg.protocol.name == protocol
    for key, value in expected.items():
        assert cfg.protocol[key] == value, key


def test_one_shot_rlvr_protocol_samples_aime_and_amc_only(shared_data):
    from rlrecipes.eval.plan import plan_benchmark

    cfg = compose_config(
        "eval",
        [
            "benchmark=paper_suite",
            "protocol=one_shot_rlvr",
            f"data_dir={shared_data}",
            "limit=1",
            "protocol.per_benchmark.math500.max_new_tokens=64",
        ],
    )
    plans = {name: plan_benchmark(cfg, name) for name in resolve_benchmarks(list(cfg.benchmark.names))}
    assert {n: (p.sampling.n, p.sampling.temperature) for n, p in plans.items()} == {
        "math500": (1, 0.0),
        "aime24": (8, 0.6),
        "amc23": (8, 0.6),
        "minerva_math": (1, 0.0),
        "olympiadbench": (1, 0.0),
        "aime25": (8, 0.6),
    }
    assert plans["math500"].sampling.max_new_tokens == 64 and plans["aime24"].sampling.max_new_tokens == 3072
    assert all(p.template == "qwen_math_cot" and p.style == "auto" for p in plans.values())


def test_presets_are_overridable():
    cfg = compose_config("eval", ["protocol=avg8_t06", "protocol.num_samples=4", "protocol.ks=[1,2]"])
    assert cfg.protocol.num_samples == 4 and list(cfg.protocol.ks) == [1, 2]


@pytest.mark.integration
def test_every_benchmark_and_suite_has_a_config_file():
    files = {p.stem for p in (Path(conf_dir()) / "benchmark").glob("*.yaml")}
    assert files == set(BENCHMARKS) | set(SUITES)
    for name in files:
        cfg = compose_config("eval", [f"benchmark={name}"])
        assert resolve_benchmarks(list(cfg.benchmark.names)) == resolve_benchmarks(name)


@pytest.mark.integration
@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["protocol.tempreature=1"], "unknown key 'protocol.tempreature'; valid keys here: "),
        (["limt=3"], "unknown key 'limt'; valid keys here: "),
        (["protocol=dapo"], "unknown protocol 'dapo'; valid: avg8_t06, dapo_avg32, default"),
        (["benchmark=math5000"], "unknown benchmark 'math5000'; valid: "),
        (["protocol.per_benchmark.aime24.temprature=1"], "unknown key 'protocol.per_benchmark.aime24.temprature'"),
    ],
)
def test_typos_name_the_valid_choices(overrides, needle):
    with pytest.raises(ConfigError) as err:
        compose_config("eval", overrides)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_comma_list_of_benchmarks_is_one_run_unless_multirun():
    assert rewrite_benchmark_list(["benchmark=aime24,amc23", "limit=3"], multirun=False) == [
        "benchmark=aime24",
        "benchmark.names=[aime24,amc23]",
        "limit=3",
    ]
    assert rewrite_benchmark_list(["benchmark=aime24,amc23"], multirun=True) == ["benchmark=aime24,amc23"]
    cfg = compose_config("eval", rewrite_benchmark_list(["benchmark=paper_suite,gsm8k"], False))
    assert resolve_benchmarks(list(cfg.benchmark.names))[-1] == "gsm8k"


def test_own_test_set_through_the_data_field_mapping(tmp_path):
    from rlrecipes.eval.plan import plan_benchmark

    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"q": {"text": "1+1?"}, "sol": "so \\\\boxed{2}", "n": 7}\n'
        '{"q": {"text": "2+2?"}, "sol": "4", "n": 8}\n{"q": {"text": "?"}}\n'
    )
    cfg = compose_config(
        "eval",
        [
            "benchmark=data",
            f"data.path={path}",  # data.source=file not needed
            "data.problem_field=q.text",
            "data.answer_field=sol",
            "data.id_field=n",
            "data.template=plain",
            "data.answer_style=boxed",
        ],
    )
    plan = plan_benchmark(cfg, "data")
    assert [(it.id, it.problem, it.gold) for it in plan.items] == [("7", "1+1?", "2"), ("8", "2+2?", "4")]
    assert (plan.template, plan.style) == ("plain", "boxed")  # the data's template and answer style
    assert "1 rows skipped" in plan.items.report()  # the row without an answer is reported


def test_progress_prints_plain_lines_when_not_a_terminal():
    from rlrecipes.eval.progress import EvalProgress

    lines = []
    with EvalProgress(10, every=4, log=lines.append, terminal=False) as progress:
        progress.start_benchmark("math500")
        for _ in range(10):
            progress.advance(1)  # one problem at a time
    assert [line.split(",")[0] for line in lines] == [
        "eval math500: 4/10 problems (40%)",
        "eval math500: 8/10 problems (80%)",
        "eval math500: 10/10 problems (100%)",
    ]
    assert all("/s, ETA" in line for line in lines)


def test_eval_threads_default_to_half_the_cpus(monkeypatch):
    import os

    import torch

    from rlrecipes.eval.runner import set_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
        assert set_threads(None) == 4 and torch.get_num_threads() == 4
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
        assert set_threads(None) == 1
        assert set_threads(3) == 3
    finally:
        torch.set_num_threads(before)
