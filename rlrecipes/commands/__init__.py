"""The `rlrecipes` subcommands, one module each.

A command module holds the Typer signature (options, help) and the printing; the work is
done by library modules it imports (`rlrecipes.training`, `rlrecipes.eval`, `rlrecipes.runs.selection`,
...), which never import a command or Typer. `rlrecipes.cli` only assembles the app: each
module here has `register(app)`.
"""
