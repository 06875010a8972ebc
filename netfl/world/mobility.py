"""Vehicle mobility and road-side-unit coverage, pure functions (groundwork of the IoV world).

Positions in metres on a plane, times in seconds, speeds in m/s. A vehicle on a straight road
segment is a ``Trip``: it is at ``start + velocity * (t - start_s)`` for start_s <= t <= end_s.

* ``poisson_arrivals`` and ``truncated_normal``: the built-in traffic (Poisson arrivals per road
  entry, speeds from a truncated normal, e.g. 110 +- 5.8 km/h on a highway);
* ``highway_trips``: vehicles entering both ends of a straight highway;
* ``rsu_positions``: road-side units every ``spacing`` metres along a road;
* ``coverage_window``: when a trip is within ``radius`` of one RSU (2 R / v for a pass through
  the RSU's position at constant speed v);
* ``association``: which RSU a trip is a client of over time: the nearest one within coverage,
  exact for straight motion (hand-overs happen where the distances to two RSUs are equal);
* ``read_fcd``: SUMO floating-car data (plain or .gz), streamed with iterparse.
"""

from __future__ import annotations

import gzip
import math
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from netfl.errors import CorruptDataFile


def kmh(speed_kmh: float) -> float:
    """km/h -> m/s."""
    return speed_kmh / 3.6


def poisson_arrivals(rate_per_s: float, duration_s: float, rng: np.random.Generator
                     ) -> np.ndarray:
    """Arrival times of a Poisson process of ``rate_per_s`` on [0, duration_s), sorted."""
    if rate_per_s <= 0 or duration_s <= 0:
        return np.zeros(0)
    count = rng.poisson(rate_per_s * duration_s)
    return np.sort(rng.uniform(0.0, duration_s, count))


