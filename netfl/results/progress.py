"""A live progress bar for one run (rich): round, simulated time and latest accuracy."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from netfl.sim.clock import format_duration
from netfl.sim.trace import Evaluation


class RunProgress:
    """Context manager; ``attach(simulation)`` subscribes it to the simulation's evaluations."""

    def __init__(self, console: Console | None = None):
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("rounds · sim {task.fields[sim]} · acc {task.fields[acc]}"),
            TimeElapsedColumn(), console=console, transient=False,
        )
        self._task = None

    def __enter__(self) -> RunProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def attach(self, simulation) -> None:
        scenario = simulation.scenario
        self._task = self._progress.add_task(
            scenario.name, total=scenario.algorithm.rounds, sim="0 ms", acc="-")
        simulation.trace.subscribe(self._on_evaluation, Evaluation)

    def _on_evaluation(self, record: Evaluation) -> None:
        self._progress.update(self._task, completed=record.round,
                              sim=format_duration(record.time_s), acc=f"{record.accuracy:.3f}")
