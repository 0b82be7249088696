"""`rlrecipes` with a scripted reward registered: the entry point of the multi-process tests.

`scripted_groups` scores a completion from its prompt and its position in the group only,
never from its sampled text, so which groups are mixed is the same whatever the process
count or the sampling noise: prompts whose CRC32 is divisible by 3 get one completion
right (a mixed group), the others none (a uniform group).
"""

import sys
import zlib

from rlrecipes.rewards import register_reward

GROUP = 4  # must equal trainer.num_generations in the tests


@register_reward("scripted_groups", needs_answer=False)
def scripted_groups(ctx):
    def reward(prompts, completions, **columns):
        return [1.0 if zlib.crc32(p.encode()) % 3 == 0 and i % GROUP == 0 else 0.0 for i, p in enumerate(prompts)]
    return reward


if __name__ == "__main__":
    from rlrecipes.cli import main

    main(sys.argv[1:])
