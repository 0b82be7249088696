"""The metrics log's writer (engine/progress.py) continuing a run from its checkpoint."""

import json

from rlrecipes.engine.progress import MetricsWriter


def test_resuming_keeps_the_checkpoints_steps_and_passes_over_records_without_a_number_step(tmp_path):
    # a log edited by hand or joined: steps "3", null and true are no steps of the checkpoint's
    path = tmp_path / "metrics.jsonl"
    lines = [{"step": 1, "num_tokens": 10.0}, {"step": "3"}, {"step": None}, {"step": True}, {"event": "x"}]
    lines += [{"step": 2, "num_tokens": 20.0}, {"step": 3, "num_tokens": 30.0}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"step": 4, "lo')  # a torn last line
    writer = MetricsWriter(path)
    writer.resume_at(2, rewrite=True)
    kept = [{"step": 1, "num_tokens": 10.0}, {"step": 2, "num_tokens": 20.0}]
    assert writer.rows == kept and writer._last_tokens == 20.0
    assert [json.loads(line) for line in path.read_text().splitlines()] == kept
