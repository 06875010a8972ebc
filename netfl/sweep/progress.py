"""The sweep's progress bar (rich) and its closing summary.

One bar for the whole sweep: runs finished of all (runs already complete count from the start),
how many are running and how many failed, elapsed time and an estimate of the time left. A
failed run is announced as it fails, with its log; the summary ends with every failed run again.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from netfl.results.report import plural
from netfl.sweep.runner import Observer, SweepResult
from netfl.sweep.task import DONE, Outcome


def describe_params(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


class SweepProgress(Observer):
    """Draws the bar on ``console`` (stderr) while the sweep runs; prints the summary after."""

    def __init__(self, name: str, out_dir: Path, console: Console, summary_console: Console,
                 params: dict[str, dict], show_bar: bool = True):
        self.name, self.out_dir, self.console = name, Path(out_dir), console
        self.summary_console = summary_console
        self.params = params  # run_id -> its parameters
        self.show_bar = show_bar
        self._progress: Progress | None = None
        self._task = None
        self._executor = None
        self._total = self._finished = self._failed = 0
        self._started: set[str] = set()
        self._done: set[str] = set()

    # ------------------------------------------------------------------ Observer
    def begin(self, total: int, reused: int, executor) -> None:
        self._executor, self._total, self._finished = executor, total, reused
        todo = total - reused
        self.console.print(
            f"sweep [bold]{self.name}[/bold]: {total} run{'s' if total != 1 else ''} "
            f"({reused} already done, {todo} to run) on {executor.describe()} -> {self.out_dir}")
        dashboard = getattr(executor, "dashboard", None)
        if dashboard:
            self.console.print(f"Dask dashboard: {dashboard}")
        if not self.show_bar or not todo:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("runs · {task.fields[running]} running · {task.fields[failed]} failed"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self.console, transient=False)
        self._progress.start()
        self._task = self._progress.add_task(self.name, total=total, completed=reused,
                                             running=0, failed=0)

    def run_started(self, run_id: str) -> None:
        self._started.add(run_id)
        self._refresh()

    def run_finished(self, outcome: Outcome, row: dict) -> None:
        self._finished += 1
        self._done.add(outcome.run_id)
        if outcome.status != DONE:
            self._failed += 1
            message = (f"[red]{outcome.status}[/red]: {outcome.run_id} "
                       f"({describe_params(self.params.get(outcome.run_id, {}))}): "
                       f"{outcome.error}; log: {self.out_dir / row['log']}")
            (self._progress.console if self._progress else self.console).print(message)
        if self._progress is not None:
            self._progress.advance(self._task)
        self._refresh()

    def end(self, result: SweepResult) -> None:
        if self._progress is not None:
            self._refresh()
            self._progress.stop()
        print_summary(result, self.summary_console, self.params)

    # ------------------------------------------------------------------ helpers
    def _running(self) -> int:
        remaining = self._total - self._finished
        known = len(self._started - self._done)
        if known or self._started:  # the executor reports starts: count them
            return min(known, remaining)
        return min(self._executor.slots() if self._executor else 0, remaining)

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, running=self._running(), failed=self._failed)

    def interrupted(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def print_summary(result: SweepResult, console: Console, params: dict[str, dict]) -> None:
    counts = result.counts
    ran = len(result.rows) - result.reused
    parts = [f"{counts.get('done', 0)} done ({result.reused} from earlier)"]
    for status in ("failed", "lost", "pending"):
        if counts.get(status):
            parts.append(f"{counts[status]} {status}")
    colour = "red" if result.failed else "green"
    console.print(f"[{colour}]{plural(len(result.rows), 'run')}[/{colour}]: "
                  f"{', '.join(parts)}; ran {ran} in {result.elapsed_s:.1f} s on "
                  f"{result.executor}")
    if result.failed:
        table = Table(title="runs that did not finish", title_justify="left", show_lines=False)
        for column in ("run", "parameters", "status", "error", "log"):
            table.add_column(column, overflow="fold")
        for row in result.failed:
            table.add_row(row["run_id"], describe_params(params.get(row["run_id"], {})),
                          row["status"], row.get("error") or "",
                          str(result.out_dir / row["log"]))
        console.print(table)
        console.print("rerun the same command to retry them (finished runs are kept)")
    console.print(f"index: {result.out_dir / 'index.csv'}; compare with: netfl report "
                  f"{result.out_dir}")
