"""``netfl reproduce [SECTION ...]``: run the four papers' reproduction sweeps and rebuild
docs/reproduction.md's tables, figures and verdicts from their results (netfl.reproduction)."""

from __future__ import annotations

from pathlib import Path

import typer

from netfl.cli.common import err, fail, out
from netfl.errors import NetflError

PLANS = Path("scenarios/reproduction")


class ReproductionProgress:
    """One bar per section's sweeps (all its arms run on one executor); failures as they
    happen, with their log."""

    def __init__(self, console, folder: Path, show_bar: bool = True):
        from netfl.sweep.progress import SweepProgress

        self._console, self._folder, self._show_bar = console, folder, show_bar
        self._make = SweepProgress
        self._current = None
        self._ends = 0

    def begin(self, total: int, reused: int, executor) -> None:
        self._current = self._make("reproduction", self._folder, self._console, self._console,
                                   {}, show_bar=self._show_bar)
        self._current.begin(total, reused, executor)

    def run_started(self, run_id: str) -> None:
        self._current.run_started(run_id)

    def run_finished(self, outcome, row: dict) -> None:
        self._current.run_finished(outcome, row)

    def end(self, result) -> None:
        """Called once per sweep of the section: the bar stops at the first."""
        if self._current is not None:
            self._current.interrupted()
        for row in result.failed:
            self._console.print(f"[red]{row['status']}[/red]: {result.out_dir / row['log']}")

    def interrupted(self) -> None:
        if self._current is not None:
            self._current.interrupted()


def _hours(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds / 3600:.1f} h"


def show_status(plans, folder: Path, quick: bool, workers: int | None) -> None:
    """The table of ``netfl reproduce --status``."""
    from rich.table import Table

    from netfl.reproduction.status import reproduction_status
    from netfl.sim.cores import available_cores

    rows = reproduction_status(plans, folder, quick)
    table = Table(title=f"reproduction in {folder}")
    for column in ("section", "study", "runs done", "host time", "estimated left"):
        table.add_column(column, justify="left" if column in ("section", "study") else "right")
    for row in rows:
        table.add_row(row.section, row.study, f"{row.done} of {row.planned}",
                      _hours(row.host_done_s), _hours(row.left_s))
    out.print(table)
    lefts = [row.left_s for row in rows]
    left = None if any(v is None for v in lefts) else sum(lefts)
    n = workers or available_cores()
    out.print(f"done: {sum(r.done for r in rows)} of {sum(r.planned for r in rows)} runs, "
              f"{_hours(sum(r.host_done_s for r in rows))} of host time; left: about "
              f"{_hours(left)} of host time, {_hours(None if left is None else left / n)} "
              f"on {n} worker(s) (from the median host time of the nearest done runs; '?' "
              f"where none has run)")


def reproduce(
    sections: list[str] = typer.Argument(None, help="Sections to run (default: all plans)."),
    quick: bool = typer.Option(False, "--quick", help="The short scenarios, 2 seeds: minutes, "
                               "for CI; writes its own document under --out."),
    plans_dir: Path = typer.Option(PLANS, "--plans", help="Folder of plan files."),
    out_dir: Path | None = typer.Option(None, "--out", help="Results folder (default "
                                        "results/reproduction, or results/reproduction-quick)."),
    doc: Path | None = typer.Option(None, "--doc", help="Document to rebuild (default "
                                    "docs/reproduction.md; with --quick <out>/reproduction.md)."),
    tables_only: bool = typer.Option(False, "--tables-only", help="Run nothing: rebuild the "
                                     "document from the results there are."),
    executor: str | None = typer.Option(None, "--executor", help="local (default) or dask."),
    workers: int | None = typer.Option(None, "--workers", help="Worker processes; default one "
                                       "per core. A paper run trains a round's clients on "
                                       "every core, so on a small machine 1 takes about half "
                                       "the host time per run for as many runs an hour."),
    address: str | None = typer.Option(None, "--address", help="A running Dask scheduler."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    status: bool = typer.Option(False, "--status", help="Run nothing, rebuild nothing: per "
                                "study the runs done, their host time and an estimate of the "
                                "rest."),
) -> None:
    """Run the reproduction's sweeps (resuming: finished runs are kept) and rebuild the
    document's generated blocks. Exit 1 if a run failed, 2 for an invalid plan."""
    from netfl.reproduction.document import SUMMARY, kept_sections, rebuild
    from netfl.reproduction.execute import run_plans
    from netfl.reproduction.plan import load_plans
    from netfl.reproduction.render import claim_text
    from netfl.sweep import DaskExecutor, LocalExecutor

    folder = out_dir or Path("results/reproduction-quick" if quick else "results/reproduction")
    document = doc or (folder / "reproduction.md" if quick else Path("docs/reproduction.md"))
    figures = (document.parent / "img" / "reproduction")
    kind = executor or ("dask" if address else "local")
    failed = 0
    try:
        if kind not in ("local", "dask"):
            raise NetflError(f"--executor {kind!r}: choose local or dask")
        plans = load_plans(plans_dir, sections or None)
        if status:
            show_status(plans, folder, quick, workers)
            return
        if not tables_only:
            def make_executor():
                return (LocalExecutor(workers) if kind == "local"
                        else DaskExecutor(address, workers))

            progress = ReproductionProgress(err, folder, show_bar=not quiet)
            try:
                results = run_plans(plans, folder, make_executor, progress, quick)
            except KeyboardInterrupt:
                progress.interrupted()
                err.print(f"[yellow]interrupted[/yellow]: finished runs are kept in {folder}; "
                          f"rerun the same command to resume")
                raise typer.Exit(130) from None
            failed = sum(len(r.failed) for _run, r in results)
        # the whole page, whichever sections ran: its verdict table spans every paper
        every = load_plans(plans_dir) if sections else plans
        kept = kept_sections(every, folder, document, quick)
        for plan in kept:
            err.print(f"{plan.section}: no run in {folder}; its block in {document} is kept "
                      f"as rendered from results elsewhere")
        readme = Path("README.md")
        front = (readme if not quick and doc is None and readme.is_file()
                 and f"<!-- reproduction:{SUMMARY} -->" in readme.read_text() else None)
        verdicts = rebuild(every, folder, document, figures, quick, kept=kept, readme=front)
    except NetflError as exc:
        raise fail(exc) from None
    findings = len({(f.study, f.id) for f, _v in verdicts})
    out.print(f"{document}: {len(verdicts)} verdicts on {findings} findings (one per reading "
              f"and target)")
    for finding, verdict in verdicts:
        out.print(f"  {verdict.verdict:<30} {claim_text(finding)}")
    if failed:
        err.print(f"[red]{failed} run(s) failed[/red]: see the logs/ folder of their sweep")
        raise typer.Exit(1)
