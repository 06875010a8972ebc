"""The IoV world: road-side units (edge servers) along a road, vehicles (clients) passing them.

Built once, before the run, from the scenario's road, traffic and RSUs:

1. every vehicle's path (highway or grid traffic drawn from the world stream, or a SUMO trace);
2. its visits: the intervals in which it is a client of the nearest RSU within the coverage
   radius (exact for straight segments; :func:`~netfl.world.mobility.association`);
3. client slots: vehicles carry data, so each data-carrying vehicle is one of ``max_clients``
   clients ``c0..``; a slot is given to a vehicle from its first visit to its last and recycled
   (least recently freed first) to a later vehicle once free. Vehicles that arrive while every
   slot is taken drive past without data (counted).

During the run a process replays the visits in time order through :meth:`World.attach` and
:meth:`World.detach`, which drive the network's access links. Built-in traffic starts before
time 0 (one road crossing early) so that the road is already in steady state at time 0.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from netfl.errors import CorruptDataFile, ScenarioError, ScenarioProblem
from netfl.scenario.iov import GridRoad, HighwayRoad, IovWorld, TraceRoad
from netfl.world.base import CLIENT, CLOUD, CLOUD_NAME, EDGE, World, client_name, edge_name
from netfl.world.mobility import (
    Trip,
    association,
    coverage_window,
    highway_trips,
    read_fcd,
    rsu_positions,
)
from netfl.world.roads import (
    Path,
    backhaul_edges,
    bounding_box,
    fcd_paths,
    grid_paths,
    lattice_positions,
)
from netfl.world.vectors import dot


@dataclass(frozen=True)
class Visit:
    """Client ``client`` (vehicle ``vehicle``) is attached to RSU ``rsu`` from start_s to
    end_s."""

    client: str
    vehicle: str
    rsu: str
    start_s: float
    end_s: float


def path_visits(path: Path, rsus: np.ndarray, radius_m: float) -> list[tuple[int, float, float]]:
    """(rsu index, start, end) of one vehicle's path: the nearest RSU within ``radius_m`` at
    each moment, segment by segment, merged across segment boundaries."""
    visits: list[tuple[int, float, float]] = []
    for trip in path:
        near = _rsus_near(trip, rsus, radius_m)
        if not len(near):
            continue
        candidates = [(float(rsus[j][0]), float(rsus[j][1])) for j in near]
        for contact in association(trip, candidates, radius_m):
            j = int(near[contact.rsu])
            if visits and visits[-1][0] == j and abs(visits[-1][2] - contact.start_s) < 1e-9:
                visits[-1] = (j, visits[-1][1], contact.end_s)
            else:
                visits.append((j, contact.start_s, contact.end_s))
    return visits


def path_ranges(path: Path, rsus: np.ndarray, radius_m: float) -> list[tuple[int, float, float]]:
    """(rsu index, start, end) of one vehicle's path: every interval in which it is within
    ``radius_m`` of an RSU (the RSU's radio reaches it, whether it is that RSU's client or
    not), merged across segment boundaries."""
    ranges: list[tuple[int, float, float]] = []
    last: dict[int, int] = {}  # rsu -> index of its latest interval in ranges
    for trip in path:
        for j in (int(k) for k in _rsus_near(trip, rsus, radius_m)):
            window = coverage_window(trip, (float(rsus[j][0]), float(rsus[j][1])), radius_m)
            if window is None:
                continue
            k = last.get(j)
            if k is not None and abs(ranges[k][2] - window[0]) < 1e-9:
                ranges[k] = (j, ranges[k][1], window[1])
            else:
                last[j] = len(ranges)
                ranges.append((j, *window))
    return ranges


def _rsus_near(trip: Trip, rsus: np.ndarray, radius_m: float) -> np.ndarray:
    """Indices of the RSUs within ``radius_m`` of the trip's segment (a cheap pre-filter)."""
    a = np.asarray(trip.start)
    d = np.asarray(trip.position(trip.end_s)) - a
    length2 = float(dot(d, d))
    rel = rsus - a
    s = np.clip(dot(rel, d) / length2, 0.0, 1.0) if length2 > 0 else np.zeros(len(rsus))
    gap = rel - s[:, None] * d
    return np.flatnonzero(dot(gap, gap) <= radius_m * radius_m)


