"""A LEO world whose satellites are the clients (``world.clients: satellites``).

Earth-observation satellites hold their own images and train on board; the ground stations are
the edge servers, each joined to the cloud by a terrestrial link (``ground_stations.rate`` and
``terrestrial_delay``); a satellite reaches a station only while it is above the station's mask
(``ground_stations.min_elevation_deg``). Built once, before the run:

1. the constellation's SGP4 records (as :mod:`netfl.world.leo`);
2. the contact plan of every (satellite, station) pair (:func:`contact_windows`, cached); with
   ``max_satellites`` only the N satellites longest in contact are kept, and satellites that
   never meet a station within the horizon are left out (with a note): they could neither get
   a model nor return one;
3. the graph: satellites (clients), stations (edge servers), the cloud, a core link per station.

During the run the windows are replayed as ``attach`` / ``detach`` (a satellite in view of two
stations is attached to both; ``world.association`` picks the one it uses). A contact's rate and
delay follow the slant range as for ground users, with the link budget's directions as they
are in space: a satellite's upload rides ``gsl.downlink`` (space to ground), its download
``gsl.uplink``. Every satellite in a station's view has a carrier of its own (``beams`` are
dedicated: a station tracks each with its own antenna).
"""

from __future__ import annotations

import bisect
import math

import networkx as nx
import numpy as np
import pandas as pd
from sgp4.api import Satrec, SatrecArray

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.scenario.leo import DedicatedBeams, LeoWorld
from netfl.world.base import CLIENT, CLOUD, CLOUD_NAME, EDGE, World, client_name, edge_name
from netfl.world.contact_plan import contact_windows, merged_intervals, time_left_s
from netfl.world.leo_association import SatelliteAssociation
from netfl.world.orbits import (
    MU_KM3_S2,
    elevation_deg,
    positions_ecef,
    site_ecef,
    site_up,
)
from netfl.world.vectors import length

__all__ = ["SatelliteClientWorld", "build_satellite_client_world", "contact_summary"]


