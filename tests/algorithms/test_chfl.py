"""CHFL and its family: orders, partial participation, and the special cases."""

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import netfl
from netfl.algorithms.chfl import visiting_order

EDGES = [f"e{i}" for i in range(6)]


def test_ring_order_is_fixed_and_permutations_vary():
    rng = np.random.default_rng(0)
    assert visiting_order(EDGES, None, "ring", rng) == EDGES
    assert visiting_order(EDGES, 3, "ring", rng) == EDGES[:3]
    orders = [visiting_order(EDGES, None, "permutation", rng) for _ in range(20)]
    assert all(sorted(o) == EDGES for o in orders)
    assert len({tuple(o) for o in orders}) > 10


@settings(deadline=None)  # pure, fast; no wall-clock deadline on a loaded CI machine
@given(m=st.integers(1, 40), s=st.integers(1, 40), rounds=st.integers(1, 30))
def test_a_partial_ring_rotates_so_every_edge_takes_its_turn(m, s, rounds):
    edges = [f"e{i}" for i in range(m)]
    rng = np.random.default_rng(0)
    size = min(s, m)
    queues = [visiting_order(edges, s, "ring", rng, r) for r in range(rounds)]
    assert all(len(q) == size for q in queues)
    walked = [e for q in queues for e in q]
    assert walked == [edges[i % m] for i in range(size * rounds)]  # each round goes on from
    # where the previous one stopped; so every edge trains once in each m consecutive turns


def test_ring_turns_in_a_round_of_two_of_six():
    rng = np.random.default_rng(0)
    turns = [visiting_order(EDGES, 2, "ring", rng, r) for r in range(4)]
    assert turns == [["e0", "e1"], ["e2", "e3"], ["e4", "e5"], ["e0", "e1"]]


def test_partial_edges_are_sampled_without_replacement():
    rng = np.random.default_rng(1)
    picks = [visiting_order(EDGES, 2, "permutation", rng) for _ in range(3000)]
    assert all(len(set(p)) == 2 for p in picks)
    counts = np.unique(np.concatenate(picks), return_counts=True)[1]
    assert counts.min() > 0.9 * 1000 and counts.max() < 1.1 * 1000  # each edge 2/6 of rounds


def chfl(tiny, **algorithm):
    tiny["world"] = {"kind": "edge", "clients": 12, "edge_servers": 4,
                     "topology": {"kind": "ring"}, "cloud": "none"}
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["algorithm"] = {"kind": "chfl", "rounds": 3, "lr": 0.1, "batch_size": 16, **algorithm}
    return tiny


def events_of(scenario):
    return netfl.run(scenario, overrides=["output.trace=true"], write=False).events


def test_partial_participation_counts(tiny):
    events = events_of(chfl(tiny, edges_per_round=2, clients_per_round=2, edge_rounds=3))
    trained = events[events["kind"] == "train_start"]
    assert trained.groupby("round").size().tolist() == [2 * 3 * 2] * 3  # S x R x P per round
    aggregates = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert aggregates.groupby("round")["node"].nunique().tolist() == [2, 2, 2]
    assert (trained["steps"] == 2).all()  # K


def test_the_model_travels_the_ring_in_order(tiny):
    events = events_of(chfl(tiny, order="ring", edge_rounds=1))
    moves = events[events["kind"] == "hand_over"]
    hops = list(zip(moves["src"], moves["dst"], strict=True))
    assert hops[:4] == [("e0", "e1"), ("e1", "e2"), ("e2", "e3"), ("e3", "e0")]
    assert moves["ok"].all()


def test_a_partial_ring_gives_every_edge_its_turn(tiny):
    events = events_of(chfl(tiny, order="ring", edges_per_round=2, edge_rounds=1, rounds=4))
    aggregates = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    trained = aggregates.groupby("round")["node"].apply(list).tolist()
    assert trained == [["e0", "e1"], ["e2", "e3"], ["e0", "e1"], ["e2", "e3"]]
    moves = events[events["kind"] == "hand_over"]
    assert list(zip(moves["src"], moves["dst"], strict=True))[:3] == [
        ("e0", "e1"), ("e1", "e2"), ("e2", "e3")]  # the model walks on around the ring


def test_cfl_with_partial_participation_visits_every_group(tiny):
    events = events_of(chfl(tiny, kind="cfl", edges_per_round=1, rounds=8))
    aggregates = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert aggregates["node"].tolist() == ["e0", "e1", "e2", "e3"] * 2