def assign_slots(presence: Sequence[tuple[float, float, str]], capacity: int
                 ) -> dict[str, int | None]:
    """Client slot of each vehicle given its presence (first visit start, last visit end,
    vehicle), for at most ``capacity`` slots: slots are handed out in arrival order, the least
    recently freed first; a vehicle arriving when none is free gets None."""
    events = sorted([(end, 0, i) for i, (_, end, _) in enumerate(presence)]
                    + [(start, 1, i) for i, (start, _, _) in enumerate(presence)])
    free, slot = deque(range(capacity)), {}
    for _, arriving, i in events:
        vehicle = presence[i][2]
        if arriving:
            slot[vehicle] = free.popleft() if free else None
        elif slot.get(vehicle) is not None:
            free.append(slot[vehicle])
    return slot


def _fail(field: str, message: str, value=None, source: str | None = None):
    raise ScenarioError([ScenarioProblem(f"world.{field}", message, value, value is not None,
                                         source=source)])


def vehicle_paths(spec: IovWorld, rng: np.random.Generator) -> dict[str, Path]:
    """Every vehicle's path, by name (built-in names ``v0, v1, ...`` in entry order)."""
    road, traffic = spec.road, spec.traffic
    if isinstance(road, TraceRoad):
        try:
            return fcd_paths(read_fcd(road.path), road.start, road.max_vehicles)
        except CorruptDataFile as exc:
            _fail("road.path", str(exc), source=str(road.path))
    mean, std, low, high = spec.speed_bounds()
    rate = traffic.arrivals_per_hour / 3600.0
    if isinstance(road, HighwayRoad):
        fill = road.length / low
        trips = highway_trips(road.length, road.lanes, road.lane_width, rate,
                              traffic.duration + fill, (mean, std, low, high), rng,
                              directions=road.directions, start_s=-fill)
        return {trip.vehicle: [trip] for trip in trips}
    if isinstance(road, GridRoad):
        fill = (road.blocks_x + road.blocks_y) * road.block / low
        turns = (road.turns.straight, road.turns.left, road.turns.right)
        paths = grid_paths(road.blocks_x, road.blocks_y, road.block, rate, -fill,
                           traffic.duration, (mean, std, low, high), turns, rng)
        return {f"v{i}": [Trip(f"v{i}", t.start_s, t.end_s, t.start, t.velocity) for t in path]
                for i, path in enumerate(paths)}
    raise TypeError(f"unknown road {road!r}")


def rsu_layout(spec: IovWorld, paths: dict[str, Path]) -> list[tuple[float, float]]:
    """RSU positions: given, every spacing along a highway, or on a lattice over the road."""
    placement, road = spec.rsus, spec.road
    if placement.positions is not None:
        return [tuple(map(float, p)) for p in placement.positions]
    if isinstance(road, HighwayRoad):
        _check_rsu_count(road.length / placement.spacing, placement.spacing)
        positions = rsu_positions(road.length, placement.spacing, placement.offset)
        if not positions:
            _fail("rsus.spacing", f"places no RSU on a road of {road.length:g} m (the first "
                  f"would be at {placement.offset or placement.spacing / 2:g} m): a longer "
                  f"road, a smaller spacing or offset", placement.spacing)
        return positions
    if isinstance(road, GridRoad):
        box = (0.0, 0.0, road.blocks_x * road.block, road.blocks_y * road.block)
        offset = 0.0 if placement.offset is None else placement.offset
    else:
        try:
            box = bounding_box(paths.values())
        except ValueError:
            _fail("road.path", "no vehicle moves in the trace", source=str(road.path))
        offset = placement.spacing / 2 if placement.offset is None else placement.offset
    x0, y0, x1, y1 = box
    _check_rsu_count((1 + (x1 - x0) / placement.spacing) * (1 + (y1 - y0) / placement.spacing),
                     placement.spacing)
    return lattice_positions(box, placement.spacing, offset)


# More road-side units than any study places (a 100 km highway at 500 m has 200); past it the
# spacing is a slip of the unit (1e-9 m asked for 36 TiB of positions).
MAX_RSUS = 100_000


def _check_rsu_count(count: float, spacing: float) -> None:
    if count > MAX_RSUS:
        _fail("rsus.spacing", f"places about {count:.3g} RSUs over the road, more than "
              f"{MAX_RSUS:,}: a larger spacing (metres unless a unit is given)", spacing)


