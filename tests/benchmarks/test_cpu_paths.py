"""bench_cpu_paths: which kernel paths it runs, and the spread it reports."""

import bench_cpu_paths


def test_an_avx512_machine_also_runs_avx2(monkeypatch):
    monkeypatch.setattr(bench_cpu_paths, "capability", lambda value: "AVX512")
    assert bench_cpu_paths.kernel_paths() == {"native": None, "avx2": "avx2", "default": "default"}
    monkeypatch.setattr(bench_cpu_paths, "capability", lambda value: "AVX2")
    assert bench_cpu_paths.kernel_paths() == {"native": None, "default": "default"}


def test_the_largest_difference_is_over_every_path_per_seed():
    paths = {
        "native": {"accuracy_after": [0.50, 0.70]},
        "avx2": {"accuracy_after": [0.56, 0.70]},
        "default": {"accuracy_after": [0.49, 0.66]},
    }
    # seed 0: 0.56 - 0.49 = 0.07 (the middle path's; native - default is 0.01); seed 1: 0.70 - 0.66 = 0.04
    assert bench_cpu_paths.largest_difference(paths) == 0.07
