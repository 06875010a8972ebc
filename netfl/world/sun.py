"""The Sun's direction and the Earth's shadow, vectorized over time grids (docs/models/energy.md).

* ``sun_position_teme``: the Sun's geocentric position by the Astronomical Almanac's low-precision
  formulae (mean anomaly and ecliptic longitude of date, the obliquity of date; about 0.01 degrees
  from 1950 to 2050), in the equator-and-equinox-of-date frame, which SGP4's TEME frame matches to
  within nutation (under 20 arcseconds). ``sun_position_ecef`` turns it with the same Greenwich
  sidereal time as the satellites (netfl.world.orbits).
* ``sunlight_fraction``: the part of the Sun's disc a satellite sees: 0 or 1 in a cylindrical
  shadow of the Earth's radius; in a conical one, the Sun and the Earth as discs of their
  apparent radii, 0 in the umbra, the uncovered part of the Sun's disc in the penumbra.
* ``eclipse_fraction_circular``: the closed form for a circular orbit in a cylindrical shadow,
  from its altitude and its beta angle (the Sun's elevation above the orbit plane).

Lengths in km, angles in radians unless a name says degrees. Not modelled: the atmosphere's
refraction and absorption at the shadow's edge, the Moon's shadow, the Earth's oblateness.
"""

from __future__ import annotations

import math

import numpy as np

EARTH_RADIUS_KM = 6378.137  # WGS-84 equatorial radius
SUN_RADIUS_KM = 695_700.0  # IAU 2015 nominal solar radius
AU_KM = 149_597_870.7
J2000_JD = 2451545.0


def sun_position_teme(jd: np.ndarray, fr: np.ndarray | float = 0.0) -> np.ndarray:
    """The Sun's geocentric position (km), shape (..., 3), at Julian dates ``jd + fr`` (UT1 is
    taken for TT: 69 s move the Sun by 0.0008 degrees)."""
    n = np.asarray(jd, dtype=float) - J2000_JD + np.asarray(fr, dtype=float)
    mean_longitude = np.radians((280.460 + 0.9856474 * n) % 360.0)
    anomaly = np.radians((357.528 + 0.9856003 * n) % 360.0)
    longitude = mean_longitude + np.radians(1.915 * np.sin(anomaly)
                                            + 0.020 * np.sin(2 * anomaly))
    obliquity = np.radians(23.439 - 4.0e-7 * n)
    distance = AU_KM * (1.00014 - 0.01671 * np.cos(anomaly) - 0.00014 * np.cos(2 * anomaly))
    return np.stack([distance * np.cos(longitude),
                     distance * np.cos(obliquity) * np.sin(longitude),
                     distance * np.sin(obliquity) * np.sin(longitude)], axis=-1)


def sun_position_ecef(jd: np.ndarray, fr: np.ndarray, gmst: np.ndarray) -> np.ndarray:
    """The Sun's position (km, shape (T, 3)) in the Earth-fixed frame the satellites use: its
    TEME position turned about z by the Greenwich mean sidereal time ``gmst`` (rad, shape (T,))."""
    r = sun_position_teme(jd, fr)
    c, s = np.cos(gmst), np.sin(gmst)
    return np.stack([c * r[..., 0] + s * r[..., 1], -s * r[..., 0] + c * r[..., 1], r[..., 2]],
                    axis=-1)


