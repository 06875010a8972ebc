"""WRWGD: the Metropolis-Hastings walk and the algorithm on the network."""

import networkx as nx
import numpy as np
import pytest

import netfl
from netfl.algorithms.wrwgd import metropolis_hastings


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
