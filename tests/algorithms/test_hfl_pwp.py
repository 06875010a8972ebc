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
        self.train_flops_per_sample = 3.0
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
    """Run ``sim``; returns the last model it measured (the one after the last round)."""
    states = []
    original = sim.algorithm.test

    def capture(params, *args):
        states.append(params)
        return original(params, *args)

    sim.algorithm.test = capture
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


def hiermo_reference(centres, clusters, rounds, omega, period, lr, gamma, gamma_e, gamma_a,
                     eta_c, eta_g, carry=True):
    """HierMo on the quadratic, written out: full participation, every worker's heavy-ball
    steps from its cluster's model and averaged worker buffer; edge momentum over the mean
    update, cloud momentum over the m_i / m-weighted cluster updates. ``carry=False`` resets
    the edge and cloud buffers every master round (what the test must tell apart)."""
    dim = centres.shape[1]
    x, v, cloud = np.zeros(dim), np.zeros(dim), np.zeros(dim)
    edge = [np.zeros(dim) for _ in clusters]
    shares = np.array([len(c) for c in clusters]) / sum(len(c) for c in clusters)
    for _ in range(rounds):
        if not carry:
            edge, cloud = [np.zeros(dim) for _ in clusters], np.zeros(dim)
        deltas, buffers = [], []
        for i, members in enumerate(clusters):
            xi, vi = x.copy(), v.copy()
            for _ in range(omega):
                models, worker_buffers = [], []
                for j in members:
                    xj, vj = xi.copy(), vi.copy()
                    for _ in range(period):
                        vj = gamma * vj + (xj - centres[j])
                        xj = xj - lr * vj
                    models.append(xj)
                    worker_buffers.append(vj)
                edge[i] = gamma_e * edge[i] + np.mean([xi - m for m in models], axis=0)
                xi, vi = xi - eta_c * edge[i], np.mean(worker_buffers, axis=0)
            deltas.append(x - xi)
            buffers.append(vi)
        cloud = gamma_a * cloud + sum(s * d for s, d in zip(shares, deltas, strict=True))
        x, v = x - eta_g * cloud, sum(s * b for s, b in zip(shares, buffers, strict=True))
    return x


def test_hiermo_momentum_at_worker_edge_and_cloud_carries_over_rounds(tiny):
    # 2 clusters (2 and 4 workers), omega = 3 cluster rounds of I = 2 steps, 4 master rounds:
    # the worker, edge and cloud buffers each carry from one round to the next
    options = dict(rounds=4, local_steps=2, master_period=6, momentum=0.5, edge_momentum=0.3,
                   cloud_momentum=0.6, eta_c=1.2, eta_g=0.9)
    scenario = pwp(tiny, kind="hier-mo", **options)
    scenario["world"]["assignment"] = {"kind": "by-size", "sizes": [2, 4]}
    got = run_to_end(quadratic_simulation(scenario, CENTRES)).numpy()
    args = (CENTRES, [[0, 1], [2, 3, 4, 5]], 4, 3, 2, 0.1, 0.5, 0.3, 0.6, 1.2, 0.9)
    np.testing.assert_allclose(got, hiermo_reference(*args), rtol=1e-10)
    assert not np.allclose(got, hiermo_reference(*args, carry=False), rtol=1e-3)
    without = hiermo_reference(*args[:7], 0.0, 0.0, *args[9:])  # worker momentum alone
    assert not np.allclose(got, without, rtol=1e-3)


def test_hiermo_master_keeps_a_missing_clusters_share_at_its_own_state(tiny):
    scenario = pwp(tiny, kind="hier-mo", cloud_momentum=0.5, eta_g=2.0)
    algorithm = quadratic_simulation(scenario, CENTRES).algorithm
    x, v = algorithm.initial_state()
    x, v = x + 1.0, v + 4.0  # the master's state, its buffer nonzero
    delta, buffer = torch.full_like(x, 0.2), torch.full_like(x, 2.0)
    # only cluster 0 (share 1/2) arrived: Delta_1 = 0 and its buffer share stays at v
    x1, v1 = algorithm.master_update((x, v), [(0.5, (delta, buffer))])
    torch.testing.assert_close(v1, 0.5 * buffer + 0.5 * v)
    torch.testing.assert_close(x1, x - 2.0 * 0.5 * delta)
    # the cloud's buffer carries: m = 0.5 * (0.5 delta) + (0.5 delta + 0.5 delta)
    x2, _ = algorithm.master_update((x1, v1), [(0.5, (delta, buffer)), (0.5, (delta, buffer))])
    torch.testing.assert_close(x2, x1 - 2.0 * (0.25 * delta + delta))


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


def test_mll_sgd_hubs_mix_with_their_ring_neighbours_by_exactly_h(tiny):
    # hubs of one worker each, one step from 0: before mixing hub j holds 0.1 c_j; after, row j
    # of H applied to those (so hubs move towards their neighbours, and only them)
    scenario = pwp(tiny, kind="mll-sgd", hub_graph="ring", local_steps=1, master_period=1)
    scenario["world"] = {"kind": "edge", "clients": 4, "edge_servers": 4,
                         "topology": {"kind": "ring"}}
    sim = quadratic_simulation(scenario, CENTRES[:4])
    sim.run()
    hubs = sim.world.edge_servers
    mixing = metropolis_weights(hub_graph(hubs, "ring"), hubs)
    before = 0.1 * CENTRES[:4]
    got = np.stack([m.numpy() for m in sim.algorithm.hub_models])
    np.testing.assert_allclose(got, mixing @ before, rtol=1e-12)
    assert not np.allclose(got, before, rtol=1e-3)


def test_mll_sgd_measures_the_hub_models_weighted_by_their_workers(tiny):
    # Castiglia et al.'s u = sum_i a_i x_i = sum_d b_d y_d: hubs of 1, 3, 1 and 1 workers on
    # a ring weigh 1/6, 3/6, 1/6, 1/6 (a plain mean of the hubs would weigh each 1/4)
    scenario = pwp(tiny, kind="mll-sgd", hub_graph="ring", local_steps=1, master_period=1,
                   rounds=2)
    scenario["world"] = {"kind": "edge", "clients": 6, "edge_servers": 4,
                         "topology": {"kind": "ring"},
                         "assignment": {"kind": "by-size", "sizes": [1, 3, 1, 1]}}
    sim = quadratic_simulation(scenario, CENTRES)
    got = run_to_end(sim).numpy()
    hubs = np.stack([m.numpy() for m in sim.algorithm.hub_models])
    np.testing.assert_allclose(got, np.array([1, 3, 1, 1]) @ hubs / 6, rtol=1e-12)
    assert not np.allclose(got, hubs.mean(0), rtol=1e-3)
