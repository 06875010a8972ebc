"""A live progress bar for one run (rich): round, simulated time and latest accuracy."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from netfl.sim.clock import format_duration
from netfl.sim.trace import Evaluation


class _PolledProgress(Progress):
    """A Progress that asks ``poll`` for fresh figures before each refresh (rich refreshes
    from its own thread, ten times a second): the bar moves with every round, not only at
    evaluations, which a run may make every thousand rounds."""

    poll = None

    def get_renderables(self):
        if self.poll is not None:
            self.poll()
        yield from super().get_renderables()


class RunProgress:
    """Context manager; ``attach(simulation)`` follows the simulation's rounds and simulated
    clock, and its evaluations for the accuracy."""

    def __init__(self, console: Console | None = None):
        self._progress = _PolledProgress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("rounds · sim {task.fields[sim]} · acc {task.fields[acc]}"),
            TimeElapsedColumn(), console=console, transient=False,
        )
        self._task = None
        self._simulation = None

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
        self._simulation = simulation
        self._progress.poll = self._poll

    def _poll(self) -> None:
        """Read the round and clock the simulation has reached (plain numbers: safe to read
        while it runs)."""
        algorithm = getattr(self._simulation, "algorithm", None)
        if algorithm is not None and self._task is not None:
            self._progress.update(self._task, completed=algorithm.rounds_done,
                                  sim=format_duration(self._simulation.env.now))

    def _on_evaluation(self, record: Evaluation) -> None:
        self._progress.update(self._task, completed=record.round,
                              sim=format_duration(record.time_s), acc=f"{record.accuracy:.3f}")
