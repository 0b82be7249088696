r"""`python`: run the model's program in the sandbox (tools/sandbox.py) and show it the output.

Opt-in (`rollout.tools=[python]`): it is the one place where model text is executed, and
only inside the sandbox. The default tag pair is ReTool-like (`<python>` ... `</python>`,
output in `<output>` ... `</output>`). Markdown code fences work too: with `open` equal to
`close` ("```") the call is a fenced block whose first line is the fence's info string,
"py", "python" or nothing, as SimpleTIR's code pattern ```` ```(?:py|python)?\n(.*?)\n``` ````
(ltzheng/SimpleTIR recipe/simpletir/agent_utils.py:570); its results read
"\nCode execution result: ...\n" (agent_utils.py:631). A program that fails, times out or
prints past the cap is a tool error whose text (the traceback's tail, or what happened) the
model reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlrecipes.errors import ConfigError
from rlrecipes.tools import ToolFailure, ToolSpec, cancellation, register_tool
from rlrecipes.tools.sandbox import SandboxLimits, run_python, sandbox_interpreter


@dataclass
class PythonOptions:
    open: str = "<python>"
    close: str = "</python>"
    wrap: str = "<output>{}</output>"
    # the sandbox's limits (tools/sandbox.py, SandboxLimits); rollout.tool_timeout_s must be
    # at least wall_s, so a call is ended by its own limit rather than given up on
    wall_s: float = 5.0
    cpu_s: int = 3
    memory_mb: int = 512  # address space of each process
    output_bytes: int = 4096
    processes: int = 32
    disk_mb: int = 64  # /sandbox, /tmp, /var/tmp and /dev/shm together

    def __post_init__(self) -> None:  # checked with the other settings, before anything loads
        for key in ("wall_s", "cpu_s", "memory_mb", "output_bytes", "processes", "disk_mb"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"rollout.tool_kwargs.python.{key}={value!r} must be a positive number")
        if self.processes < 2:  # the sandbox's init (bwrap) counts as one
            raise ConfigError(f"rollout.tool_kwargs.python.processes={self.processes} must be at least 2")


FENCE_LANGUAGES = ("", "py", "python")  # SimpleTIR's ```(?:py|python)?\n (agent_utils.py:570)


def fenced_code(call: str) -> str:
    """The program in a markdown fence's call text, whose first line is the info string."""
    info, _, code = call.partition("\n")
    if info.strip() not in FENCE_LANGUAGES:
        raise ToolFailure(f"not a Python block (```{info.strip()}); write ```python")
    return code


@register_tool("python", PythonOptions)
def python_tool(options: PythonOptions) -> ToolSpec:
    sandbox_interpreter()  # refuse now, with one line, where the sandbox cannot be made
    limits = SandboxLimits(
        wall_s=options.wall_s,
        cpu_s=options.cpu_s,
        memory_mb=options.memory_mb,
        output_bytes=options.output_bytes,
        processes=options.processes,
        disk_mb=options.disk_mb,
    )

    fenced = options.open == options.close  # a markdown fence: "```" opens and closes

    def run(code: str) -> str:
        result = run_python(fenced_code(code) if fenced else code, limits, cancellation())
        if result.cancelled:
            raise ToolFailure("stopped: the caller gave up on the call")
        if result.timed_out:
            raise ToolFailure(f"timed out after {limits.wall_s:g} s\n{result.output}".rstrip())
        if result.output_capped:
            raise ToolFailure(f"output past {limits.output_bytes} bytes; stopped\n{result.output}")
        if result.exit_code != 0:
            raise ToolFailure(result.output.strip() or f"exit status {result.exit_code}")
        return result.output

    return ToolSpec("python", options.open, options.close, options.wrap, run)
