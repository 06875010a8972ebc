"""Sunlight and eclipses of satellites along a time grid, vectorized (docs/models/energy.md).

``sunlight_grid`` propagates every satellite with SGP4 (TEME frame) and puts the Sun there too
(netfl.world.sun), in blocks of times so that memory stays bounded for a whole shell over days;
``eclipse_intervals`` turns one satellite's row into [start, end) intervals of shadow, their
edges placed by linear interpolation between grid points; ``beta_angles_deg`` gives each orbit's
beta angle (the Sun's elevation above the orbit plane), which fixes a circular orbit's eclipse
fraction (netfl.world.sun.eclipse_fraction_circular).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
from sgp4.api import Satrec, SatrecArray

from netfl.world.orbits import julian_dates
from netfl.world.sun import sun_position_teme, sunlight_fraction

BLOCK_ELEMENTS = 2_000_000  # satellites x times per propagation block (~100 MB of float64)


def _propagate(array: SatrecArray, jd: np.ndarray, fr: np.ndarray, velocities: bool = False):
    errors, r, v = array.sgp4(jd, fr)
    if np.any(errors):
        bad = np.argwhere(errors)[0]
        raise ValueError(f"SGP4 error code {int(errors[tuple(bad)])} for satellite "
                         f"{int(bad[0])} at grid point {int(bad[1])}")
    return (r, v) if velocities else r


def sunlight_grid(sats: Sequence[Satrec], epoch: datetime, seconds: np.ndarray,
                  model: str = "conical") -> np.ndarray:
    """The visible fraction of the Sun's disc, shape (satellites, times), at ``epoch`` +
    ``seconds``: 1 in sunlight, 0 in the umbra (netfl.world.sun.sunlight_fraction)."""
    seconds = np.asarray(seconds, dtype=float)
    array = SatrecArray(list(sats))
    out = np.empty((len(sats), len(seconds)))
    per_block = max(1, BLOCK_ELEMENTS // max(len(sats), 1))
    for start in range(0, len(seconds), per_block):
        times = seconds[start:start + per_block]
        jd, fr = julian_dates(epoch, times)
        positions = _propagate(array, jd, fr)  # (S, T, 3)
        sun = sun_position_teme(jd, fr)  # (T, 3)
        out[:, start:start + len(times)] = sunlight_fraction(positions, sun[None, :, :], model)
    return out


def beta_angles_deg(sats: Sequence[Satrec], epoch: datetime, seconds: np.ndarray) -> np.ndarray:
    """Each satellite's beta angle (degrees, shape (satellites, times)): the angle between the
    Sun's direction and the orbit plane (normal r x v)."""
    jd, fr = julian_dates(epoch, np.asarray(seconds, dtype=float))
    r, v = _propagate(SatrecArray(list(sats)), jd, fr, velocities=True)
    normal = np.cross(r, v)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    sun = sun_position_teme(jd, fr)
    sun /= np.linalg.norm(sun, axis=-1, keepdims=True)
    return np.degrees(np.arcsin(np.clip(np.sum(normal * sun[None], axis=-1), -1.0, 1.0)))


def eclipse_intervals(sunlight: np.ndarray, seconds: np.ndarray,
                      threshold: float = 0.5) -> list[tuple[float, float]]:
    """[start, end) intervals (s) where one satellite's ``sunlight`` (its row of the grid) is
    below ``threshold``; edges interpolated linearly between grid points, an interval open at
    either end of the grid cut there."""
    seconds = np.asarray(seconds, dtype=float)
    dark = np.asarray(sunlight) < threshold
    if not dark.any():
        return []
    changes = np.flatnonzero(np.diff(dark.astype(np.int8)))
    edges = []
    for i in changes:  # the crossing between grid points i and i + 1
        a, b = float(sunlight[i]), float(sunlight[i + 1])
        share = (threshold - a) / (b - a) if b != a else 0.5
        edges.append(seconds[i] + share * (seconds[i + 1] - seconds[i]))
    starts = ([float(seconds[0])] if dark[0] else []) + [e for e, i in zip(edges, changes,
                                                                           strict=True)
                                                         if not dark[i]]
    ends = [e for e, i in zip(edges, changes, strict=True) if dark[i]] + (
        [float(seconds[-1])] if dark[-1] else [])
    return list(zip(starts, ends, strict=True))


def shadow_fraction(sunlight: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Each satellite's time-weighted mean of (1 - sunlight) over the grid (trapezoids)."""
    seconds = np.asarray(seconds, dtype=float)
    span = seconds[-1] - seconds[0]
    if span <= 0:
        return 1.0 - np.asarray(sunlight)[..., 0]
    return np.trapezoid(1.0 - sunlight, seconds, axis=-1) / span


def world_eclipses(world, sats: list[str], t_end_s: float, step_s: float = 20.0
                   ) -> dict[str, list[tuple[float, float]]]:
    """Each of an orbital world's satellites ``sats``' intervals in the Earth's shadow (the umbra
    and the darker half of the penumbra, by a conical shadow) from 0 to ``t_end_s``."""
    if not sats or t_end_s <= 0:
        return {}
    seconds = np.append(np.arange(0.0, t_end_s, step_s), t_end_s)
    light = sunlight_grid(world.satellite_records(sats), world.spec.start, seconds)
    return {s: eclipse_intervals(row, seconds) for s, row in zip(sats, light, strict=True)}
