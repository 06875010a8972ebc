"""The LEO world: ground users (clients) and the satellites in their sky (edge servers).

Built once, before the run:

1. the constellation's SGP4 records (Walker shell, preset or TLE file) and the users' sites;
2. the contact plan of every (satellite, user) pair (:func:`contact_windows`, cached on disk);
   with ``max_satellites`` only the N satellites longest in view of the users are kept;
3. the graph: users, kept satellites as edge servers, +Grid inter-satellite links (backhaul)
   and, with ground stations, a feeder link (core) from every satellite to the cloud that is up
   while some gateway sees the satellite.

During the run a process replays the windows as :meth:`World.attach` / ``detach`` (a user is
attached to every satellite in view: the association is not exclusive) and the gateway windows
as feeder links going up and down. Link delays follow the geometry: ground-satellite links at
their slant range (refreshed while they carry traffic), ISL and feeder links every
``delay_update``.

``contact_windows`` is re-exported here as the public API for latency studies.
"""

from __future__ import annotations

import bisect
import math

import networkx as nx
import numpy as np
import pandas as pd
from sgp4.api import Satrec, SatrecArray

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.scenario.leo import LeoWorld, PresetConstellation, TleConstellation, Users
from netfl.world.base import CLIENT, CLOUD, CLOUD_NAME, EDGE, World, client_name, edge_name
from netfl.world.contact_plan import contact_windows, merged_intervals, time_left_s
from netfl.world.isl import grid_isl_pairs, isl_notes, isl_windows
from netfl.world.leo_association import SatelliteAssociation
from netfl.world.orbits import (
    MU_KM3_S2,
    PRESETS,
    SPEED_OF_LIGHT_KM_S,
    WalkerShell,
    gmst_rad,
    julian_dates,
    parse_tle,
    positions_ecef,
    scatter_sites,
    site_ecef,
    site_up,
    teme_to_ecef,
    walker_satrecs,
)
from netfl.world.vectors import length

__all__ = ["OrbitWorld", "build_leo_world", "contact_windows", "grid_isl_pairs",
           "merged_intervals"]


def user_sites(users: Users, rng: np.random.Generator) -> np.ndarray:
    """(lat_deg, lon_deg, alt_m) of every user, points first, regions in order."""
    if users.points is not None:
        latlon = np.asarray(users.points, dtype=float).reshape(-1, 2)
    else:
        regions = [users.region] if users.region is not None else users.regions
        latlon = np.concatenate([scatter_sites(r.count, r.lat_deg, r.lon_deg, r.radius_km, rng)
                                 for r in regions])
    return np.column_stack([latlon, np.full(len(latlon), users.altitude)])


