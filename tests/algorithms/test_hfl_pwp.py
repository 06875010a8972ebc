"""HFL-PWP, HierMo and MLL-SGD: update equations, sampling, periods, special cases."""

import copy

import numpy as np
import pytest
import torch

import netfl
from netfl import load_scenario
from netfl.algorithms.hfl_pwp import sample_workers
from netfl.algorithms.mll_sgd import hub_graph, metropolis_weights
from netfl.simulation import Simulation


class Quadratic:
    """A stand-in trainer: worker j's loss is 0.5 ||x - c_j||^2, trained by exact (heavy-ball)
    gradient descent, so every update has a closed form."""

    def __init__(self, centres: np.ndarray, base):
        self.centres = torch.as_tensor(centres, dtype=torch.float64)
        self.num_params = self.centres.shape[1]
        self.payload_bytes, self.flops_per_sample = 8.0 * self.num_params, 1.0
        self.client_sizes = base.client_sizes

    def samples_per_step(self, client, batch_size):
        return 1

    def init_params(self):
        return torch.zeros(self.num_params, dtype=torch.float64)

    def evaluate(self, params):
        return 0.0, float((params - self.centres.mean(0)).norm())

    def local_train(self, params, clients, steps, lr, batch_size, momentum=0.0,
                    initial_buffers=None, return_buffers=False, **_):
        thetas, buffers = [], []
        for k, client in enumerate(clients):
            x = params.clone()
            v = torch.zeros_like(x) if initial_buffers is None else initial_buffers[k].clone()
            for _ in range(steps):
                v = momentum * v + (x - self.centres[client])
                x = x - lr * (v if momentum else x - self.centres[client])
            thetas.append(x)
            buffers.append(v)
        return (thetas, buffers) if return_buffers else thetas


def pwp(tiny, **algorithm):
    tiny["world"] = {"kind": "edge", "clients": 6, "edge_servers": 2}
    tiny["algorithm"] = {"kind": "hfl-pwp", "rounds": 1, "lr": 0.1, **algorithm}
    return tiny


def quadratic_simulation(scenario, centres):
    sim = Simulation(load_scenario(scenario))
    sim.algorithm.trainer = sim.trainer = Quadratic(centres, sim.trainer)
    size = 8.0 * centres.shape[1] * sim.algorithm.MESSAGE_FACTOR
    sim.algorithm.download_bytes = sim.algorithm.upload_bytes = size
    return sim


def run_to_end(sim):
    states = []
    original = sim.algorithm.evaluate

    def capture(params, round_):
        states.append(params)
        return original(params, round_)

    sim.algorithm.evaluate = capture
    sim.run()
    return states[-1]


CENTRES = np.random.default_rng(0).normal(size=(6, 4))


@pytest.mark.parametrize(("eta_c", "eta_g", "period", "G"), [(1, 1, 5, 10), (3, 2, 2, 10),
                                                             (0.5, 1.5, 10, 10)])
