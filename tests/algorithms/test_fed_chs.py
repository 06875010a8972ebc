"""Fed-CHS: the next-ES rule, visit balance, eq. 5, schedules, hand-over failures, bits."""

import copy
import math
from pathlib import Path

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import netfl
from netfl import load_scenario
from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.fed_chs import rank_next
from netfl.algorithms.schedules import learning_rate
from netfl.scenario.algorithm_base import ConstantLr, InvPowerLr, InvSqrtLr
from netfl.sim.trace import HandOver
from netfl.simulation import Simulation

ORDER = {f"e{i}": i for i in range(10)}
FEDCHS = Path(__file__).parents[2] / "scenarios" / "fedchs"


def test_next_es_least_visited_first():
    visits = {"e1": 3, "e2": 1, "e3": 2}
    data = {"e1": 900, "e2": 10, "e3": 500}
    assert rank_next(["e1", "e2", "e3"], visits, data, ORDER) == ["e2", "e3", "e1"]


def test_next_es_ties_go_to_the_most_data_then_the_lower_index():
    visits = {"e1": 1, "e2": 1, "e3": 1, "e4": 0}
    data = {"e1": 100, "e2": 300, "e3": 300, "e4": 5}
    assert rank_next(["e1", "e2", "e3"], visits, data, ORDER) == ["e2", "e3", "e1"]
    assert rank_next(["e1", "e2", "e3", "e4"], visits, data, ORDER)[0] == "e4"


def test_the_rule_on_a_path():
    # m(0) = e0 is not counted (Algorithm 1 counts arrivals only), so from e1 both neighbours
    # have c = 0 and the tie goes to e0 (equal data, lower index).
    graph = nx.path_graph(["e0", "e1", "e2", "e3"])
    visits, data = dict.fromkeys(graph, 0), dict.fromkeys(graph, 1.0)
    here, seen = "e0", []
    for _ in range(7):
        here = rank_next(list(graph.neighbors(here)), visits, data, ORDER)[0]
        visits[here] += 1
        seen.append(here)
    assert seen == ["e1", "e0", "e1", "e2", "e3", "e2", "e3"]


@pytest.mark.parametrize("seed", range(5))
def test_visits_are_more_balanced_than_a_random_walk(seed):
    import numpy as np

    from netfl.world.edge import random_bounded_degree_graph

    graph = nx.relabel_nodes(random_bounded_degree_graph(10, 3, 2, np.random.default_rng(seed)),
                             lambda i: f"e{i}")
    rng = np.random.default_rng(seed)
    visits, walk = dict.fromkeys(graph, 0), dict.fromkeys(graph, 0)
    here = there = "e0"
    for _ in range(2000):
        here = rank_next(list(graph.neighbors(here)), visits, dict.fromkeys(graph, 1.0), ORDER)[0]
        visits[here] += 1
        options = list(graph.neighbors(there))
        there = options[int(rng.integers(len(options)))]
        walk[there] += 1
    ratio = max(visits.values()) / min(visits.values())
    assert ratio < 2.5 and ratio < max(walk.values()) / min(walk.values())


def tiny_fed_chs(tiny, **algorithm):
    tiny["world"] = {"kind": "edge", "clients": 20, "edge_servers": 8,
                     "topology": {"kind": "random", "max_degree": 3, "extra_edges": 2},
                     "cloud": "none"}
    tiny["algorithm"] = {"kind": "fed-chs", "rounds": 80, "interactions": 2,
                         "batch_size": 16, **algorithm}
    return tiny


def test_visits_stay_balanced_on_a_connected_graph(tiny):
    result = netfl.run(tiny_fed_chs(tiny), overrides=["output.trace=true"], write=False)
    events = result.events
    arrivals = events.loc[(events["kind"] == "hand_over") & (events["ok"] == True), "dst"]  # noqa: E712
    counts = arrivals.value_counts()
    assert len(counts) == 8  # every edge server visited
    assert counts.max() <= 2 * counts.min()
    assert result.summary["handovers"] == 80
    assert result.summary["bytes_by_tag"]["edge->edge"] == 80 * 4 * 25000  # one hop each


def test_fed_chs_needs_an_edge_server_graph(tiny):
    tiny_fed_chs(tiny)["world"]["topology"] = {"kind": "star"}
    tiny["world"]["cloud"] = "all"
    with pytest.raises(netfl.ScenarioError, match="neighbouring edge servers"):
        load_scenario(tiny)


def test_interactions_must_be_a_multiple_of_local_steps(tiny):
    with pytest.raises(netfl.ScenarioError, match="multiple of local_steps"):
        load_scenario(tiny_fed_chs(tiny, interactions=20, local_steps=3))


