"""One scenario run end to end: build and run its Simulation, then write its results folder
atomically (``netfl.run`` and ``netfl run`` call ``run_scenario``); and the check of a scenario
short of running it (``netfl validate`` calls ``check_scenario``)."""

from __future__ import annotations

import itertools
import shutil
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from netfl.scenario import Scenario, dump_scenario, load_scenario
from netfl.sim.host_time import total_of
from netfl.simulation import Simulation

_SPOOLS = itertools.count()  # event spools of this process (runs of a sweep's threads)


@dataclass
class RunResult:
    """What a run produced.

    summary: the summary.json dict; metrics: one row per evaluation; events: the trace table
    (None unless ``output.trace``); path: the results directory (None when nothing was written).
    """

    scenario: Scenario
    summary: dict
    metrics: pd.DataFrame
    events: pd.DataFrame | None = None
    path: Path | None = None
    extras: dict = field(default_factory=dict)


@dataclass
class Checked:
    """What ``check_scenario`` built: the world (its clients, edge servers and notes) and, where
    the data were checked, the data set and its partition over the clients (None otherwise)."""

    world: Any
    dataset: Any = None
    partition: Any = None


def check_scenario(scenario: Scenario, data: bool = False) -> Checked:
    """Build what a run of ``scenario`` builds before it trains, and nothing after: its world,
    links and devices (reading and checking every file they name) and, with ``data``, its data
    set and the partition over the clients. Without ``data`` no data file is read (a data set
    missing from this machine is then found by the run, or by this check with ``data``).

    Raises:
        ScenarioError: a problem found while building, pointed at the scenario's file and line.
        DatasetNotFound, CorruptDataFile: with ``data``, data that cannot be loaded.
    """
    simulation = Simulation(scenario, with_model=False, with_data=data)
    return Checked(simulation.world, simulation.dataset, simulation.partition)


def run_scenario(
    scenario: Scenario | str | Path | Mapping,
    *,
    overrides: Iterable[str] = (),
    write: bool = True,
    out_dir: str | Path | None = None,
    run_id: str | None = None,
    on_start: Callable[[Simulation], None] | None = None,
    tidy: bool = True,
) -> RunResult:
    """Build, run and (unless ``write`` is False) store one scenario.

    Args:
        scenario: a Scenario, or a path / dict to load (with ``overrides``).
        write: write ``<out_dir or output.dir>/<name>/<run_id>/`` atomically.
        run_id: the run directory's name (default: timestamp and seed; suffixed if taken).
        on_start: called with the built Simulation before it runs (progress bars subscribe here).
        tidy: first remove the temporary folders that killed runs of this host left in the
            scenario's results folder (a sweep does it once for all its runs instead).
    """
    from netfl.results.store import check_run_id, check_writable, temporary_name

    if run_id is not None:
        check_run_id(run_id)
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides)
    elif overrides:  # only what was set, so that e.g. a switch of algorithm.kind stays valid
        scenario = load_scenario(scenario.model_dump(mode="json", exclude_unset=True), overrides)
    parent = Path(out_dir or scenario.output.dir) / scenario.name
    created = check_writable(parent) if write else []  # now, not after the whole run
    spool = None
    if write and (scenario.output.trace or scenario.output.timeline):
        spool = parent / temporary_name(f"events-{next(_SPOOLS)}")
    try:
        return _run_and_write(scenario, write, parent, created, run_id, on_start, tidy, spool)
    finally:
        _drop_spool(spool)


def _drop_spool(spool: Path | None) -> None:
    """Remove a run's event spool (its table is in events.parquet, or the run failed)."""
    if spool is not None:
        shutil.rmtree(spool, ignore_errors=True)


def _count_writing(summary: dict, began: float) -> None:
    """Host time since ``began`` is the writing part; ``host_time_s`` stays the parts' sum."""
    parts = summary["host_time_s_by_part"]
    parts["writing_s"] = round(time.perf_counter() - began, 6)
    summary["host_time_s"] = total_of(parts)


def _run_and_write(scenario: Scenario, write: bool, parent: Path, created: list, run_id,
                   on_start, tidy: bool, spool: Path | None) -> RunResult:
    """``run_scenario``'s run and writing (its events spooled in ``spool`` where given)."""
    from netfl.results.store import (
        new_run_id,
        remove_if_empty,
        remove_stale_temporaries,
        write_run,
    )

    try:
        if write and tidy:
            remove_stale_temporaries(parent)
        simulation = Simulation(scenario, events_dir=spool)
        if on_start is not None:
            on_start(simulation)
        simulation.run()
    except BaseException:  # a failed or interrupted run leaves no folder it made behind
        _drop_spool(spool)
        remove_if_empty(created)
        raise
    writing_began = time.perf_counter()  # the summary and tables count as writing
    summary, metrics, events = simulation.summary(), simulation.metrics(), simulation.events()
    _count_writing(summary, writing_began)
    path = None
    if write:
        def on_summary(summary: dict) -> None:  # the files before summary.json are written
            _count_writing(summary, writing_began)

        plot = None
        if scenario.output.plots and len(metrics):
            from netfl.results.plots import plot_partition, plot_run

            def plot(directory: Path) -> None:
                plot_run(metrics, directory, f"{scenario.name} ({scenario.algorithm.kind})",
                         scenario.stop.target_accuracy)
                plot_partition(partition, directory, f"{scenario.data.dataset_name}, "
                               f"{scenario.data.partition.kind} partition")
                simulation.plot_world(directory)
                simulation.plot_rounds(directory)
                simulation.plot_links(directory)

        partition = simulation.partition_table()
        if scenario.output.timeline:
            from netfl.results.timeline_files import save_timeline

            drawn = plot

            def plot(directory: Path) -> None:  # noqa: F811 (the plots, then the timeline)
                if drawn is not None:
                    drawn(directory)
                try:
                    save_timeline(events, directory,
                                  f"{scenario.name} ({scenario.algorithm.kind})")
                except Exception as exc:  # an optional view must not cost the finished run
                    warnings.warn(f"the timeline could not be written ({type(exc).__name__}: "
                                  f"{exc}); the run's results are", stacklevel=2)
        try:
            path = write_run(parent, run_id or new_run_id(scenario.seed), summary, metrics,
                             dump_scenario(scenario),
                             events if scenario.output.trace else None, plot,
                             {"partition": partition} | simulation.world_tables()
                             | simulation.analysis_tables(),
                             on_summary=on_summary)
        except BaseException:  # what was kept (<run-id>.incomplete) stays; empty folders go
            _drop_spool(spool)
            remove_if_empty(created)
            raise
    return RunResult(scenario, summary, metrics, events, path)
