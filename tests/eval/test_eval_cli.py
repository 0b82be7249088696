"""`rlrecipes eval` / `rlrecipes report` end to end.

Runs that load a model go through a subprocess, as users run them; re-scoring and
input errors need no model and run the same CLI in-process (seconds instead of imports).
"""

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY, one_error_line

# The train TINY settings that also exist in the eval config: the same cached toy model.
EVAL_TINY = [o for o in TINY if not o.startswith("trainer.")] + ["progress=false", "grading.workers=0"]


def rlrecipes(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def cli(capsys, *args: str) -> tuple[int, str]:
    """The CLI in this process: (exit status, stdout + stderr)."""
    from rlrecipes.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out + out.err


def samples(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


@pytest.mark.integration
def test_eval_tiny_model_on_the_synthetic_task_and_resume(toy_model_dir, tmp_path):
    run = tmp_path / "run"
    common = [
        *EVAL_TINY,
        "limit=4",
        "protocol.num_samples=2",
        "protocol.temperature=1.0",
        "generation.batch_size=2",
        f"run_dir={run}",
    ]
    out = rlrecipes("eval", *common, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("config.yaml", "versions.json", "summary.json", "samples.jsonl", "report.md"):
        assert (run / name).is_file(), name
    summary = json.loads((run / "summary.json").read_text())
    m = summary["benchmarks"]["arithmetic"]
    assert m["problems"] == 4 and m["samples_per_problem"] == 2
    for key in ("pass@1", "avg@2", "pass@2", "maj@2", "truncated_fraction", "no_answer_fraction"):
        assert 0 <= m[key] <= 1, key
    assert summary["protocol"]["num_samples"] == 2 and summary["seed"] == 0
    assert summary["generation_backend"] in ("hf", "vllm")  # what generation.backend=auto resolved to
    assert summary["versions"]["torch"] and "git_commit" in summary["versions"]
    assert summary["settings"]["arithmetic"]["answer_style"] == "answer_line"
    original = samples(run)
    assert len(original) == 4 and all(len(r["completions"]) == len(r["correct"]) == 2 for r in original)
    assert {"prompt", "completions", "answers", "correct", "gold"} <= set(original[0])
    tokens = [n for r in original for n in r["num_tokens"]]  # the mean of what was generated
    assert len(tokens) == 8 and m["mean_completion_tokens"] == round(sum(tokens) / 8, 2)
    assert "arithmetic" in out.stdout and "pass@1" in out.stdout

    # simulate an interruption after two problems, the third line torn mid-write
    kept = original[:2]
    kept[0]["completions"] = ["Answer: kept", "Answer: kept"]  # a marker: must not be regenerated
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept) + '{"benchmark": "ari')
    (run / "summary.json").unlink()
    again = rlrecipes("eval", *common, "resume=true", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = samples(run)
    assert [r["id"] for r in resumed] == [r["id"] for r in original]
    assert resumed[0]["completions"] == ["Answer: kept", "Answer: kept"]
    # fixed chunks and seeds: the regenerated problems are exactly what they were
    assert [r["completions"] for r in resumed[2:]] == [r["completions"] for r in original[2:]]
    assert json.loads((run / "summary.json").read_text())["benchmarks"]["arithmetic"]["problems"] == 4
    # a different protocol is not the same experiment (checked before any model loads)
    other = rlrecipes("eval", *common, "resume=true", "protocol.temperature=0.5", cwd=tmp_path)
    assert other.returncode == 2 and "different protocol" in other.stdout
    # the chunk size decides the sampling seeds: another one would mix two samplings in one file
    other = rlrecipes("eval", *common, "resume=true", "generation.batch_size=4", cwd=tmp_path)
    assert other.returncode == 2 and "different generation.batch_size" in other.stdout
    # the first config.yaml is kept; the resume is logged
    assert "resume=true" in (run / "resumes.log").read_text()


def test_a_lone_surrogate_is_written_as_a_replacement_not_a_crash(tmp_path):
    from rlrecipes.eval.samples import ProblemRecord, SampleWriter, read_samples

    record = ProblemRecord(
        benchmark="b",
        id="1",
        problem="p\ud800",
        prompt="p",
        gold="1",
        completions=["1\udfff"],
        answers=["1"],
        correct=[True],
    )
    writer = SampleWriter(tmp_path / "samples.jsonl", keep=[])
    writer.write([record])
    back = read_samples(tmp_path / "samples.jsonl")
    assert back[0].problem == "p?" and back[0].completions == ["1?"]


@pytest.mark.integration
def test_eval_on_a_math500_slice_from_shared_data(toy_model_dir, shared_data, tmp_path):
    run = tmp_path / "run"
    out = rlrecipes(
        "eval",
        *EVAL_TINY,
        "benchmark=math500",
        f"data_dir={shared_data}",
        "limit=5",
        "protocol.max_new_tokens=8",
        f"run_dir={run}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    m = json.loads((run / "summary.json").read_text())["benchmarks"]["math500"]
    assert m["problems"] == 5 and m["samples_per_problem"] == 1
    assert sum(v["problems"] for v in m["by_subject"].values()) == 5 and "by_level" in m
    rows = samples(run)
    assert [r["id"] for r in rows][0] == "test/precalculus/807.json"
    assert "Please reason step by step" in rows[0]["prompt"]  # the Qwen2.5-Math CoT system prompt


@pytest.mark.integration
def test_rescore_a_generations_file_with_known_answers(tmp_path, capsys):
    gen = tmp_path / "gens.jsonl"
    lines = [
        {"id": "p1", "gold": "025", "completions": ["\\boxed{25}", "\\boxed{24}", "work\nAnswer: 25", "no idea"]},
        {
            "id": "p2",
            "gold": "\\frac{1}{2}",
            "completions": ["\\boxed{0.5}", "\\boxed{\\frac12}", "\\boxed{1}", "\\boxed{1}"],
        },
        {"gold": 7.0, "problem": "?", "completions": ["\\boxed{3}", "\\boxed{3}", "\\boxed{7}", "\\boxed{3}"]},
    ]
    gen.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run = tmp_path / "run"
    code, text = cli(capsys, "eval", f"generations={gen}", "benchmark=aime24", f"run_dir={run}")
    assert code == 0, text
    summary = json.loads((run / "summary.json").read_text())
    m = summary["benchmarks"]["aime24"]
    assert m["pass@1"] == pytest.approx(1.25 / 3, abs=1e-6)
    assert m["pass@2"] == pytest.approx((5 / 6 + 5 / 6 + 1 / 2) / 3, abs=1e-6)
    assert m["maj@4"] == pytest.approx(2 / 3, abs=1e-6)
    assert m["no_answer_fraction"] == pytest.approx(1 / 12, abs=1e-6)
    assert summary["generations"] == str(gen) and summary["model"] is None
    assert [r["id"] for r in samples(run)] == ["p1", "p2", "line-3"]


@pytest.mark.integration
def test_rescore_grades_pre_extracted_answers_and_says_so(tmp_path, capsys):
    # Qwen2.5-Math's output format: gt, code (completions), pred (its extracted answers), score
    gen = tmp_path / "qwen.jsonl"
    rows = [
        {
            "idx": 0,
            "gt": "\\frac{3}{8}",
            "code": ["... so \\frac{3}{8}.", "\\boxed{1}"],
            "pred": ["\\frac{3}{8}", "1"],
            "score": [True, False],
        },
        {"idx": 1, "gt": "2", "code": ["x", "y"], "pred": ["2", "2.0"], "score": [True, True]},
    ]
    gen.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, text = cli(capsys, "eval", f"generations={gen}", "benchmark=math500", f"run_dir={tmp_path / 'a'}")
    assert code == 0, text
    text = " ".join(text.split())
    assert "pre-extracted answers" in text and "not read: score" in text  # which, and what was ignored
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["benchmarks"]["math500"]["pass@1"] == 0.75  # the file's own labels: 3 of 4
    assert "pre-extracted" in summary["settings"]["math500"]["answers_from"]
    code, text = cli(
        capsys,
        "eval",
        f"generations={gen}",
        "benchmark=math500",
        "rescore_from=completions",
        f"run_dir={tmp_path / 'b'}",
    )
    assert code == 0, text
    assert "extracted from the completions" in " ".join(text.split())
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["benchmarks"]["math500"]["pass@1"] == 0.25
    assert summary["benchmarks"]["math500"]["grading"] == {
        "answers": 4,
        "timeouts": 0,
        "errors": 0,
        "failure_rate": 0.0,
    }


@pytest.mark.integration
def test_grading_failures_past_the_limit_fail_the_run_in_one_line(tmp_path, capsys):
    gen = tmp_path / "gens.jsonl"
    gen.write_text(json.dumps({"gold": "x+1", "completions": ["\\boxed{(10^{7})!}", "\\boxed{x+1}"]}) + "\n")
    run = tmp_path / "run"
    code, text = cli(
        capsys,
        "eval",
        f"generations={gen}",
        "benchmark=math500",
        "grading.timeout_s=1",
        "grading.workers=0",
        f"run_dir={run}",
    )
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in text, text
    assert "grading timed out or failed on 1 of 2 answers" in errors[0] and "grading.max_failure_rate" in errors[0]
    g = json.loads((run / "summary.json").read_text())["benchmarks"]["math500"]["grading"]
    assert g["timeouts"] == 1 and g["answers"] == 2  # the results are kept, the count is in them
    code, text = cli(
        capsys,
        "eval",
        f"generations={gen}",
        "benchmark=math500",
        "grading.timeout_s=1",
        "grading.workers=0",
        "grading.max_failure_rate=0.5",
        f"run_dir={tmp_path / 'ok'}",
    )
    assert code == 0, text


@pytest.mark.integration
def test_rescore_takes_missing_golds_from_the_benchmark_by_id(shared_data, tmp_path, capsys):
    gen = tmp_path / "gens.jsonl"
    gen.write_text(json.dumps({"id": 60, "completions": ["so \\boxed{204}", "\\boxed{205}"]}) + "\n")
    code, text = cli(
        capsys,
        "eval",
        f"generations={gen}",
        "benchmark=aime24",
        f"data_dir={shared_data}",
        f"run_dir={tmp_path / 'run'}",
    )
    assert code == 0, text
    m = json.loads((tmp_path / "run" / "summary.json").read_text())["benchmarks"]["aime24"]
    assert m["pass@1"] == 0.5


def _bad_generations(tmp_path: Path) -> str:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"gold": "1", "completions": ["a"]}\n{"gold": "2", "complettions": ["b"]}\n')
    return f"generations={bad}"


def _own_test_set(tmp_path: Path) -> Path:
    path = tmp_path / "own.jsonl"
    path.write_text('{"q": "1+1?", "a": "2"}\n{"q": "2+2?", "a": "4"}\n')
    return path


def _good_generations(tmp_path: Path) -> str:
    good = tmp_path / "good.jsonl"
    good.write_text('{"gold": "5", "completions": ["\\\\boxed{5}"]}\n')
    return f"generations={good}"


@pytest.mark.integration
@pytest.mark.parametrize(
    "make_args, needle",
    [
        (lambda t: ["benchmark=nope"], "unknown benchmark 'nope'; valid: aime24"),
        (lambda t: ["benchmark=aime24,nope"], "unknown benchmark 'nope'; valid: aime24"),
        (lambda t: ["benchmark=math500", f"data_dir={t / 'missing'}"], "does not exist"),
        (
            lambda t: ["benchmark=math500", _bad_generations(t)],
            "bad.jsonl:2: no completions or answers (keys here: complettions, gold)",
        ),
        (lambda t: ["benchmark=math500", f"generations={t / 'none.jsonl'}"], "none.jsonl' does not exist"),
        (lambda t: ["protocol.tempreture=1"], "unknown key 'protocol.tempreture'; valid keys here:"),
        (lambda t: ["generation.backend=vlm"], "generation.backend='vlm'; valid: auto, hf, vllm"),
        (
            lambda t: ["benchmark=aime25", "benchmark.answer_style=boxd", _good_generations(t)],
            "benchmark.answer_style='boxd'; valid: auto, boxed, answer_line",
        ),
        (lambda t: ["grading.timeout_s=0"], "grading.timeout_s=0 must be at least 1"),
        (lambda t: ["grading.workers=-1"], "grading.workers=-1; valid: a number of processes"),
        (lambda t: ["limit=0"], "benchmark arithmetic: no problems to evaluate (limit=0)"),
        (lambda t: ["benchmark=data", f"data.path={t / 'none.jsonl'}", "data.source=file"], "does not exist"),
        (
            lambda t: [
                "benchmark=data",
                f"data.path={_own_test_set(t)}",
                "data.source=file",
                "data.problem_field=q",
                "data.answer_field=nope",
            ],
            "no row has field 'nope'; columns are: a, q",
        ),
        (lambda t: ["protocol.maj_ties=random"], "protocol.maj_ties='random'; valid: first, fractional"),
        (lambda t: ["grading.rel_tol=2"], "grading.rel_tol=2"),
        (lambda t: ["threads=0"], "threads=0; valid: a number of CPU threads"),
        (lambda t: [f"model.name_or_path={t / 'nowhere'}", "limit=1"], "nowhere: no such folder"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_run_dir(make_args, needle, tmp_path, capsys):
    run = tmp_path / "run"
    code, text = cli(capsys, "eval", *make_args(tmp_path), f"run_dir={run}")
    text = text.strip()
    assert code == 2
    assert needle in text and "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    assert not run.exists()


@pytest.mark.integration
def test_multirun_sweep_and_report(toy_model_dir, tmp_path, capsys):
    out = rlrecipes("eval", "-m", *EVAL_TINY, "limit=3", "seed=0,1", f"output_root={tmp_path}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    runs = sorted(p.parent for p in (tmp_path / "multirun").rglob("summary.json"))
    assert len(runs) == 2
    assert [json.loads((r / "summary.json").read_text())["seed"] for r in runs] == [0, 1]
    code, text = cli(capsys, "report", str(tmp_path / "multirun"))
    assert code == 0, text
    assert "arithmetic" in text and text.count("default") == 2
    code, text = cli(capsys, "report", str(tmp_path / "nope"))
    assert code == 2 and "no such run directory" in text


def test_report_refuses_a_summary_that_is_not_a_run(tmp_path):
    from rlrecipes.errors import UserError
    from rlrecipes.runs.report import comparison_table

    (tmp_path / "summary.json").write_text("[1, 2]")
    with pytest.raises(UserError, match="summary.json: not a run summary"):
        comparison_table([tmp_path])


class _FullDisk:
    """A text file whose writes run out of space after a few bytes (they do reach the disk)."""

    def __init__(self, file):
        self.file = file

    def write(self, text):
        self.file.write(text[:5])
        self.file.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def test_a_full_disk_is_one_line_and_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    """The disk fills while samples.jsonl is written: one line saying how to continue, and
    neither the half-written temporary file nor the appended half line breaks a resume."""
    import builtins

    from rlrecipes import rundir
    from rlrecipes.errors import StorageError
    from rlrecipes.eval.samples import ProblemRecord, SampleWriter, read_samples

    def open_on_a_full_disk(file, mode="r", *args, **kwargs):
        handle = builtins.open(file, mode, *args, **kwargs)
        return _FullDisk(handle) if Path(file).name == ".samples.jsonl.tmp" else handle

    gen = tmp_path / "gens.jsonl"
    gen.write_text(json.dumps({"id": "p1", "gold": "2", "completions": ["\\boxed{2}"]}) + "\n")
    run = tmp_path / "run"
    monkeypatch.setattr(rundir, "open", open_on_a_full_disk, raising=False)
    code, text = cli(capsys, "eval", f"generations={gen}", "benchmark=math500", f"run_dir={run}")
    error = one_error_line(text)
    assert code == 2 and f"cannot write {run / 'samples.jsonl'}: No space left on device" in error
    assert f"resume=true run_dir={run}" in error
    assert not (run / ".samples.jsonl.tmp").exists() and not run.exists()  # nothing was kept: the run is gone
    monkeypatch.undo()

    record = ProblemRecord("b", "1", "p", "p", "2", ["\\boxed{2}"])
    path = tmp_path / "kept" / "samples.jsonl"
    path.parent.mkdir()
    writer = SampleWriter(path, keep=[record])
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: _FullDisk(builtins.open(self, *a, **k)))
    with pytest.raises(StorageError, match="No space left on device; free space and rerun"):
        writer.write([ProblemRecord("b", "2", "q", "q", "3", ["x"])])
    monkeypatch.undo()
    assert read_samples(path) == [record]  # the torn appended line is dropped on resume