def sunlight_fraction(sat_km: np.ndarray, sun_km: np.ndarray,
                      model: str = "conical") -> np.ndarray:
    """The fraction of the Sun's disc visible from ``sat_km`` (..., 3), with the Sun at
    ``sun_km`` (broadcast against it), in [0, 1].

    ``cylindrical``: 0 where the satellite is behind the Earth (r . s < 0) within the Earth's
    radius of the Earth-Sun line, else 1. ``conical``: the Earth's and the Sun's discs as seen
    from the satellite (apparent radii a = asin(R_sun / d_sun), b = asin(R_E / |r|), centres
    c apart): 1 where c >= a + b, 0 where c <= b - a (umbra), and otherwise the part of the Sun's
    disc the Earth's leaves uncovered (the area of two overlapping circles)."""
    sat = np.asarray(sat_km, dtype=float)
    sun = np.broadcast_to(np.asarray(sun_km, dtype=float), sat.shape)
    if model == "cylindrical":
        unit = sun / np.linalg.norm(sun, axis=-1, keepdims=True)
        along = np.sum(sat * unit, axis=-1)
        across = np.linalg.norm(sat - along[..., None] * unit, axis=-1)
        return np.where((along < 0) & (across < EARTH_RADIUS_KM), 0.0, 1.0)
    if model != "conical":
        raise ValueError(f"shadow model {model!r}: choose conical or cylindrical")
    to_sun = sun - sat
    d_sun = np.linalg.norm(to_sun, axis=-1)
    d_earth = np.linalg.norm(sat, axis=-1)
    a = np.arcsin(np.clip(SUN_RADIUS_KM / d_sun, -1, 1))
    b = np.arcsin(np.clip(EARTH_RADIUS_KM / d_earth, -1, 1))
    cos_c = np.sum(-sat * to_sun, axis=-1) / (d_earth * d_sun)
    c = np.arccos(np.clip(cos_c, -1.0, 1.0))
    return _uncovered(a, b, c)


def _uncovered(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The uncovered fraction of a disc of radius a by a disc of radius b, centres c apart
    (small angles treated as flat: the discs' overlap area, Montenbruck and Gill, 3.4.2)."""
    a, b, c = np.broadcast_arrays(a, b, c)
    out = np.ones(a.shape)
    full = c <= b - a  # the Earth covers the whole Sun: umbra
    out[full] = 0.0
    partial = (c < a + b) & ~full
    if np.any(partial):
        ap, bp, cp = a[partial], b[partial], np.maximum(c[partial], 1e-12)
        x = (cp ** 2 + ap ** 2 - bp ** 2) / (2 * cp)
        y = np.sqrt(np.clip(ap ** 2 - x ** 2, 0.0, None))
        area = (ap ** 2 * np.arccos(np.clip(x / ap, -1, 1))
                + bp ** 2 * np.arccos(np.clip((cp - x) / bp, -1, 1)) - cp * y)
        inside = cp <= a[partial] - b[partial]  # annular: the Earth's disc inside the Sun's
        area = np.where(inside, np.pi * bp ** 2, area)
        out[partial] = 1.0 - area / (np.pi * ap ** 2)
    return np.clip(out, 0.0, 1.0)


def eclipse_fraction_circular(altitude_km: float, beta_deg: float) -> float:
    """The fraction of a circular orbit's period spent in a cylindrical Earth shadow::

        f = acos(sqrt(h^2 + 2 R h) / ((R + h) cos beta)) / pi   for |beta| < asin(R / (R + h)),
        f = 0 beyond that beta*

    (R: the Earth's radius; h: the altitude; beta: the angle between the orbit plane and the
    Sun's direction). 550 km at beta 0: 0.372; beta* = 67.0 degrees."""
    radius = EARTH_RADIUS_KM + altitude_km
    beta = math.radians(abs(beta_deg))
    if beta >= math.asin(EARTH_RADIUS_KM / radius):
        return 0.0
    ratio = math.sqrt(altitude_km ** 2 + 2 * EARTH_RADIUS_KM * altitude_km) / (
        radius * math.cos(beta))
    return math.acos(min(ratio, 1.0)) / math.pi


def critical_beta_deg(altitude_km: float) -> float:
    """The beta angle above which a circular orbit at ``altitude_km`` never enters a cylindrical
    shadow: asin(R / (R + h))."""
    return math.degrees(math.asin(EARTH_RADIUS_KM / (EARTH_RADIUS_KM + altitude_km)))
