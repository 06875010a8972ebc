"""Inter-satellite links that exist: a link's straight chord must clear the Earth plus a margin
(the atmosphere), over the orbit. Pure functions; the LEO world (``leo.py``) uses them.

* ``segment_clearance_km``: the least height above a spherical Earth (mean radius 6,371 km) of
  the segment between two points (km, Earth-centred): |a + t (b - a)| - R at the t in [0, 1]
  closest to the centre. Two satellites at radius r, an angle theta apart, clear it by
  r cos(theta / 2) - R.
* ``grid_isl_pairs``: the +Grid pairs of a shell (or a kept subset of it);
* ``isl_windows``: for each pair, when its chord clears ``margin_km``, sampled every ``step_s``
  over one orbital period and repeated over the horizon. The relative geometry of a shell whose
  satellites share altitude and inclination repeats with the orbital period (their nodes precess
  together), so one period says it all; for TLE shells it is an approximation. Each pair is
  always up (None), never up ([]), or up in the listed windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

import networkx as nx
import numpy as np
from sgp4.api import Satrec, SatrecArray

from netfl.world.orbits import MEAN_EARTH_RADIUS_KM, julian_dates


def segment_clearance_km(a_km: np.ndarray, b_km: np.ndarray) -> np.ndarray:
    """Least height (km) above the mean Earth radius of the segments a-b (broadcast over
    leading axes; the last axis holds x, y, z)."""
    d = b_km - a_km
    length2 = np.sum(d * d, axis=-1)
    t = np.clip(-np.sum(a_km * d, axis=-1) / np.where(length2 > 0, length2, 1.0), 0.0, 1.0)
    closest = a_km + t[..., None] * d
    return np.linalg.norm(closest, axis=-1) - MEAN_EARTH_RADIUS_KM


def orbital_period_s(sats: Sequence[Satrec]) -> float:
    """The mean orbital period (s) of ``sats`` (from their Kozai mean motion, rad/min)."""
    return float(np.mean([2.0 * math.pi / s.no_kozai * 60.0 for s in sats]))


def isl_windows(sats: Sequence[Satrec], pairs: Sequence[tuple[int, int]], epoch: datetime,
                horizon_s: float, step_s: float, margin_km: float
                ) -> list[list[tuple[float, float]] | None]:
    """Per pair (indices into ``sats``): None when its chord always clears ``margin_km``,
    [] when it never does, else the windows (start, end) in which it does, over
    [0, ``horizon_s``] (see the module docstring)."""
    if not pairs:
        return []
    period = orbital_period_s(sats)
    times = np.arange(0.0, period + step_s, step_s)
    jd, fr = julian_dates(epoch, times)
    _, positions, _ = SatrecArray(list(sats)).sgp4(jd, fr)  # TEME km, (S, N, 3)
    a = np.array([i for i, _ in pairs])
    b = np.array([j for _, j in pairs])
    clear = segment_clearance_km(positions[a], positions[b]) >= margin_km  # (pairs, N)
    out: list[list[tuple[float, float]] | None] = []
    for row in clear:
        if row.all():
            out.append(None)
        elif not row.any():
            out.append([])
        else:
            out.append(_repeated(_runs(row, times), period, horizon_s))
    return out


def _runs(clear: np.ndarray, times: np.ndarray) -> list[tuple[float, float]]:
    """The intervals of the sampled times in which ``clear`` holds (edges at the samples)."""
    runs, start = [], None
    for t, ok in zip(times, clear, strict=True):
        if ok and start is None:
            start = float(t)
        elif not ok and start is not None:
            runs.append((start, float(t)))
            start = None
    if start is not None:
        runs.append((start, float(times[-1])))
    return runs


def _repeated(runs: list[tuple[float, float]], period: float, horizon_s: float
              ) -> list[tuple[float, float]]:
    """``runs`` within one period, repeated every ``period`` up to ``horizon_s``, with runs
    that meet across a period boundary merged."""
    out: list[tuple[float, float]] = []
    for k in range(int(horizon_s // period) + 1):
        for start, end in runs:
            start, end = start + k * period, min(end + k * period, horizon_s)
            if start >= horizon_s:
                break
            if out and start <= out[-1][1] + 1e-6:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
    return out


def grid_isl_pairs(slots: list[tuple[int, int]],
                   shell: list[tuple[int, int]] | None = None,
                   phase_deg: list[float] | None = None) -> list[tuple[int, int]]:
    """+Grid: each satellite to the next slot in its plane and to the same slot in the next
    plane, in the numbering of the whole ``shell`` (default: ``slots`` themselves), planes and
    slots wrapping around; a link exists only where both ends are in ``slots`` (a subset keeps
    the shell's numbers, so it never links satellites that were not neighbours). From the last
    plane to plane 0, given each shell satellite's argument of latitude at the epoch
    (``phase_deg``), the partner is the slot of plane 0 nearest in phase (a Walker shell's
    phasing F shifts plane 0 by F slots from where a plane P would be). Pairs of indices into
    ``slots``, sorted, without repeats."""
    shell = slots if shell is None else shell
    planes = max(p for p, _ in shell) + 1
    size = {}
    for p, s in shell:
        size[p] = max(size.get(p, 0), s + 1)
    phase = dict(zip(shell, phase_deg, strict=True)) if phase_deg is not None else None
    index = {slot: k for k, slot in enumerate(slots)}
    pairs = set()
    for k, (p, s) in enumerate(slots):
        across = ((p + 1) % planes, s)
        if phase is not None and p == planes - 1 and planes > 1:
            across = (0, min(range(size[0]), key=lambda j: (
                _angle_between(phase[(p, s)], phase.get((0, j), math.inf)), j)))
        for other in ((p, (s + 1) % size[p]), across):
            j = index.get(other)
            if j is not None and j != k:
                pairs.add((min(k, j), max(k, j)))
    return sorted(pairs)


def _angle_between(a_deg: float, b_deg: float) -> float:
    return abs((a_deg - b_deg + 180.0) % 360.0 - 180.0)


def isl_notes(pairs, spans, slots, graph: nx.Graph, sats: list[str], clearance_m: float
              ) -> list[str]:
    """What a user should know of the ISLs: those never clear of the Earth (left out) and
    those clear only part of the orbit, and the groups the kept satellites split into."""
    notes = []
    for label, same_plane in (("in-plane", True), ("cross-plane", False)):
        kind = [w for (u, v), w in zip(pairs, spans, strict=True)
                if (slots[u][0] == slots[v][0]) == same_plane]
        never, partly = sum(w == [] for w in kind), sum(bool(w) for w in kind)
        if never or partly:
            notes.append(f"+Grid: {never} of {len(kind)} {label} ISLs never clear the Earth "
                         f"by {clearance_m / 1000:g} km (left out), {partly} only part of "
                         f"each orbit (up while they do)")
    isl = graph.edge_subgraph((u, v) for u, v, d in graph.edges(data=True)
                              if d["link_class"] == "backhaul").copy()
    isl.add_nodes_from(sats)
    groups = sorted((len(c) for c in nx.connected_components(isl)), reverse=True)
    if len(groups) > 1:
        shown = ", ".join(map(str, groups[:10])) + (", ..." if len(groups) > 10 else "")
        notes.append(f"the ISLs split the {len(sats)} satellites into {len(groups)} groups "
                     f"({shown}): between groups, models go through gateways")
    return notes
