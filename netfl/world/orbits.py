"""Orbits and ground geometry, pure functions (docs/models/leo.md gives the sources).

Satellites are propagated with SGP4 (the ``sgp4`` package): from TLE / 3LE text, or from
Walker-delta shells whose elements are built with ``sgp4init`` (no file). Positions come out in
TEME and are turned into Earth-fixed coordinates by the Greenwich mean sidereal time (IAU-82,
as Vallado's SGP4 reference code does; UT1 is taken as UTC). Ground sites sit on the WGS84
ellipsoid; elevation is measured from the site's geodetic horizon.

Units: km for positions, degrees for angles in the API, seconds for times.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sgp4.api import WGS72, Satrec, SatrecArray, jday
from sgp4.io import compute_checksum

MU_KM3_S2 = 398600.8  # WGS72, the constants SGP4 uses
EARTH_RADIUS_KM = 6378.135  # WGS72 equatorial radius (orbits)
WGS84_A_KM = 6378.137  # sites
WGS84_F = 1 / 298.257223563
MEAN_EARTH_RADIUS_KM = 6371.0088
SPEED_OF_LIGHT_KM_S = 299_792.458
SGP4_EPOCH_JD = 2433281.5  # 1949 December 31 00:00 UT: sgp4init counts days from here


@dataclass(frozen=True)
class WalkerShell:
    """A Walker-delta shell i: T/P/F: ``planes`` (P) planes of ``per_plane`` satellites
    (T = P x per_plane) on circular orbits at ``altitude_km`` and ``inclination_deg``; plane p
    has RAAN 360 p / P and satellite s of it mean anomaly 360 s / S + 360 F p / T."""

    altitude_km: float
    inclination_deg: float
    planes: int
    per_plane: int
    phasing: int = 1

    @property
    def total(self) -> int:
        return self.planes * self.per_plane


# Presets, with their sources in docs/models/leo.md.
PRESETS: dict[str, WalkerShell] = {
    "starlink-shell1": WalkerShell(550.0, 53.0, 72, 22, 1),  # FCC SAT-MOD-20181108-00083
    "kuiper": WalkerShell(630.0, 51.9, 34, 34, 1),  # FCC SAT-LOA-20190704-00057, shell 2
    "telesat": WalkerShell(1015.0, 98.98, 27, 13, 1),  # FCC SAT-PDR-20161115-00108, polar
    "walker-40-5": WalkerShell(500.0, 80.0, 5, 8, 1),  # FL-over-LEO studies' 40/5/1
}


def walker_elements(shell: WalkerShell) -> list[tuple[int, int, float, float]]:
    """(plane, slot, RAAN deg, mean anomaly deg) of every satellite, plane by plane."""
    out = []
    for p in range(shell.planes):
        for s in range(shell.per_plane):
            raan = 360.0 * p / shell.planes
            anomaly = (360.0 * s / shell.per_plane
                       + 360.0 * shell.phasing * p / shell.total) % 360.0
            out.append((p, s, raan, anomaly))
    return out


def mean_motion_rad_min(altitude_km: float) -> float:
    """Mean motion of a circular orbit at ``altitude_km`` (rad/min, as sgp4init wants)."""
    a = EARTH_RADIUS_KM + altitude_km
    return math.sqrt(MU_KM3_S2 / a**3) * 60.0


def walker_satrecs(shell: WalkerShell, epoch: datetime) -> list[Satrec]:
    """SGP4 records of a Walker shell at ``epoch`` (circular, no drag), numbered from 1."""
    jd, fr = _jday(epoch)
    days = jd + fr - SGP4_EPOCH_JD
    n = mean_motion_rad_min(shell.altitude_km)
    sats = []
    for k, (_, _, raan, anomaly) in enumerate(walker_elements(shell)):
        sat = Satrec()
        sat.sgp4init(WGS72, "i", k + 1, days, 0.0, 0.0, 0.0, 0.0, 0.0,
                     math.radians(shell.inclination_deg), math.radians(anomaly), n,
                     math.radians(raan))
        sats.append(sat)
    return sats


def parse_tle(text: str, source: str = "<tle>") -> list[tuple[str, Satrec]]:
    """(name, record) of each satellite in TLE (2-line) or 3LE (name line first) text.
    Raises ValueError naming ``source``, the line number and what is wrong."""
    lines = [(k + 1, line.rstrip()) for k, line in enumerate(text.splitlines()) if line.strip()]
    out, k = [], 0
    while k < len(lines):
        number, line = lines[k]
        name = None
        if not line.startswith("1 "):
            name = line[2:].strip() if line.startswith("0 ") else line.strip()
            k += 1
            if k >= len(lines):
                raise ValueError(f"{source}:{number}: a name line without its two TLE lines")
            number, line = lines[k]
        if k + 1 >= len(lines) or not line.startswith("1 ") or not (
                lines[k + 1][1].startswith("2 ")):
            raise ValueError(f"{source}:{number}: expected TLE line 1 then line 2, got "
                             f"{line[:40]!r}")
        for offset, text in enumerate((line, lines[k + 1][1])):
            problem = tle_checksum_problem(text)
            if problem:
                raise ValueError(f"{source}:{lines[k + offset][0]}: {problem}")
        try:
            sat = Satrec.twoline2rv(line, lines[k + 1][1], WGS72)
        except Exception as exc:  # the parser raises ValueError and others on bad fields
            raise ValueError(f"{source}:{number}: not a valid TLE: {exc}") from None
        problem = orbit_problem(sat)
        if problem:
            raise ValueError(f"{source}:{number}: {problem}")
        # the C++ parser does not raise: check that the elements propagate at their epoch
        error, r, _ = sat.sgp4(sat.jdsatepoch, sat.jdsatepochF)
        if sat.error or error or not np.all(np.isfinite(r)):
            raise ValueError(f"{source}:{number}: the elements do not propagate (SGP4 error "
                             f"{sat.error or error}; check the epoch, inclination and mean "
                             f"motion fields)")
        out.append((name or f"sat-{sat.satnum}", sat))
        k += 2
    if not out:
        raise ValueError(f"{source}: no satellites found")
    return out


def tle_checksum_problem(line: str) -> str | None:
    """What is wrong with a TLE line's characters or checksum (column 69: sgp4's
    ``compute_checksum`` of columns 1-68), or None. A line without column 69 has none."""
    if not line.isascii():
        return "a TLE line holds only ASCII characters"
    if len(line) < 69 or not line[68].isdigit():
        return None
    total = compute_checksum(line)
    if total != int(line[68]):
        return (f"TLE line {line[0]} fails its checksum (column 69 says {line[68]}, the line "
                f"sums to {total}): a mistyped or damaged line")
    return None


# Mean motion (rev/day) of an orbit: 0.05 is far beyond geostationary (1.0027), 17.5 is an
# orbit that would decay in days.
MEAN_MOTION_RANGE = (0.05, 17.5)
MIN_PERIGEE_KM = 80.0


def orbit_problem(sat: Satrec) -> str | None:
    """What makes a parsed TLE's elements physically meaningless, or None: an inclination
    outside 0-180 deg, an eccentricity outside [0, 1), a mean motion outside
    ``MEAN_MOTION_RANGE``, or a perigee below ``MIN_PERIGEE_KM``."""
    inclination = math.degrees(sat.inclo)
    revs_per_day = sat.no_kozai * 1440.0 / (2.0 * math.pi)
    if not 0.0 <= inclination <= 180.0:
        return f"inclination {inclination:g} deg is outside 0-180 deg"
    if not 0.0 <= sat.ecco < 1.0:
        return f"eccentricity {sat.ecco:g} is outside [0, 1)"
    low, high = MEAN_MOTION_RANGE
    if not low <= revs_per_day <= high:
        return (f"mean motion {revs_per_day:g} rev/day is outside {low}-{high} rev/day "
                f"(not an Earth orbit a satellite keeps)")
    semi_major_km = (MU_KM3_S2 / (sat.no_kozai / 60.0) ** 2) ** (1.0 / 3.0)
    perigee_km = semi_major_km * (1.0 - sat.ecco) - EARTH_RADIUS_KM
    if perigee_km < MIN_PERIGEE_KM:
        return (f"perigee {perigee_km:.0f} km is below {MIN_PERIGEE_KM:.0f} km (inside the "
                f"atmosphere)")
    return None


def _jday(epoch: datetime) -> tuple[float, float]:
    epoch = epoch.astimezone(UTC)
    return jday(epoch.year, epoch.month, epoch.day, epoch.hour, epoch.minute,
                epoch.second + epoch.microsecond * 1e-6)


def julian_dates(epoch: datetime, seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(jd, fraction) arrays for ``epoch`` + ``seconds`` (fractions kept small, for
    precision)."""
    jd, fr = _jday(epoch)
    total = fr + np.asarray(seconds, dtype=float) / 86400.0
    whole = np.floor(total)
    return np.full_like(total, jd) + whole, total - whole


