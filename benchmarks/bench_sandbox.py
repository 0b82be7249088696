"""The python tool's sandbox against hostile programs, as root and as an unprivileged user.

Runs rlrecipes/tools/sandbox_probes.py's hostile programs (each sent as a model's code block
is: `build_tools(["python"])`, then `call_tool`, and judged from the host: files unchanged,
secrets absent from the output, no process left) as the bench's own user and, when that is
root, again as an unprivileged uid (a copy of the package in a folder that user can read, a
Python it can run). Records, per identity, how many programs were tried and contained and the
finding of each. Not a timing bench: the figure is a count; `--smoke` runs three programs.
Where bubblewrap cannot start (no user namespaces) the bench is skipped and the stored result
stays.
"""

from __future__ import annotations

import os

from benchkit import parse_bench_args, save_result, skip

from rlrecipes.tools.sandbox_probes import PROBES

UNPRIVILEGED_UID = 4242
MODES = {
    "full": {"probes": list(PROBES)},
    "smoke": {"probes": ["read_secrets", "write_host_files", "fork_bomb"]},
}


def summary(uid: int, findings: list[dict]) -> dict:
    return {
        "uid": uid,
        "tried": len(findings),
        "contained": sum(f["contained"] for f in findings),
        "escaped": [f["name"] for f in findings if not f["contained"]],
        "findings": {f["name"]: {"contained": f["contained"], "detail": f["detail"]} for f in findings},
    }


def main() -> None:
    args = parse_bench_args(__file__, MODES)
    from dataclasses import asdict

    from rlrecipes.errors import ConfigError
    from rlrecipes.tools.sandbox import sandbox
    from rlrecipes.tools.sandbox_probes import LIMITS, probe_as, run_probes

    try:
        box = sandbox()
    except ConfigError as exc:
        skip(args, str(exc))
        return
    identities = {
        "root" if os.geteuid() == 0 else "user": summary(os.geteuid(), [asdict(f) for f in run_probes(args.probes)])
    }
    if os.geteuid() == 0:
        identities["user"] = summary(UNPRIVILEGED_UID, probe_as(UNPRIVILEGED_UID, args.probes)["findings"])
    save_result(
        args,
        {
            "bwrap": box.bwrap_version,
            "interpreter": box.interpreter,
            "limits": LIMITS,
            "identities": identities,
        },
    )


if __name__ == "__main__":
    main()
