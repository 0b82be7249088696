"""`rlrecipes` whose colocated vLLM engine samples under a logit bias, for the vLLM tool-loop test.

$RLRECIPES_TEST_LOGIT_BIAS is "token_id:bias"; the bias is added to every vLLM sampling call
(TRL's `VLLMGeneration.generation_kwargs` reach `SamplingParams`). A large bias on one token
makes every rollout write that token over and over, whatever the toy model learned, so the
test knows in advance where each turn stops.

TRL starts the engine with `logprobs_mode="processed_logprobs"` (the log-probs of the
distribution sampled from, which here includes the bias); this entry starts it with
`raw_logprobs`, the model's own, which is what the trainer computes at temperature 1, so the
vLLM/trainer log-prob gap still measures the sync and the tool mask, not the bias.
"""

import os
import sys

from trl.generation import vllm_generation


def biased(init):
    def wrapped(self, *args, **kwargs):
        init(self, *args, **kwargs)
        token, bias = os.environ["RLRECIPES_TEST_LOGIT_BIAS"].split(":")
        self.generation_kwargs = {**self.generation_kwargs, "logit_bias": {int(token): float(bias)}}

    return wrapped


def raw_logprobs(llm):
    def build(*args, **kwargs):
        return llm(*args, **{**kwargs, "logprobs_mode": "raw_logprobs"})

    return build


if __name__ == "__main__":
    from rlrecipes.cli import main

    vllm_generation.VLLMGeneration.__init__ = biased(vllm_generation.VLLMGeneration.__init__)
    vllm_generation.LLM = raw_logprobs(vllm_generation.LLM)
    main(sys.argv[1:])
