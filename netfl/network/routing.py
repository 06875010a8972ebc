"""The links on the world's graph, their up/down state, and the routes over those that are up.

:class:`Topology` is the part of the network that knows where things are: every link by its
ends, each path's links and channels (``path_parts``), which links are up (a link is down while
any reason holds it down: an outage, a dropped node, a vehicle out of coverage), the access
point a client reaches the network through now, and the shortest path by propagation delay
between two nodes (fewest hops breaks ties). Routes among edge servers and the cloud are cached
until a link among them changes state; a node with many such links (a hub: the cloud, a busy
edge server) is routed to by one shortest-path tree. :class:`~netfl.network.transfer.Network`
adds the transfers over it.
"""

from __future__ import annotations

import networkx as nx
import simpy

from netfl.network.access import SIGNAL
from netfl.network.link import PATH_CACHE_SIZE, Link
from netfl.sim.trace import LinkState, TraceBus
from netfl.world.base import CLIENT, EDGE, World

_HOP_TIE_BREAK_S = 1e-9  # added to every hop's routing weight so equal delays prefer fewer hops


# A node with this many links to edge servers or the cloud is routed to by one shortest-path
# tree rather than a search per source (the same paths where shortest paths are unique).
HUB_DEGREE = 16


class Topology:
    """Links on ``world``'s graph (added with ``add_link``), their state and routes."""

    def __init__(self, env: simpy.Environment, world: World, trace: TraceBus):
        self.env, self.world, self.trace = env, world, trace
        self._links: dict[tuple[str, str], Link] = {}
        self._by_pair: dict[tuple[str, str], Link] = {}  # both orders: no frozenset per lookup
        self._path_parts: dict[tuple[str, ...], tuple] = {}  # see path_parts
        self._route_cache: dict[tuple[str, str], list[str] | None] = {}
        self._hub_trees: dict[str, dict[str, list[str]]] = {}  # hub -> its shortest-path tree
        self._nodes_down: set[str] = set()  # dropped-out nodes (their new links start down)
        self._link_up_event: simpy.Event | None = None
        # Routes among edge servers and the cloud; clients join through their access point.
        self._up_graph = nx.subgraph_view(
            world.graph, filter_node=lambda n: world.tier(n) != CLIENT,
            filter_edge=lambda u, v: self._by_pair[(u, v)].up)
        self._hubs = {n for n in world.graph if world.tier(n) != CLIENT and sum(
            1 for v in world.graph[n] if world.tier(v) != CLIENT) >= HUB_DEGREE}

    def _route_weight(self, u: str, v: str, _data: dict) -> float:
        return self._by_pair[(u, v)].delay_s + _HOP_TIE_BREAK_S

    # -------------------------------------------------------------------------- links

    def links(self) -> list[Link]:
        return list(self._links.values())

    def link(self, u: str, v: str) -> Link:
        return self._by_pair[(u, v)]

    def find_link(self, u: str, v: str) -> Link | None:
        return self._by_pair.get((u, v))

    def add_link(self, link: Link) -> None:
        """Add a link (the helper's, or one made during the run: a mobile world's access link
        on first contact); it starts down where an end has dropped out."""
        ends = (link.u, link.v) if link.u <= link.v else (link.v, link.u)
        self._links[ends] = link  # a pair of names: a third of a frozenset's bytes
        self._by_pair[(link.u, link.v)] = self._by_pair[(link.v, link.u)] = link
        for end in (link.u, link.v):
            if end in self._nodes_down:
                link.hold_down(f"node {end}")

    def path_parts(self, path: list[str]) -> tuple[tuple[Link, ...], tuple, tuple]:
        """``path``'s links, every channel a flow over it crosses (once each), and each hop's
        own channel (the first it crosses). Cached per path: a pair's link and a link's channels
        never change during a run (a mobile world adds links, never replaces one)."""
        if len(path) == 2:
            return self._by_pair[(path[0], path[1])].hop_parts(path[0], path[1])
        key = tuple(path)
        parts = self._path_parts.get(key)
        if parts is None:
            links = tuple(self._by_pair[hop] for hop in zip(path, path[1:], strict=False))
            crossed = [link.channels(u, v)
                       for link, u, v in zip(links, path, path[1:], strict=False)]
            own = tuple(channels[0] for channels in crossed)
            if all(len(channels) == 1 for channels in crossed):
                channels = own
            else:  # a channel crossed twice (two links of one radio cell) counts once
                channels = tuple(dict.fromkeys(c for cs in crossed for c in cs))
            parts = (links, channels, own)
            if len(self._path_parts) < PATH_CACHE_SIZE:
                self._path_parts[key] = parts
        return parts

    # -------------------------------------------------------------------------- state

    def set_link_state(self, link: Link, up: bool, reason: str) -> None:
        """Hold ``link`` down for ``reason`` (up=False) or release that reason (up=True)."""
        changed = link.release(reason) if up else link.hold_down(reason)
        if changed and up and self._link_up_event is not None:
            self._link_up_event.succeed()
            self._link_up_event = None
        if changed:
            if link.link_class != "access":  # access links are not in the cached routes
                self.clear_routes()
            if self.trace.wants(LinkState):
                self.trace.emit(LinkState(time_s=self.env.now, link=link.name, up=up))

    def link_came_up(self) -> simpy.Event:
        """An event that succeeds when some link next comes up (messages in custody wait on it)."""
        if self._link_up_event is None:
            self._link_up_event = self.env.event()
        return self._link_up_event

    def set_node_state(self, node: str, up: bool) -> None:
        """Take every link of ``node`` down (a dropout) or bring them back."""
        (self._nodes_down.discard if up else self._nodes_down.add)(node)
        for neighbour in self.world.graph.neighbors(node):
            self.set_link_state(self.link(node, neighbour), up, f"node {node}")

    # -------------------------------------------------------------------------- routes

    def clear_routes(self) -> None:
        """Forget cached routes (after link delays changed)."""
        self._route_cache.clear()
        self._hub_trees.clear()

    def access_point(self, client: str, towards: str | None = None) -> str | None:
        """The edge server ``client`` reaches the network through now: ``towards`` itself
        where the client is attached to it (a satellite in view), else its primary edge
        server; None when that has no access link up. A link down only for its signal
        counts (sending re-checks the signal, and fails as out of coverage if still lost)."""
        for edge in (towards, self.world.edge_of(client)):
            if edge is not None and self.world.tier(edge) == EDGE and (
                    self.world.is_attached(client, edge)):
                link = self.link(client, edge)
                if link.up or link.down_only_for(SIGNAL):
                    return edge
        return None

    def route(self, src: str, dst: str) -> list[str] | None:
        """Shortest path by delay over links that are up, or None where there is none."""
        head, tail = [], []
        if self.world.tier(src) == CLIENT:
            head, src = [src], self.access_point(src, towards=dst)
        if self.world.tier(dst) == CLIENT:
            tail, dst = [dst], self.access_point(dst, towards=src)
        if src is None or dst is None:
            return None
        middle = [src] if src == dst else self._core_route(src, dst)
        return None if middle is None else head + middle + tail

    def _core_route(self, src: str, dst: str) -> list[str] | None:
        key = (src, dst)
        if key not in self._route_cache:
            if src in self._hubs:
                path = self._hub_tree(src).get(dst)
            elif dst in self._hubs:  # links are symmetric: the way back, reversed
                path = self._hub_tree(dst).get(src)
                path = None if path is None else path[::-1]
            else:
                try:
                    path = nx.shortest_path(self._up_graph, src, dst, weight=self._route_weight)
                except (nx.NetworkXNoPath, nx.NodeNotFound):
                    path = None
            self._route_cache[key] = path
        return self._route_cache[key]

    def _hub_tree(self, hub: str) -> dict[str, list[str]]:
        """Shortest paths from ``hub`` (the cloud, an edge server with many neighbours) to
        every node, made once per link-state change: a search between two points expands all
        of a hub's neighbours, so routing each of M edge servers to the cloud on its own costs
        O(M^2) (a random topology of 20,000 edge servers never finished its first round)."""
        tree = self._hub_trees.get(hub)
        if tree is None:
            tree = self._hub_trees[hub] = nx.single_source_dijkstra_path(
                self._up_graph, hub, weight=self._route_weight)
        return tree

    def tag(self, src: str, dst: str) -> str:
        return f"{self.world.tier(src)}->{self.world.tier(dst)}"
