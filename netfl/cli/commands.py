"""The commands of ``netfl`` but ``list`` (netfl.cli.catalog): run, sweep, report, timeline,
validate, sumo-trace, and the console entry point ``main``."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import typer
from rich.table import Table

from netfl.cli.analyze import analyze
from netfl.cli.catalog import list_
from netfl.cli.common import SET_HELP, err, fail, out, show_warnings_as_lines
from netfl.cli.reproduce import reproduce
from netfl.cli.traces import trace_app
from netfl.errors import DatasetNotFound, NetflError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="netfl: network co-simulation of hierarchical federated learning.")


@app.callback()
def _setup() -> None:
    """Warnings a user should read (an override's side effects, a fallback) as one line each."""
    show_warnings_as_lines()

# glibc returns large freed blocks to the OS on every training step, and the page faults that
# follow slow torch down (up to 3.6x measured on vmap paths): these settings keep them (as
# netfl.sim.cores.keep_freed_memory does from inside a process).
MALLOC_TUNING = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}


def _data_not_found(scenario: Path, exc: DatasetNotFound) -> typer.Exit:
    """A data set missing from this machine, blamed on the scenario's file and field."""
    return fail(DatasetNotFound(f"{scenario}: data.dataset: {exc}"))


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was caused by a KeyboardInterrupt (a signal), anywhere in its chain."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario YAML file."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    out_dir: Path | None = typer.Option(None, "--out", help="Results folder (default output.dir)"),
    run_id: str | None = typer.Option(None, "--run-id", help="Name of the run's folder."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print the path."),
) -> None:
    """Run a scenario and write results/<name>/<run-id>/."""
    from netfl.results.progress import RunProgress
    from netfl.runner import run_scenario
    from netfl.sim.clock import format_bytes, format_duration
    from netfl.sim.signals import signals_interrupt
    from netfl.sweep.grid import has_sweep, load_base

    try:
        if has_sweep(scenario):  # a sweep file runs as its base scenario
            scenario, set_ = load_base(scenario, set_), []
        with signals_interrupt():  # kill and hang-ups end the run as Ctrl-C does
            if quiet:
                result = run_scenario(scenario, overrides=set_, out_dir=out_dir,
                                      run_id=run_id)
            else:
                with RunProgress(err) as progress:
                    result = run_scenario(scenario, overrides=set_, out_dir=out_dir,
                                          run_id=run_id, on_start=progress.attach)
    except DatasetNotFound as exc:
        raise _data_not_found(scenario, exc) from None
    except NetflError as exc:
        raise fail(exc) from None
    except MemoryError:  # a size no check foresaw: say so rather than show a traceback
        err.print("[red]error:[/red] the run needed more host memory than this machine has; "
                  "no results were written. Reduce the scenario's sizes (clients, model, "
                  "durations, trace lengths) or run it on a larger machine.")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: no results were written[/yellow]")
        raise typer.Exit(130) from None
    except ImportError as exc:
        if not _interrupted(exc):
            raise
        # an interrupt while a C extension initialised (sklearn's, loading the digits)
        # surfaces as its ImportError: it is still the user's interrupt
        err.print("[yellow]interrupted: no results were written[/yellow]")
        raise typer.Exit(130) from None
    diverged = result.summary["stop_reason"] == "diverged"
    if diverged:
        err.print(f"[red]diverged[/red]: the model stopped being finite at round "
                  f"{result.summary['diverged_round']} (NaN or infinite loss): the run stopped "
                  f"there; a smaller learning rate usually helps (stop.tolerate_divergence: "
                  f"true goes on instead)")
    if result.summary["stop_reason"] == "stalled":
        err.print(f"[yellow]stalled[/yellow]: nothing progressed for stop.stall_after; the "
                  f"run stopped at {format_duration(result.summary['sim_time_s'])} simulated. "
                  f"Are its links up and its clients reachable?")
    if quiet:
        print(result.path)
        raise typer.Exit(1 if diverged else 0)
    s = result.summary
    reached = (f"target {s['target_accuracy']:g} reached at "
               f"{format_duration(s['time_to_target_s'])} (round {s['rounds_to_target']}, "
               f"{format_bytes(s['bytes_to_target'])})"
               if s["time_to_target_s"] is not None else "target not reached"
               if s["target_accuracy"] is not None else "no target set")
    out.print(f"[bold]{s['name']}[/bold] ({s['algorithm']}): {s['rounds']} rounds, "
              f"accuracy {s['final_accuracy']:.3f}, {reached}")
    out.print(f"simulated {format_duration(s['sim_time_s'])} in {_host_time(s)}; "
              f"{format_bytes(s['bytes_total'])} delivered, "
              f"{s['transfers_failed']} transfers failed, {s['dropouts']} dropouts; "
              f"stopped by {s['stop_reason']}")
    for note in s["world_notes"]:
        out.print(f"[yellow]note[/yellow]: {note}")
    out.print(f"results: {result.path}")
    if diverged:
        raise typer.Exit(1)


