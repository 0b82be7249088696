"""`EngineGRPOConfig`: TRL's GRPOConfig with the settings `RecipeGRPOTrainer` adds.

A module of its own so that `grpo_args.py`, the mapping onto it, imports TRL only when
`build_grpo_config` builds one: every recipe module imports `grpo_args` (`check_recipe_fields`),
and listing the recipes or composing a config loads no TRL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from trl import GRPOConfig


@dataclass
class EngineGRPOConfig(GRPOConfig):
    """TRL's GRPOConfig plus the settings `RecipeGRPOTrainer` adds (a module-level class, so
    the config pickles into every checkpoint's training_args.bin like TRL's own)."""

    scheduler_steps: Optional[int] = field(
        default=None, metadata={"help": "Length of the LR schedule in optimizer steps; None = max_steps."}
    )
    loss_without_old_logps: bool = field(
        default=False,
        metadata={
            "help": "Old log-probs taken as 0 in the loss, so the ratio pi/pi_old becomes pi "
            "(Spurious Rewards' --use_policy_loss_wo_old_log_probs, with epsilon=inf)."
        },
    )
    sequence_token_ratio: bool = field(
        default=False,
        metadata={
            "help": "GSPO-token's ratio (engine/gspo_token.py): TRL's token-level ratio with the value of "
            "the completion's sequence ratio and each token's own gradient."
        },
    )
    policy_shift_every: int = field(
        default=0,
        metadata={"help": "Log policy_shift (engine/policy_shift.py) every N optimizer steps; 0 = never."},
    )
    policy_shift_rows: int = field(
        default=0,
        metadata={
            "help": "The rows of the micro-batch policy_shift's passes take, evenly spaced; 0 = all (cheaper "
            "with a cap, and noisier: the doctor's step-size check finds too-large steps later)."
        },
    )
