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
    from netfl.results.timeline_plot import plot_timeline

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
    node's spans (start, duration, category) within the window: ``compute`` (training and
    aggregations it ran), ``transfer`` (transfers it sent and delivered), ``failed`` and
    ``cancelled`` (its attempts that failed, from the attempt's start to its failure, and its
    transfers cancelled, from their last attempt's start); the round marks (cloud aggregations,
    else edge aggregations, else evaluations); and a note saying which nodes were left out.
    The cloud's row is always kept among the busiest."""
    spans = _spans(events, start_s, end_s)
    tiers = node_tiers(events) if tiers is None else tiers
    busy = {n: sum(d for _, d, _ in spans[n]) for n in spans}
    ranked = sorted(spans, key=lambda n: -busy[n])
    clouds = [n for n in ranked if tiers.get(n) == "cloud"]
    if nodes is not None:
        chosen = [n for n in nodes if n in spans]
    else:  # the cloud first, then the busiest
        chosen = sorted(ranked, key=lambda n: n not in clouds)[:max_nodes]
    clouds = [] if set(chosen) == set(ranked[:max_nodes]) else clouds  # kept only as the cloud
    order = {tier: i for i, tier in enumerate(reversed(TIERS))}
    # within a tier, in order of first activity: a sequential schedule reads as a staircase
    chosen.sort(key=lambda n: (order.get(tiers.get(n, "edge"), 1),
                               min(start for start, _, _ in spans[n]), n))
    note = "" if len(chosen) == len(spans) else (
        f"{len(chosen)} chosen nodes of {len(spans)}" if nodes is not None
        else f"the {len(chosen)} busiest of {len(spans)} nodes" if not clouds
        else f"the cloud and the {len(chosen) - len(clouds)} busiest of "
             f"{len(spans) - len(clouds)} other nodes")
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


def _spans(events: pd.DataFrame, start_s: float, end_s: float
           ) -> dict[str, list[tuple[float, float, str]]]:
    """Each node's (start s, duration s, category) spans overlapping [start_s, end_s] (see
    ``gantt_rows``)."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    kinds = ("train_end", "aggregate", "transfer_end", "transfer_start", "transfer_fail")
    timed = events[events["kind"].isin(kinds)] if len(events) else events
    attempt_began: dict[int, float] = {}  # transfer id -> its latest attempt's start
    for row in records(timed):
        kind, t = row["kind"], float(row["time_s"])
        if kind == "transfer_start":
            attempt_began[int(row["transfer_id"])] = t
            continue
        if kind == "transfer_fail":
            began = attempt_began.get(int(row["transfer_id"]), t)
            node, duration = row["src"], t - began
            category = "cancelled" if row["reason"] == "cancelled" else "failed"
        else:
            duration = float(row["duration_s"])
            node = row["src"] if kind == "transfer_end" else row["node"]
            category = "transfer" if kind == "transfer_end" else "compute"
        if t < start_s or t - duration > end_s:
            continue
        spans.setdefault(node, []).append((t - duration, duration, category))
    return spans