def constellation(spec: LeoWorld) -> tuple[list[str], list[Satrec], list[tuple[int, int]]]:
    """Names, SGP4 records and (plane, slot) of every satellite of the constellation."""
    shell = None
    source = spec.constellation
    if isinstance(source, PresetConstellation):
        shell = PRESETS[source.preset]
    elif isinstance(source, TleConstellation):
        try:
            pairs = parse_tle(source.path.read_text(encoding="utf-8"), source=str(source.path))
        except (ValueError, OSError) as exc:
            raise ScenarioError([ScenarioProblem("world.constellation.path", str(exc),
                                                 has_value=False,
                                                 source=str(source.path))]) from None
        sats = [sat for _, sat in pairs]
        return [name for name, _ in pairs], sats, infer_planes(sats)
    else:
        shell = WalkerShell(source.altitude / 1000.0, source.inclination_deg, source.planes,
                            source.per_plane, source.phasing)
    sats = walker_satrecs(shell, spec.start)
    slots = [(k // shell.per_plane, k % shell.per_plane) for k in range(len(sats))]
    return [f"p{p}s{s}" for p, s in slots], sats, slots


def infer_planes(sats: list[Satrec], tolerance_deg: float = 1.0) -> list[tuple[int, int]]:
    """(plane, slot) of TLE satellites: planes are runs of RAAN closer than ``tolerance_deg``
    (after sorting); slots follow the argument of latitude within a plane."""
    raan = np.degrees([s.nodeo for s in sats]) % 360.0
    order = np.argsort(raan, kind="stable")
    plane_of, plane = np.empty(len(sats), dtype=int), 0
    for previous, current in zip(order, order[1:], strict=False):
        plane_of[previous] = plane
        if raan[current] - raan[previous] > tolerance_deg:
            plane += 1
    plane_of[order[-1]] = plane
    if plane > 0 and raan[order[0]] + 360.0 - raan[order[-1]] <= tolerance_deg:
        plane_of[plane_of == plane] = 0  # a plane straddling 0/360 deg is one plane
        plane -= 1
    slots = [(0, 0)] * len(sats)
    for p in range(plane + 1):
        members = [k for k in range(len(sats)) if plane_of[k] == p]
        members.sort(key=lambda k: (sats[k].argpo + sats[k].mo) % (2 * math.pi))
        for slot, k in enumerate(members):
            slots[k] = (p, slot)
    return slots


class OrbitWorld(SatelliteAssociation, World):
    """A LEO world (see the module docstring)."""

    mobile = True
    exclusive = False
    orbital = True
    propagation_delays = True  # ground-satellite delays follow the slant range

    def __init__(self, graph: nx.Graph, clients: list[str], sats: list[str], cloud: str | None,
                 spec: LeoWorld, satrecs: list[Satrec], sat_names: list[str],
                 sites: np.ndarray, windows: pd.DataFrame, feeder: list[list[tuple]],
                 gateways: np.ndarray | None):
        super().__init__(graph, clients, sats, cloud, {})
        self.spec, self.access_radio_spec = spec, spec.gsl
        self.sat_names, self.sites, self.windows = sat_names, sites, windows
        self._array, self._satrecs = SatrecArray(satrecs), satrecs
        self._site_km = site_ecef(sites[:, 0], sites[:, 1], sites[:, 2])
        self._gateway_km = None if gateways is None else site_ecef(
            gateways[:, 0], gateways[:, 1], np.zeros(len(gateways)))
        self._index = {name: k for k, name in enumerate(sats)}
        self._user = {name: k for k, name in enumerate(clients)}
        self._feeder = feeder
        coverage = merged_intervals(windows, "sat", len(sats))
        self._cover_start = [[a for a, _ in spans] for spans in coverage]
        self._cover = coverage
        self._cache_t, self._cache_pos = None, None
        self._link_listeners = []
        self._up = site_up(sites[:, 0], sites[:, 1])
        self._pair_windows: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for rise, set_, u, k in sorted(zip(windows["rise_s"], windows["set_s"], windows["site"],
                                           windows["sat"], strict=True)):
            self._pair_windows.setdefault((int(u), int(k)), []).append((float(rise),
                                                                        float(set_)))
        self._primary: dict[str, str] = {}
        self._decided: dict[str, list] = {}  # reconfiguration: the boundary each was decided at
        self._served: dict[str, str] = {}  # the serving satellite last seen per user
        self.serving_changes = 0  # users moved to another serving satellite (seen when asked)
        self._serving_listeners: list = []
        self._env = None
        self.isl_spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
        # circular speed sqrt(mu / a), a from the mean motion (rad/min): for rate updates
        radius_km = np.mean([(MU_KM3_S2 / (s.no_kozai / 60.0) ** 2) ** (1 / 3) for s in satrecs])
        self.orbital_speed_mps = math.sqrt(MU_KM3_S2 / radius_km) * 1000.0
        self.orbit_radius_m = float(radius_km) * 1000.0

    @property
    def delay_update_s(self) -> float:
        """How often ISL and feeder delays are refreshed (simulated seconds)."""
        return self.spec.delay_update

    # ------------------------------------------------------------------------ geometry

    def sat_positions(self, t: float) -> np.ndarray:
        """Earth-fixed positions (km) of every satellite at time ``t``, shape (S, 3)."""
        if t != self._cache_t:
            self._cache_pos = positions_ecef(self._array, self.spec.start, np.array([t]))[:, 0]
            self._cache_t = t
        return self._cache_pos

    def sat_position(self, sat: str, t: float) -> np.ndarray:
        """Earth-fixed position (km) of one satellite at ``t`` (propagates that one only)."""
        if t == self._cache_t:
            return self._cache_pos[self._index[sat]]
        jd, fr = julian_dates(self.spec.start, np.array([t]))
        error, r, _ = self._satrecs[self._index[sat]].sgp4(jd[0], fr[0])
        if error:
            raise ValueError(f"SGP4 error code {error} for {sat} at t = {t:g} s")
        return teme_to_ecef(np.asarray(r)[None], gmst_rad(jd, fr))[0]

    def site(self, client: str) -> tuple[float, float]:
        """A user's (latitude, longitude) in degrees."""
        lat, lon, _ = self.sites[self._user[client]]
        return float(lat), float(lon)

    def ground_latitude(self, client: str, sat: str) -> float:
        """The latitude (deg) of the ground end of a user's link: the user's."""
        return float(self.sites[self._user[client]][0])

    def distance_m(self, client: str, sat: str, t: float) -> float:
        """Slant range (m) from a user to a satellite at ``t``."""
        pos = self.sat_position(sat, t)
        return float(length(pos - self._site_km[self._user[client]]) * 1000.0)

    def speed_mps(self, client: str, t: float) -> float:
        return self.orbital_speed_mps

    def vehicle_of(self, client: str, t: float) -> str:
        return client  # users do not move; a client is always the same user

    def link_delays_s(self, pairs: list[tuple[str, str]], t: float) -> np.ndarray:
        """Propagation delays (s) of ISLs (range / c) and feeder links (slant range to the
        nearest gateway / c + the terrestrial delay) at ``t``."""
        pos = self.sat_positions(t)
        out = np.empty(len(pairs))
        feeder = np.array([self.cloud in pair for pair in pairs], dtype=bool)
        if (~feeder).any():
            a = np.array([self._index[u] for (u, v), f in zip(pairs, feeder, strict=True)
                          if not f])
            b = np.array([self._index[v] for (u, v), f in zip(pairs, feeder, strict=True)
                          if not f])
            out[~feeder] = np.linalg.norm(pos[a] - pos[b], axis=1) / SPEED_OF_LIGHT_KM_S
        if feeder.any():
            sats = np.array([self._index[u if v == self.cloud else v]
                             for (u, v), f in zip(pairs, feeder, strict=True) if f])
            gaps = pos[sats][:, None, :] - self._gateway_km[None, :, :]
            slant = np.linalg.norm(gaps, axis=2).min(axis=1)
            out[feeder] = (slant / SPEED_OF_LIGHT_KM_S
                           + self.spec.ground_stations.terrestrial_delay)
        return out

    # --------------------------------------------------------------------- visibility

    def remaining_s(self, sat: str, t: float) -> float:
        """How long ``sat`` still sees at least one user, from ``t`` (0 when it sees none)."""
        k = self._index[sat]
        return time_left_s(self._cover[k], self._cover_start[k], t)

    def satellite_records(self, sats: list[str]) -> list:
        """The SGP4 records of ``sats`` (names of edge servers)."""
        return [self._satrecs[self._index[s]] for s in sats]

    def coverage(self, sat: str) -> list[tuple[float, float]]:
        """The intervals in which ``sat`` sees at least one user."""
        return self._cover[self._index[sat]]

    def window_rows(self, now_s: float) -> pd.DataFrame:
        """windows.csv: every window begun by ``now_s`` (set clipped there), by user and
        satellite (with its constellation name)."""
        begun = self.windows[self.windows["rise_s"] <= now_s]
        return pd.DataFrame({
            "user": [self.clients[k] for k in begun["site"]],
            "satellite": [self.edge_servers[k] for k in begun["sat"]],
            "name": [self.sat_names[k] for k in begun["sat"]],
            "rise_s": begun["rise_s"].to_numpy(), "set_s": begun["set_s"].clip(upper=now_s)})

    def visible_satellites(self, t: float) -> list[str]:
        """Satellites that see at least one user at ``t``, longest remaining window first."""
        seen = [(self.remaining_s(s, t), -k, s) for k, s in enumerate(self.edge_servers)]
        return [s for r, _, s in sorted(seen, reverse=True) if r > 0]

    def next_rise_s(self, t: float) -> float | None:
        """The first time after ``t`` a satellite starts seeing a user (None: never)."""
        later = [spans[i][0] for spans, starts in zip(self._cover, self._cover_start,
                                                      strict=True)
                 if (i := bisect.bisect_right(starts, t)) < len(spans)]
        return min(later, default=None)

    # ---------------------------------------------------------------------------- run

    def subscribe_links(self, listener) -> None:
        """Call ``listener(u, v, up)`` when a feeder link gains or loses its gateways, or an
        ISL's chord starts or stops clearing the Earth."""
        self._link_listeners.append(listener)

    def start(self, env, streams) -> None:
        self._env = env  # the association policy scores satellites at the current time
        sat, site = self.windows["sat"].to_numpy(), self.windows["site"].to_numpy()
        env.process(self.replay_contacts(env, [
            (rise, set_, self.clients[u], self.edge_servers[s]) for rise, set_, u, s in zip(
                self.windows["rise_s"], self.windows["set_s"], site, sat, strict=True)]))
        links = dict(self.isl_spans)
        if self.cloud is not None:
            links.update({(sat, self.cloud): spans
                          for sat, spans in zip(self.edge_servers, self._feeder, strict=True)})
        if links:
            env.process(self._replay_links(env, links))

    def _replay_links(self, env, links: dict[tuple[str, str], list[tuple[float, float]]]):
        """Feeder links (up while a gateway sees the satellite) and ISLs (up while their chord
        clears the Earth) going up and down."""
        events = []
        for pair, spans in links.items():
            if not spans or spans[0][0] > 0:
                events.append((0.0, 0, pair))
            for rise, set_ in spans:
                events += [(rise, 1, pair), (set_, 0, pair)]
        for time_s, up, (u, v) in sorted(events):
            if time_s > env.now:
                yield env.timeout(time_s - env.now)
            for listener in self._link_listeners:
                listener(u, v, bool(up))

    def summary(self, now_s: float) -> dict:
        return leo_summary(self, now_s)


def leo_summary(world: OrbitWorld, now_s: float) -> dict:
    """Visibility figures up to ``now_s``: windows per user, their lengths, how much of the
    time users had a satellite, and how many satellites served."""
    begun = world.windows[world.windows["rise_s"] <= now_s]
    lengths = (begun["set_s"].clip(upper=now_s) - begun["rise_s"]).to_numpy()
    per_user = merged_intervals(begun, "site", len(world.clients))
    covered = [sum(min(b, now_s) - a for a, b in spans) for spans in per_user]
    return {
        "satellites": len(world.edge_servers),
        "windows_per_user": round(len(begun) / max(len(world.clients), 1), 3),
        "window_s_mean": round(float(lengths.mean()), 3) if len(lengths) else None,
        "user_coverage": round(float(np.mean(covered)) / now_s, 4) if now_s > 0 else None,
        "satellites_seen": int(begun["sat"].nunique()),
        # a user moved to another serving satellite (as the run saw it, when it asked)
        "satellite_handovers": world.serving_changes,
    }


def build_leo_world(spec: LeoWorld, rng: np.random.Generator) -> OrbitWorld:
    """Build a ``leo`` world (see the module docstring); ``rng`` is the world stream. With
    ``clients: satellites``, the satellites-as-clients world (netfl.world.leo_clients)."""
    names, satrecs, slots = constellation(spec)
    if spec.satellites_train:
        from netfl.world.leo_clients import build_satellite_client_world

        return build_satellite_client_world(spec, names, satrecs)
    sites = user_sites(spec.users, rng)
    cache = None if spec.cache else False
    windows = contact_windows(list(zip(range(len(satrecs)), satrecs, strict=True)), sites,
                              spec.start, spec.horizon, spec.min_elevation_deg,
                              step_s=spec.step, cache_dir=cache)
    windows = windows.rename(columns={"satellite": "sat"})
    phases = [math.degrees(sat.argpo + sat.mo) % 360.0 for sat in satrecs]
    keep = _kept(windows, len(satrecs), spec.constellation.max_satellites)
    if not keep:
        raise ScenarioError([ScenarioProblem(
            "world.users", f"no satellite rises above {spec.min_elevation_deg} deg for any user "
            f"within the horizon ({spec.horizon:g} s); add satellites or lower the mask",
            has_value=False)])
    new_index = {old: k for k, old in enumerate(keep)}
    windows = windows[windows["sat"].isin(new_index)].copy()
    windows["sat"] = windows["sat"].map(new_index).astype(int)
    windows = windows.reset_index(drop=True)
    satrecs = [satrecs[k] for k in keep]
    shell, slots = slots, [slots[k] for k in keep]
    sat_names = [names[k] for k in keep]
    clients = [client_name(i) for i in range(len(sites))]
    sats = [edge_name(j) for j in range(len(satrecs))]

    graph = nx.Graph()
    graph.add_nodes_from(clients, tier=CLIENT)
    graph.add_nodes_from(sats, tier=EDGE)
    isl_spans, notes = {}, []
    if spec.isl.kind == "grid":
        pairs = grid_isl_pairs(slots, shell, phases)
        spans = (isl_windows(satrecs, pairs, spec.start, spec.horizon, spec.step,
                             spec.isl.clearance / 1000.0) if spec.isl.earth_blocks
                 else [None] * len(pairs))
        for (u, v), window in zip(pairs, spans, strict=True):
            if window == []:
                continue
            graph.add_edge(sats[u], sats[v], link_class="backhaul", rate_bps=spec.isl.rate,
                           delay_s=0.0)
            if window is not None:
                isl_spans[(sats[u], sats[v])] = window
        notes += isl_notes(pairs, spans, slots, graph, sats, spec.isl.clearance)
    cloud, feeder, gateways = None, [[] for _ in sats], None
    if spec.ground_stations is not None:
        cloud = CLOUD_NAME
        graph.add_node(cloud, tier=CLOUD)
        stations = spec.ground_stations
        gateways = np.asarray(stations.positions, dtype=float).reshape(-1, 2)
        for sat in sats:
            graph.add_edge(sat, cloud, link_class="core", rate_bps=stations.rate, delay_s=0.0)
        gs_windows = contact_windows(list(zip(range(len(satrecs)), satrecs, strict=True)),
                                     [(a, b, 0.0) for a, b in gateways], spec.start,
                                     spec.horizon, stations.min_elevation_deg, step_s=spec.step,
                                     cache_dir=cache)
        feeder = merged_intervals(gs_windows.rename(columns={"satellite": "sat"}), "sat",
                                  len(sats))
    world = OrbitWorld(graph, clients, sats, cloud, spec, satrecs, sat_names, sites, windows,
                       feeder, gateways)
    world.isl_spans, world.notes = isl_spans, notes
    for u, v, data in graph.edges(data=True):  # delays at time 0
        if data["link_class"] in ("backhaul", "core"):
            data["delay_s"] = float(world.link_delays_s([(u, v)], 0.0)[0])
    return world


def _kept(windows: pd.DataFrame, count: int, limit: int | None) -> list[int]:
    """Indices of the satellites kept: all of them (those never in view still relay over
    ISLs), or with ``limit`` the ``limit`` longest in view of the users (ties to the lower
    index), in index order; [] when no satellite ever sees a user."""
    seen = (windows["set_s"] - windows["rise_s"]).groupby(windows["sat"]).sum()
    if seen.empty:
        return []
    if limit is None:
        return list(range(count))
    ranked = sorted(seen.index, key=lambda k: (-seen[k], k))[:limit]
    return sorted(int(k) for k in ranked)