def gmst_rad(jd: np.ndarray, fr: np.ndarray) -> np.ndarray:
    """Greenwich mean sidereal time (IAU-82), in radians, of UT1 = UTC Julian dates."""
    t = ((jd - 2451545.0) + fr) / 36525.0
    seconds = (67310.54841 + (876600.0 * 3600.0 + 8640184.812866) * t
               + 0.093104 * t**2 - 6.2e-6 * t**3)
    return np.mod(seconds * (2.0 * math.pi / 86400.0), 2.0 * math.pi)


def positions_ecef(sats: Sequence[Satrec] | SatrecArray, epoch: datetime,
                   seconds: np.ndarray) -> np.ndarray:
    """Earth-fixed positions (km), shape (satellites, times, 3), at ``epoch`` + ``seconds``.
    Raises ValueError when SGP4 reports an error (a decayed or invalid orbit)."""
    array = sats if isinstance(sats, SatrecArray) else SatrecArray(list(sats))
    jd, fr = julian_dates(epoch, seconds)
    errors, r, _ = array.sgp4(jd, fr)
    if np.any(errors):
        bad = np.argwhere(errors)[0]
        raise ValueError(f"SGP4 error code {int(errors[tuple(bad)])} for satellite "
                         f"{int(bad[0])} at t = {float(np.asarray(seconds)[bad[1]]):g} s")
    return teme_to_ecef(r, gmst_rad(jd, fr))


