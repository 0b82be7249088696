"""`rlrecipes judge-eval` / `judge-pairs`: mistakes fail with one line before any model loads."""

import pytest


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["judge-eval", "--model", "m", "--benchmark", "rewardbnch"],
            "error: --benchmark rewardbnch: unknown; valid: rewardbench, rm_bench",
        ),
        (
            ["judge-eval", "--model", "m", "--pairs", "p.jsonl", "--judge", "pairs"],
            "error: --judge='pairs'; valid: pairwise, pairwise_scores, pointwise",
        ),
        (
            ["judge-eval", "--model", "m", "--benchmark", "followbencheval"],
            "error: give --benchmark NAME or --pairs FILE_OR_HUB_ID (205 pairs",
        ),
        (
            ["judge-eval", "--model", "m", "--pairs", "missing/p.jsonl"],
            "error: data file missing/p.jsonl does not exist",
        ),
        (
            ["judge-pairs", "--model", "m", "--data", "arithmetic", "--out", "{existing}"],
            "error: {existing} already exists; pair files are never overwritten",
        ),
        (  # checked before the model loads or anything is sampled
            ["judge-pairs", "--model", "m", "--data", "arithmetic", "--out", "{unwritable}/pairs.jsonl"],
            "error: cannot write {unwritable}/pairs.jsonl: Permission denied in /sys; choose another --out",
        ),
        (
            ["judge-pairs", "--model", "m", "--data", "arithmetic", "--out", "{new}", "--samples", "1"],
            "error: --samples 1: a pair needs at least two samples",
        ),
    ],
)
def test_mistakes_fail_with_one_line(args, expected, tmp_path, capsys, monkeypatch, unwritable_dir):
    from rlrecipes.cli import main

    monkeypatch.chdir(tmp_path)
    existing = tmp_path / "pairs.jsonl"
    existing.write_text("")
    places = {"existing": existing, "new": tmp_path / "new.jsonl", "unwritable": unwritable_dir}
    args = [a.format(**places) for a in args]
    with pytest.raises(SystemExit) as exit:
        main(args)
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert exit.value.code == 2 and text.startswith(expected.format(**places)), text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.jsonl"]  # nothing created
