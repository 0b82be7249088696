"""`rlrecipes eval -m` checks every job of the sweep before the first starts, like `train -m`."""

import pytest


@pytest.mark.integration
def test_an_eval_sweep_with_one_bad_point_stops_before_any_job(capsys, tmp_path, monkeypatch):
    from rlrecipes.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit:
        main(["eval", "-m", "threads=1,0", "benchmark=arithmetic", f"output_root={tmp_path / 'runs'}"])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert exit.value.code == 2
    assert text == "error: threads=0: threads=0; valid: a number of CPU threads (at least 1), or null", text
    assert list(tmp_path.iterdir()) == []  # no job ran: no run directory, no Hydra output folder