def teme_to_ecef(r_teme: np.ndarray, gmst: np.ndarray) -> np.ndarray:
    """Rotate TEME positions (..., times, 3) about z by the sidereal time of each time."""
    c, s = np.cos(gmst), np.sin(gmst)
    x, y = r_teme[..., 0], r_teme[..., 1]
    return np.stack([c * x + s * y, -s * x + c * y, r_teme[..., 2]], axis=-1)


def site_ecef(lat_deg, lon_deg, alt_m=0.0) -> np.ndarray:
    """WGS84 geodetic coordinates to Earth-fixed positions (km), shape (..., 3)."""
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    e2 = WGS84_F * (2 - WGS84_F)
    n = WGS84_A_KM / np.sqrt(1 - e2 * np.sin(lat) ** 2)
    h = np.asarray(alt_m, dtype=float) / 1000.0
    return np.stack([(n + h) * np.cos(lat) * np.cos(lon), (n + h) * np.cos(lat) * np.sin(lon),
                     (n * (1 - e2) + h) * np.sin(lat)], axis=-1)


def site_up(lat_deg, lon_deg) -> np.ndarray:
    """The unit normal of the WGS84 ellipsoid (the local vertical), shape (..., 3)."""
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)],
                    axis=-1)


def elevation_deg(sat_km: np.ndarray, site_km: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Elevation of satellites seen from sites (broadcast over leading axes)."""
    d = sat_km - site_km
    sine = np.sum(d * up, axis=-1) / np.linalg.norm(d, axis=-1)
    return np.degrees(np.arcsin(np.clip(sine, -1.0, 1.0)))  # rounding can pass 1 overhead


def slant_range_km(sat_km: np.ndarray, site_km: np.ndarray) -> np.ndarray:
    return np.linalg.norm(sat_km - site_km, axis=-1)


def scatter_sites(count: int, lat_deg: float, lon_deg: float, radius_km: float,
                  rng: np.random.Generator) -> np.ndarray:
    """``count`` points uniform over the spherical cap of ``radius_km`` (great-circle) around
    (lat, lon), as (lat_deg, lon_deg) rows."""
    r = MEAN_EARTH_RADIUS_KM
    angle = np.arccos(1 - rng.random(count) * (1 - math.cos(radius_km / r)))
    bearing = rng.uniform(0, 2 * math.pi, count)
    lat0, lon0 = math.radians(lat_deg), math.radians(lon_deg)
    lat = np.arcsin(math.sin(lat0) * np.cos(angle)
                    + math.cos(lat0) * np.sin(angle) * np.cos(bearing))
    lon = lon0 + np.arctan2(np.sin(bearing) * np.sin(angle) * math.cos(lat0),
                            np.cos(angle) - math.sin(lat0) * np.sin(lat))
    lon = (np.degrees(lon) + 180.0) % 360.0 - 180.0
    return np.column_stack([np.degrees(lat), lon])


def tle_text(names: Sequence[str], sats: Sequence[Satrec]) -> str:
    """3LE text (a name line, then the two element lines) of SGP4 records, e.g. of a Walker
    shell, readable by :func:`parse_tle` and by other SGP4 tools."""
    from sgp4.exporter import export_tle

    lines = []
    for name, sat in zip(names, sats, strict=True):
        line1, line2 = export_tle(sat)
        lines += [f"0 {name}", line1, line2]
    return "\n".join(lines) + "\n"