def test_master_and_cluster_updates_have_the_closed_form(tiny, eta_c, eta_g, period, G):
    sim = quadratic_simulation(pwp(tiny, eta_c=eta_c, eta_g=eta_g, local_steps=period,
                                   master_period=G), CENTRES)
    got = run_to_end(sim)
    # full participation: a cluster round maps x_i - cbar_i to b (x_i - cbar_i),
    # b = 1 - eta_c (1 - a), a = (1 - eta)^I; after omega rounds Delta_i = (1 - b^omega)(x - cbar_i)
    a = (1 - 0.1) ** period
    b = 1 - eta_c * (1 - a)
    x = np.zeros(4)
    deltas = [(1 - b ** (G // period)) * (x - CENTRES[idx].mean(0))
              for idx in (slice(0, 3), slice(3, 6))]
    want = x - eta_g * (0.5 * deltas[0] + 0.5 * deltas[1])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_hiermo_averages_models_and_momentum(tiny):
    scenario = pwp(tiny, kind="hier-mo", local_steps=1, master_period=1, momentum=0.5)
    scenario["world"] = {"kind": "edge", "clients": 3, "edge_servers": 1}
    sim = quadratic_simulation(scenario, CENTRES[:3])
    got = run_to_end(sim)
    # one step from x = 0, v = 0: v_j = x - c_j, x_j = x - eta v_j; averages over j
    np.testing.assert_allclose(got.numpy(), 0.1 * CENTRES[:3].mean(0), rtol=1e-12)
    s = sim.summary()
    assert s["bytes_by_tag"]["edge->client"] == 3 * 2 * 8 * 4  # models and momentum


def test_sampling_strategies():
    rng = np.random.default_rng(0)
    without = [sample_workers(10, 4, False, rng) for _ in range(5000)]
    assert all(len(set(s)) == 4 for s in without)
    with_ = [sample_workers(10, 4, True, rng) for _ in range(5000)]
    assert any(len(set(s)) < 4 for s in with_)  # repeats happen
    for draws in (without, with_):
        counts = np.bincount(np.concatenate(draws), minlength=10)
        np.testing.assert_allclose(counts / counts.sum(), 0.1, atol=0.01)  # uniform, p = n/m
    # without replacement: P(a given worker is in the set) = n / m exactly in expectation
    assert np.mean([3 in s for s in without]) == pytest.approx(0.4, abs=0.02)
    assert sample_workers(3, 5, False, rng) == [0, 1, 2]


def test_periods_differ_and_clusters_run_concurrently(tiny):
    scenario = pwp(tiny, rounds=2, master_period=12, cluster_periods=[2, 6])
    scenario["model"] = {"kind": "fake", "params": 1000}
    result = netfl.run(scenario, overrides=["output.trace=true"], write=False)
    events = result.events
    edge_aggs = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert edge_aggs.groupby("round")["node"].value_counts().to_dict() == {
        (1, "e0"): 6, (1, "e1"): 2, (2, "e0"): 6, (2, "e1"): 2}  # omega_i = G / I_i
    steps = events[events["kind"] == "train_start"].groupby("node")["steps"].first()
    assert steps["c0"] == 2 and steps["c3"] == 6
    cloud = events[(events["kind"] == "aggregate") & (events["level"] == "cloud")]
    first_round_end = edge_aggs[edge_aggs["round"] == 1]["time_s"].max()
    assert cloud["time_s"].iloc[0] > first_round_end  # the master waited for both clusters


def test_periods_must_divide_g(tiny):
    with pytest.raises(netfl.ScenarioError, match="common multiple"):
        load_scenario(pwp(tiny, master_period=10, cluster_periods=[3, 5]))
    with pytest.raises(netfl.ScenarioError, match="one per edge server"):
        load_scenario(pwp(tiny, sample_sizes=[1, 2, 3]))


def test_one_cluster_with_i_equal_g_is_standard_fl(tiny):
    base = pwp(tiny, rounds=3, local_steps=10, master_period=10)
    base["world"] = {"kind": "edge", "clients": 3, "edge_servers": 1}
    base["model"] = {"kind": "mlp", "hidden": [16]}
    fedavg = copy.deepcopy(base)
    fedavg["algorithm"] = {"kind": "fedavg", "rounds": 3, "lr": 0.1, "local_steps": 10}
    a = netfl.run(base, write=False).metrics[["accuracy", "loss"]].to_numpy()
    b = netfl.run(fedavg, write=False).metrics[["accuracy", "loss"]].to_numpy()
    np.testing.assert_allclose(a, b, rtol=1e-5)


def test_metropolis_weights_on_known_graphs():
    hubs = ["e0", "e1", "e2", "e3"]
    np.testing.assert_allclose(metropolis_weights(hub_graph(hubs, "complete"), hubs), 0.25)
    ring = metropolis_weights(hub_graph(hubs, "ring"), hubs)
    np.testing.assert_allclose(ring, [[1/3, 1/3, 0, 1/3], [1/3, 1/3, 1/3, 0],
                                      [0, 1/3, 1/3, 1/3], [1/3, 0, 1/3, 1/3]])


def test_mll_sgd_on_the_complete_graph_is_hier_fedavg_done_peer_to_peer(tiny):
    base = pwp(tiny, rounds=3, local_steps=5, master_period=10)
    base["model"] = {"kind": "mlp", "hidden": [16]}
    mll = copy.deepcopy(base)
    mll["algorithm"]["kind"] = "mll-sgd"
    a = netfl.run(base, write=False)
    b = netfl.run(mll, write=False)
    np.testing.assert_allclose(a.metrics[["accuracy", "loss"]].to_numpy(),
                               b.metrics[["accuracy", "loss"]].to_numpy(), rtol=1e-5)
    assert "edge->edge" in b.summary["bytes_by_tag"] and "edge->cloud" not in b.summary[
        "bytes_by_tag"]


def test_mll_sgd_on_a_ring_mixes_only_neighbours(tiny):
    scenario = pwp(tiny, kind="mll-sgd", hub_graph="ring", local_steps=1, master_period=1)
    scenario["world"] = {"kind": "edge", "clients": 4, "edge_servers": 4,
                         "topology": {"kind": "ring"}}
    sim = quadratic_simulation(scenario, CENTRES[:4])
    got = run_to_end(sim)
    # each hub's one worker: x_j = 0.1 c_j; ring mixing, then the average of the hubs: 0.1 cbar
    np.testing.assert_allclose(got.numpy(), 0.1 * CENTRES[:4].mean(0), rtol=1e-12)
    assert sim.summary()["bytes_by_tag"]["edge->edge"] == 4 * 2 * 8 * 4
