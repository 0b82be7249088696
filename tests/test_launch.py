"""The shipped accelerate configs: each one goes through accelerate's own launch-time
validation and environment set-up, and the plugin it asks for is built from that
environment as the training processes will build it."""

import os
from unittest import mock

import pytest

from rlrecipes.errors import UserError
from rlrecipes.launch import config_names, config_path


def launch_environment(name: str):
    """(parsed launch args, the ACCELERATE_* environment the launcher hands each process)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

    args = launch_command_parser().parse_args(["--config_file", str(config_path(name)), "-m", "rlrecipes.cli", "train"])
    args, defaults, mixed_precision_from_config = _validate_launch_command(args)
    if args.use_deepspeed:  # as accelerate's launch_command does before the DeepSpeed launcher
        fields = list(defaults.deepspeed_config) + (["mixed_precision"] if mixed_precision_from_config else [])
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        # a multi-machine config checks that its rendezvous port (29500) is free on this machine: a test
        # that only reads the environment must not depend on what else runs here (a gloo run, vLLM)
        with mock.patch("accelerate.utils.launch.is_port_in_use", return_value=False):
            _, env = prepare_deepspeed_cmd_env(args)
    else:
        env = prepare_multi_gpu_env(args)
    return args, {k: v for k, v in env.items() if k.startswith("ACCELERATE_") or k.startswith("FSDP_")}


def test_the_readme_names_are_shipped():
    assert config_names() == ["ddp", "fsdp", "multinode", "zero2", "zero3"]
    with pytest.raises(UserError, match="no accelerate config 'zero4'; shipped: ddp, fsdp"):
        config_path("zero4")


@pytest.mark.parametrize("name,stage", [("zero2", 2), ("zero3", 3), ("multinode", 3)])
def test_deepspeed_configs_build_their_plugin(name, stage):
    pytest.importorskip("deepspeed")
    from accelerate.utils import DeepSpeedPlugin

    args, env = launch_environment(name)
    assert args.use_deepspeed
    with mock.patch.dict(os.environ, env):
        plugin = DeepSpeedPlugin()
    assert plugin.zero_stage == stage
    assert plugin.deepspeed_config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] == (stage == 3)
    if name == "multinode":
        assert args.num_machines == 2 and args.num_processes == 16


def test_fsdp_config_builds_an_fsdp2_plugin_with_full_state_dict():
    from accelerate.utils import FullyShardedDataParallelPlugin

    args, env = launch_environment("fsdp")
    assert args.use_fsdp
    with mock.patch.dict(os.environ, env):
        plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2 and "FULL_STATE_DICT" in str(plugin.state_dict_type)


def test_ddp_config_is_multi_process_data_parallel():
    args, env = launch_environment("ddp")
    assert args.multi_gpu and not args.use_deepspeed and not args.use_fsdp and args.num_processes == 8
    assert env["ACCELERATE_MIXED_PRECISION"] == "no"  # precision is trainer.bf16's, so the file works on CPUs too
