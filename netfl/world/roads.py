"""Roads of the IoV world, pure functions: vehicle paths on a Manhattan grid or from a SUMO
trace, road-side-unit layouts and the fibre backhaul between them.

A vehicle's path is a list of :class:`~netfl.world.mobility.Trip` segments that follow one
another in time (each straight, at constant velocity). Positions in metres, times in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import networkx as nx
import numpy as np

from netfl.world.mobility import FcdRecord, Trip, poisson_arrivals, truncated_normal

Path = list[Trip]
# heading (dx, dy) after turning left / right from heading (dx, dy)
_LEFT = {(1, 0): (0, 1), (0, 1): (-1, 0), (-1, 0): (0, -1), (0, -1): (1, 0)}
_RIGHT = {v: k for k, v in _LEFT.items()}
MAX_GRID_LEGS = 10_000  # a wandering vehicle leaves after this many blocks (never reached in
# practice: any turn mix with a positive chance of heading outwards exits long before)


def grid_entries(blocks_x: int, blocks_y: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Every street end on the grid's boundary, as (intersection, inward heading), in a fixed
    order: bottom, top, left, right."""
    entries = [((i, 0), (0, 1)) for i in range(blocks_x + 1)]
    entries += [((i, blocks_y), (0, -1)) for i in range(blocks_x + 1)]
    entries += [((0, j), (1, 0)) for j in range(blocks_y + 1)]
    entries += [((blocks_x, j), (-1, 0)) for j in range(blocks_y + 1)]
    return entries


def grid_paths(blocks_x: int, blocks_y: int, block_m: float, arrivals_per_s: float,
               start_s: float, end_s: float, speed_mps: tuple[float, float, float, float],
               turns: tuple[float, float, float], rng: np.random.Generator) -> list[Path]:
    """Vehicles entering a Manhattan grid at every boundary street end as Poisson processes of
    ``arrivals_per_s`` during [start_s, end_s), each at one speed from the truncated normal
    ``speed_mps`` (mean, std, low, high). At each intersection a vehicle goes straight, left or
    right with probabilities ``turns``; a move that leaves the grid ends its path. Runs of
    straight blocks are merged into one segment. Paths sorted by entry time."""
    probabilities = np.asarray(turns, dtype=float) / float(sum(turns))
    starts = []
    for node, heading in grid_entries(blocks_x, blocks_y):
        for t in poisson_arrivals(arrivals_per_s, end_s - start_s, rng):
            starts.append((float(t) + start_s, node, heading))
    starts.sort(key=lambda s: s[0])
    speeds = truncated_normal(*speed_mps, size=len(starts), rng=rng)
    paths = []
    for (t, node, heading), speed in zip(starts, speeds, strict=True):
        paths.append(_grid_path(t, node, heading, float(speed), blocks_x, blocks_y, block_m,
                                probabilities, rng))
    return paths


def _grid_path(t: float, node, heading, speed: float, bx: int, by: int, block_m: float,
               probabilities: np.ndarray, rng: np.random.Generator) -> Path:
    legs: list[tuple[tuple[int, int], tuple[int, int], int]] = []  # (from, heading, blocks)
    for _ in range(MAX_GRID_LEGS):
        if legs and legs[-1][1] == heading:
            legs[-1] = (legs[-1][0], heading, legs[-1][2] + 1)
        else:
            legs.append((node, heading, 1))
        node = (node[0] + heading[0], node[1] + heading[1])
        choice = int(rng.choice(3, p=probabilities))
        heading = heading if choice == 0 else (_LEFT if choice == 1 else _RIGHT)[heading]
        nxt = (node[0] + heading[0], node[1] + heading[1])
        if not (0 <= nxt[0] <= bx and 0 <= nxt[1] <= by):
            break
    path = []
    for (x, y), (dx, dy), blocks in legs:
        duration = blocks * block_m / speed
        path.append(Trip("", t, t + duration, (x * block_m, y * block_m),
                         (dx * speed, dy * speed)))
        t += duration
    return path


