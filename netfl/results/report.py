"""Comparison reports over runs and sweeps (``netfl report DIR...``).

Runs are grouped by world, then algorithm and parameters; the seeds of a group are summarized
as the mean and the half-width of its 95% Student t interval (none for a single run), n shown;
every other group of a world is compared with a baseline group (its first, or ``baseline``) by
the mean paired difference over the seeds both have, with its paired-t 95% interval. A group's
parameters are the fields of the runs' resolved scenarios (scenario.yaml) that differ between
them, seed, name and output aside, sweep runs and other runs alike (so a sweep's fixed
``--set`` counts as much as its grid). A field that only some runs have (the parameters of
another algorithm) is a parameter where it differs between runs of the same algorithm. Where
the runs come from more than one scenario (world), the world is the first column and only
fields that differ within a world are parameters. A sweep case's ``label:`` names its group.
A group that holds the same seed twice is refused: its runs differ in something the scenarios
do not show, or one run was copied.

Time to target and bytes to target are averaged over the runs that reached the target, and the
table says how many did. The time breakdown sums per-node times, which overlap in simulated
time: see docs/sweeps.md for what each bar means.

Finding the runs is :mod:`netfl.results.collect`, the numbers :mod:`netfl.results.compare`; this
module writes the files (and re-exports both modules' public names).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from netfl.errors import NetflError
from netfl.results.collect import SEED, Collection, RunRecord, collect, plural
from netfl.results.compare import (
    CATEGORIES,
    METRICS,
    TO_TARGET,
    _group_key,
    _markdown_rows,
    band,
    breakdown_table,
    classify_tag,
    comparison_table,
    group_columns,
    groups,
    label,
    markdown_table,
    paired_cells,
    paired_table,
    table_cells,
    time_breakdown,
)
from netfl.sim.clock import format_duration

REPORT_MARK = "comparison.md"

__all__ = ["CATEGORIES", "METRICS", "SEED", "TO_TARGET", "Collection", "Report", "RunRecord",
           "band", "breakdown_table", "classify_tag", "collect", "comparison_table",
           "default_out_dir", "group_columns", "groups", "label", "markdown_table",
           "paired_cells", "paired_table", "plural", "table_cells", "time_breakdown",
           "write_report"]


# ------------------------------------------------------------------------------- writing


@dataclass
class Report:
    out_dir: Path
    table: pd.DataFrame
    breakdown: pd.DataFrame
    paired: pd.DataFrame  # paired_table's: differences against each world's baseline group
    markdown: str
    collection: Collection
    files: list[Path]

    def terminal_tables(self) -> list[tuple[str, list[str], list[list[str]]]]:
        """What ``netfl report`` prints, as (title, header, rows) for each table: the groups
        (mean ± 95% interval), then the paired differences against the baseline (if any)."""
        columns = group_columns(self.collection)
        tables = [(f"{plural(len(self.collection.runs), 'run')}: mean ± half-width of the 95% "
                   f"interval (Student t) over seeds",
                   *table_cells(self.table, columns, compact=True))]
        if not self.paired.empty:
            tables.append(("paired differences at the same seeds (group - baseline): mean ± "
                           "half-width of the 95% interval (paired t), n pairs",
                           *paired_cells(self.paired, self.table)))
        return tables


def default_out_dir(paths: list[Path]) -> Path:
    """``<sweep>/report`` for one sweep folder; ``report`` here otherwise."""
    if len(paths) == 1 and (Path(paths[0]) / "sweep.json").is_file():
        return Path(paths[0]) / "report"
    return Path("report")


def write_report(paths: list[str | Path], out_dir: str | Path | None = None,
                 baseline: str | None = None) -> Report:
    """Compare the runs under ``paths``; write comparison.md/.csv, paired.csv, runs.csv,
    time_breakdown.csv and the plots into ``out_dir``, replacing an earlier report there as a
    whole. ``baseline`` names the group the others are compared with (its name, or its
    algorithm; default: each world's first group); NetflError where no group matches."""
    from netfl.results.bands import plot_bands
    from netfl.results.plots import plot_time_breakdown

    paths = [Path(p) for p in paths]
    collection = collect(paths)
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(paths)
    if out_dir.is_file():
        raise NetflError(f"{out_dir}: a file, not a folder; choose another --out")
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / REPORT_MARK).is_file():
        raise NetflError(f"{out_dir}: exists and is not a netfl report; choose another --out")
    columns = group_columns(collection)
    table = comparison_table(collection)
    breakdown = breakdown_table(collection)
    paired = paired_table(collection, baseline)
    grouped = groups(collection)
    targets = {r.summary.get("target_accuracy") for r in collection.runs}
    target = targets.pop() if len(targets) == 1 else None
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        table.to_csv(tmp / "comparison.csv", index=False)
        paired.to_csv(tmp / "paired.csv", index=False)
        breakdown.rename_axis("group").to_csv(tmp / "time_breakdown.csv")
        _runs_table(collection, columns).to_csv(tmp / "runs.csv", index=False)
        for x, name, what in (("sim_time_s", "accuracy_vs_time.png", "simulated time"),
                              ("bytes_total", "accuracy_vs_bytes.png", "bytes delivered")):
            curves = {label(k, columns, runs): band([r.curve(x) for r in runs], x)
                      for k, runs in grouped.items()}
            plot_bands(curves, x, tmp / name, f"accuracy against {what} (mean and its 95% "
                                              f"interval over seeds)", target)
        plot_time_breakdown(breakdown, tmp / "time_breakdown.png",
                            "node-seconds by category, mean per run (summed over nodes "
                            "and transfers, which overlap: not simulated time)")
        markdown = _markdown(collection, table, breakdown, columns, paired)
        (tmp / REPORT_MARK).write_text(markdown, encoding="utf-8")
        _replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    files = sorted(out_dir.iterdir())
    return Report(out_dir, table, breakdown, paired, markdown, collection, files)


