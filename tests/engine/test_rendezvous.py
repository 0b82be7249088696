"""rendezvous: a one-process run's colocated vLLM engine meets on a port of its own."""

import os
from types import SimpleNamespace

import pytest
from trl.trainer.utils import ensure_master_addr_port

from rlrecipes.engine.rendezvous import own_port_for_colocated_engine

COLOCATED = SimpleNamespace(use_vllm=True, vllm_mode="colocate")
TRL_FIXED_PORTS = {"29500", "23456", "12355", "12345"}  # TRL 1.16's _find_free_port candidates


@pytest.fixture
def env(monkeypatch):
    for name in ("MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("asked", [None, "", "0", "auto", "abc"])  # TRL chooses from its list for each
def test_a_one_process_colocated_run_meets_on_a_port_the_os_assigned(env, asked):
    if asked is not None:
        env.setenv("MASTER_PORT", asked)
    own_port_for_colocated_engine(COLOCATED)
    ensure_master_addr_port()  # what TRL calls next: it keeps a port that is set
    # without it TRL takes 29500 (or the next of its fixed list), which runs started together share
    assert os.environ["MASTER_PORT"] not in TRL_FIXED_PORTS
    assert 0 < int(os.environ["MASTER_PORT"]) < 65536


@pytest.mark.parametrize(
    "args, world, port",
    [
        (COLOCATED, "1", "29512"),  # the launcher's port
        (COLOCATED, "2", None),  # ranks of a launch must share one port: not this run's to choose
        (COLOCATED, "abc", None),  # a WORLD_SIZE no one can read: no guess, and no error here
        (SimpleNamespace(use_vllm=True, vllm_mode="server"), None, None),  # the server has its own
        (SimpleNamespace(use_vllm=False, vllm_mode="colocate"), None, None),  # transformers rollouts
    ],
)
def test_any_other_run_is_left_as_it_is(env, args, world, port):
    if world:
        env.setenv("WORLD_SIZE", world)
    if port:
        env.setenv("MASTER_PORT", port)
    own_port_for_colocated_engine(args)
    assert os.environ.get("MASTER_PORT") == port
