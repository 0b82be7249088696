"""The Hugging Face Hub without a network: detected once, then no retries.

Without a connection, transformers and datasets retry every request with back-off (about
25-60 s of "Retrying in 8s" lines per file) before they fail. Before the first request to
the hub a process asks once whether the hub's host answers (a TCP connection, 3 s at most);
if not, it switches the Hugging Face libraries to offline mode for the rest of the process
and its children (`HF_HUB_OFFLINE=1`), so a cached model still loads at once and a missing
one fails at once, with one line that says what to do. `HF_HUB_OFFLINE=1` set by the user is
respected as it is: no probe at all.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

from rlrecipes.errors import UserError

PROBE_TIMEOUT_S = 3.0
_TRUE = ("1", "true", "yes", "on")


def _offline_by_user() -> bool:
    return any(os.environ.get(k, "").lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


_probed: dict[str, str | None] = {}  # the one answer of this process


def offline_reason(log: Callable[[str], None] | None = None) -> str | None:
    """Why the hub cannot be reached (offline mode is then on), or None when it answers. Asked
    once per process; the first call's `log` (else stderr) hears the line that says offline
    mode was switched on."""
    if "reason" not in _probed:
        _probed["reason"] = reason = _probe()
        if reason is not None and not _offline_by_user():
            go_offline()
            note = f"{reason}; using the local Hugging Face cache only (HF_HUB_OFFLINE=1)"
            log(note) if log is not None else print(note, file=sys.stderr, flush=True)
    return _probed["reason"]


def _probe() -> str | None:
    if _offline_by_user():
        return "HF_HUB_OFFLINE=1"
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None  # only the proxy can tell; the libraries' own errors then speak
    url = urlparse(endpoint())
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
        return None
    except OSError as exc:
        return f"no network: {host}:{port} did not answer ({exc.strerror or type(exc).__name__})"


def go_offline() -> None:
    """Offline mode for huggingface_hub, transformers and datasets in this process (they read the
    constant at each request) and in the processes it starts (vLLM's engine, grading workers)."""
    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    import huggingface_hub.constants

    huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        import datasets.config

        datasets.config.HF_HUB_OFFLINE = True
    except ImportError:
        pass


def is_local(name_or_path: str) -> bool:
    return Path(str(name_or_path)).expanduser().exists()


def check_model_available(
    name_or_path: str, key: str = "model.name_or_path", log: Callable[[str], None] | None = None
) -> None:
    """A hub id that is not in the local cache while the hub cannot be reached fails here, in
    one line, instead of after the libraries' retries or inside vLLM's engine."""
    if is_local(name_or_path):
        return
    reason = offline_reason(log)
    if reason is None:
        return
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(str(name_or_path), "config.json")
    except ValueError:  # not a valid repo id either
        cached = None
    if not isinstance(cached, str):
        raise UserError(
            f"{key}={name_or_path} is not in the local Hugging Face cache and the hub cannot be reached "
            f"({reason}): download it where there is network (`hf download {name_or_path}`) or pass a "
            "local model folder"
        )