def test_sfl_ring_with_partial_participation_rotates_over_the_clients(tiny):
    scenario = chfl(tiny, kind="sfl", order="ring", clients_per_round=5, rounds=5)
    events = events_of(scenario)
    trained = events[events["kind"] == "train_start"]
    order = trained["node"].tolist()
    clients = [f"c{i}" for i in range(12)]
    assert order == [clients[i % 12] for i in range(25)]


def test_hops_between_non_adjacent_edges_are_routed(tiny):
    scenario = chfl(tiny, order="ring", edge_rounds=1)
    scenario["world"].update(topology={"kind": "star"}, cloud="all")  # edges meet at the cloud
    s = netfl.run(scenario, write=False).summary
    assert s["bytes_by_tag"]["edge->edge"] > 0
    assert s["bytes_by_link"]["cloud-e0"] > 0  # e3 -> e0 and e0 -> e1 went through the cloud


def metrics(scenario):
    m = netfl.run(scenario, write=False).metrics
    return m[["round", "accuracy", "loss"]].to_numpy()


def test_chfl_with_one_edge_round_on_a_ring_is_cfl(tiny):
    a = metrics(chfl(copy.deepcopy(tiny), edge_rounds=1, order="ring"))
    b = metrics(chfl(copy.deepcopy(tiny), kind="cfl"))
    np.testing.assert_array_equal(a, b)


def test_chfl_with_one_client_per_edge_and_one_edge_round_is_sfl(tiny):
    scenario = chfl(tiny, edge_rounds=1)
    scenario["world"] = {"kind": "edge", "clients": 6, "edge_servers": 6,
                         "topology": {"kind": "ring"}, "cloud": "none"}
    sfl = copy.deepcopy(scenario)
    sfl["algorithm"] = {k: v for k, v in sfl["algorithm"].items() if k != "edge_rounds"}
    sfl["algorithm"]["kind"] = "sfl"
    np.testing.assert_array_equal(metrics(scenario), metrics(sfl))


def test_cfl_refuses_other_edge_rounds(tiny):
    with pytest.raises(netfl.ScenarioError, match="edge_rounds"):
        netfl.load_scenario(chfl(tiny, kind="cfl", edge_rounds=2))


def test_the_local_step_budget_stops_every_algorithm_alike(tiny):
    for kind in ("chfl", "sfl", "fedavg", "hier-fedavg"):
        scenario = chfl(copy.deepcopy(tiny), kind=kind, rounds=1000)
        scenario["world"]["cloud"] = "all"
        if kind in ("sfl", "fedavg", "hier-fedavg"):
            scenario["algorithm"].pop("edge_rounds", None)
        scenario["stop"] = {"max_local_steps": 240}
        s = netfl.run(scenario, write=False).summary
        assert s["stop_reason"] == "max_local_steps", kind
        assert 240 <= s["local_steps"] < 240 + 12 * 2 * 2 * 4, kind  # at most one round over


def clients_per_round(scenario) -> int:
    """Clients that train in one (edge) round of a CHFL-comparison scenario: S x P, or P alone
    for the flat algorithms (null: all)."""
    algorithm, world = scenario.algorithm, scenario.world
    if algorithm.kind in ("chfl", "cfl", "hier-fedavg"):
        edges = algorithm.edges_per_round or world.edge_servers
        return edges * (algorithm.clients_per_round or world.clients // world.edge_servers)
    return algorithm.clients_per_round or world.clients


@pytest.mark.parametrize("prefix", ["paper", "short"])
def test_the_chfl_comparison_trains_the_same_clients_per_round_everywhere(prefix):
    # App. B.1: S edges and P clients for every algorithm; FL and SFL "the same number of
    # clients from the entire clients pool"; all under one local-step budget
    from pathlib import Path
    files = sorted(Path("scenarios/chfl").glob(f"{prefix}-*.yaml"))
    scenarios = {f.stem: netfl.load_scenario(f) for f in files}
    assert len(scenarios) == 5
    assert {name: clients_per_round(s) for name, s in scenarios.items()} == dict.fromkeys(
        scenarios, 20)
    assert len({s.algorithm.local_steps for s in scenarios.values()}) == 1
    assert len({s.stop.max_local_steps for s in scenarios.values()}) == 1
    first = next(iter(scenarios.values()))
    assert all(s.data == first.data and s.world == first.world for s in scenarios.values())
