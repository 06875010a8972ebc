"""Contact plans: when each satellite is above each ground site's elevation mask.

    windows = contact_windows(satellites, sites, start, duration_s, min_elevation_deg)

returns a DataFrame with columns ``satellite, site, rise_s, set_s`` (seconds from ``start``),
one row per window, sorted by rise. How:

1. every satellite's Earth-fixed position at coarse steps (``step_s``, 10 s by default), by SGP4
   for all satellites at once (``SatrecArray``);
2. the elevation test for every (satellite, site) pair and step, vectorized: with d = r_sat -
   r_site and u the site's vertical, el >= E  <=>  u.d > 0 and (u.d)^2 >= sin^2(E) |d|^2, where
   u.d and |d|^2 come from two matrix products per step;
3. each change of visibility between two steps is refined by bisection until it is known to
   within ``tolerance_s`` (0.1 s), one satellite at a time for all its crossings;
4. a window open at the start has rise 0; one open at the end has set ``duration_s``.

A pass shorter than a step can fall between two steps and be missed (at 25 deg and 10 s steps,
only grazing passes of a few seconds are). Results are cached on disk, keyed by every input
(the satellites' elements, the sites, the times, the mask and the steps).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sgp4.api import Satrec, SatrecArray

from netfl.world.orbits import (
    PRESETS,
    WalkerShell,
    gmst_rad,
    julian_dates,
    parse_tle,
    positions_ecef,
    site_ecef,
    site_up,
    teme_to_ecef,
    walker_satrecs,
)
from netfl.world.vectors import dot, length, times_columns

COLUMNS = ["satellite", "site", "rise_s", "set_s"]
PLAN_VERSION = 1  # bump when the computation changes, so old caches are not used
_PAIRS_PER_BLOCK = 4_000_000  # (times x satellites x sites) per vectorized block
_TIMES_PER_SGP4_CALL = 720


def default_cache_dir() -> Path:
    """``$NETFL_CACHE_DIR/contact-plans`` or ``~/.cache/netfl/contact-plans``."""
    root = os.environ.get("NETFL_CACHE_DIR")
    return (Path(root) if root else Path("~/.cache/netfl").expanduser()) / "contact-plans"


def resolve_satellites(satellites, start: datetime) -> tuple[list[str], list[Satrec]]:
    """Names and SGP4 records from TLE / 3LE text, a WalkerShell, a preset name, a dict of
    WalkerShell fields, or (name, Satrec) pairs."""
    if isinstance(satellites, str) and satellites in PRESETS:
        satellites = PRESETS[satellites]
    if isinstance(satellites, dict):
        satellites = WalkerShell(**satellites)
    if isinstance(satellites, WalkerShell):
        sats = walker_satrecs(satellites, start)
        names = [f"p{k // satellites.per_plane}s{k % satellites.per_plane}"
                 for k in range(len(sats))]
        return names, sats
    if isinstance(satellites, str):
        pairs = parse_tle(satellites)
    else:
        pairs = list(satellites)
    return [name for name, _ in pairs], [sat for _, sat in pairs]


def _parse_start(start) -> datetime:
    if isinstance(start, str):
        start = datetime.fromisoformat(start.replace("Z", "+00:00"))
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    return start.astimezone(UTC)


def _sites(sites) -> np.ndarray:
    rows = [tuple(s) + (0.0,) * (3 - len(s)) for s in sites]
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def contact_windows(satellites, sites: Sequence[Sequence[float]], start, duration_s: float,
                    min_elevation_deg: float, *, step_s: float = 10.0,
                    tolerance_s: float = 0.1,
                    cache_dir: str | Path | None | bool = None) -> pd.DataFrame:
    """Visibility windows of every (satellite, site) pair (see the module docstring).

    satellites: TLE / 3LE text, a WalkerShell (or its fields as a dict, or a preset name),
    or (name, Satrec) pairs. sites: (lat_deg, lon_deg[, alt_m]) rows. start: a datetime
    (naive = UTC) or an ISO string. cache_dir: where to cache (None: the default folder;
    False: no cache). Returns columns satellite (name), site (row index), rise_s, set_s.
    """
    start = _parse_start(start)
    names, sats = resolve_satellites(satellites, start)
    site_rows = _sites(sites)
    key = plan_key(sats, site_rows, start, duration_s, min_elevation_deg, step_s, tolerance_s)
    path = None
    if cache_dir is not False:
        path = Path(cache_dir or default_cache_dir()) / f"{key}.parquet"
        if path.exists():
            cached = pd.read_parquet(path)
            cached["satellite"] = [names[i] for i in cached.pop("index")]
            return cached[COLUMNS]
    table = compute_windows(sats, site_rows, start, duration_s, min_elevation_deg, step_s,
                            tolerance_s)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + f".{os.getpid()}.part")
        table.to_parquet(partial, index=False)
        os.replace(partial, path)
    table["satellite"] = [names[i] for i in table.pop("index")]
    return table[COLUMNS]


def plan_key(sats: Sequence[Satrec], sites: np.ndarray, start: datetime, duration_s: float,
             min_elevation_deg: float, step_s: float, tolerance_s: float) -> str:
    """A hash of everything the plan depends on."""
    fields = ("satnum", "jdsatepoch", "jdsatepochF", "no_kozai", "ecco", "inclo", "nodeo",
              "argpo", "mo", "bstar", "ndot", "nddot")
    payload = {
        "version": PLAN_VERSION,
        "sats": [[repr(getattr(s, f)) for f in fields] for s in sats],
        "sites": sites.round(9).tolist(), "start": start.isoformat(),
        "duration_s": duration_s, "min_elevation_deg": min_elevation_deg,
        "step_s": step_s, "tolerance_s": tolerance_s,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


class _Geometry:
    """Sites' positions and verticals, and the elevation test against the mask."""

    def __init__(self, sites: np.ndarray, min_elevation_deg: float):
        self.pos = site_ecef(sites[:, 0], sites[:, 1], sites[:, 2])  # (U, 3)
        self.up = site_up(sites[:, 0], sites[:, 1])
        self.up_dot_pos = np.sum(self.up * self.pos, axis=1)
        self.pos2 = np.sum(self.pos**2, axis=1)
        self.sin2 = math.sin(math.radians(min_elevation_deg)) ** 2
        self.positive_mask = min_elevation_deg >= 0
        self.mask_rad = math.radians(min_elevation_deg)
        # the sites' mean direction and how far (central angle) the farthest site is from it
        centre = self.pos.sum(axis=0)
        norm = length(centre)
        self.centre = centre / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
        cosines = dot(self.pos, self.centre) / np.linalg.norm(self.pos, axis=1)
        self.spread_rad = float(np.arccos(np.clip(cosines.min(), -1.0, 1.0)))
        self.both = np.concatenate([self.up, self.pos]).T  # (3, 2U): one product for both

    def candidates(self, sat_pos: np.ndarray) -> np.ndarray:
        """(T, S) mask of satellites that may be above the mask from some site: within the
        sites' spread plus the Earth central angle of the mask at the satellite's radius (on
        a sphere of the polar radius, plus a degree of margin, so that it never drops a
        visible pair)."""
        radius = np.linalg.norm(sat_pos, axis=-1)
        if not self.positive_mask:
            return np.ones(radius.shape, dtype=bool)
        ratio = np.clip(6356.0 / radius.max() * math.cos(self.mask_rad), -1.0, 1.0)
        reach = math.acos(ratio) - self.mask_rad + self.spread_rad + math.radians(1.0)
        if reach >= math.pi:
            return np.ones(radius.shape, dtype=bool)
        return dot(sat_pos, self.centre) >= radius * math.cos(reach)

    def visible_grid(self, sat_pos: np.ndarray) -> np.ndarray:
        """(T, S, U) visibility from satellite positions (T, S, 3); only candidate satellites
        are tested."""
        grid = np.zeros(sat_pos.shape[:2] + (len(self.pos),), dtype=bool)
        where = np.nonzero(self.candidates(sat_pos))
        if not len(where[0]):
            return grid
        p = sat_pos[where]  # (n, 3)
        products = times_columns(p, self.both)  # (n, 2U)
        n_sites = len(self.pos)
        along = products[:, :n_sites] - self.up_dot_pos  # u . d
        d2 = np.sum(p * p, axis=1)[:, None] - 2.0 * products[:, n_sites:] + self.pos2
        grid[where] = self._test(along, d2)
        return grid

    def visible_pairs(self, sat_pos: np.ndarray, sites: np.ndarray) -> np.ndarray:
        """Visibility of satellite positions (n, 3) from sites (n,) (index arrays)."""
        d = sat_pos - self.pos[sites]
        along = np.sum(d * self.up[sites], axis=1)
        return self._test(along, np.sum(d * d, axis=1))

    def _test(self, along: np.ndarray, d2: np.ndarray) -> np.ndarray:
        if self.positive_mask:
            return (along > 0) & (along * along >= self.sin2 * d2)
        return (along >= 0) | (along * along <= self.sin2 * d2)


