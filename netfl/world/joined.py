"""A road under a constellation: an ``iov`` world whose RSUs (some or all) reach the cloud and
each other through LEO satellites (``world.backhaul: {kind: satellite}``; docs/models/joined.md).

The road is built as any ``iov`` world (vehicles, RSUs, fibre between neighbouring RSUs and to
the cloud); then the RSUs with a terminal lose their fibre, and the constellation is built as a
``leo`` world (:func:`~netfl.world.leo.build_leo_world`) whose users are those RSUs' terminals,
placed on the Earth by ``backhaul.site``. Its satellites join the graph as relays (tier
``relay``: neither clients nor edge servers; routes cross them) named ``s0..``, with its ISLs
(class ``backhaul``) and feeder links to the cloud (class ``core``, up while a gateway sees the
satellite). A terminal RSU's ``terminal`` link to a satellite is added when that satellite
first serves it and is up only while it does (the association policy, hand-overs and the 15-s
schedule as for a ``leo`` world's users: ``subscribe_terminals``). The network's terminal side
(``netfl.network.terminals``) makes those links and gives them their rates (the link budget at
the slant range, shared in the beam) and delays.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.scenario.iov import IovWorld
from netfl.world.base import CLIENT, CLOUD, EDGE, RELAY
from netfl.world.iov import RoadWorld, build_road
from netfl.world.leo import OrbitWorld, build_leo_world
from netfl.world.orbits import SPEED_OF_LIGHT_KM_S

TERMINAL = "terminal"  # the link class of an RSU's satellite terminal (netfl.network.terminals)


def satellite_name(j: int) -> str:
    return f"s{j}"


class JoinedWorld(RoadWorld):
    """An ``iov`` world with a satellite backhaul (see the module docstring). ``sky`` is the
    constellation's ``leo`` world, its users the terminals; ``terminal_of`` maps a terminal
    RSU to its user there, and satellite names map to the sky's edge servers."""

    def __init__(self, road: RoadWorld, graph: nx.Graph, sky: OrbitWorld,
                 terminals: list[str], neighbours: nx.Graph):
        super().__init__(graph, road.clients, road.edge_servers, road.cloud, road.rsu_xy,
                         road.coverage_m, road.visits, road.tracks(), road.arrivals_without_data,
                         road.spec)
        self.ranges = road.ranges
        self.sky, self.terminals = sky, terminals
        self.terminal_of = {rsu: sky.clients[k] for k, rsu in enumerate(terminals)}
        self._rsu_of_user = {user: rsu for rsu, user in self.terminal_of.items()}
        self.satellites = [satellite_name(j) for j in range(len(sky.edge_servers))]
        self._sky_sat = dict(zip(self.satellites, sky.edge_servers, strict=True))
        self._our_sat = {v: k for k, v in self._sky_sat.items()}
        self._neighbours = neighbours
        self.serving: dict[str, str | None] = dict.fromkeys(terminals)
        self.terminal_changes = 0  # hand-overs of terminals between satellites
        self._terminal_listeners: list = []
        self._env = None

    @property
    def delay_update_s(self) -> float:
        """How often ISL, feeder and terminal delays are refreshed (simulated seconds)."""
        return self.spec.backhaul.delay_update

    # ------------------------------------------------------------------------ geometry

    def _sky_pair(self, u: str, v: str) -> tuple[str, str]:
        def name(node: str) -> str:
            if node in self._sky_sat:
                return self._sky_sat[node]
            if node == self.cloud:
                return self.sky.cloud
            return self.terminal_of[node]
        return name(u), name(v)

    def terminal_distance_m(self, rsu: str, sat: str, t: float) -> float:
        """Slant range (m) from ``rsu``'s terminal to satellite ``sat`` at ``t``."""
        return self.sky.distance_m(self.terminal_of[rsu], self._sky_sat[sat], t)

    def terminal_site(self, rsu: str) -> tuple[float, float]:
        """(latitude, longitude) in degrees of ``rsu``'s terminal."""
        return self.sky.site(self.terminal_of[rsu])

    def link_delays_s(self, pairs: list[tuple[str, str]], t: float) -> np.ndarray:
        """Propagation delays (s) at ``t``: ISLs and feeder links as the sky's, terminal links
        at their slant range / c, fibre at its fixed delay."""
        out = np.empty(len(pairs))
        sky_pairs, sky_rows = [], []
        for row, (u, v) in enumerate(pairs):
            tiers = {self.tier(u), self.tier(v)}
            if tiers == {RELAY} or tiers == {RELAY, CLOUD}:
                sky_pairs.append(self._sky_pair(u, v))
                sky_rows.append(row)
            elif tiers == {RELAY, EDGE}:
                rsu, sat = (u, v) if self.tier(u) == EDGE else (v, u)
                out[row] = self.terminal_distance_m(rsu, sat, t) / 1000.0 / SPEED_OF_LIGHT_KM_S
            else:
                out[row] = self.graph.edges[u, v]["delay_s"]
        if sky_pairs:
            out[sky_rows] = self.sky.link_delays_s(sky_pairs, t)
        return out

    def hop_segment(self, u: str, v: str) -> str:
        """The segment of a path a hop between ``u`` and ``v`` is: ``radio`` (vehicle - RSU),
        ``terminal`` (RSU - satellite), ``isl``, ``feeder`` (satellite - cloud) or ``fibre``."""
        tiers = {self.tier(u), self.tier(v)}
        if CLIENT in tiers:
            return "radio"
        if RELAY not in tiers:
            return "fibre"
        if tiers == {RELAY}:
            return "isl"
        return "feeder" if CLOUD in tiers else "terminal"

    def edge_graph(self) -> nx.Graph:
        """The RSUs as neighbours along the road (each RSU's nearest on either side), whatever
        carries the traffic between them: Fed-CHS hands its model to a neighbour, through the
        constellation where the fibre is gone."""
        return self._neighbours.copy()

    # ---------------------------------------------------------------------------- run

    def subscribe_links(self, listener) -> None:
        """Call ``listener(u, v, up)`` when a feeder link gains or loses its gateways, or an
        ISL's chord starts or stops clearing the Earth."""
        self.sky.subscribe_links(lambda u, v, up: listener(*self._ours(u, v), up))

    def _ours(self, u: str, v: str) -> tuple[str, str]:
        def name(node: str) -> str:
            return self.cloud if node == self.sky.cloud else self._our_sat[node]
        return name(u), name(v)

    def subscribe_terminals(self, listener) -> None:
        """Call ``listener(rsu, satellite, serving)`` when a terminal's serving satellite
        changes (the old one's link goes down first)."""
        self._terminal_listeners.append(listener)

    def add_terminal_edge(self, rsu: str, sat: str) -> None:
        """The graph edge of ``rsu``'s terminal link to ``sat`` (made when ``sat`` first serves
        it: the network adds its link at once)."""
        self.graph.add_edge(rsu, sat, link_class=TERMINAL,
                            delay_s=self.link_delays_s([(rsu, sat)], self._now())[0])

    def _now(self) -> float:
        return 0.0 if self._env is None else self._env.now

    def start(self, env, streams) -> None:
        super().start(env, streams)
        self._env = env
        self.sky.subscribe(self._sky_changed)
        self.sky.start(env, streams)
        schedule = self.sky.spec.association.reconfiguration
        if schedule is not None:
            env.process(self._boundaries(env, schedule.period))
        elif self.sky.spec.association.policy == "highest-elevation":
            env.process(self._every(env, self.sky.spec.rate_update.interval))

    def _sky_changed(self, user: str, sat: str, attached: bool) -> None:
        rsu = self._rsu_of_user.get(user)
        if rsu is not None:
            self._reassess(rsu)

    def _boundaries(self, env, period: float):
        """Reassess every terminal at each boundary of the global schedule."""
        first = self.sky.last_boundary_s(env.now)
        if first < env.now:
            first += period
        yield env.timeout(first - env.now)
        while True:
            for rsu in self.terminals:
                self._reassess(rsu)
            yield env.timeout(period)

    def _every(self, env, interval: float):
        """Elevations change continuously: reassess every terminal every ``interval``."""
        while True:
            yield env.timeout(interval)
            for rsu in self.terminals:
                self._reassess(rsu)

    def _reassess(self, rsu: str) -> None:
        """Ask the association policy which satellite serves ``rsu`` now; tell a change."""
        chosen = self.sky.edge_of(self.terminal_of[rsu])
        sat = None if chosen is None else self._our_sat[chosen]
        old = self.serving[rsu]
        if sat == old:
            return
        self.serving[rsu] = sat
        if old is not None and sat is not None:
            self.terminal_changes += 1
        for listener in self._terminal_listeners:
            if old is not None:
                listener(rsu, old, False)
            if sat is not None:
                listener(rsu, sat, True)

    def summary(self, now_s: float) -> dict:
        out = super().summary(now_s)
        out["satellite_backhaul"] = {
            "terminals": len(self.terminals), "satellites": len(self.satellites),
            "terminal_handovers": self.terminal_changes}
        return out