def test_schedules():
    assert learning_rate(ConstantLr(), 5, 20, 0.3) == 0.3
    assert learning_rate(InvSqrtLr(kind="inv-sqrt"), 3, 20, 0.3) == pytest.approx(1 / (20 * 2))
    assert learning_rate(InvPowerLr(kind="inv-power", L=2.0, q=2.0), 0, 10, 0.3) == 1 / 200


def real_fed_chs(tiny, **algorithm):
    scenario = tiny_fed_chs(tiny, **algorithm)
    scenario["model"] = {"kind": "mlp", "hidden": [16]}
    return scenario


@pytest.mark.parametrize("schedule", [{"kind": "constant"}, {"kind": "inv-sqrt", "scale": 4}])
def test_one_cluster_round_follows_equation_5(tiny, schedule):
    scenario = load_scenario(real_fed_chs(tiny, interactions=3, lr=0.2, schedule=schedule))
    sim, twin = Simulation(scenario), Simulation(copy.deepcopy(scenario))
    w0 = sim.trainer.init_params()
    process = sim.env.process(sim.algorithm.train_cluster("e0", w0, 1))
    sim.env.run(process)
    clients = twin.algorithm.indices(twin.world.clients_of("e0"))
    gamma = data_weights(twin.trainer.client_sizes[clients])
    w = w0.clone()
    for k in range(3):
        grads = twin.trainer.gradients(w, clients, 16)
        eta = learning_rate(scenario.algorithm.schedule, k, 3, 0.2)
        w = w - eta * sum(g_n * g for g_n, g in zip(gamma, grads, strict=True))
    torch.testing.assert_close(process.value, w, rtol=1e-5, atol=1e-6)


def test_the_e_variant_exchanges_k_over_e_times(tiny):
    result = netfl.run(real_fed_chs(tiny, rounds=2, interactions=6, local_steps=3),
                       overrides=["output.trace=true"], write=False)
    events = result.events
    edge_aggs = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert len(edge_aggs) == 2 * 2  # K / E = 2 exchanges per round, 2 rounds


def test_a_failed_hand_over_falls_back_then_stays(tiny):
    scenario = tiny_fed_chs(tiny, rounds=3, handover={"attempts": 2, "fallback": True})
    scenario["links"]["backhaul"] = {"rate": "1 Gbps", "availability": {
        "kind": "schedule", "down": [["0 s", "1000 s"]]}}
    result = netfl.run(scenario, overrides=["output.trace=true"], write=False)
    s = result.summary
    assert s["handovers"] == 0 and s["rounds"] == 3
    events = result.events
    attempts = events[events["kind"] == "hand_over"]
    # every neighbour tried twice each round, all failed: the model stayed put
    assert (attempts["ok"] == False).all() and len(attempts) == s["handovers_failed"]  # noqa: E712
    assert attempts["src"].nunique() == 1
    first_round = attempts[attempts["round"] == 1]
    assert first_round["dst"].value_counts().eq(2).all()


def test_fed_chs_reaches_the_target_with_fewer_bits_than_fedavg(tiny):
    def bits(algorithm):
        scenario = copy.deepcopy(tiny)
        scenario["world"] = {"kind": "edge", "clients": 20, "edge_servers": 4,
                             "topology": {"kind": "ring"}}
        scenario["model"] = {"kind": "mlp", "hidden": [32]}
        scenario["data"]["partition"] = {"kind": "dirichlet", "alpha": 0.6}
        scenario["algorithm"] = {"lr": 0.3, "batch_size": 16, **algorithm}
        scenario["stop"] = {"target_accuracy": 0.85}
        s = netfl.run(scenario, write=False).summary
        assert s["time_to_target_s"] is not None, algorithm
        return s["bytes_to_target"], s["bytes_hop_weighted_to_target"]

    fed_chs = bits({"kind": "fed-chs", "rounds": 100, "interactions": 10})
    fedavg = bits({"kind": "fedavg", "rounds": 500, "local_steps": 1})
    assert fed_chs[0] < fedavg[0] and fed_chs[1] < fedavg[1]
    assert fedavg[1] == 2 * fedavg[0]  # client - edge - cloud: two hops


def test_compressed_uploads_are_counted_both_ways(tiny):
    tiny["algorithm"] = {"kind": "hier-local-qsgd", "rounds": 1, "local_steps": 1,
                         "edge_rounds": 2, "compression": {"kind": "qsgd", "levels": 16,
                                                           "bucket_size": 512}}
    s = netfl.run(tiny, write=False).summary
    params = 25000
    qsgd = (32 * math.ceil(params / 512) + params * 6) / 8
    assert s["bytes_by_tag"]["client->edge"] == 2 * 6 * qsgd
    assert s["bytes_by_tag"]["edge->cloud"] == 2 * qsgd
    assert s["bytes_by_tag"]["edge->client"] == 2 * 6 * 4 * params  # downloads stay float32
    assert s["bytes_uncompressed_by_tag"]["client->edge"] == 2 * 6 * 4 * params


