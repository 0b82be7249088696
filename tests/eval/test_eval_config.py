"""The eval config: presets reproduce the papers' settings, typos fail with valid keys."""

from pathlib import Path

import pytest

from rlrecipes.config import ConfigError, compose_config
from rlrecipes.config.compose import conf_dir
from rlrecipes.eval.benchmarks import BENCHMARKS, SUITES, resolve_benchmarks
from rlrecipes.eval.command import rewrite_benchmark_list


@pytest.mark.parametrize("protocol, expected", [
    ("qwen_math_cot", dict(template="qwen_math_cot", num_samples=1, temperature=0.0, max_new_tokens=3072)),
    ("avg8_t06", dict(template="qwen_math_cot", num_samples=8, temperature=0.6, top_p=1.0, max_new_tokens=3072)),
    ("dapo_avg32", dict(template="dapo", answer_style="answer_line", num_samples=32, temperature=1.0,
                        top_p=0.7, max_new_tokens=20480)),
    ("ttrl", dict(template="chat", num_samples=16, temperature=0.6, top_p=0.95, max_new_tokens=3072)),
    ("default", dict(num_samples=1, temperature=0.0, max_new_tokens=None)),
])
def test_protocol_presets(protocol, expected):
    cfg = compose_config("eval", [f"protocol={protocol}"])
    assert cfg.protocol.name == protocol
    for key, value in expected.items():
        assert cfg.protocol[key] == value, key


def test_one_shot_rlvr_protocol_samples_aime_and_amc_only(shared_data):
    from rlrecipes.eval.runner import plan_benchmark

    cfg = compose_config("eval", ["benchmark=paper_suite", "protocol=one_shot_rlvr", f"data_dir={shared_data}",
                                  "limit=1", "protocol.per_benchmark.math500.max_new_tokens=64"])
    plans = {name: plan_benchmark(cfg, name) for name in cfg.benchmark.names}
    assert {n: (p.sampling.n, p.sampling.temperature) for n, p in plans.items()} == {
        "math500": (1, 0.0), "aime24": (8, 0.6), "amc23": (8, 0.6), "minerva_math": (1, 0.0),
        "olympiadbench": (1, 0.0), "aime25": (8, 0.6)}
    assert plans["math500"].sampling.max_new_tokens == 64 and plans["aime24"].sampling.max_new_tokens == 3072
    assert all(p.template == "qwen_math_cot" and p.style == "auto" for p in plans.values())


def test_presets_are_overridable():
    cfg = compose_config("eval", ["protocol=avg8_t06", "protocol.num_samples=4", "protocol.ks=[1,2]"])
    assert cfg.protocol.num_samples == 4 and list(cfg.protocol.ks) == [1, 2]


def test_every_benchmark_and_suite_has_a_config_file():
    files = {p.stem for p in (Path(conf_dir()) / "benchmark").glob("*.yaml")}
    assert files == set(BENCHMARKS) | set(SUITES)
    for name in files:
        cfg = compose_config("eval", [f"benchmark={name}"])
        assert resolve_benchmarks(list(cfg.benchmark.names)) == resolve_benchmarks(name)


@pytest.mark.parametrize("overrides, needle", [
    (["protocol.tempreature=1"], "unknown key 'protocol.tempreature'; valid keys here: "),
    (["limt=3"], "unknown key 'limt'; valid keys here: "),
    (["protocol=dapo"], "unknown protocol 'dapo'; valid: avg8_t06, dapo_avg32, default"),
    (["benchmark=math5000"], "unknown benchmark 'math5000'; valid: "),
    (["protocol.per_benchmark.aime24.temprature=1"], "unknown key 'protocol.per_benchmark.aime24.temprature'"),
])
def test_typos_name_the_valid_choices(overrides, needle):
    with pytest.raises(ConfigError) as err:
        compose_config("eval", overrides)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_comma_list_of_benchmarks_is_one_run_unless_multirun():
    assert rewrite_benchmark_list(["benchmark=aime24,amc23", "limit=3"], multirun=False) == [
        "benchmark=aime24", "benchmark.names=[aime24,amc23]", "limit=3"]
    assert rewrite_benchmark_list(["benchmark=aime24,amc23"], multirun=True) == ["benchmark=aime24,amc23"]
    cfg = compose_config("eval", rewrite_benchmark_list(["benchmark=paper_suite,gsm8k"], False))
    assert resolve_benchmarks(list(cfg.benchmark.names))[-1] == "gsm8k"