class RoadWorld(World):
    """An IoV world (see the module docstring); ``rsu_xy`` maps RSU names to positions."""

    mobile = True

    def __init__(self, graph: nx.Graph, clients: list[str], rsus: list[str], cloud: str | None,
                 rsu_xy: dict[str, tuple[float, float]], coverage_m: float,
                 visits: list[Visit], tracks: dict[str, list[tuple[str, Trip]]],
                 arrivals_without_data: list[float], spec: IovWorld):
        super().__init__(graph, clients, rsus, cloud, {})
        self.spec = spec  # the scenario's world section: radio, rate updates, resumption
        self.access_radio_spec = spec.radio
        self.rsu_xy, self.coverage_m, self.visits = rsu_xy, coverage_m, visits
        self.ranges: list[Visit] = []  # when each client is within reach of each RSU
        self._range_listeners: list = []
        self.arrivals_without_data = arrivals_without_data  # first-visit times, sorted
        self._tracks = tracks
        self._track_starts = {c: [trip.start_s for _, trip in track]
                              for c, track in tracks.items()}

    # ------------------------------------------------------------------------ kinematics

    def _segment(self, client: str, t: float) -> tuple[str, Trip] | None:
        k = bisect.bisect_right(self._track_starts.get(client, []), t) - 1
        if k < 0:
            return None
        vehicle, trip = self._tracks[client][k]
        return (vehicle, trip) if t <= trip.end_s + 1e-9 else None

    def position(self, client: str, t: float) -> tuple[float, float] | None:
        """Where ``client``'s current vehicle is at time ``t`` (None when off the road)."""
        found = self._segment(client, t)
        return None if found is None else found[1].position(min(t, found[1].end_s))

    def speed_mps(self, client: str, t: float) -> float:
        found = self._segment(client, t)
        return 0.0 if found is None else math.hypot(*found[1].velocity)

    def vehicle_of(self, client: str, t: float) -> str | None:
        found = self._segment(client, t)
        return None if found is None else found[0]

    def distance_m(self, client: str, rsu: str, t: float) -> float:
        """Vehicle-RSU distance at ``t`` (infinite when the vehicle is off the road)."""
        here = self.position(client, t)
        return math.inf if here is None else math.dist(here, self.rsu_xy[rsu])

    def tracks(self) -> dict[str, list[tuple[str, Trip]]]:
        """Each client's (vehicle, segment) list, in time order (for plots)."""
        return self._tracks

    # ---------------------------------------------------------------------------- run

    def subscribe_ranges(self, listener) -> None:
        """Call ``listener(client, rsu, in_range)`` when a client comes within or goes out of
        an RSU's coverage radius (it may be another RSU's client meanwhile)."""
        self._range_listeners.append(listener)

    def start(self, env, streams) -> None:
        if self._range_listeners:  # before the contacts: a client attaches only within range
            env.process(self._replay_ranges(env))
        env.process(self.replay_contacts(
            env, [(v.start_s, v.end_s, v.client, v.rsu) for v in self.visits]))

    def _replay_ranges(self, env):
        events = sorted([(r.end_s, 0, k) for k, r in enumerate(self.ranges)]
                        + [(r.start_s, 1, k) for k, r in enumerate(self.ranges)])
        for time_s, starting, k in events:
            if time_s > env.now:
                yield env.timeout(time_s - env.now)
            for listener in self._range_listeners:
                listener(self.ranges[k].client, self.ranges[k].rsu, bool(starting))

    def summary(self, now_s: float) -> dict:
        return iov_summary(self, now_s)


def iov_summary(world: RoadWorld, now_s: float) -> dict:
    """Road figures up to ``now_s``: vehicles seen, hand-overs between RSUs (a vehicle leaving
    one RSU for another at the same instant), dwell times of completed visits, per-RSU load."""
    seen = [v for v in world.visits if v.start_s <= now_s]
    done = np.array([v.end_s - v.start_s for v in seen if v.end_s <= now_s])
    by_vehicle = sorted(seen, key=lambda v: (v.client, v.vehicle, v.start_s))
    handovers = sum(1 for a, b in zip(by_vehicle, by_vehicle[1:], strict=False)
                    if (a.client, a.vehicle) == (b.client, b.vehicle) and a.rsu != b.rsu
                    and abs(a.end_s - b.start_s) < 1e-9)
    load = {}
    for rsu in world.edge_servers:
        mine = [v for v in seen if v.rsu == rsu]
        seconds = sum(min(v.end_s, now_s) - v.start_s for v in mine)
        load[rsu] = {"visits": len(mine), "vehicle_seconds": round(seconds, 3),
                     "mean_vehicles_in_range": round(seconds / now_s, 3) if now_s > 0 else 0.0}
    quantiles = (np.quantile(done, [0.1, 0.5, 0.9]).round(3).tolist() if len(done)
                 else [None] * 3)
    return {
        "vehicles": len({(v.client, v.vehicle) for v in seen}),
        "vehicles_without_data": bisect.bisect_right(world.arrivals_without_data, now_s),
        "vehicle_handovers": handovers,
        "coverage_visits": len(seen),
        "dwell_s": {"mean": round(float(done.mean()), 3) if len(done) else None,
                    "p10": quantiles[0], "median": quantiles[1], "p90": quantiles[2]},
        "load_by_rsu": load,
    }