class SatelliteClientWorld(SatelliteAssociation, World):
    """Satellites as clients of ground stations (see the module docstring).

    The association policy's hooks (``window_left_s``, ``elevation_deg``) score the stations
    in a satellite's view; ``coverage(client)`` is a satellite's merged contact time."""

    mobile = True
    exclusive = False
    orbital = False  # the edge servers (stations) stand still; Fed-CHS's orbital variant is out
    propagation_delays = True  # contact delays follow the slant range

    def __init__(self, graph: nx.Graph, clients: list[str], stations: list[str], spec: LeoWorld,
                 satrecs: list[Satrec], sat_names: list[str], windows: pd.DataFrame):
        super().__init__(graph, clients, stations, CLOUD_NAME, {})
        # the access layer reads beams from the spec: every contact has its own carrier
        self.spec = spec.model_copy(update={"beams": DedicatedBeams(kind="dedicated")})
        self.access_radio_spec = _space_directions(spec.gsl)
        self.sat_names, self.windows = sat_names, windows
        self._array, self._satrecs = SatrecArray(satrecs), satrecs
        gs = np.asarray(spec.ground_stations.positions, dtype=float).reshape(-1, 2)
        self.station_sites = gs
        self._station_km = site_ecef(gs[:, 0], gs[:, 1], np.zeros(len(gs)))
        self._station_up = site_up(gs[:, 0], gs[:, 1])
        # the association mixin keys pairs by (client index, edge index)
        self._user = {name: k for k, name in enumerate(clients)}
        self._index = {name: j for j, name in enumerate(stations)}
        self._pair_windows: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for rise, set_, k, j in sorted(zip(windows["rise_s"], windows["set_s"], windows["sat"],
                                           windows["station"], strict=True)):
            self._pair_windows.setdefault((int(k), int(j)), []).append((float(rise),
                                                                        float(set_)))
        self._cover = merged_intervals(windows, "sat", len(clients))
        self._cover_start = [[a for a, _ in spans] for spans in self._cover]
        self._primary: dict[str, str] = {}
        self._decided: dict[str, list] = {}  # reconfiguration: the boundary each was decided at
        self._served: dict[str, str] = {}
        self.serving_changes = 0
        self._serving_listeners: list = []
        self._env = None
        self._cache_t, self._cache_pos = None, None
        radius_km = np.mean([(MU_KM3_S2 / (s.no_kozai / 60.0) ** 2) ** (1 / 3) for s in satrecs])
        self.orbital_speed_mps = math.sqrt(MU_KM3_S2 / radius_km) * 1000.0
        self.orbit_radius_m = float(radius_km) * 1000.0
        # the longest orbital period (s) in the constellation (mean motion in rad/min)
        self.orbital_period_s = max(2 * math.pi / (s.no_kozai / 60.0) for s in satrecs)

    # ------------------------------------------------------------------------ geometry

    def sat_positions(self, t: float) -> np.ndarray:
        """Earth-fixed positions (km) of every satellite (client order) at ``t``, (K, 3)."""
        if t != self._cache_t:
            self._cache_pos = positions_ecef(self._array, self.spec.start, np.array([t]))[:, 0]
            self._cache_t = t
        return self._cache_pos

    def distance_m(self, client: str, station: str, t: float) -> float:
        """Slant range (m) from a satellite to a ground station at ``t``."""
        pos = self.sat_positions(t)[self._user[client]]
        return float(length(pos - self._station_km[self._index[station]]) * 1000.0)

    def ground_latitude(self, client: str, station: str) -> float:
        """The latitude (deg) of the ground end of a satellite's link: its station's."""
        return float(self.station_sites[self._index[station]][0])

    def elevation_deg(self, client: str, station: str, t: float) -> float:
        """The satellite's elevation above the station's horizon at ``t`` (degrees)."""
        j = self._index[station]
        position = self.sat_positions(t)[self._user[client]]
        return float(elevation_deg(position[None], self._station_km[j][None],
                                   self._station_up[j][None])[0])

    def speed_mps(self, client: str, t: float) -> float:
        return self.orbital_speed_mps

    def vehicle_of(self, client: str, t: float) -> str:
        return client

    def satellite_records(self, sats: list[str]) -> list:
        """The SGP4 records of ``sats`` (names of clients)."""
        return [self._satrecs[self._user[s]] for s in sats]

    # --------------------------------------------------------------------- contacts

    def coverage(self, client: str) -> list[tuple[float, float]]:
        """The intervals in which satellite ``client`` is in contact with some station."""
        return self._cover[self._user[client]]

    def in_contact(self, client: str, t: float) -> bool:
        """Whether ``client`` is in some station's view at ``t`` (from the contact plan)."""
        return self.contact_left_s(client, t) > 0

    def contact_left_s(self, client: str, t: float) -> float:
        """How long ``client`` stays in contact with some station from ``t`` (0: none)."""
        k = self._user[client]
        return time_left_s(self._cover[k], self._cover_start[k], t)

    def next_contact_s(self, client: str, t: float) -> float | None:
        """The start of ``client``'s next contact after ``t`` (``t`` itself while in one; None
        when the plan has no more)."""
        if self.in_contact(client, t):
            return t
        k = self._user[client]
        i = bisect.bisect_right(self._cover_start[k], t)
        return self._cover[k][i][0] if i < len(self._cover[k]) else None

    def contact_table(self, start_s: float, slot_s: float, slots: int) -> list[list[str]]:
        """For each of ``slots`` slots of ``slot_s`` from ``start_s``: the satellites in
        contact with some station at some time in the slot (client order). What a scheduler
        that knows the orbits (FedSpace's connectivity C_i) plans with."""
        table = []
        for i in range(slots):
            a, b = start_s + i * slot_s, start_s + (i + 1) * slot_s
            table.append([c for c, spans in zip(self.clients, self._cover, strict=True)
                          if _overlaps(spans, a, b)])
        return table

    def window_rows(self, now_s: float) -> pd.DataFrame:
        """contacts.csv: every contact begun by ``now_s`` (set clipped there), by satellite
        (with its constellation name) and ground station."""
        begun = self.windows[self.windows["rise_s"] <= now_s]
        return pd.DataFrame({
            "satellite": [self.clients[k] for k in begun["sat"]],
            "name": [self.sat_names[k] for k in begun["sat"]],
            "ground_station": [self.edge_servers[j] for j in begun["station"]],
            "rise_s": begun["rise_s"].to_numpy(), "set_s": begun["set_s"].clip(upper=now_s)})

    # ---------------------------------------------------------------------------- run

    def start(self, env, streams) -> None:
        self._env = env  # the association policy scores stations at the current time
        env.process(self.replay_contacts(env, [
            (rise, set_, self.clients[k], self.edge_servers[j]) for rise, set_, k, j in zip(
                self.windows["rise_s"], self.windows["set_s"], self.windows["sat"],
                self.windows["station"], strict=True)]))

    def summary(self, now_s: float) -> dict:
        return contact_summary(self, now_s)


