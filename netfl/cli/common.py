"""What every command shares: the consoles, the ``--set`` help, and how an error is shown."""

from __future__ import annotations

import typer
from rich.console import Console

from netfl.errors import ScenarioError

out = Console()
err = Console(stderr=True)

SET_HELP = "Override a field: --set algorithm.rounds=50 (repeatable; VALUE is YAML)."


def fail(exc: Exception) -> typer.Exit:
    """Print ``exc`` without a traceback and return the exit to raise: 2 for a scenario's
    problems (each on its own line, with its file and line), 1 for anything else."""
    if isinstance(exc, ScenarioError):
        err.print(f"[red]{str(exc).splitlines()[0]}[/red]")
        for problem in exc.problems:
            typer.echo("  " + problem.format(), err=True)
        return typer.Exit(2)
    err.print("[red]error:[/red]", end=" ")
    typer.echo(str(exc), err=True)
    return typer.Exit(1)


def show_warnings_as_lines() -> None:
    """Print Python warnings as one yellow line each on stderr (no file and line of netfl's)."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        err.print(f"[yellow]warning:[/yellow] {message}", highlight=False)

    warnings.showwarning = show