def build_joined_world(road: RoadWorld, spec: IovWorld, rng: np.random.Generator
                       ) -> JoinedWorld:
    """``road`` (built from ``spec``) with ``spec.backhaul``'s constellation joined to it."""
    backhaul = spec.backhaul
    rsus = road.edge_servers
    indices = backhaul.terminal_rsus(len(rsus))
    past = [i for i in indices if i >= len(rsus)]
    if past:
        raise ScenarioError([ScenarioProblem(
            "world.backhaul.rsus", f"RSU indices {past} are past the last of the {len(rsus)} "
            f"placed (0-{len(rsus) - 1})", past)])
    terminals = [rsus[i] for i in indices]
    sites = [backhaul.site.lat_lon(*road.rsu_xy[rsu]) for rsu in terminals]
    sky = build_leo_world(backhaul.sky(sites), rng)
    graph = road.graph.copy()
    neighbours = road.edge_graph()
    for rsu in terminals:  # no fibre at a terminal RSU
        graph.remove_edges_from([(rsu, v) for v in list(graph[rsu])
                                 if graph.edges[rsu, v]["link_class"] in ("backhaul", "core")])
    rename = dict(zip(sky.edge_servers, (satellite_name(j)
                                         for j in range(len(sky.edge_servers))), strict=True))
    graph.add_nodes_from(rename.values(), tier=RELAY)
    for u, v, data in sky.graph.edges(data=True):
        if u in rename and v in rename:  # an ISL
            graph.add_edge(rename[u], rename[v], **data)
        elif road.cloud is not None and sky.cloud in (u, v):  # a feeder link
            graph.add_edge(rename[u if v == sky.cloud else v], road.cloud, **data)
    seeing = set(sky.windows["site"].astype(int))
    unseen = [rsu for k, rsu in enumerate(terminals) if k not in seeing]
    if unseen:
        raise ScenarioError([ScenarioProblem(
            "world.backhaul", f"RSUs {unseen} see no satellite above "
            f"{backhaul.min_elevation_deg} deg within the horizon ({backhaul.horizon:g} s)",
            has_value=False)])
    world = JoinedWorld(road, graph, sky, terminals, neighbours)
    world.notes = road.notes + sky.notes
    relayed = [(u, v) for u, v in graph.edges() if RELAY in (world.tier(u), world.tier(v))]
    for (u, v), delay in zip(relayed, world.link_delays_s(relayed, 0.0), strict=True):
        graph.edges[u, v]["delay_s"] = float(delay)  # delays at time 0, in one call
    return world


def build_iov_world(spec: IovWorld, rng: np.random.Generator) -> RoadWorld:
    """Build an ``iov`` world: the road (netfl.world.iov), joined to its satellite backhaul
    where ``spec.backhaul`` gives one."""
    road = build_road(spec, rng)
    return road if spec.backhaul is None else build_joined_world(road, spec, rng)