def compute_windows(sats: Sequence[Satrec], sites: np.ndarray, start: datetime,
                    duration_s: float, min_elevation_deg: float, step_s: float,
                    tolerance_s: float) -> pd.DataFrame:
    """The windows, uncached: columns index (satellite position in ``sats``), site, rise_s,
    set_s."""
    if duration_s <= 0 or step_s <= 0 or tolerance_s <= 0:
        raise ValueError("duration_s, step_s and tolerance_s must be positive")
    geometry = _Geometry(sites, min_elevation_deg)
    times = np.arange(0.0, duration_s, step_s)
    times = np.append(times, duration_s) if times[-1] < duration_s else times
    array = SatrecArray(list(sats))
    n_sats, n_sites = len(sats), len(sites)
    per_block = max(1, _PAIRS_PER_BLOCK // max(1, n_sats * n_sites))
    previous, crossings = None, []
    first_visible = None
    for begin in range(0, len(times), _TIMES_PER_SGP4_CALL):
        block_times = times[begin:begin + _TIMES_PER_SGP4_CALL]
        positions = positions_ecef(array, start, block_times).transpose(1, 0, 2)  # (T, S, 3)
        for sub in range(0, len(block_times), per_block):
            visible = geometry.visible_grid(positions[sub:sub + per_block])
            if previous is None:
                first_visible = visible[0]
            else:
                visible = np.concatenate([previous[None], visible])
            changed = np.nonzero(visible[1:] != visible[:-1])
            k = changed[0] + begin + sub + (0 if previous is None else -1) + 1
            crossings.append((changed[1], changed[2], times[k - 1], times[k],
                              visible[1:][changed]))
            previous = visible[-1]
    sat_idx, site_idx, lo, hi, rising = (np.concatenate(c) for c in zip(*crossings, strict=True))
    at = _refine(sats, geometry, start, sat_idx, site_idx, lo, hi, rising, tolerance_s)
    return _assemble(n_sats, first_visible, previous, sat_idx, site_idx, at, rising, duration_s)


def _refine(sats, geometry: _Geometry, start: datetime, sat_idx, site_idx, lo, hi, rising,
            tolerance_s: float) -> np.ndarray:
    """Bisect every crossing to within ``tolerance_s``; returns the crossing times."""
    lo, hi = lo.astype(float).copy(), hi.astype(float).copy()
    iterations = max(0, math.ceil(math.log2(max(hi - lo, default=0.0) / tolerance_s))) \
        if len(lo) else 0
    order = np.argsort(sat_idx, kind="stable")
    bounds = np.searchsorted(sat_idx[order], np.arange(len(sats) + 1))
    for _ in range(iterations):
        mid = (lo + hi) / 2.0
        seen = np.empty(len(mid), dtype=bool)
        for j in range(len(sats)):
            rows = order[bounds[j]:bounds[j + 1]]
            if not len(rows):
                continue
            jd, fr = julian_dates(start, mid[rows])
            errors, r, _ = sats[j].sgp4_array(jd, fr)
            if np.any(errors):
                raise ValueError(f"SGP4 error for satellite {j} while refining a crossing")
            pos = teme_to_ecef(r, gmst_rad(jd, fr))
            seen[rows] = geometry.visible_pairs(pos, site_idx[rows])
        after = seen == rising  # the crossing lies before mid
        hi = np.where(after, mid, hi)
        lo = np.where(after, lo, mid)
    return (lo + hi) / 2.0


def _assemble(n_sats: int, first_visible, last_visible, sat_idx, site_idx, at, rising,
              duration_s: float) -> pd.DataFrame:
    """Pair each pair's crossings into windows, opening those visible at the start and closing
    those visible at the end."""
    open_s, open_u = np.nonzero(first_visible)
    end_s, end_u = np.nonzero(last_visible)
    sat_all = np.concatenate([open_s, sat_idx, end_s])
    site_all = np.concatenate([open_u, site_idx, end_u])
    time_all = np.concatenate([np.zeros(len(open_s)), at, np.full(len(end_s), duration_s)])
    # an opening counts as a rise, an end still visible as a set
    rise_all = np.concatenate([np.ones(len(open_s), bool), rising, np.zeros(len(end_s), bool)])
    order = np.lexsort((time_all, site_all, sat_all))
    sat_all, site_all = sat_all[order], site_all[order]
    time_all, rise_all = time_all[order], rise_all[order]
    rises, sets = np.flatnonzero(rise_all), np.flatnonzero(~rise_all)
    if len(rises) != len(sets) or np.any(sat_all[rises] != sat_all[sets]) or np.any(
            site_all[rises] != site_all[sets]) or np.any(sets != rises + 1):
        raise RuntimeError("contact plan: rises and sets do not pair up (please report)")
    table = pd.DataFrame({"index": sat_all[rises].astype(np.int64),
                          "site": site_all[rises].astype(np.int64),
                          "rise_s": time_all[rises], "set_s": time_all[sets]})
    table = table[table["set_s"] > table["rise_s"]]
    return table.sort_values(["rise_s", "index", "site"], kind="stable").reset_index(drop=True)


def merged_intervals(windows: pd.DataFrame, by: str, count: int) -> list[list[tuple]]:
    """Per index 0..count-1 of column ``by``: the union of its windows, sorted."""
    merged: list[list[tuple]] = [[] for _ in range(count)]
    for key, group in windows.sort_values("rise_s").groupby(by, sort=True):
        spans = merged[int(key)]
        for rise, set_ in zip(group["rise_s"], group["set_s"], strict=True):
            if spans and rise <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], float(set_)))
            else:
                spans.append((float(rise), float(set_)))
    return merged


def time_left_s(spans: list[tuple[float, float]], starts: list[float], t: float) -> float:
    """How long the span of ``spans`` (sorted, disjoint; ``starts`` their starts) that holds
    ``t`` lasts from ``t``: 0 where none does."""
    i = bisect.bisect_right(starts, t) - 1
    if i < 0:
        return 0.0
    end = spans[i][1]
    return end - t if t < end else 0.0
