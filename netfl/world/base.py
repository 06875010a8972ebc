"""The world: which nodes exist, which tier each is in, and which links join them.

Node names: clients ``c0..c{N-1}``, edge servers ``e0..e{M-1}``, the cloud ``cloud``. Every graph
edge carries ``link_class`` ("access", "backhaul" or "core") and may carry ``rate_bps`` and
``delay_s`` that override its class (for example from a topology file).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

CLIENT, EDGE, CLOUD = "client", "edge", "cloud"
TIERS = (CLIENT, EDGE, CLOUD)
LINK_CLASSES = ("access", "backhaul", "core")


def client_name(i: int) -> str:
    return f"c{i}"


def edge_name(j: int) -> str:
    return f"e{j}"


CLOUD_NAME = "cloud"


@dataclass
class World:
    """A static world (the time-varying IoV and LEO worlds extend it with processes).

    graph: undirected; node attribute ``tier``; edge attribute ``link_class``.
    client_edge: each client's edge server.
    """

    graph: nx.Graph
    clients: list[str]
    edge_servers: list[str]
    cloud: str | None
    client_edge: dict[str, str]
    _members: dict[str, list[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._members = {es: [] for es in self.edge_servers}
        for client in self.clients:
            self._members[self.client_edge[client]].append(client)

    def tier(self, node: str) -> str:
        return self.graph.nodes[node]["tier"]

    def clients_of(self, edge_server: str) -> list[str]:
        """The clients attached to ``edge_server``, in client order."""
        return self._members[edge_server]

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
