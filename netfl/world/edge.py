"""Static HFL topologies: clients attached to edge servers, edge servers joined by a graph
(star to the cloud, ring, random bounded-degree, or read from a file), and the cloud."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.scenario.sections import (
    EdgeWorld,
    EvenAssignment,
    FileAssignment,
    FileTopology,
    RandomTopology,
    RingTopology,
    SizedAssignment,
    StarTopology,
)
from netfl.sim.clock import parse_quantity
from netfl.sim.csvfile import csv_rows
from netfl.world.base import CLIENT, CLOUD, CLOUD_NAME, EDGE, World, client_name, edge_name


def build_edge_world(spec: EdgeWorld, rng: np.random.Generator) -> World:
    """Build the graph of an ``edge`` world; ``rng`` is the world stream (random topologies)."""
    n, m = spec.clients, spec.edge_servers
    clients = [client_name(i) for i in range(n)]
    servers = [edge_name(j) for j in range(m)]
    owner = assign_clients(spec.assignment, n, m)

    graph = nx.Graph()
    graph.add_nodes_from(clients, tier=CLIENT)
    graph.add_nodes_from(servers, tier=EDGE)
    for i, j in enumerate(owner):
        graph.add_edge(clients[i], servers[j], link_class="access")
    for u, v, attrs in edge_server_edges(spec.topology, m, rng):
        graph.add_edge(servers[u], servers[v], link_class="backhaul", **attrs)

    cloud = None
    if spec.cloud != "none":
        cloud = CLOUD_NAME
        graph.add_node(cloud, tier=CLOUD)
        attached = range(m) if spec.cloud == "all" else spec.cloud
        for j in attached:
            graph.add_edge(servers[j], cloud, link_class="core")

    if not nx.is_connected(graph):
        raise ScenarioError([ScenarioProblem(
            "world.topology", "the edge servers are not connected (to each other or through the "
            "cloud); add backhaul edges or core links", has_value=False)])
    return World(graph, clients, servers, cloud, {clients[i]: servers[j]
                                                  for i, j in enumerate(owner)})


def assign_clients(assignment, n: int, m: int) -> list[int]:
    """The edge server index of each of ``n`` clients."""
    if isinstance(assignment, EvenAssignment):
        sizes = [n // m + (1 if j < n % m else 0) for j in range(m)]
        return [j for j, size in enumerate(sizes) for _ in range(size)]
    if isinstance(assignment, SizedAssignment):
        return [j for j, size in enumerate(assignment.sizes) for _ in range(size)]
    if isinstance(assignment, FileAssignment):
        return _read_assignment(assignment.path, n, m)
    raise TypeError(f"unknown assignment {assignment!r}")


def _read_assignment(path: Path, n: int, m: int) -> list[int]:
    def fail(message: str, value: object = None, has_value: bool = False):
        raise ScenarioError([ScenarioProblem(
            "world.assignment.path", message, value, has_value, source=str(path))])

    owner: dict[int, int] = {}
    for row_number, row in csv_rows(path, {"client", "edge_server"}, fail):
        try:
            client, server = int(row["client"]), int(row["edge_server"])
        except (TypeError, ValueError):
            fail(f"row {row_number}: client and edge_server must be integers", row, True)
        if not (0 <= client < n and 0 <= server < m):
            fail(f"row {row_number}: client must be in 0..{n - 1} and edge_server in "
                 f"0..{m - 1}", row, True)
        if client in owner:
            fail(f"row {row_number}: client {client} is assigned twice", row, True)
        owner[client] = server
    missing = sorted(set(range(n)) - set(owner))
    if missing:
        fail(f"clients without an edge server: {missing[:10]}{' ...' if len(missing) > 10 else ''}")
    return [owner[i] for i in range(n)]


def edge_server_edges(topology, m: int, rng: np.random.Generator) -> list[tuple[int, int, dict]]:
    """The backhaul edges (u, v, attributes) among ``m`` edge servers."""
    if isinstance(topology, StarTopology):
        return []
    if isinstance(topology, RingTopology):
        if m < 2:
            return []
        pairs = {tuple(sorted((j, (j + 1) % m))) for j in range(m)}
        return [(u, v, {}) for u, v in sorted(pairs)]
    if isinstance(topology, RandomTopology):
        graph = random_bounded_degree_graph(m, topology.max_degree, topology.extra_edges, rng)
        return [(u, v, {}) for u, v in sorted(graph.edges)]
    if isinstance(topology, FileTopology):
        return _read_topology(topology.path, m)
    raise TypeError(f"unknown topology {topology!r}")


def random_bounded_degree_graph(
    m: int, max_degree: int, extra_edges: int, rng: np.random.Generator
) -> nx.Graph:
    """A connected graph on 0..m-1 with every degree <= ``max_degree``.

    A random spanning tree (each node, in random order, joins a random earlier node that still
    has room), then up to ``extra_edges`` random edges between nodes that still have room.
    """
    graph = nx.Graph()
    order = [int(v) for v in rng.permutation(m)]
    graph.add_node(order[0])
    room = [order[0]]  # the nodes joined so far with a degree below max_degree, in join order
    for k in range(1, m):
        target = room[int(rng.integers(len(room)))]
        graph.add_edge(order[k], target)
        if graph.degree(target) >= max_degree:
            room.remove(target)
        room.append(order[k])  # degree 1 < max_degree
    for _ in range(extra_edges):
        free = sorted(v for v in range(m) if graph.degree(v) < max_degree)
        # the pairs (u, v), u < v, of free nodes not joined yet, in lexicographic order: each
        # u's count is its free successors less its neighbours among them
        rank = {v: i for i, v in enumerate(free)}
        counts = [len(free) - 1 - rank[u] - sum(1 for w in graph[u] if w in rank and w > u)
                  for u in free]
        total = sum(counts)
        if total == 0:
            break
        pick = int(rng.integers(total))
        for u, count in zip(free, counts, strict=True):
            if pick < count:
                partners = [v for v in free[rank[u] + 1:] if not graph.has_edge(u, v)]
                graph.add_edge(u, partners[pick])
                break
            pick -= count
    return graph


def _read_topology(path: Path, m: int) -> list[tuple[int, int, dict]]:
    def fail(message: str):
        raise ScenarioError([ScenarioProblem(
            "world.topology.path", message, has_value=False, source=str(path))])

    try:
        if path.suffix.lower() == ".graphml":
            graph = nx.read_graphml(path)
        else:
            graph = nx.read_edgelist(path, data=False)
    except Exception as exc:  # networkx raises several parser errors; report them all the same
        fail(f"cannot read the graph: {exc}")
    edges = []
    for u, v, data in graph.edges(data=True):
        try:
            a, b = int(u), int(v)
        except ValueError:
            fail(f"node names must be edge-server indices 0..{m - 1}; found {u!r}, {v!r}")
        if not (0 <= a < m and 0 <= b < m) or a == b:
            fail(f"edge ({a}, {b}) must join two different indices in 0..{m - 1}")
        attrs = {}
        try:
            if "rate" in data:
                attrs["rate_bps"] = parse_quantity(data["rate"], "rate")
            if "delay" in data:
                attrs["delay_s"] = parse_quantity(data["delay"], "time")
        except ValueError as exc:
            fail(f"edge ({a}, {b}): {exc}")
        if attrs.get("rate_bps", 1.0) <= 0:
            fail(f"edge ({a}, {b}): rate must be positive, got {data['rate']!r}")
        if attrs.get("delay_s", 0.0) < 0:
            fail(f"edge ({a}, {b}): delay must not be negative, got {data['delay']!r}")
        edges.append((min(a, b), max(a, b), attrs))
    return sorted(edges, key=lambda e: (e[0], e[1]))