def truncated_normal(mean: float, std: float, low: float, high: float, size: int,
                     rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of N(mean, std^2) restricted to [low, high] (by rejection)."""
    if low > high:
        raise ValueError(f"low ({low}) exceeds high ({high})")
    if std <= 0:
        return np.full(size, min(max(mean, low), high), dtype=float)
    out = np.empty(0)
    while len(out) < size:
        draws = rng.normal(mean, std, max(16, 2 * (size - len(out))))
        out = np.concatenate([out, draws[(draws >= low) & (draws <= high)]])
    return out[:size]


@dataclass(frozen=True)
class Trip:
    """A vehicle moving in a straight line at constant velocity from start_s to end_s."""

    vehicle: str
    start_s: float
    end_s: float
    start: tuple[float, float]
    velocity: tuple[float, float]

    def position(self, t: float) -> tuple[float, float]:
        dt = t - self.start_s
        return (self.start[0] + self.velocity[0] * dt, self.start[1] + self.velocity[1] * dt)


def highway_trips(length_m: float, lanes: int, lane_width_m: float, arrivals_per_s: float,
                  duration_s: float, speed_mps: tuple[float, float, float, float],
                  rng: np.random.Generator, directions: int = 2,
                  start_s: float = 0.0) -> list[Trip]:
    """Vehicles entering a straight highway from both ends (or only at x = 0 with
    ``directions=1``; ``lanes`` lanes each way along the x axis, the centre line at y = 0) as
    Poisson processes of ``arrivals_per_s`` per direction during [start_s, start_s +
    duration_s), with speeds (mean, std, low, high) from a truncated normal. Sorted by entry
    time; vehicle names ``v0, v1, ...`` in that order."""
    trips = []
    for direction in (+1, -1)[:directions]:
        times = start_s + poisson_arrivals(arrivals_per_s, duration_s, rng)
        speeds = truncated_normal(*speed_mps, size=len(times), rng=rng)
        lane = rng.integers(lanes, size=len(times))
        for t, v, k in zip(times, speeds, lane, strict=True):
            y = direction * (k + 0.5) * lane_width_m
            x0 = 0.0 if direction > 0 else length_m
            trips.append((float(t), x0, y, direction * float(v), length_m / float(v)))
    trips.sort()
    return [Trip(f"v{i}", t, t + travel, (x0, y), (vx, 0.0))
            for i, (t, x0, y, vx, travel) in enumerate(trips)]


def rsu_positions(length_m: float, spacing_m: float, offset_m: float | None = None,
                  side_m: float = 0.0) -> list[tuple[float, float]]:
    """RSUs every ``spacing_m`` along [0, length_m] on the x axis, the first at ``offset_m``
    (half a spacing by default), ``side_m`` off the centre line."""
    if spacing_m <= 0:
        raise ValueError(f"spacing must be positive, got {spacing_m}")
    first = spacing_m / 2.0 if offset_m is None else offset_m
    xs = np.arange(first, length_m + 1e-9, spacing_m)
    return [(float(x), side_m) for x in xs]


def coverage_window(trip: Trip, rsu: tuple[float, float], radius_m: float
                    ) -> tuple[float, float] | None:
    """The interval in which ``trip`` is within ``radius_m`` of ``rsu`` (clipped to the trip),
    or None. For a pass through the RSU at speed v it lasts 2 R / v."""
    px, py = trip.start[0] - rsu[0], trip.start[1] - rsu[1]
    vx, vy = trip.velocity
    a = vx * vx + vy * vy
    b = 2.0 * (px * vx + py * vy)
    c = px * px + py * py - radius_m * radius_m
    if a == 0.0:
        return (trip.start_s, trip.end_s) if c <= 0 else None
    disc = b * b - 4.0 * a * c
    if disc < 0:
        return None
    root = math.sqrt(disc)
    t_in = trip.start_s + (-b - root) / (2.0 * a)
    t_out = trip.start_s + (-b + root) / (2.0 * a)
    t_in, t_out = max(t_in, trip.start_s), min(t_out, trip.end_s)
    return (t_in, t_out) if t_out > t_in else None


@dataclass(frozen=True)
class Contact:
    """``vehicle`` is a client of ``rsu`` (an index into the RSU list) from start_s to end_s."""

    vehicle: str
    rsu: int
    start_s: float
    end_s: float


def association(trip: Trip, rsus: Sequence[tuple[float, float]], radius_m: float
                ) -> list[Contact]:
    """The trip's contacts: at each moment it is a client of the nearest RSU within
    ``radius_m`` (none when out of every RSU's coverage). Exact for straight motion: the
    nearest RSU can only change where the trip crosses a coverage circle or the perpendicular
    bisector of two RSUs, and both are solved in closed form."""
    windows = {j: w for j, rsu in enumerate(rsus)
               if (w := coverage_window(trip, rsu, radius_m)) is not None}
    if not windows:
        return []
    times = {t for w in windows.values() for t in w}
    candidates = sorted(windows)
    (x0, y0), (vx, vy) = trip.start, trip.velocity
    for i, j in ((i, j) for n, i in enumerate(candidates) for j in candidates[n + 1:]):
        (ax, ay), (bx, by) = rsus[i], rsus[j]
        dx, dy = bx - ax, by - ay
        slope = 2.0 * (vx * dx + vy * dy)
        if slope != 0.0:
            rhs = (bx * bx + by * by) - (ax * ax + ay * ay) - 2.0 * (x0 * dx + y0 * dy)
            t = trip.start_s + rhs / slope
            if trip.start_s < t < trip.end_s:
                times.add(t)
    times = sorted(times)
    contacts: list[Contact] = []
    for t0, t1 in zip(times, times[1:], strict=False):
        px, py = trip.position((t0 + t1) / 2.0)
        inside = [(math.hypot(px - rsus[j][0], py - rsus[j][1]), j) for j in candidates
                  if windows[j][0] <= (t0 + t1) / 2.0 <= windows[j][1]]
        if not inside:
            continue
        nearest = min(inside)[1]
        if contacts and contacts[-1].rsu == nearest and contacts[-1].end_s == t0:
            contacts[-1] = Contact(trip.vehicle, nearest, contacts[-1].start_s, t1)
        else:
            contacts.append(Contact(trip.vehicle, nearest, t0, t1))
    return contacts


@dataclass(frozen=True)
class FcdRecord:
    """One vehicle at one time step of a SUMO floating-car-data trace."""

    time_s: float
    vehicle: str
    x_m: float
    y_m: float
    speed_mps: float


def read_fcd(path: str | Path) -> Iterator[FcdRecord]:
    """Stream the records of a SUMO FCD trace (``<timestep time=..><vehicle id x y speed/>``),
    plain XML or gzip-compressed (by the ``.gz`` suffix), in file order. Elements are freed as
    they are read, so memory stays flat however long the trace. A malformed file raises
    CorruptDataFile naming the file, the line and what is wrong."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as stream:
            context = ElementTree.iterparse(stream, events=("start", "end"))
            _, root = next(context)
            previous = -math.inf
            for event, element in context:
                if event != "end" or element.tag != "timestep":
                    continue
                time_s = _number(path, element, "time", FCD_TIME_RANGE_S)
                if time_s <= previous:
                    raise CorruptDataFile(
                        f"{path}: <timestep time={time_s:g}> comes after time={previous:g}: "
                        f"a trace's steps must be in increasing time order (SUMO writes them "
                        f"so; sort a merged trace by time)")
                previous = time_s
                for vehicle in element.iter("vehicle"):
                    yield FcdRecord(time_s, vehicle.get("id", ""),
                                    _number(path, vehicle, "x", FCD_COORDINATE_RANGE_M, time_s),
                                    _number(path, vehicle, "y", FCD_COORDINATE_RANGE_M, time_s),
                                    _number(path, vehicle, "speed", FCD_SPEED_RANGE_MPS, time_s))
                root.clear()
    except ElementTree.ParseError as exc:
        raise CorruptDataFile(f"{path}: not a valid SUMO FCD trace: {exc}") from None
    except (OSError, EOFError) as exc:
        raise CorruptDataFile(f"{path}: cannot read the FCD trace: {exc}") from None


# What an FCD trace can hold: coordinates within 100,000 km (projected road networks are in
# metres from an origin, UTM northings up to 10,000 km), speeds below 1 km/s, times below a
# century. Anything else is a damaged file, and would become NaN or infinite positions.
FCD_COORDINATE_RANGE_M = (-1e8, 1e8)
FCD_SPEED_RANGE_MPS = (0.0, 1e3)
FCD_TIME_RANGE_S = (-3.2e9, 3.2e9)


def _number(path: Path, element, name: str, bounds: tuple[float, float],
            time_s: float | None = None) -> float:
    value = element.get(name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    low, high = bounds
    if number is not None and low <= number <= high:  # NaN fails too
        return number
    where = f"<{element.tag}" + (f" id={element.get('id')!r}" if element.get("id") else "") + (
        f"> at time={time_s:g}" if time_s is not None else ">")
    expected = "a number" if number is None else f"a finite number in {low:g}..{high:g}"
    raise CorruptDataFile(f"{path}: {where} has {name}={value!r}; expected {expected}")
