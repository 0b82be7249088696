"""`rlrecipes sandbox check`: what the python tool's sandbox isolates on this machine."""

from __future__ import annotations

import os

import typer
from rich.table import Table

from rlrecipes.commands.common import console
from rlrecipes.commands.help import help_with
from rlrecipes.tools import sandbox as sandboxing
from rlrecipes.tools import sandbox_probes

sandbox_app = typer.Typer(
    no_args_is_help=True,
    help="The python tool's sandbox (bubblewrap).",
    epilog="Examples: rlrecipes sandbox check",
)


@sandbox_app.command("check", **help_with("rlrecipes sandbox check"))
def check() -> None:
    """Run hostile programs in the sandbox and print what it contains; exit 1 if any escapes."""
    box = sandboxing.sandbox()  # ConfigError (one line) where it cannot start
    uid = sandboxing.SANDBOX_UID
    outside = f"uid {uid} (the caller is root)" if os.geteuid() == 0 else f"uid {os.geteuid()} (the caller's)"
    console.print(f"sandbox: {box.bwrap_version} ({box.bwrap})", highlight=False)
    console.print(
        f"programs run with {box.interpreter} -I -S as {outside} outside, uid {uid} inside; "
        "namespaces: user, pid, ipc, uts, net, mount, cgroup; capabilities: none; no new privileges",
        highlight=False,
    )
    console.print(
        "probe limits (rollout.tool_kwargs.python.*): "
        + ", ".join(f"{k}={v}" for k, v in sandbox_probes.LIMITS.items()),
        highlight=False,
    )
    findings = sandbox_probes.run_probes()
    table = Table(title="hostile programs")
    for column in ("program", "contained", "what the caller saw"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        table.add_row(finding.what, "[green]yes[/]" if finding.contained else "[bold red]NO[/]", finding.detail)
    console.print(table)
    escaped = [f.name for f in findings if not f.contained]
    if escaped:
        console.print(f"[bold red]not contained:[/] {', '.join(escaped)}", highlight=False)
        raise typer.Exit(1)
    console.print(f"{len(findings)} of {len(findings)} hostile programs contained", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")