# --------------------------------------------------- the next-ES rule in full runs


def paper_rule(candidates, visits, data):
    """Algorithm 1's two steps, written from the paper's text (not from rank_next): the
    candidates the rule allows and the step that decided: 1 (one least-visited candidate), 2
    (several least visited, one with the most data D_A) or 3 (still tied; the paper leaves it
    open)."""
    least = min(visits[m] for m in candidates)
    tied = [m for m in candidates if visits[m] == least]  # step 1: C(t)
    if len(tied) == 1:
        return tied, 1
    most = max(data[m] for m in tied)
    best = [m for m in tied if data[m] == most]  # step 2: argmax D_A over C(t)
    return best, 2 if len(best) == 1 else 3


@settings(deadline=None)  # pure, fast; no wall-clock deadline on a loaded CI machine
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), min_size=1, max_size=6))
def test_rank_next_puts_first_what_the_two_step_rule_chooses(stats):
    # few distinct visit counts and data sizes: ties at both steps are common
    names = [f"e{i}" for i in range(len(stats))]
    visits = {m: c for m, (c, _) in zip(names, stats, strict=True)}
    data = {m: float(d) for m, (_, d) in zip(names, stats, strict=True)}
    ranked = rank_next(names, visits, data, ORDER)
    allowed, step = paper_rule(names, visits, data)
    assert ranked[0] == (allowed[0] if step < 3 else min(allowed, key=ORDER.get))
    assert sorted(ranked) == sorted(names)


def replay_hand_overs(scenario, overrides=()):
    """Run ``scenario``, then replay its hand-over trace against the rule: every hand-over must
    go where the rule sends it. Returns the deciding step of each hand-over."""
    sim = Simulation(load_scenario(scenario, overrides))
    moves = []
    sim.trace.subscribe(moves.append, HandOver)
    sim.run()
    world, sizes = sim.world, sim.partition.sizes
    index = {c: i for i, c in enumerate(world.clients)}
    data = {m: int(sizes[[index[c] for c in world.clients_of(m)]].sum())
            for m in world.edge_servers}  # D_A,m from the partition itself
    graph = world.edge_graph()
    order = {m: i for i, m in enumerate(world.edge_servers)}
    visits = dict.fromkeys(world.edge_servers, 0)
    assert len(moves) == sim.algorithm.rounds_done > 0 and all(move.ok for move in moves)
    steps, here = [], moves[0].src
    for move in moves:
        assert move.src == here
        candidates = list(graph.neighbors(here))
        allowed, step = paper_rule(candidates, visits, data)
        assert move.dst in allowed, (move, visits, data)
        assert move.dst == rank_next(candidates, visits, data, order)[0]
        steps.append(step)
        visits[move.dst] += 1
        here = move.dst
    return steps


def test_every_hand_over_follows_the_rule_and_step_2_decides(tiny):
    scenario = tiny_fed_chs(tiny, rounds=30)
    scenario["world"] = {"kind": "edge", "clients": 20, "edge_servers": 5,
                         "topology": {"kind": "ring"}, "cloud": "none"}
    scenario["data"]["partition"] = {"kind": "dirichlet", "alpha": 0.6, "sizes": {
        "kind": "normal", "mean": 50, "std": 20, "min": 10, "max": 100}}
    steps = replay_hand_overs(scenario)
    assert 2 in steps  # on a ring both neighbours are often least visited: D_A decides
    assert 3 not in steps  # unequal sizes: no tie is left for the lower-index fallback


def test_the_shipped_fed_chs_scenario_exercises_step_2(tmp_path):
    # with equal client sizes every ES holds the same D_A and step 2 never decides; the fake
    # model reads labels only, so Fashion-MNIST's (6,000 a class, shuffled) stand in for it
    import numpy as np

    labels = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 6000))
    test = np.repeat(np.arange(10), 100)
    np.savez(tmp_path / "labels.npz", x_train=np.zeros((len(labels), 1)), y_train=labels,
             x_test=np.zeros((len(test), 1)), y_test=test)
    steps = replay_hand_overs(FEDCHS / "short-fed-chs.yaml",
                              ["model={kind: fake}", "stop.target_accuracy=null",
                               "algorithm.rounds=40", "data.dataset=arrays",
                               f"data.path={tmp_path / 'labels.npz'}"])
    assert 2 in steps and 3 not in steps


def test_every_fed_chs_scenario_sees_the_same_world_and_data():
    files = sorted(FEDCHS.glob("*.yaml"))
    scenarios = [load_scenario(f) for f in files]
    for f, s in zip(files, scenarios, strict=True):
        for section in ("world", "links", "devices", "data", "model"):
            assert getattr(s, section) == getattr(scenarios[0], section), (f.name, section)
    assert scenarios[0].data.partition.sizes.kind != "equal"