def _runs_table(collection: Collection, columns: list[str]) -> pd.DataFrame:
    names = {id(r): label(k, columns, runs) for k, runs in groups(collection).items()
             for r in runs}
    rows = []
    for run in collection.runs:
        row = {"group": names[id(run)],
               **dict(zip(columns, _group_key(run, columns, written=True), strict=True))}
        row[SEED] = run.summary.get(SEED)
        row.update({m: run.summary.get(m) for m in METRICS})
        row.update({f"time_{k}_s": v for k, v in time_breakdown(run.summary).items()})
        row["path"] = str(run.path)
        rows.append(row)
    return pd.DataFrame(rows)


def _replace(tmp: Path, out_dir: Path) -> None:
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    if out_dir.exists():
        os.rename(out_dir, old)
    os.rename(tmp, out_dir)
    shutil.rmtree(old, ignore_errors=True)


def _paired_markdown(paired: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    if paired.empty:
        return []
    head, rows = paired_cells(paired, table, bold=True)
    return ["## Paired differences", "",
            "Each cell is the mean over seeds of (group - baseline) at the same seed, where "
            "both have the metric, ± the half-width of its 95% paired-t interval, with the "
            "number of pairs. Every algorithm at one seed sees the same world and data "
            "partition, so the seed's luck cancels: a difference whose interval excludes 0 "
            "is in bold. Also in paired.csv.", "", _markdown_rows(head, rows), ""]


def _versions_note(runs: list[RunRecord]) -> list[str]:
    """Where some runs aggregated asynchronously, what their 'rounds' count."""
    kinds = sorted({r.summary.get("algorithm") for r in runs
                    if r.summary.get("updates_mixed") is not None})
    if not kinds:
        return []
    return [f"*rounds* of {', '.join(kinds)} count the cloud model's versions (one per "
            f"update mixed in or step taken), not rounds of clients: compare them with the "
            f"others by time, bits and local steps to the target. Their staleness per tier "
            f"is in each run's summary.json and updates.csv.", ""]


def _markdown(collection: Collection, table: pd.DataFrame, breakdown: pd.DataFrame,
              columns: list[str], paired: pd.DataFrame) -> str:
    runs = collection.runs
    banner = ([f"**{collection.incomplete}.** The sweep runs listed under [Runs that did not "
               f"finish](#runs-that-did-not-finish) are missing from every number below; "
               f"'k of n' in the runs column counts a group's finished runs of those "
               f"expected.", ""] if collection.incomplete else [])
    lines = [*banner, "# Comparison", "",
             f"{plural(len(runs), 'run')} in {plural(len(table), 'group')}, grouped by "
             f"{', '.join(columns)}. "
             "Each cell is the mean over the group's runs (its seeds) ± the half-width of "
             "its 95% confidence interval (Student t, n - 1 degrees of freedom; n is the runs "
             "column, or shown as (n=k) where fewer runs have the metric); a group of one run "
             "has no interval. Time and bytes to target average the runs that reached the "
             "target; (k/n) says how many did. Standard deviations are in comparison.csv."
             + (f" {plural(collection.duplicates, 'run')} found in more than one sweep "
                f"(the same run id: the same resolved scenario) counted once."
                if collection.duplicates else ""), "",
             markdown_table(table, columns), "",
             *_versions_note(runs),
             *_paired_markdown(paired, table),
             "![accuracy against simulated time](accuracy_vs_time.png)", "",
             "![accuracy against bytes delivered](accuracy_vs_bytes.png)", "",
             "## Node-seconds by category", "",
             "Mean node-seconds per run, summed over nodes and transfers (they overlap in "
             "time, so a row does not add up to the simulated time). waiting: client-seconds "
             "present but neither training nor transferring. See docs/sweeps.md.", "",
             "| group | " + " | ".join(breakdown.columns) + " |",
             "|---|" + "---|" * len(breakdown.columns)]
    for name, row in breakdown.iterrows():
        lines.append(f"| {name} | " + " | ".join(format_duration(v) for v in row) + " |")
    lines += ["", "![node-seconds by category](time_breakdown.png)", ""]
    if collection.unfinished:
        lines += ["## Runs that did not finish", "",
                  "| run | status | error | log |", "|---|---|---|---|"]
        for item in collection.unfinished:
            lines.append(f"| {item['run_id']} | {item['status']} | "
                         f"{item['error'].replace('|', '/')} | {item['log']} |")
        lines.append("")
    sources = sorted({str(r.path.parent) for r in runs})
    lines += ["## Runs", "", f"From {', '.join(sources)}; every run is listed in runs.csv.", ""]
    return "\n".join(lines)
