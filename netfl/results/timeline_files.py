"""A run's timeline as files: ``timeline.json`` (the Chrome trace of netfl.results.timeline,
written event by event) and ``timeline.png`` (a Gantt chart of the busiest nodes)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from netfl.results.timeline import TIERS, node_tiers, records, write_chrome_trace

MAX_MARKS = 40  # round lines drawn on timeline.png at most


def write_timeline(run_dir: Path, start_s: float = 0.0, end_s: float = math.inf,
                   nodes: Iterable[str] | None = None, title: str | None = None) -> Path:
    """Write ``run_dir/timeline.json`` and ``timeline.png`` from its ``events.parquet``;
    returns the JSON's path. Raises FileNotFoundError where the run kept no events
    (``output.trace: false``)."""
    run_dir = Path(run_dir)
    source = run_dir / "events.parquet"
    if not source.is_file():
        raise FileNotFoundError(f"{source}: the run kept no events; run it with "
                                f"--set output.trace=true")
    return save_timeline(pd.read_parquet(source), run_dir, title or run_dir.name, start_s,
                         end_s, nodes)


def save_timeline(events: pd.DataFrame, directory: Path, title: str, start_s: float = 0.0,
                  end_s: float = math.inf, nodes: Iterable[str] | None = None) -> Path:
    """``timeline.json`` (atomically) and ``timeline.png`` of ``events`` in ``directory``."""
    from netfl.results.plots import plot_timeline

    nodes = None if nodes is None else list(nodes)
    directory = Path(directory)
    target = directory / "timeline.json"
    partial = directory / ".timeline.json.partial"
    tiers = node_tiers(events)  # once, for both views
    write_chrome_trace(partial, events, start_s, end_s, nodes, tiers)
    partial.replace(target)
    rows, marks, note = gantt_rows(events, start_s=start_s, end_s=end_s, nodes=nodes,
                                   tiers=tiers)
    plot_timeline(rows, marks, directory / "timeline.png", f"{title}: simulated timeline", note)
    return target


def gantt_rows(events: pd.DataFrame, max_nodes: int = 30, start_s: float = 0.0,
               end_s: float = math.inf, nodes: Iterable[str] | None = None,
               tiers: dict[str, str] | None = None
               ) -> tuple[dict[str, list[tuple[float, float, str]]], list[float], str]:
    """What ``timeline.png`` draws: for the ``max_nodes`` busiest nodes (or ``nodes``), each
    node's spans (start, duration, ``compute`` or ``transfer``: training and aggregations it
    ran, transfers it sent) within the window; the round marks (cloud aggregations, else edge
    aggregations, else evaluations); and a note saying which nodes were left out."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    timed = events[events["kind"].isin(("train_end", "aggregate", "transfer_end"))] if len(
        events) else events
    for row in records(timed):
        kind = row["kind"]
        t, duration = float(row["time_s"]), float(row["duration_s"])
        if t < start_s or t - duration > end_s:
            continue
        node = row["src"] if kind == "transfer_end" else row["node"]
        category = "transfer" if kind == "transfer_end" else "compute"
        spans.setdefault(node, []).append((t - duration, duration, category))
    if nodes is not None:
        chosen = [n for n in nodes if n in spans]
    else:
        chosen = sorted(spans, key=lambda n: -sum(d for _, d, _ in spans[n]))[:max_nodes]
    tiers = node_tiers(events) if tiers is None else tiers
    order = {tier: i for i, tier in enumerate(reversed(TIERS))}
    # within a tier, in order of first activity: a sequential schedule reads as a staircase
    chosen.sort(key=lambda n: (order.get(tiers.get(n, "edge"), 1),
                               min(start for start, _, _ in spans[n]), n))
    note = "" if len(chosen) == len(spans) else (
        f"the {len(chosen)} busiest of {len(spans)} nodes" if nodes is None
        else f"{len(chosen)} chosen nodes of {len(spans)}")
    aggregations = events[events["kind"] == "aggregate"] if len(events) else events
    marks: list[float] = []
    for level in ("cloud", "edge"):
        if len(aggregations) and (aggregations["level"] == level).any():
            marks = sorted(aggregations.loc[aggregations["level"] == level, "time_s"])
            break
    if not marks and len(events):
        marks = sorted(events.loc[events["kind"] == "evaluation", "time_s"])
    marks = [t for t in marks if start_s <= t <= end_s]
    if len(marks) > MAX_MARKS:  # a line per round would grey the chart out
        every = math.ceil(len(marks) / MAX_MARKS)
        marks = marks[::every]
        note = "; ".join(filter(None, (note, f"every {every}th round marked")))
    return {n: spans[n] for n in chosen}, marks, note
