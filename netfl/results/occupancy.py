"""How many clients each cell had over time: vehicles per road-side unit on a road world,
users per satellite (and per beam, where beams are shared) on an orbital one.

Read after the run from the contacts the world replayed (no event and no memory while it
runs): a road world's visits (visits.csv: a vehicle is a client of one RSU at a time, the
``Association`` records' intervals), an orbital world's windows (windows.csv: a user is in view
of every satellite above its mask at once, so a user counts at each; which one serves it is
the association policy's pick). A user's beam is that of its access link to the satellite
(the beam its ground cell was given; ``netfl.network.beam``).

occupancy.csv, one row per cell and time bin (``OCCUPANCY_COLUMNS``):

* ``start_s``, ``end_s``: the bin (``links``' bins: a power of two times ``FIRST_BIN_S``, at most
  ``MAX_BINS`` over the run; the last one ends with the run);
* ``level``: 'rsu', 'satellite' or 'beam'; ``cell``: its name ('e3', 'e3 beam 0');
* ``mean``: the time-averaged number of clients in the bin; ``peak``: the most at once.

summary.json's ``occupancy``: per level, the number of cells, the mean over cells and the
peak, and per cell (the ``SUMMARY_CELLS`` busiest by mean) its time-averaged clients over the
run and its peak.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from netfl.network.time_bins import FIRST_BIN_S, MAX_BINS

OCCUPANCY_COLUMNS = ["start_s", "end_s", "level", "cell", "mean", "peak"]
INTERVAL_COLUMNS = ["client", "level", "cell", "start_s", "end_s"]
SUMMARY_CELLS = 20  # cells named in summary.json, per level
HEAT_MAP_CELLS = 30  # rows of occupancy.png


def world_intervals(world, network, now_s: float) -> pd.DataFrame | None:
    """Each client's time in each cell up to ``now_s`` (``INTERVAL_COLUMNS``); None for a
    world without cells that move relative to their clients (edge)."""
    from netfl.world import OrbitWorld, RoadWorld
    from netfl.world.iov import visit_rows

    if isinstance(world, RoadWorld):
        visits = pd.DataFrame(visit_rows(world, now_s),
                              columns=["client", "rsu", "start_s", "end_s"])
        return pd.DataFrame({"client": visits["client"], "level": "rsu",
                             "cell": visits["rsu"], "start_s": visits["start_s"],
                             "end_s": visits["end_s"]}, columns=INTERVAL_COLUMNS)
    if not isinstance(world, OrbitWorld):
        return None
    windows = world.window_rows(now_s)
    sats = pd.DataFrame({"client": windows["user"], "level": "satellite",
                         "cell": windows["satellite"], "start_s": windows["rise_s"],
                         "end_s": windows["set_s"]}, columns=INTERVAL_COLUMNS)
    beam_of = _beams(world, network)
    if not beam_of:
        return sats
    beams = sats.assign(level="beam", cell=[beam_of.get((c, s), "") for c, s in zip(
        sats["client"], sats["cell"], strict=True)])
    return pd.concat([sats, beams[beams["cell"] != ""]], ignore_index=True)


def _beams(world, network) -> dict[tuple[str, str], str]:
    """(user, satellite) -> the name of its beam ('e3 beam 0'), for access links whose uplink
    shares a beam's medium; empty without shared beams."""
    beam_of = {}
    for link in network.links():
        if link.link_class != "access":
            continue
        client, sat = (link.u, link.v) if world.tier(link.u) == "client" else (link.v, link.u)
        for channel in link.channels(client, sat):
            if channel.medium is not None:
                beam_of[(client, sat)] = channel.medium.name.removesuffix(" up")
    return beam_of


def occupancy(world, network, now_s: float) -> pd.DataFrame:
    """occupancy.csv's table of a run that has reached ``now_s`` (empty on an edge world)."""
    return occupancy_table(world_intervals(world, network, now_s), now_s)


def bin_edges(duration_s: float) -> np.ndarray:
    """The bins' edges over [0, ``duration_s``] (the last edge is the run's end)."""
    width = FIRST_BIN_S
    while duration_s >= width * MAX_BINS:
        width *= 2
    count = max(math.ceil(duration_s / width), 1)
    edges = np.arange(count + 1, dtype=float) * width
    edges[-1] = duration_s  # after the one before it: count is the ceiling
    return edges


