"""``netfl analyze RUN_DIR``: why the run's rounds took as long as they did (the critical path of
each round, the slowest rounds, the bottleneck links and cells, who took part), and rounds.png;
for an asynchronous run (updates.csv), its versions' staleness and who contributed most."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from netfl.cli.common import err, out
from netfl.results.rounds import PARTS, SEGMENTS
from netfl.sim.clock import format_duration, format_share


def analyze(
    run_dir: Path = typer.Argument(..., help="A run's results folder."),
    slowest: int = typer.Option(5, "--slowest", min=1, help="How many of the slowest rounds "
                                "to list."),
) -> None:
    """Print RUN_DIR's slowest rounds with their critical paths (download, compute, upload,
    aggregation, group operations, hand-over, waiting), the parts' p50/p90/max, the top
    bottlenecks and the participation; write RUN_DIR/rounds.png."""
    from netfl.results.analyze import analyze_run
    from netfl.results.round_plots import plot_rounds

    try:
        analysis = analyze_run(run_dir)
    except (FileNotFoundError, OSError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    summary = analysis.summary
    out.print(f"{run_dir}: {summary.get('name')} ({summary.get('algorithm')}), "
              f"{summary.get('rounds')} rounds in {summary.get('sim_time_s', 0):.1f} s simulated")
    for note in analysis.notes:
        out.print(f"note: {note}")
    if (run_dir / "updates.csv").is_file():  # asynchronous: versions, not rounds
        _print_updates(run_dir, summary)
        return
    if analysis.rounds is not None and len(analysis.rounds):
        rounds = analysis.rounds
        parts = [p for p in PARTS if (rounds[f"{p}_s"] > 0).any()]
        table = Table(title=f"the {min(slowest, len(rounds))} slowest rounds (seconds)")
        for column in ["round", "duration", *[p.replace("_", " ") for p in parts], "ended at"]:
            table.add_column(column, justify="left" if column == "ended at" else "right")
        for _, row in rounds.nlargest(slowest, "duration_s").iterrows():
            table.add_row(str(int(row["round"])), f"{row['duration_s']:.3f}",
                          *[f"{row[f'{p}_s']:.3f}" for p in parts], str(row["ended_at"]))
        out.print(table)
        stats = Table(title="over all rounds (seconds)")
        for column in ("", "p50", "p90", "max"):
            stats.add_column(column, justify="right")
        for key in ["duration_s", *[f"{p}_s" for p in parts]]:
            s = analysis.statistics[key]
            stats.add_row(key[:-2].replace("_", " "), *(f"{s[q]:.3f}" for q in ("p50", "p90",
                                                                                 "max")))
        out.print(stats)
        _print_segments(rounds, analysis.statistics)
        drawn = plot_rounds(rounds, run_dir / "rounds.png", str(summary.get("name", run_dir)))
        if drawn:
            out.print(f"wrote {drawn}")
    if analysis.bottlenecks:
        out.print("top bottlenecks: " + "; ".join(
            f"{b.get('channel')} {format_share(b.get('utilisation', 0))} utilised"
            for b in analysis.bottlenecks))
    if analysis.participation is not None and len(analysis.participation):
        totals = analysis.participation.drop(columns=["round", "server"]).sum()
        out.print("participation: " + ", ".join(f"{k.replace('_', ' ')} {int(v):,}"
                                                 for k, v in totals.items()))
        lost = summary.get("participation", {}).get("lost_by_cause", {})
        if lost:
            out.print("lost by cause: " + ", ".join(f"{k} {v:,}" for k, v in lost.items()))


def _print_segments(rounds, statistics: dict) -> None:
    """On a road under a constellation: the critical path's transfers split by hop."""
    segments = [s for s in SEGMENTS if f"{s}_s" in rounds and (rounds[f"{s}_s"] > 0).any()]
    if not segments:
        return
    table = Table(title="the critical path's transfers by hop (seconds; a satellite backhaul)")
    for column in ("", "p50", "p90", "max", "share of all rounds"):
        table.add_column(column, justify="right")
    total = float(rounds["duration_s"].sum())
    for segment in segments:
        s = statistics.get(f"{segment}_s") or {}
        share = float(rounds[f"{segment}_s"].sum()) / total if total > 0 else 0.0
        table.add_row(SEGMENT_NAMES[segment], *(f"{s.get(q, 0.0):.3f}" for q in
                                                ("p50", "p90", "max")), format_share(share))
    out.print(table)


SEGMENT_NAMES = {"radio": "vehicle radio", "terminal": "RSU - satellite", "isl": "ISLs",
                 "feeder": "satellite - gateway", "fibre": "fibre"}


def _print_updates(run_dir: Path, summary: dict) -> None:
    """An asynchronous run: its model versions, their updates' staleness per tier, and who
    contributed most (a round table would describe versions microseconds apart as rounds)."""
    import pandas as pd

    from netfl.results.updates import LIFE_COLUMNS, updates_by_source, version_paths

    updates = pd.read_csv(run_dir / "updates.csv")
    out.print(f"asynchronous: its {summary.get('rounds')} 'rounds' are model versions; "
              f"{len(updates):,} updates went in (updates.csv)")
    stats = Table(title="staleness of the updates (versions since each left its aggregator)")
    for column in ("tier", "updates", "p50", "p90", "max"):
        stats.add_column(column, justify="right")
    for tier, s in summary.get("staleness_by_tier", {}).items():
        stats.add_row(tier, f"{s['updates']:,}", f"{s['p50']:g}", f"{s['p90']:g}",
                      str(s["max"]))
    out.print(stats)
    if set(LIFE_COLUMNS) <= set(updates.columns):
        paths = version_paths(updates)
        if len(paths):
            waited = Table(title="what each version waited for: the life of the update that "
                                 "arrived last among those its step took")
            tiers = list(paths.groupby("tier", sort=True))
            waited.add_column("", justify="left")
            for tier, rows in tiers:
                waited.add_column(f"{tier} ({len(rows):,} versions)\nmedian", justify="right")
                waited.add_column("\np90", justify="right")
            for part in ("age", "download", "work", "held", "upload", "waited"):
                cells = []
                for _, rows in tiers:
                    values = (rows["time_s"] - rows["started_s"] if part == "age"
                              else rows[f"{part}_s"])
                    cells += [format_duration(float(values.quantile(q))) for q in (0.5, 0.9)]
                waited.add_row(part, *cells)
            out.print(waited)
    top = updates_by_source(updates)
    table = Table(title=f"the {len(top)} most frequent sources")
    for column in ("source", "updates", "share", "median staleness"):
        table.add_column(column, justify="right")
    for source, row in top.iterrows():
        table.add_row(str(source), f"{int(row['updates']):,}", format_share(row["share"]),
                      f"{row['median_staleness']:g}")
    out.print(table)
