import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.errors import ScenarioError
from netfl.scenario.sections import EdgeWorld
from netfl.world.edge import build_edge_world, random_bounded_degree_graph


def world(**spec):
    return build_edge_world(EdgeWorld(kind="edge", **spec), np.random.default_rng(0))


def test_even_assignment_in_blocks():
    w = world(clients=7, edge_servers=3)
    assert [len(w.clients_of(e)) for e in w.edge_servers] == [3, 2, 2]
    assert w.clients_of("e0") == ["c0", "c1", "c2"]
    assert w.tier("c0") == "client" and w.tier("e1") == "edge" and w.tier("cloud") == "cloud"


def test_sized_assignment():
    w = world(clients=6, edge_servers=2, assignment={"kind": "by-size", "sizes": [1, 5]})
    assert w.clients_of("e0") == ["c0"] and len(w.clients_of("e1")) == 5


def test_file_assignment(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("client,edge_server\n0,1\n1,0\n2,1\n")
    w = world(clients=3, edge_servers=2, assignment={"kind": "file", "path": path})
    assert w.client_edge == {"c0": "e1", "c1": "e0", "c2": "e1"}


@pytest.mark.parametrize("attribute, value", [("delay", float("nan")), ("rate", float("inf")),
                                              ("rate", "1e400 Gbps")])
def test_a_graphml_edge_with_a_nonfinite_number_is_named(tmp_path, attribute, value):
    """A NaN delay in a GraphML file simulated rounds at time NaN."""
    g = nx.Graph()
    g.add_edge("0", "1", **{attribute: value})
    path = tmp_path / "g.graphml"
    nx.write_graphml(g, path)
    with pytest.raises(ScenarioError, match="edge \\(0, 1\\): not a finite"):
        world(clients=2, edge_servers=2, topology={"kind": "file", "path": path})


@pytest.mark.parametrize(("text", "fragment"), [
    ("who,where\n0,1\n", "header"),
    ("client,edge_server\n0,x\n", "must be integers"),
    ("client,edge_server\n0,5\n", "edge_server in 0..1"),
    ("client,edge_server\n0,1\n0,0\n", "assigned twice"),
    ("client,edge_server\n0,1\n", "clients without an edge server: [1, 2]"),
    (b"client,edge_server\n0,1\n1,\xe9\n", "not UTF-8"),
    (bytes(range(256)), "not UTF-8"),
])
def test_file_assignment_errors_name_the_file(tmp_path, text, fragment):
    path = tmp_path / "a.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ScenarioError) as info:
        world(clients=3, edge_servers=2, assignment={"kind": "file", "path": path})
    p = info.value.problems[0]
    assert p.source == str(path) and p.path == "world.assignment.path" and fragment in p.message


def test_star_has_no_backhaul_and_every_edge_reaches_the_cloud():
    w = world(clients=4, edge_servers=4)
    assert w.edge_graph().number_of_edges() == 0
    assert all(w.graph.has_edge(e, "cloud") for e in w.edge_servers)


def test_ring():
    w = world(clients=5, edge_servers=5, topology={"kind": "ring"})
    g = w.edge_graph()
    assert g.number_of_edges() == 5 and all(d == 2 for _, d in g.degree())


def test_cloud_attached_to_some_edges():
    w = world(clients=3, edge_servers=3, topology={"kind": "ring"}, cloud=[1])
    assert list(w.graph.neighbors("cloud")) == ["e1"]


def test_no_cloud():
    w = world(clients=3, edge_servers=3, topology={"kind": "ring"}, cloud="none")
    assert w.cloud is None and "cloud" not in w.graph


def test_disconnected_edges_are_an_error(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n")  # e2 is left out and the cloud reaches only e0
    with pytest.raises(ScenarioError, match="not connected"):
        world(clients=3, edge_servers=3, topology={"kind": "file", "path": path}, cloud=[0])


@given(m=st.integers(1, 40), d=st.integers(2, 5), extra=st.integers(0, 30), seed=st.integers(0, 99))
@settings(max_examples=60, deadline=None)
def test_random_graph_is_connected_with_bounded_degree(m, d, extra, seed):
    g = random_bounded_degree_graph(m, d, extra, np.random.default_rng(seed))
    assert g.number_of_nodes() == m and nx.is_connected(g)
    assert max(dict(g.degree()).values(), default=0) <= d
    assert g.number_of_edges() <= (m - 1) + extra


def test_topology_from_edge_list_and_graphml(tmp_path):
    edges = tmp_path / "g.txt"
    edges.write_text("0 1\n1 2\n")
    w = world(clients=3, edge_servers=3, topology={"kind": "file", "path": edges}, cloud=[0])
    assert list(w.edge_graph().edges) == [("e0", "e1"), ("e1", "e2")]

    g = nx.Graph()
    g.add_edge("0", "2", rate="2 Gbps", delay="3 ms")
    nx.write_graphml(g, tmp_path / "g.graphml")
    w = world(clients=3, edge_servers=3, topology={"kind": "file", "path": tmp_path / "g.graphml"})
    data = w.graph.edges["e0", "e2"]
    assert data["rate_bps"] == 2e9 and data["delay_s"] == pytest.approx(0.003)


@pytest.mark.parametrize(("text", "fragment"), [
    ("0 7\n", "0..2"), ("a b\n", "indices"), ("0 0\n", "two different"),
])
def test_topology_file_errors(tmp_path, text, fragment):
    path = tmp_path / "g.txt"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        world(clients=3, edge_servers=3, topology={"kind": "file", "path": path})
    assert fragment in info.value.problems[0].message
    assert info.value.problems[0].source == str(path)


@pytest.mark.parametrize(("attrs", "fragment"), [
    ({"rate": "0 Mbps"}, "rate must be positive"), ({"rate": "-5 Mbps"}, "rate must be positive"),
    ({"delay": "-5 ms"}, "delay must not be negative"), ({"rate": "fast"}, "expected a number"),
])
def test_topology_file_link_attributes_are_checked(tmp_path, attrs, fragment):
    g = nx.Graph()
    g.add_edge("0", "1", **attrs)
    nx.write_graphml(g, tmp_path / "g.graphml")
    with pytest.raises(ScenarioError) as info:
        world(clients=2, edge_servers=2, topology={"kind": "file", "path": tmp_path / "g.graphml"})
    assert fragment in info.value.problems[0].message


def reference_random_graph(m, max_degree, extra_edges, rng):
    """The graph's definition written the direct way (O(M^2) per edge; the module's version
    builds 20,000 edge servers in a fraction of a second and must draw the same graph)."""
    graph = nx.Graph()
    order = [int(v) for v in rng.permutation(m)]
    graph.add_node(order[0])
    for k in range(1, m):
        room = [v for v in order[:k] if graph.degree(v) < max_degree]
        graph.add_edge(order[k], room[int(rng.integers(len(room)))])
    for _ in range(extra_edges):
        candidates = [(u, v) for u in range(m) for v in range(u + 1, m)
                      if not graph.has_edge(u, v)
                      and graph.degree(u) < max_degree and graph.degree(v) < max_degree]
        if not candidates:
            break
        graph.add_edge(*candidates[int(rng.integers(len(candidates)))])
    return graph


@given(m=st.integers(1, 60), d=st.integers(2, 6), extra=st.integers(0, 60),
       seed=st.integers(0, 999))
@settings(max_examples=80, deadline=None)
def test_the_random_graph_is_the_one_its_definition_draws(m, d, extra, seed):
    fast = random_bounded_degree_graph(m, d, extra, np.random.default_rng(seed))
    slow = reference_random_graph(m, d, extra, np.random.default_rng(seed))
    assert sorted(map(sorted, fast.edges())) == sorted(map(sorted, slow.edges()))