def _cell_bins(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, peak) clients per bin of one cell whose clients stayed [starts, ends)."""
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.lexsort((deltas, times))  # at equal times, leaving before arriving
    times, counts = times[order], np.cumsum(deltas[order])
    # the integral of the count up to each event, then up to each edge (piecewise linear)
    before = np.concatenate([[0.0], counts[:-1]])
    integral = np.concatenate([[0.0], np.cumsum(before[1:] * np.diff(times))])
    at = np.searchsorted(times, edges, side="right")  # events at or before each edge
    last = np.clip(at - 1, 0, None)
    level = np.where(at > 0, counts[last], 0.0)  # the count just after each edge
    area = np.where(at > 0, integral[last] + level * (edges - times[last]), 0.0)
    lengths = np.diff(edges)
    mean = np.diff(area) / np.where(lengths > 0, lengths, 1.0)
    peak = level[:-1].copy()
    inside = np.searchsorted(times, edges, side="left")
    for k in range(len(lengths)):
        lo, hi = at[k], inside[k + 1]  # events strictly inside the bin
        if hi > lo:
            peak[k] = max(peak[k], counts[lo:hi].max())
    return mean, peak


def occupancy_table(intervals: pd.DataFrame | None, duration_s: float) -> pd.DataFrame:
    """occupancy.csv (``OCCUPANCY_COLUMNS``) from ``world_intervals``: every cell with a
    client, in every bin of the run (levels in the order met, cells in order of name)."""
    if intervals is None or intervals.empty or duration_s <= 0:
        return pd.DataFrame(columns=OCCUPANCY_COLUMNS)
    edges = bin_edges(duration_s)
    parts = []
    for (level, cell), group in intervals.groupby(["level", "cell"], sort=False):
        mean, peak = _cell_bins(group["start_s"].to_numpy(float),
                                group["end_s"].to_numpy(float), edges)
        parts.append(pd.DataFrame({"start_s": edges[:-1], "end_s": edges[1:], "level": level,
                                   "cell": cell, "mean": mean, "peak": peak.astype(int)}))
    table = pd.concat(parts, ignore_index=True)
    order = {level: k for k, level in enumerate(intervals["level"].unique())}
    table["_level"], table["_cell"] = table["level"].map(order), table["cell"].map(_natural)
    return table.sort_values(["_level", "_cell", "start_s"]).drop(
        columns=["_level", "_cell"]).reset_index(drop=True)[OCCUPANCY_COLUMNS]


def _natural(name: str) -> tuple:
    """'e10' after 'e9': names compared by their text and numbers."""
    import re

    return tuple(int(part) if part.isdigit() else part
                 for part in re.split(r"(\d+)", str(name)))


def _per_cell(table: pd.DataFrame) -> pd.DataFrame:
    """Per (level, cell): the time-averaged clients over the run and the peak."""
    weighted = table.assign(area=table["mean"] * (table["end_s"] - table["start_s"]))
    cells = weighted.groupby(["level", "cell"], sort=False).agg(
        area=("area", "sum"), peak=("peak", "max"), end=("end_s", "max"))
    cells["mean"] = cells["area"] / cells["end"].where(cells["end"] > 0, 1.0)
    return cells.reset_index()


def occupancy_summary(table: pd.DataFrame, top: int = SUMMARY_CELLS) -> dict:
    """summary.json's ``occupancy`` (see the module docstring); {} without cells."""
    if table.empty:
        return {}
    summary = {}
    for level, cells in _per_cell(table).groupby("level", sort=False):
        busiest = cells.sort_values(["mean", "cell"], ascending=[False, True]).head(top)
        summary[level] = {
            "cells": len(cells), "mean": float(cells["mean"].mean()),
            "peak": int(cells["peak"].max()),
            "by_cell": {str(row.cell): {"mean": float(row.mean), "peak": int(row.peak)}
                        for row in busiest.itertuples()}}
    return summary


def occupancy_matrix(table: pd.DataFrame, top: int = HEAT_MAP_CELLS) -> pd.DataFrame:
    """For occupancy.png: the mean clients per bin (columns: the bins' starts) of the cells of
    the finest level (beams where there are, else satellites or RSUs): all of them in name
    order up to ``top``, else the ``top`` busiest by their mean over the run."""
    if table.empty:
        return pd.DataFrame()
    level = "beam" if (table["level"] == "beam").any() else table["level"].iloc[0]
    mine = table[table["level"] == level]
    cells = _per_cell(mine)
    if len(cells) > top:
        cells = cells.sort_values(["mean", "cell"], ascending=[False, True]).head(top)
    names = sorted(cells["cell"], key=_natural)
    matrix = mine.pivot(index="cell", columns="start_s", values="mean")
    return matrix.loc[names]
