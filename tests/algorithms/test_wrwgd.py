"""WRWGD: the Metropolis-Hastings walk and the algorithm on the network."""

import copy
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch

import netfl
from netfl import load_scenario
from netfl.algorithms.wrwgd import metropolis_hastings
from netfl.simulation import Simulation


@pytest.mark.parametrize("seed", range(3))
def test_the_walk_has_the_requested_stationary_distribution(seed):
    rng = np.random.default_rng(seed)
    graph = nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=seed)
    weights = {i: float(w) for i, w in enumerate(rng.uniform(0.5, 5.0, 12))}
    moves = metropolis_hastings(graph, weights)
    P = np.zeros((12, 12))
    for i, (candidates, probs) in moves.items():
        assert probs.min() >= 0 and probs.sum() == pytest.approx(1.0)
        for j, p in zip(candidates, probs, strict=True):
            P[i, j] += p
    pi = np.array([weights[i] for i in range(12)])
    pi /= pi.sum()
    np.testing.assert_allclose(pi @ P, pi, atol=1e-12)
    # detailed balance, the Metropolis-Hastings property
    np.testing.assert_allclose(pi[:, None] * P, (pi[:, None] * P).T, atol=1e-12)


def test_uniform_weights_on_a_regular_graph_never_reject():
    graph = nx.cycle_graph(5)
    moves = metropolis_hastings(graph, dict.fromkeys(graph, 1.0))
    assert all(probs[-1] == pytest.approx(0.0) for _, probs in moves.values())


@pytest.mark.parametrize("weighting", ["lipschitz", "uniform"])
def test_wrwgd_walks_clients_over_the_network(tiny, weighting):
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["algorithm"] = {"kind": "wrwgd", "rounds": 60, "local_steps": 5, "lr": 0.1,
                         "weighting": weighting, "eval_every": 20}
    result = netfl.run(tiny, overrides=["output.trace=true"], write=False)
    s, events = result.summary, result.events
    assert s["rounds"] == 60 and s["final_accuracy"] > 0.3
    moves = events[events["kind"] == "hand_over"]
    assert s["handovers"] == len(moves) > 10
    assert set(s["bytes_by_tag"]) == {"client->client"}
    assert s["bytes_hop_weighted"] >= 2 * s["bytes_total"]  # client - edge (- edge) - client
    trained = events[events["kind"] == "train_start"]
    assert len(trained) == 60 and trained["node"].nunique() > 3


@pytest.mark.parametrize("schedule", [{"kind": "constant"}, {"kind": "inv-sqrt", "scale": 4}])
def test_a_visit_takes_k_steps_at_the_schedules_rates(tiny, schedule):
    # Fed-CHS B.1: WRWGD's K = 20 local iterations per visit at 1/(K sqrt(k+1)), k = 0..K-1
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["algorithm"] = {"kind": "wrwgd", "rounds": 1, "local_steps": 3, "lr": 0.2,
                         "batch_size": 16, "schedule": schedule}
    scenario = load_scenario(tiny)
    sim, twin = Simulation(scenario), Simulation(copy.deepcopy(scenario))
    client = sim.world.clients[2]
    w0 = sim.trainer.init_params()
    process = sim.env.process(sim.algorithm.train_here(client, w0, 1, 0.5))
    sim.env.run(process)
    w = w0.clone()
    for k in range(3):
        eta = 0.2 if schedule["kind"] == "constant" else 4 / (3 * math.sqrt(k + 1))
        w = w - 0.5 * eta * twin.trainer.gradients(w, [2], 16)[0]
    torch.testing.assert_close(process.value, w, rtol=1e-5, atol=1e-6)


def test_a_schedule_period_gives_each_visit_one_rate_counted_over_visits(tiny):
    # Fed-CHS B.1 read with one local iteration per visit: visit t at 1/(K sqrt(k+1)) with
    # k = (t - 1) mod K, K = schedule_period, as FedAvg's rounds (not K = local_steps = 1)
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["algorithm"] = {"kind": "wrwgd", "rounds": 1, "local_steps": 2, "batch_size": 16,
                         "schedule": {"kind": "inv-sqrt"}, "schedule_period": 20}
    scenario = load_scenario(tiny)
    for t in (1, 4, 21):
        sim, twin = Simulation(scenario), Simulation(copy.deepcopy(scenario))
        w0 = sim.trainer.init_params()
        process = sim.env.process(sim.algorithm.train_here(sim.world.clients[2], w0, t, 0.5))
        sim.env.run(process)
        eta = 1 / (20 * math.sqrt((t - 1) % 20 + 1))
        w = w0.clone()
        for _step in range(2):
            w = w - 0.5 * eta * twin.trainer.gradients(w, [2], 16)[0]
        torch.testing.assert_close(process.value, w, rtol=1e-5, atol=1e-6)


def test_the_paper_scenario_runs_wrwgd_with_fed_chs_schedule():
    fedchs = Path(__file__).parents[2] / "scenarios" / "fedchs"
    fed_chs = load_scenario(fedchs / "paper-fed-chs.yaml").algorithm
    wrwgd = load_scenario(fedchs / "paper-wrwgd.yaml").algorithm
    assert wrwgd.schedule == fed_chs.schedule and wrwgd.schedule.kind == "inv-sqrt"
    assert wrwgd.local_steps == fed_chs.interactions == 20  # K: local iterations per visit


def test_step_by_step_rates_carry_momentum_like_one_call(tiny):
    # inv-power's eta_k = 1/(L K^q) is the same at every k: the step-by-step path must then
    # give what one K-step call at that constant rate gives, momentum buffer included
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    visits = []
    for schedule, lr in [({"kind": "inv-power", "L": 2.0, "q": 1.0}, 0.2),
                         ({"kind": "constant"}, 1 / (2.0 * 4))]:
        tiny["algorithm"] = {"kind": "wrwgd", "rounds": 1, "local_steps": 4, "lr": lr,
                             "momentum": 0.9, "batch_size": 16, "schedule": schedule}
        sim = Simulation(load_scenario(tiny))
        process = sim.env.process(sim.algorithm.train_here(sim.world.clients[1],
                                                           sim.trainer.init_params(), 1, 0.7))
        sim.env.run(process)
        visits.append(process.value)
    torch.testing.assert_close(visits[0], visits[1], rtol=1e-5, atol=1e-6)
