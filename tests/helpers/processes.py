"""Launching the CLI on several processes in a test: `accelerate launch` with the packaged DDP
config (gloo on a CPU) on a free port, as a user's `accelerate launch --config_file
$(rlrecipes launch-config ddp)` does."""

from __future__ import annotations

from rlrecipes.engine.rendezvous import free_port


def accelerate_launcher(processes: int) -> list[str]:
    """The `python` arguments before the entry script: accelerate for `processes` > 1, none for one."""
    from rlrecipes.launch import config_path

    if processes <= 1:
        return []
    return [
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(config_path("ddp")),
        "--num_processes",
        str(processes),
        "--main_process_port",
        str(free_port()),
    ]