def _host_time(summary: dict) -> str:
    """The run's whole host time: set-up, data, the run and writing its folder (the sum of
    ``host_time_s_by_part``; README's quickstart output shows this line)."""
    return f"{summary['host_time_s']:.1f} s host time"


GRID_HELP = ("Sweep a field: --grid algorithm.lr=0.05,0.1 (repeatable; every combination runs; "
             "each value is YAML; commas inside [], {} or quotes do not split).")


@app.command()
def sweep(
    scenario: Path = typer.Argument(..., help="Scenario YAML file (may hold a sweep: section)."),
    grid: list[str] = typer.Option([], "--grid", help=GRID_HELP),
    seeds: int | None = typer.Option(None, "--seeds", help="Seeds per point: the scenario's "
                                     "seed and the next N-1."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP + " Applies to every run."),
    out_dir: Path | None = typer.Option(None, "--out", help="Sweep folder (default "
                                        "<output.dir>/sweeps/<name>); the same folder resumes."),
    executor: str | None = typer.Option(None, "--executor", help="local (default) or dask."),
    workers: int | None = typer.Option(None, "--workers", help="Worker processes (local, or a "
                                       "Dask LocalCluster); default: one per core."),
    address: str | None = typer.Option(None, "--address", help="A running Dask scheduler, "
                                       "tcp://host:port (implies --executor dask)."),
    retries: int = typer.Option(2, "--retries", help="Retries of a run whose worker dies."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the runs and which are done; "
                                 "run nothing."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Run one scenario over a grid of parameters and seeds, each run in its own folder.

    Rerunning the same command resumes: complete runs are kept, the rest run. Exit status 1
    when a run failed (the others still run), 2 for invalid input.
    """
    from netfl.sweep import DaskExecutor, LocalExecutor, load_sweep, run_sweep
    from netfl.sweep.progress import SweepProgress

    kind = executor or ("dask" if address else "local")
    try:
        if kind not in ("local", "dask"):
            raise NetflError(f"--executor {kind!r}: choose local or dask")
        if kind == "local" and address:
            raise NetflError("--address names a Dask scheduler: use it with --executor dask")
        swept = load_sweep(scenario, grid, seeds, set_)
        folder = out_dir or (Path(swept.points[0].scenario.output.dir) / "sweeps" / swept.name)
        if dry_run:
            _print_points(swept, folder)
            return
        runner = (LocalExecutor(workers, retries) if kind == "local"
                  else DaskExecutor(address, workers, retries))
        params = {p.run_id: p.params for p in swept.points}
        progress = SweepProgress(swept.name, folder, err, out, params, show_bar=not quiet)
        try:
            result = run_sweep(swept, folder, runner, progress)
        except KeyboardInterrupt:
            progress.interrupted()
            err.print(f"[yellow]interrupted[/yellow]: finished runs are kept in {folder}; "
                      f"rerun the same command to resume")
            raise typer.Exit(130) from None
    except NetflError as exc:
        raise fail(exc) from None
    if result.diverged:
        err.print(f"[red]diverged[/red]: {len(result.diverged)} run(s) stopped when their model "
                  f"stopped being finite: "
                  f"{', '.join(r['run_id'] for r in result.diverged[:5])}"
                  f"{' ...' if len(result.diverged) > 5 else ''} (stop_reason in the index)")
    if result.failed or result.diverged:
        raise typer.Exit(1)


def _print_points(swept, folder: Path) -> None:
    from netfl.results.report import plural
    from netfl.results.store import is_complete
    from netfl.sweep.progress import describe_params
    from netfl.sweep.runner import run_dir

    table = Table(title=f"sweep {swept.name}: {plural(len(swept.points), 'run')} -> {folder}",
                  title_justify="left")
    for column in ("run", "parameters", "status"):
        table.add_column(column, overflow="fold")
    for point in swept.points:
        done = is_complete(run_dir(folder, point))
        table.add_row(point.run_id, describe_params(point.params),
                      "[green]done[/green]" if done else "to run")
    out.print(table)


@app.command()
def report(
    dirs: list[Path] = typer.Argument(..., help="Run folders, sweep folders, or folders that "
                                      "hold them."),
    out_dir: Path | None = typer.Option(None, "--out", help="Report folder (default: "
                                        "<sweep>/report for one sweep, else ./report)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the report's path."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete", help="Exit 0 even where "
                                          "sweep runs did not finish (the report says so)."),
    baseline: str | None = typer.Option(None, "--baseline", help="The group the others are "
                                        "compared with at the same seeds (its name or "
                                        "algorithm; default: each world's first group)."),
) -> None:
    """Compare runs: mean ± 95% interval over seeds per world, algorithm and parameters, paired
    differences against a baseline group at the same seeds (Markdown, CSV), accuracy against
    simulated time and bytes with seed bands, and node-seconds by category.

    Exit status 1 when sweep runs did not finish (the report is written, headed INCOMPLETE)
    unless --allow-incomplete; 1 for unreadable input too."""
    from netfl.results.report import write_report

    try:
        written = write_report(dirs, out_dir, baseline=baseline)
    except NetflError as exc:
        raise fail(exc) from None
    incomplete = written.collection.incomplete
    if quiet:
        print(written.out_dir)
        if incomplete:
            err.print(f"[yellow]{incomplete}[/yellow]")
        if incomplete and not allow_incomplete:
            raise typer.Exit(1)
        return
    for title, head, rows in written.terminal_tables():
        table = Table(title=title, title_justify="left")
        for column in head:
            table.add_column(column, overflow="fold")
        for cells in rows:
            table.add_row(*cells)
        out.print(table)
    unfinished = written.collection.unfinished
    out.print(f"report: {written.out_dir / 'comparison.md'} (and .csv, paired.csv, runs.csv, "
              f"accuracy_vs_time.png, accuracy_vs_bytes.png, time_breakdown.png)")
    if unfinished:
        first = unfinished[0]
        err.print(f"[yellow]{incomplete}[/yellow]: {len(unfinished)} sweep "
                  f"{'run' if len(unfinished) == 1 else 'runs'} did not finish (listed in "
                  f"comparison.md), e.g. {first['run_id']}: {first['error'] or first['status']}"
                  f"; log: {first['log']}. Rerun the sweep to finish them"
                  + ("." if allow_incomplete else ", or pass --allow-incomplete to accept a "
                     "partial report (exit status 0)."))
        if not allow_incomplete:
            raise typer.Exit(1)


@app.command()
def timeline(
    run_dir: Path = typer.Argument(..., help="A run's results folder (run with "
                                   "--set output.trace=true)."),
    start: float = typer.Option(0.0, "--from", help="Window start, simulated seconds."),
    end: float = typer.Option(math.inf, "--to", help="Window end, simulated seconds."),
    nodes: str | None = typer.Option(None, "--nodes", help="Only these nodes (comma-separated) "
                                     "and the transfers that touch them."),
) -> None:
    """Write RUN_DIR/timeline.json (the run's simulated timeline in the Chrome Trace Event
    format: ui.perfetto.dev or chrome://tracing) and RUN_DIR/timeline.png (a Gantt chart);
    docs/models/timeline.md."""
    from netfl.results.timeline_files import write_timeline

    if not (math.isfinite(start) and start >= 0 and end > start):
        err.print(f"[red]error:[/red] --from {start:g} --to {end:g}: give 0 <= from < to")
        raise typer.Exit(2)
    title = None
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        title = f"{summary['name']} ({summary['algorithm']})"
    except (OSError, ValueError, KeyError, TypeError):
        pass  # a folder without a readable summary: its name will do
    if not run_dir.is_dir():
        err.print(f"[red]error:[/red] {run_dir}: no such run folder")
        raise typer.Exit(2)
    try:
        path = write_timeline(run_dir, start, end,
                              [n.strip() for n in nodes.split(",")] if nodes else None, title)
    except FileNotFoundError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    except (OSError, ValueError) as exc:  # a damaged events.parquet, a read-only folder
        err.print(f"[red]error:[/red] {run_dir}: cannot write its timeline: {exc}")
        raise typer.Exit(1) from None
    out.print(f"timeline: {path} ({path.stat().st_size / 1e6:.2f} MB)")


@app.command()
def validate(
    scenario: Path = typer.Argument(..., help="Scenario YAML file."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    data: bool = typer.Option(False, "--data", help="Also load the data set and partition it "
                              "over the clients (reads, or downloads, its files)."),
) -> None:
    """Check a scenario and report every problem at once: its fields, how its sections fit
    together, and its world, links and devices (built, with the files they name). The data set
    is loaded and partitioned only with --data; a run reports a data set it cannot find."""
    from netfl.runner import check_scenario
    from netfl.scenario import load_scenario
    from netfl.sweep.grid import has_sweep, load_base, load_sweep

    try:
        swept = has_sweep(scenario)
        parsed = load_base(scenario, set_) if swept else load_scenario(scenario, set_)
        runs = len(load_sweep(scenario, overrides=set_).points) if swept else 0
        checked = check_scenario(parsed, data=data)
    except DatasetNotFound as exc:
        raise _data_not_found(scenario, exc) from None
    except NetflError as exc:
        raise fail(exc) from None
    world, name = checked.world, parsed.data.dataset_name
    out.print(f"[green]valid[/green]: {parsed.name}: {parsed.algorithm.kind} on the "
              f"{parsed.world.kind} world ({len(world.clients)} clients, "
              f"{len(world.edge_servers)} edge servers), {name}, {parsed.model.kind}")
    for note in world.notes:
        out.print(f"[yellow]note[/yellow]: {note}")
    if checked.partition is not None:
        out.print(f"data: {name} loaded, {len(checked.dataset.train_y):,} training samples "
                  f"partitioned ({parsed.data.partition.kind}) over {len(world.clients)} "
                  f"clients")
    else:
        out.print(f"data: {name} not loaded (validate --data loads it and checks the "
                  f"partition)")
    if swept:
        out.print(f"[green]valid[/green]: its sweep: section, {runs} runs "
                  f"(list them with netfl sweep {scenario} --dry-run)")


@app.command("sumo-trace")
def sumo_trace(
    scenario: Path = typer.Argument(..., help="Scenario YAML with world.road.kind: grid."),
    output: Path = typer.Option(..., "--out", "-o", help="FCD file to write (.xml or .xml.gz)."),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    fcd_period: float = typer.Option(1.0, help="Seconds between recorded positions."),
) -> None:
    """Drive a scenario's grid city in SUMO (offline; the sumo extra) and write its trace.

    The grid's size and block, the traffic's duration, arrival rate (all entries together) and
    mean speed (as the speed limit) become SUMO's netgenerate / randomTrips / sumo arguments;
    the scenario's seed seeds them. Point a scenario's road at the result with kind: fcd.
    """
    from netfl.scenario import load_scenario
    from netfl.world.roads import grid_entries
    from netfl.world.sumo import generate_grid_trace

    try:
        parsed = load_scenario(scenario, set_)
        world = parsed.world
        road = getattr(world, "road", None)
        if road is None or road.kind != "grid" or road.blocks_x != road.blocks_y:
            raise NetflError(f"{scenario}: world.road must be a square grid (kind: grid, "
                             f"blocks_x == blocks_y) to drive it in SUMO")
        entries = len(grid_entries(road.blocks_x, road.blocks_y))
        period = 3600.0 / (world.traffic.arrivals_per_hour * entries)
        written = generate_grid_trace(
            output, grid_number=road.blocks_x + 1, block_m=road.block,
            speed_limit_mps=world.speed_bounds()[0], duration_s=world.traffic.duration,
            period_s=period, fcd_period_s=fcd_period, seed=parsed.seed)
    except NetflError as exc:
        raise fail(exc) from None
    out.print(f"[green]wrote[/green] {written} ({written.stat().st_size / 1e6:.2f} MB)")


app.command("analyze")(analyze)
app.command("reproduce")(reproduce)
app.add_typer(trace_app, name="trace")
app.command("list")(list_)  # last in --help, after the commands that do the work


def main() -> None:
    """Console entry point: tune the allocator for training, then run the app."""
    if sys.platform.startswith("linux") and os.environ.get("NETFL_MALLOC_TUNED") != "1":
        os.environ.update(MALLOC_TUNING, NETFL_MALLOC_TUNED="1")
        try:
            os.execv(sys.executable, [sys.executable, "-m", "netfl", *sys.argv[1:]])
        except OSError:
            pass  # fall through and run untuned
    app()
