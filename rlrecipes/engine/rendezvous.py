"""A rendezvous port of its own for a one-process run's colocated vLLM engine.

TRL builds the colocated engine with vLLM's `external_launcher` backend, which meets at
MASTER_ADDR:MASTER_PORT (`torch.distributed`'s env:// rendezvous). A launcher (accelerate, torchrun,
the Slurm launcher) sets the port for its processes; a one-process run has none, and TRL 1.16's
`ensure_master_addr_port` then takes the first of a fixed list (29500, 23456, ...) that is free when it
looks. Runs that start together on one machine (a sweep on Hydra's joblib launcher) look before any
of them binds it, take the same port, and all but one die at start-up with `EADDRINUSE`. A port the
operating system assigns (bind to port 0) is another for each run that asks at the same time.
"""

from __future__ import annotations

import os
import socket
from typing import Any


def own_port_for_colocated_engine(args: Any) -> None:
    """Set MASTER_PORT to a free port the OS assigns, for a one-process run whose rollouts come
    from TRL's colocated vLLM engine and whose launcher set no port (nor 0, auto or a value that is no number, which TRL reads as
    none); leave every other run as it is (a multi-process run's ranks must share their launcher's port)."""
    if not (getattr(args, "use_vllm", False) and getattr(args, "vllm_mode", None) == "colocate"):
        return
    if os.environ.get("WORLD_SIZE", "1").strip() not in ("", "1"):
        return  # a launch's ranks (or a WORLD_SIZE torch cannot read either): not this run's to choose
    # TRL reads no port, 0, auto, or one that is not a number alike: it chooses from its list
    if _port(os.environ.get("MASTER_PORT", "")) is None:
        os.environ["MASTER_PORT"] = str(free_port())


def _port(value: str) -> int | None:
    try:
        port = int(value.strip())
    except ValueError:
        return None
    return port or None


def free_port() -> int:
    """A TCP port free now, chosen by the operating system (its ephemeral range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
