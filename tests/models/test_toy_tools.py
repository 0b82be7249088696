"""The tool toys' warm-start loss: the model's own segments and the end of sequence are
targets; the prompt and every tool result are context only (counted by hand with the toy's
one-token-per-character tokenizer)."""

from types import SimpleNamespace

import torch

from rlrecipes.models.toy import build_tokenizer
from rlrecipes.models.toy_tools import segment_loss


class Capture:
    def __call__(self, input_ids, attention_mask, labels):
        self.ids, self.mask, self.labels = input_ids, attention_mask, labels
        return SimpleNamespace(loss=torch.tensor(0.0))


def test_tool_results_and_prompts_are_never_targets():
    tok = build_tokenizer()
    prompt = tok.encode("Q?", add_special_tokens=False)
    segments = [("<c>1+1</c>", True), ("<r>2</r>", False), ("<a>2</a>", True)]
    short = [("<a>9</a>", True)]
    model = Capture()
    segment_loss(model, tok, [prompt, prompt], [segments, short])
    row, labels = model.ids[0].tolist(), model.labels[0].tolist()
    text = "Q?<c>1+1</c><r>2</r><a>2</a>"
    assert tok.decode(row[: len(text)]) == text and row[len(text)] == tok.eos_token_id
    trained = [label != -100 for label in labels]
    #           prompt       model call      tool result    model answer   EOS
    assert trained == [False] * 2 + [True] * 10 + [False] * 8 + [True] * 8 + [True]
    assert [label for label in labels if label != -100] == row[2:12] + row[20:29]
    # the shorter row is right-padded, its padding neither attended nor trained
    width = len(row)
    assert model.mask[1].tolist() == [1] * 11 + [0] * (width - 11)
    assert model.labels[1].tolist()[:11] == [-100] * 2 + model.ids[1].tolist()[2:11]
    assert model.labels[1].tolist()[11:] == [-100] * (width - 11)