VISIT_COLUMNS = ["client", "vehicle", "rsu", "start_s", "end_s", "dwell_s"]


def visit_rows(world: RoadWorld, now_s: float) -> list[dict]:
    """One row per visit begun by ``now_s`` (clipped there): who, where, when, how long."""
    return [{"client": v.client, "vehicle": v.vehicle, "rsu": v.rsu, "start_s": v.start_s,
             "end_s": min(v.end_s, now_s), "dwell_s": min(v.end_s, now_s) - v.start_s}
            for v in world.visits if v.start_s <= now_s]


def space_time_segments(world: RoadWorld, now_s: float, max_vehicles: int = 400
                        ) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """((t0, x0), (t1, x1)) of every path segment within [0, now_s], for the first
    ``max_vehicles`` data-carrying vehicles to appear (more only blacken the figure)."""
    shown: set[tuple[str, str]] = set()
    for v in world.visits:
        if len(shown) >= max_vehicles:
            break
        shown.add((v.client, v.vehicle))
    segments = []
    for client, track in world.tracks().items():
        for vehicle, trip in track:
            t0, t1 = max(trip.start_s, 0.0), min(trip.end_s, now_s)
            if (client, vehicle) in shown and t1 > t0:
                segments.append(((t0, trip.position(t0)[0]), (t1, trip.position(t1)[0])))
    return segments


def build_road(spec: IovWorld, rng: np.random.Generator) -> RoadWorld:
    """Build an ``iov`` world's road (see the module docstring), with fibre at every RSU;
    ``rng`` is the world stream. The world itself is built by
    :func:`netfl.world.joined.build_iov_world`, which joins a satellite ``backhaul`` to it."""
    paths = vehicle_paths(spec, rng)
    positions = rsu_layout(spec, paths)
    rsu_array = np.asarray(positions, dtype=float)
    radius = spec.coverage_m()
    rsus = [edge_name(j) for j in range(len(positions))]

    raw: list[tuple[str, list[tuple[int, float, float]]]] = []
    for vehicle, path in paths.items():
        visits = _from_zero(path_visits(path, rsu_array, radius))
        if visits:
            raw.append((vehicle, visits))
    if not raw:
        _fail("rsus", f"no vehicle ever comes within the coverage radius ({radius:g} m) of an "
              f"RSU; move the RSUs or widen rsus.coverage", spec.rsus.model_dump(mode="json"))
    presence = [(v[0][1], v[-1][2], vehicle) for vehicle, v in raw]
    capacity = min(spec.max_clients, len(raw))
    slot = assign_slots(presence, capacity)
    clients = [client_name(i) for i in range(capacity)]

    visits, ranges, tracks = [], [], {c: [] for c in clients}
    for vehicle, vehicle_visits in raw:
        if slot[vehicle] is None:
            continue
        client = clients[slot[vehicle]]
        visits += [Visit(client, vehicle, rsus[j], a, b) for j, a, b in vehicle_visits]
        ranges += [Visit(client, vehicle, rsus[j], a, b) for j, a, b in
                   _from_zero(path_ranges(paths[vehicle], rsu_array, radius))]
        tracks[client] += [(vehicle, trip) for trip in paths[vehicle]]
    visits.sort(key=lambda v: (v.start_s, v.client))
    ranges.sort(key=lambda v: (v.start_s, v.client))
    for track in tracks.values():
        track.sort(key=lambda item: item[1].start_s)

    graph = nx.Graph()
    graph.add_nodes_from(clients, tier=CLIENT)
    graph.add_nodes_from(rsus, tier=EDGE)
    for u, v, length_m in backhaul_edges(positions):
        graph.add_edge(rsus[u], rsus[v], link_class="backhaul",
                       delay_s=length_m / 1000.0 * spec.backhaul_delay_per_km)
    cloud = None
    if spec.cloud:
        cloud = CLOUD_NAME
        graph.add_node(cloud, tier=CLOUD)
        for rsu in rsus:
            graph.add_edge(rsu, cloud, link_class="core")
    without = sorted(visits[0][1] for vehicle, visits in raw if slot[vehicle] is None)
    world = RoadWorld(graph, clients, rsus, cloud, dict(zip(rsus, positions, strict=True)),
                      radius, visits, tracks, without, spec)
    world.ranges = ranges
    return world


def _from_zero(intervals: list[tuple[int, float, float]]) -> list[tuple[int, float, float]]:
    """Intervals before time 0 clipped to it, or dropped."""
    return [(j, max(a, 0.0), b) for j, a, b in intervals if b > max(a, 0.0)]
