"""The ``netfl`` command line: run, sweep, report, timeline, validate, list, sumo-trace. Wiring
only; the work lives in the package.

``app`` is the Typer application (``python -m netfl`` and the tests call it); ``main`` is the
console script's entry point (``netfl = "netfl.cli:main"``).
"""

from netfl.cli.commands import app, main

__all__ = ["app", "main"]
