"""`rlrecipes sft`: completion-only loss, training that lowers the loss on its rows, a model
that `rlrecipes train` starts from (a LoRA adapter included), one-line field-mapping errors,
an exact resume, and refusing an unfinished stage's model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlrecipes.errors import UserError
from tests.conftest import TINY, compose

QUIET = lambda _: None  # noqa: E731


def sft_cfg(*overrides: str):
    from rlrecipes.compose import compose_config

    return compose_config("sft", [*TINY, "trainer.cpu_threads=1", *overrides])


def _cli(capsys, *args: str) -> tuple[int, str]:
    from rlrecipes.cli import main

    with pytest.raises(SystemExit) as exit:
        main(list(args))
    out = capsys.readouterr()
    return exit.value.code or 0, out.out + out.err


def _completion_loss(model_dir: Path, rows: list[dict], cfg) -> float:
    """Token-mean cross-entropy on the completion tokens of `rows` (SFTTrainer's objective)."""
    import torch

    from rlrecipes.data.sft_examples import tokenize_examples
    from rlrecipes.models import load_model

    model, tok = load_model(str(model_dir), cfg.model)
    seqs = tokenize_examples(rows, cfg.data, tok, 1024).rows
    width = max(len(s["input_ids"]) for s in seqs)
    ids = torch.full((len(seqs), width), tok.pad_token_id)
    labels = torch.full((len(seqs), width), -100)
    attention = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        n = len(s["input_ids"])
        ids[i, :n] = torch.tensor(s["input_ids"])
        labels[i, :n] = torch.tensor([t if m else -100 for t, m in zip(s["input_ids"], s["completion_mask"])])
        attention[i, :n] = 1
    with torch.no_grad():
        return float(model(input_ids=ids, attention_mask=attention, labels=labels).loss)


@pytest.mark.integration
def test_the_loss_is_on_the_completion_and_its_eos_only(toy_model_dir, tmp_path):
    """By hand, with the toy's character tokenizer: the prompt as `rlrecipes train` renders it
    (chat template: <|user|>12+3<|assistant|>) is masked, the completion and EOS are targets."""
    from rlrecipes.data.sft_examples import tokenize_examples
    from rlrecipes.models import load_model
    from rlrecipes.training.sft import build_trainer
    from rlrecipes.training.sft_plan import check_sft

    cfg = sft_cfg()
    model, tok = load_model(str(toy_model_dir), cfg.model)

    def ids(*parts: str) -> list[int]:
        return [tok.convert_tokens_to_ids(t) for p in parts for t in ([p] if p.startswith("<|") else list(p))]

    rows = tokenize_examples([{"id": "0", "prompt": "12+3", "completion": "Answer: 15"}], cfg.data, tok, 64).rows
    prompt, completion = ids("<|user|>", "12+3", "<|assistant|>"), ids("Answer: 15", "<|eos|>")
    assert rows[0]["input_ids"] == prompt + completion and len(prompt) == 6 and len(completion) == 11

    trainer, _, _ = build_trainer(cfg, tmp_path, check_sft(cfg, tmp_path), model, tok, rows, [], {}, QUIET)
    assert trainer.train_dataset[0]["labels"] == [-100] * 6 + completion
    everything = sft_cfg("sft.completion_only_loss=false")
    trainer, _, _ = build_trainer(
        everything, tmp_path, check_sft(everything, tmp_path), model, tok, rows, [], {}, QUIET
    )
    assert trainer.train_dataset[0]["labels"] == prompt + completion


@pytest.mark.integration
def test_sft_lowers_the_completion_loss_of_its_training_rows(toy_model_dir, tmp_path):
    """Full-batch steps (8 rows, batch 8) at a small learning rate descend the one fixed
    objective they compute: its value on those rows falls. Deterministic: no dropout, seed 0."""
    from rlrecipes.data.sft_examples import load_sft_data
    from rlrecipes.training.sft import sft

    cfg = sft_cfg(
        "data.max_examples=8",
        "data.max_eval_examples=8",
        "sft.batch_size=8",
        "trainer.micro_batch_size=8",
        "trainer.max_steps=4",
        "trainer.learning_rate=1e-4",
        "trainer.checkpoints.every=null",
    )
    run = tmp_path / "run"
    run.mkdir()
    summary = sft(cfg, run, log=QUIET)
    rows = load_sft_data(cfg.data).train
    before, after = _completion_loss(toy_model_dir, rows, cfg), _completion_loss(run / "model", rows, cfg)
    assert after < before, (before, after)
    assert summary["steps"] == 4 and summary["num_train_examples"] == 8
    assert summary["model"] == str(toy_model_dir) and (run / "summary.json").is_file()
    assert summary["loss_before"] is not None and summary["accuracy_before"] is not None  # held-out, measured


@pytest.mark.integration
def test_a_lora_sft_model_starts_rl_training(toy_model_dir, tmp_path):
    """RUN/model of a LoRA SFT run is an adapter; `rlrecipes train model.name_or_path=RUN/model`
    merges it and trains every weight (peft had frozen them for the adapter)."""
    from rlrecipes.training.job import train
    from rlrecipes.training.sft import sft

    run = tmp_path / "sft"
    run.mkdir()
    sft(sft_cfg("model.lora.r=4", "trainer.max_steps=2", "trainer.checkpoints.every=null"), run, log=QUIET)
    adapter = json.loads((run / "model" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(toy_model_dir)
    rl = tmp_path / "rl"
    rl.mkdir()
    summary = train(compose(f"model.name_or_path={run / 'model'}", "trainer.eval.before=false"), rl, log=QUIET)
    assert summary["steps"] == 2 and summary["model"] == str(run / "model")
    assert summary["saved_model"]["adapter"] is False  # full fine-tuning of the merged model


@pytest.mark.integration
def test_an_unmapped_field_is_one_line_naming_the_key(toy_model_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    data = tmp_path / "traces.jsonl"
    data.write_text(
        "".join(json.dumps({"question": f"{i}+1", "solution": f"Answer: {i + 1}"}) + "\n" for i in range(3))
    )
    run = tmp_path / "run"
    common = [
        "data.source=file",
        f"data.path={data}",
        "data.problem_field=question",
        f"model.name_or_path={toy_model_dir}",
    ]
    code, out = _cli(capsys, "sft", f"run_dir={run}", *common, "data.completion_field=answer_text")
    assert code == 2, out
    assert out.strip().splitlines()[-1] == (
        f"error: data.completion_field='answer_text': no row of {data} has it; its columns are: question, solution"
    )
    assert not run.exists()  # nothing of the failed start is left
    code, out = _cli(capsys, "sft", "--dry-run", *common)  # no completion field at all: refused before loading
    assert code == 2 and out.strip().startswith("error: SFT data needs its target text: data.completion_field=COLUMN")


@pytest.mark.integration
def test_resume_continues_an_interrupted_run_exactly(toy_model_dir, tmp_path, capsys):
    """A copy of a finished 4-step run cut back to its step-2 checkpoint (what a kill after
    step 3 leaves) resumes to the same weights: optimizer, schedule and data position restored."""
    from safetensors.torch import load_file

    settings = [
        f"model.name_or_path={toy_model_dir}",
        "data.max_examples=16",
        "data.max_eval_examples=4",
        "sft.batch_size=4",
        "trainer.micro_batch_size=4",
        "trainer.max_steps=4",
        "trainer.checkpoints.every=2",
        "trainer.checkpoints.keep_last=null",
        "trainer.learning_rate=1e-3",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    ]
    whole = tmp_path / "whole"
    code, out = _cli(capsys, "sft", f"run_dir={whole}", *TINY, *settings)
    assert code == 0 and (whole / "checkpoints" / "checkpoint-2").is_dir(), out
    cut = tmp_path / "cut"
    shutil.copytree(whole, cut)
    for path in (cut / "model", cut / "checkpoints" / "checkpoint-4"):
        shutil.rmtree(path)
    (cut / "summary.json").unlink()
    code, out = _cli(capsys, "sft", "resume=true", f"run_dir={cut}")
    assert code == 0, out
    assert "(step 2)" in " ".join(out.split()) and "checkpoint-2" in (cut / "resumes.log").read_text()
    steps = [json.loads(line)["step"] for line in (cut / "metrics.jsonl").read_text().splitlines()]
    assert [s for s, line in zip(steps, (cut / "metrics.jsonl").read_text().splitlines()) if '"loss"' in line] == [
        1,
        2,
        3,
        4,
    ]
    a, b = load_file(whole / "model" / "model.safetensors"), load_file(cut / "model" / "model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    code, out = _cli(capsys, "sft", "resume=true", f"run_dir={cut}")
    assert code == 2 and "finished already" in out


def test_an_unfinished_stage_model_is_refused_before_loading(tmp_path):
    from rlrecipes.training.sft_plan import check_input_model

    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "model" / "config.json").write_text("{}")
    with pytest.raises(UserError, match="has not finished \\(no summary.json\\), so the model may be half-written"):
        check_input_model(str(run / "model"))
    (run / "summary.json").write_text("{}")
    check_input_model(str(run / "model"))  # finished: accepted
    (run / "model" / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(UserError, match="model.safetensors is damaged"):
        check_input_model(str(run / "model"))
    with pytest.raises(UserError, match="holds no model"):
        check_input_model(str(tmp_path))


def test_chat_rows_train_on_the_last_assistant_turn_and_long_rows_are_counted(tmp_path):
    """Chat format by hand: the turns before the last are the prompt (with data.system_prompt
    first), the last assistant turn + EOS the completion; a row over sft.max_length is left
    out and named, not truncated; a chat without a final assistant turn is left out and counted."""
    from rlrecipes.data.sft_examples import load_sft_data, tokenize_examples
    from rlrecipes.models.toy import build_tokenizer

    data = tmp_path / "chats.jsonl"
    chats = [
        [{"role": "user", "content": "1+1"}, {"role": "assistant", "content": "Answer: 2"}],
        [{"role": "user", "content": "10+10"}, {"role": "assistant", "content": "Answer: 20"}],
        [{"role": "user", "content": "no reply"}],
    ]
    data.write_text("".join(json.dumps({"id": f"c{i}", "chat": c}) + "\n" for i, c in enumerate(chats)))
    cfg = sft_cfg("data.source=file", f"data.path={data}", "data.messages_field=chat", "data.id_field=id")
    cfg.data.system_prompt = "S"
    loaded = load_sft_data(cfg.data)
    assert [ex["id"] for ex in loaded.train] == ["c0", "c1"]
    assert "2 examples from" in loaded.report and "1 rows left out: row 2 (chat does not end with an assistant" in (
        loaded.report
    )
    tok = build_tokenizer()

    def ids(*parts: str) -> list[int]:
        return [tok.convert_tokens_to_ids(t) for p in parts for t in ([p] if p.startswith("<|") else list(p))]

    # <|system|>S<|user|>1+1<|assistant|> = 7 tokens, Answer: 2<|eos|> = 10: 17 in all (c1: 9 + 11)
    out = tokenize_examples(loaded.train, cfg.data, tok, max_length=17)
    assert out.rows[0]["input_ids"] == ids(
        "<|system|>", "S", "<|user|>", "1+1", "<|assistant|>", "Answer: 2", "<|eos|>"
    )
    assert out.rows[0]["completion_mask"] == [0] * 7 + [1] * 10
    assert len(out.rows) == 1 and out.too_long == ["c1"]
    assert out.report("sft.max_length", 17) == "1 rows longer than sft.max_length=17 tokens left out: c1"

    # the same chat as a prompt column of messages + a completion column (OpenRLHF's input_key/output_key)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"ctx": [{"role": "system", "content": "S"}, *chats[0][:1]], "out": "Answer: 2"}) + "\n"
    )
    split = sft_cfg("data.source=file", f"data.path={pairs}", "data.problem_field=ctx", "data.completion_field=out")
    assert tokenize_examples(load_sft_data(split.data).train, split.data, tok, 17).rows == out.rows


# ------------------------------------------------------------------ epochs and RM-R1's rows
def _rm_r1_rows(path: Path, n: int) -> Path:
    """Rows in the shape of gaotang/RM-R1-Distill-SFT as the authors' script reads them
    (--input_key context_messages: a chat; --output_key winner: the trace, a string)."""
    rows = [
        {
            "context_messages": [{"role": "system", "content": "S"}, {"role": "user", "content": f"{i}+1"}],
            "winner": f"Answer: {i + 1}",
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_epoch_steps_count_the_partial_last_batch_of_each_pass():
    from rlrecipes.training.sft_plan import epoch_steps

    assert epoch_steps(5, 2, 1) == 3  # 2 + 2 + 1 rows
    assert epoch_steps(4, 2, 1.5) == 3  # 6 rows at 2 per step
    assert epoch_steps(1, 128, 1) == 1  # RM-R1's batch of 128 on one row: one (partial) step


def test_epochs_are_checked_before_anything_loads():
    from rlrecipes.errors import ConfigError
    from rlrecipes.training.sft_plan import check_sft

    with pytest.raises(ConfigError, match=r"sft.epochs=0.0 must be above 0 \(or null"):
        check_sft(sft_cfg("sft.epochs=0"), hardware=False)


def test_the_rm_r1_preset_maps_context_messages_to_the_prompt_and_winner_to_the_completion(tmp_path):
    """The distillation preset's field mapping on a local file of RM-R1-shaped rows, by hand
    with the toy's character tokenizer: the chat (system + user) through the chat template is
    the masked prompt; the winner text + EOS is the completion."""
    from rlrecipes.data.sft_examples import load_sft_data, tokenize_examples
    from rlrecipes.models.toy import build_tokenizer

    data = _rm_r1_rows(tmp_path / "rm_r1.jsonl", 1)
    cfg = sft_cfg("sft_experiment=rm_r1_distill_qwen2_5_7b_instruct", "data.source=file", f"data.path={data}")
    loaded = load_sft_data(cfg.data)
    assert loaded.train[0]["prompt"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "0+1"}]
    assert loaded.train[0]["completion"] == "Answer: 1"
    tok = build_tokenizer()
    row = tokenize_examples(loaded.train, cfg.data, tok, cfg.sft.max_length).rows[0]
    prompt = ["<|system|>", "S", "<|user|>", "0", "+", "1", "<|assistant|>"]
    completion = [*"Answer: 1", "<|eos|>"]
    assert row["input_ids"] == tok.convert_tokens_to_ids(prompt + completion)
    assert row["completion_mask"] == [0] * 7 + [1] * 10


@pytest.mark.integration
def test_an_epochs_run_trains_ceil_epochs_x_rows_over_batch_steps(toy_model_dir, tmp_path):
    """2 epochs of 3 RM-R1-shaped rows at 2 rows per step: ceil(6 / 2) = 3 optimizer steps,
    whatever trainer.max_steps says."""
    from rlrecipes.training.sft import sft

    data = _rm_r1_rows(tmp_path / "rm_r1.jsonl", 3)
    cfg = sft_cfg(
        f"model.name_or_path={toy_model_dir}",
        "data.source=file",
        f"data.path={data}",
        "data.problem_field=context_messages",
        "data.completion_field=winner",
        "sft.epochs=2",
        "sft.batch_size=2",
        "trainer.micro_batch_size=2",
        "trainer.max_steps=50",
        "trainer.checkpoints.every=null",
    )
    run = tmp_path / "run"
    run.mkdir()
    summary = sft(cfg, run, log=QUIET)
    assert (summary["steps"], summary["max_steps"], summary["num_train_examples"]) == (3, 3, 3)
