"""The world: which nodes exist, which tier each is in, and which links join them.

Node names: clients ``c0..c{N-1}``, edge servers ``e0..e{M-1}``, the cloud ``cloud``. Every graph
edge carries ``link_class`` ("access", "backhaul" or "core") and may carry ``rate_bps`` and
``delay_s`` that override its class (for example from a topology file).

Association (which edge servers each client is attached to) may change over time: a mobile world
calls :meth:`World.attach` and :meth:`World.detach` as clients enter and leave coverage, and the
network, subscribed with :meth:`World.subscribe`, brings access links up and down with it. In an
``exclusive`` world (static, IoV) a client has at most one edge server and attaching it elsewhere
leaves the old one; otherwise (LEO: every satellite in view) it may have several, the first
attached being its primary (:meth:`World.edge_of`). A static world attaches every client once, at
construction, and never changes.
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx

CLIENT, EDGE, CLOUD = "client", "edge", "cloud"
TIERS = (CLIENT, EDGE, CLOUD)
RELAY = "relay"  # a node that only forwards: a satellite backhauling RSUs (world/joined.py)
LINK_CLASSES = ("access", "backhaul", "core")

# listener(client, edge_server, attached): called after the association changed
AssociationListener = Callable[[str, str, bool], None]


def client_name(i: int) -> str:
    return f"c{i}"


def edge_name(j: int) -> str:
    return f"e{j}"


CLOUD_NAME = "cloud"


class World:
    """A world: its graph, its nodes by tier, and the current client-edge association.

    graph: undirected; node attribute ``tier``; edge attribute ``link_class``. A mobile world
    adds access edges as clients first meet edge servers.
    client_edge: each client's edge server now (None while a mobile client is out of coverage).
    """

    mobile = False
    exclusive = True
    orbital = False  # a constellation: edge servers move along orbits (netfl.world.leo)

    def __init__(self, graph: nx.Graph, clients: list[str], edge_servers: list[str],
                 cloud: str | None, client_edge: dict[str, str | None]):
        self.graph, self.clients, self.cloud = graph, clients, cloud
        self.edge_servers = edge_servers
        self._tiers = dict(graph.nodes(data="tier"))  # nodes never change; edges may
        # dicts keep insertion order: members in the order they attached (client order here)
        self._edges: dict[str, dict[str, None]] = {c: {} for c in clients}
        self._members: dict[str, dict[str, None]] = {es: {} for es in edge_servers}
        self._listeners: list[AssociationListener] = []
        self.notes: list[str] = []  # what a user should know of this world (validate says them)
        for client in clients:
            if client_edge.get(client) is not None:
                self.attach(client, client_edge[client])

    def tier(self, node: str) -> str:
        return self._tiers[node]

    def clients_of(self, edge_server: str) -> list[str]:
        """The clients attached to ``edge_server`` now (static worlds: in client order)."""
        return list(self._members[edge_server])

    @property
    def client_edge(self) -> dict[str, str | None]:
        """Each client's primary edge server now (None while out of coverage): a new dict of
        every client at each access (O(clients)); for one client, ``edge_of``."""
        return {c: self.edge_of(c) for c in self.clients}

    def primary_clients_of(self, edge_server: str) -> list[str]:
        """The clients whose primary edge server is ``edge_server`` now (``clients_of`` in an
        exclusive world): one cluster per client where clients see several."""
        if self.exclusive:
            return self.clients_of(edge_server)
        return [c for c in self._members[edge_server] if self.edge_of(c) == edge_server]

    def serving_edges(self) -> list[str]:
        """The edge servers that are some client's primary edge server now, in edge order."""
        return [es for es in self.edge_servers if self.primary_clients_of(es)]

    def edge_of(self, client: str) -> str | None:
        """The edge server ``client`` is attached to now (its first, in a non-exclusive
        world), or None."""
        return next(iter(self._edges[client]), None)

    def edges_of(self, client: str) -> list[str]:
        """Every edge server ``client`` is attached to now, in the order they attached."""
        return list(self._edges[client])

    def is_attached(self, client: str, edge_server: str) -> bool:
        return edge_server in self._edges[client]

    def present_clients(self) -> list[str]:
        """The clients attached to some edge server now, in client order."""
        return [c for c in self.clients if self._edges[c]]

    def subscribe(self, listener: AssociationListener) -> None:
        """Call ``listener(client, edge_server, attached)`` after every association change."""
        self._listeners.append(listener)

    def attach(self, client: str, edge_server: str) -> None:
        """Make ``client`` a client of ``edge_server`` (in an exclusive world, leaving its
        current one first)."""
        if edge_server in self._edges[client]:
            return
        if self.exclusive:
            self.detach(client)
        if not self.graph.has_edge(client, edge_server):
            self.graph.add_edge(client, edge_server, link_class="access")
        self._edges[client][edge_server] = None
        self._members[edge_server][client] = None
        for listener in self._listeners:
            listener(client, edge_server, True)

    def detach(self, client: str, edge_server: str | None = None) -> None:
        """``client`` leaves ``edge_server``'s coverage (by default every edge server's);
        no-op where it is not attached."""
        for current in [edge_server] if edge_server is not None else self.edges_of(client):
            if current not in self._edges[client]:
                continue
            del self._edges[client][current]
            del self._members[current][client]
            for listener in self._listeners:
                listener(client, current, False)

    def replay_contacts(self, env, contacts: list[tuple[float, float, str, str]]):
        """SimPy process body: attach and detach clients as the contacts (start_s, end_s,
        client, edge_server) say; at equal times ends come before starts, so a hand-over
        leaves one edge server before joining the next."""
        events = sorted([(end, 0, k) for k, (_, end, _, _) in enumerate(contacts)]
                        + [(start, 1, k) for k, (start, _, _, _) in enumerate(contacts)])
        for time_s, starting, k in events:
            if time_s > env.now:
                yield env.timeout(time_s - env.now)
            _, _, client, edge_server = contacts[k]
            if starting:
                self.attach(client, edge_server)
            else:
                self.detach(client, edge_server)

    def edge_graph(self) -> nx.Graph:
        """The edge-server graph: edge servers and their backhaul links, as a new graph.

        Nodes and edges come in a fixed order (never a set's, which varies with hash seeds), so
        algorithms that walk it are reproducible across processes.
        """
        graph = nx.Graph()
        graph.add_nodes_from(self.edge_servers)
        graph.add_edges_from((u, v, data) for u, v, data in self.graph.edges(data=True)
                             if self.tier(u) == EDGE and self.tier(v) == EDGE)
        return graph

    def start(self, env, streams) -> None:
        """Start the world's own processes (mobility, orbits). A static world has none."""

    def summary(self, now_s: float) -> dict:
        """World-specific figures up to ``now_s`` for summary.json (none for a static
        world)."""
        return {}
