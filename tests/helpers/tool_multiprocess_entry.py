"""`rlrecipes` with a scripted generation in place of sampling, for the 2-process tool test.

On rank 0 every rollout calls the calculator once and then stops; on rank 1 every rollout
stops at once. Each `generate` call's row count is appended to
$RLRECIPES_TOOL_CALLS/calls-<rank>.txt, so the test can compare the calls of both ranks.
"""

import os
import sys

from trl import GRPOTrainer


def scripted(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
    tok = self.processing_class
    rank = self.accelerator.process_index
    with open(os.path.join(os.environ["RLRECIPES_TOOL_CALLS"], f"calls-{rank}.txt"), "a") as handle:
        handle.write(f"{len(prompt_ids)}\n")
    out = []
    for ids in prompt_ids:
        if rank == 0 and "<calculator>" not in tok.decode(ids):
            out.append(tok.encode("<calculator>1+1</calculator>", add_special_tokens=False))
        else:
            out.append([tok.eos_token_id])
    return out, None


if __name__ == "__main__":
    from rlrecipes.cli import main

    GRPOTrainer._generate_single_turn = scripted
    main(sys.argv[1:])
