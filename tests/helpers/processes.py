"""Processes in a test: launching the CLI on several (`accelerate launch` with the packaged DDP
config, gloo on a CPU, on a free port, as a user's `accelerate launch --config_file
$(rlrecipes launch-config ddp)` does), and whether one still runs."""

from __future__ import annotations

from pathlib import Path

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


def alive(pid: int) -> bool:
    """`pid` runs (a zombie no parent has reaped yet has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