def contact_summary(world: SatelliteClientWorld, now_s: float) -> dict:
    """Contact figures up to ``now_s``: contacts per satellite, their lengths, the gaps between
    a satellite's contacts, and the share of time satellites were in contact."""
    begun = world.windows[world.windows["rise_s"] <= now_s]
    lengths = (begun["set_s"].clip(upper=now_s) - begun["rise_s"]).to_numpy()
    per_sat = merged_intervals(begun, "sat", len(world.clients))
    covered = [sum(min(b, now_s) - a for a, b in spans) for spans in per_sat]
    gaps = [b[0] - a[1] for spans in per_sat for a, b in zip(spans, spans[1:], strict=False)]
    return {
        "satellites": len(world.clients),
        "ground_stations": len(world.edge_servers),
        "contacts_per_satellite": round(len(begun) / max(len(world.clients), 1), 3),
        "contact_s_mean": round(float(lengths.mean()), 3) if len(lengths) else None,
        "contact_gap_s_mean": round(float(np.mean(gaps)), 3) if gaps else None,
        "satellite_coverage": (round(float(np.mean(covered)) / now_s, 4) if now_s > 0
                               else None),
        # a satellite moved to another station while in view of two (as the run saw it)
        "station_handovers": world.serving_changes,
    }


def build_satellite_client_world(spec: LeoWorld, names: list[str], satrecs: list[Satrec]
                                 ) -> SatelliteClientWorld:
    """Build the satellites-as-clients world from the constellation (names and SGP4 records
    in constellation order); see the module docstring."""
    stations = spec.ground_stations
    sites = [(lat, lon, 0.0) for lat, lon in stations.positions]
    cache = None if spec.cache else False
    windows = contact_windows(list(zip(range(len(satrecs)), satrecs, strict=True)), sites,
                              spec.start, spec.horizon, stations.min_elevation_deg,
                              step_s=spec.step, cache_dir=cache)
    windows = windows.rename(columns={"satellite": "sat", "site": "station"})
    seen = (windows["set_s"] - windows["rise_s"]).groupby(windows["sat"]).sum()
    if seen.empty:
        raise ScenarioError([ScenarioProblem(
            "world.ground_stations", f"no satellite rises above "
            f"{stations.min_elevation_deg} deg at any ground station within the horizon "
            f"({spec.horizon:g} s); add stations or satellites, or lower the mask",
            has_value=False)])
    ranked = sorted(seen.index, key=lambda k: (-seen[k], k))
    limit = spec.constellation.max_satellites
    keep = sorted(int(k) for k in (ranked[:limit] if limit is not None else ranked))
    notes = []
    if limit is None and len(keep) < len(satrecs):
        notes.append(f"{len(satrecs) - len(keep)} of {len(satrecs)} satellites never meet a "
                     f"ground station within the horizon and are left out (they could "
                     f"neither get a model nor return one)")
    new_index = {old: k for k, old in enumerate(keep)}
    windows = windows[windows["sat"].isin(new_index)].copy()
    windows["sat"] = windows["sat"].map(new_index).astype(int)
    windows = windows.reset_index(drop=True)
    clients = [client_name(k) for k in range(len(keep))]
    gs = [edge_name(j) for j in range(len(sites))]
    graph = nx.Graph()
    graph.add_nodes_from(clients, tier=CLIENT)
    graph.add_nodes_from(gs, tier=EDGE)
    graph.add_node(CLOUD_NAME, tier=CLOUD)
    for station in gs:
        graph.add_edge(station, CLOUD_NAME, link_class="core", rate_bps=stations.rate,
                       delay_s=stations.terrestrial_delay)
    world = SatelliteClientWorld(graph, clients, gs, spec, [satrecs[k] for k in keep],
                                 [names[k] for k in keep], windows)
    world.notes = notes
    return world


def _space_directions(gsl):
    """The GSL spec as the access layer reads it (``uplink`` = client to edge): a satellite's
    upload is the space-to-ground direction, so a link budget's two directions swap; a fixed
    rate is the same both ways."""
    if gsl.kind != "link-budget":
        return gsl
    return gsl.model_copy(update={"uplink": gsl.downlink, "downlink": gsl.uplink})


def _overlaps(spans: list[tuple[float, float]], a: float, b: float) -> bool:
    """Whether some span of ``spans`` (sorted, disjoint) meets [a, b)."""
    i = bisect.bisect_left(spans, (a, -math.inf))
    if i > 0 and spans[i - 1][1] > a:
        return True
    return i < len(spans) and spans[i][0] < b