def fcd_paths(records: Iterable[FcdRecord], start_s: float = 0.0,
              max_vehicles: int | None = None) -> dict[str, Path]:
    """Vehicles' paths from FCD records (time order): straight segments between consecutive
    records of one vehicle, times shifted by ``-start_s`` (records before ``start_s`` dropped).
    A vehicle seen at one instant only has no path. With ``max_vehicles``, only the first
    vehicles to appear are kept. Records are consumed as they stream; only each vehicle's last
    position is held besides the paths."""
    last: dict[str, FcdRecord] = {}
    paths: dict[str, Path] = {}
    for record in records:
        if record.time_s < start_s:
            continue
        vehicle = record.vehicle
        previous = last.get(vehicle)
        if previous is None and max_vehicles is not None and len(last) >= max_vehicles:
            continue
        last[vehicle] = record
        if previous is None or record.time_s <= previous.time_s:
            continue
        dt = record.time_s - previous.time_s
        velocity = ((record.x_m - previous.x_m) / dt, (record.y_m - previous.y_m) / dt)
        segment = Trip(vehicle, previous.time_s - start_s, record.time_s - start_s,
                       (previous.x_m, previous.y_m), velocity)
        path = paths.setdefault(vehicle, [])
        if path and path[-1].velocity == velocity and path[-1].end_s == segment.start_s:
            path[-1] = Trip(vehicle, path[-1].start_s, segment.end_s, path[-1].start, velocity)
        else:
            path.append(segment)
    return paths


def bounding_box(paths: Iterable[Path]) -> tuple[float, float, float, float]:
    """(x_min, y_min, x_max, y_max) over every segment's ends."""
    xs, ys = [], []
    for path in paths:
        for trip in path:
            for x, y in (trip.start, trip.position(trip.end_s)):
                xs.append(x)
                ys.append(y)
    if not xs:
        raise ValueError("no vehicle moves in the trace")
    return min(xs), min(ys), max(xs), max(ys)


def lattice_positions(box: tuple[float, float, float, float], spacing_m: float,
                      offset_m: float) -> list[tuple[float, float]]:
    """RSUs on a square lattice of ``spacing_m`` over ``box``, the first ``offset_m`` in from
    its lower-left corner on each axis (row by row, from the bottom)."""
    x0, y0, x1, y1 = box
    xs = np.arange(x0 + offset_m, x1 + 1e-9, spacing_m) if x1 >= x0 + offset_m else [x0]
    ys = np.arange(y0 + offset_m, y1 + 1e-9, spacing_m) if y1 >= y0 + offset_m else [y0]
    return [(float(x), float(y)) for y in ys for x in xs]


def backhaul_edges(positions: Sequence[tuple[float, float]]) -> list[tuple[int, int, float]]:
    """Fibre between RSUs that are road neighbours: the Gabriel graph (u, v joined when no other
    RSU lies in or on the circle with diameter uv; on a line, consecutive RSUs; on a square
    lattice, its four neighbours), plus a minimum spanning tree so that it is connected.
    Returns (u, v, length in metres), u < v, sorted."""
    points = np.asarray(positions, dtype=float)
    n = len(points)
    complete = nx.Graph()
    complete.add_nodes_from(range(n))
    edges = set()
    for u in range(n):
        for v in range(u + 1, n):
            length = float(np.hypot(*(points[u] - points[v])))
            complete.add_edge(u, v, weight=length)
            centre, radius = (points[u] + points[v]) / 2.0, length / 2.0
            others = np.delete(points, [u, v], axis=0)
            if not len(others) or np.all(np.hypot(*(others - centre).T) > radius * (1 + 1e-9)):
                edges.add((u, v))
    edges |= {tuple(sorted(e)) for e in nx.minimum_spanning_tree(complete).edges}
    return [(u, v, math.dist(points[u], points[v])) for u, v in sorted(edges)]
