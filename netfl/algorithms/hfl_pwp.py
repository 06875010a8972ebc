"""HFL with partial worker participation and three-sided learning rates (Algorithm 1 of Jiang and
Zhu, "On the Convergence of Hierarchical Federated Learning with Partial Worker Participation",
UAI 2024), and HierMo in its setting.

    for t = 0 .. T-1:
        for each cluster i in parallel:                      (receives x^t from the master)
            for tau = 0 .. omega_i - 1:                      (omega_i = G / I_i)
                S <- n_i workers of V_i, uniformly, with (strategy 1) or without (strategy 2)
                     replacement
                each j in S in parallel: I_i SGD steps at rate eta from x_i;
                     Delta~_j = x_i - x_j (sent to the cluster)
                Delta_i^tau = mean_j Delta~_j
                x_i <- x_i - eta_c Delta_i^tau              (broadcast to the cluster)
            Delta_i = x^t - x_i                              (sent to the master)
        x^{t+1} = x^t - eta_g sum_i (m_i / m) Delta_i        (broadcast to all workers)

Clusters of different periods run concurrently in simulated time: a cluster with a shorter
period does more, shorter cluster rounds, each paying its transfers; the master waits for all.
Deviations (docs/models/hfl-pwp.md): a worker whose exchange fails is left out of the mean; a
cluster whose update does not reach the master contributes Delta_i = 0 (the m_i / m weights are
kept, as in the paper's formula). On a mobile world (IoV, LEO), where the paper's fixed clusters
do not exist, the clusters of a master round are the edge servers serving workers as it starts,
m_i / m their shares of those workers, and each cluster round samples among the workers its edge
server serves as it starts.
"""

from __future__ import annotations

import numpy as np

from netfl.algorithms.base import Algorithm


def sample_workers(n_workers: int, n: int, replace: bool, rng: np.random.Generator) -> list[int]:
    """n indices of 0..n_workers-1, uniformly: strategy 1 (``replace``: independent draws, a
    worker may appear twice) or strategy 2 (without replacement; n is capped at n_workers)."""
    if replace:
        return [int(i) for i in rng.integers(n_workers, size=n)]
    return sorted(int(i) for i in rng.choice(n_workers, size=min(n, n_workers), replace=False))


class HflPwp(Algorithm):
    def run(self):
        spec = self.spec
        edges, shares = self.clusters()
        state = self.initial_state()
        if self.evaluate(state[0], 0):
            return
        for t in range(1, spec.rounds + 1):
            started = self.env.now
            if self.world.mobile:
                edges, shares = self.clusters()
            jobs = [self.env.process(self.cluster(i, edge, state, t))
                    for i, edge in enumerate(edges)]
            yield self.env.all_of(jobs)
            if self.world.mobile and self.env.now == started:  # nobody in coverage
                yield from self.wait_idle()
            arrived = [(shares[i], job.value) for i, job in enumerate(jobs) if job.value]
            if arrived:
                yield from self.charge_aggregation(self.world.cloud, len(arrived), "cloud", t)
                state = self.master_update(state, arrived)
            if self.end_round(t, state[0]):
                return

    def clusters(self) -> tuple[list[str], np.ndarray]:
        """The clusters (edge servers) and their shares m_i / m. On a mobile world, where the
        paper's fixed clusters do not exist, those serving workers now, by their workers now."""
        edges = self.world.serving_edges() if self.world.mobile else self.world.edge_servers
        sizes = np.array([len(self.world.primary_clients_of(e)) for e in edges], dtype=float)
        return edges, (sizes / sizes.sum() if edges else sizes)  # m_i / m

    def initial_state(self) -> tuple:
        """What the master holds: (model,) here; HierMo adds its momentum."""
        return (self.trainer.init_params(),)

    def master_update(self, state: tuple, arrived: list) -> tuple:
        """x <- x - eta_g sum_i (m_i / m) Delta_i."""
        delta = sum(share * update[0] for share, update in arrived)
        return (state[0] - self.spec.eta_g * delta,)

    def cluster(self, i: int, edge: str, state: tuple, t: int):
        """One master round of cluster ``i``; returns its update (Delta_i,) for the master, or
        None when nothing reached the master."""
        if not (yield from self.send(self.world.cloud, edge, self.download_bytes)):
            return None
        local = yield from self.cluster_rounds(i, edge, state, t)
        if not (yield from self.send_up(edge, self.world.cloud)):
            return None
        x = state[0]
        return (x - self.compressed_towards(local[0], x),) + local[1:]

    def cluster_rounds(self, i: int, edge: str, state: tuple, t: int):
        """The omega_i cluster rounds of cluster ``i`` from ``state``; returns its final state."""
        spec, workers = self.spec, self.world.clients_of(edge)
        period = spec.periods(len(self.world.edge_servers))[i]
        rng = self.stream("sampling")
        local = state
        for _ in range(spec.master_period // period):
            if self.world.mobile:  # the workers in the cluster's coverage now
                workers = self.world.primary_clients_of(edge)
                if not workers:
                    continue
            n = (spec.sample_sizes[i] if spec.sample_sizes
                 else spec.clients_per_round or len(workers))
            chosen = [workers[j] for j in sample_workers(
                len(workers), n, spec.sampling == "with-replacement", rng)]
            local = yield from self.cluster_round(edge, chosen, local, t, period)
        return local

    def cluster_round(self, edge: str, workers: list[str], local: tuple, t: int, period: int):
        """x_i <- x_i - eta_c * mean_j (x_i - x_j) over the workers whose updates arrived."""
        result = yield from self.train_round(edge, workers, local[0], t, steps=period)
        if not result.updates:
            return local
        yield from self.charge_aggregation(edge, len(result.updates), "edge", t)
        x = local[0]
        mean_delta = sum(x - u for u in result.updates) / len(result.updates)
        return (x - self.spec.eta_c * mean_delta,)


class HierMo(HflPwp):
    """HierMo (Yang et al. 2023) in the HFL-PWP setting: momentum in all three tiers, as read
    here (docs/models/hfl-pwp.md).

    * workers: heavy-ball SGD (gamma = ``momentum``) starting each cluster round from their
      cluster's model and its averaged worker buffer v_i; the cluster averages the workers'
      models and buffers, the master the clusters' (m_i / m; a cluster that did not arrive
      keeps its share at the master's buffer, as its Delta_i = 0 keeps it at the master's
      model), and model and buffer travel together, so every message is twice the model's
      size;
    * edge server i: its own buffer over its cluster rounds' mean updates,
      m_i <- gamma_l m_i + Delta_i^tau, x_i <- x_i - eta_c m_i (kept at the edge, across master
      rounds);
    * cloud: its own buffer over the master update, m <- gamma_a m + sum_i (m_i / m) Delta_i,
      x <- x - eta_g m.

    With eta_c = eta_g = 1 (HierMo's setting) and gamma_l = gamma_a = 0 this is worker momentum
    with plain averages at both tiers."""

    MESSAGE_FACTOR = 2

    def initial_state(self) -> tuple:
        params = self.trainer.init_params()
        zero = params * 0
        # buffers held where they are used, not sent: one per edge server, one at the cloud
        self.edge_buffers = {edge: zero for edge in self.world.edge_servers}
        self.cloud_buffer = zero
        return (params, zero)

    def master_update(self, state: tuple, arrived: list) -> tuple:
        x, v = state
        delta = sum(share * update[0] for share, update in arrived)
        self.cloud_buffer = self.spec.cloud_momentum * self.cloud_buffer + delta
        # a cluster that did not arrive counts as staying at the master's state, as its
        # Delta_i = 0 does: its share keeps the master's worker buffer
        missing = 1.0 - sum(share for share, _ in arrived)
        buffer = sum(share * update[1] for share, update in arrived) + missing * v
        return (x - self.spec.eta_g * self.cloud_buffer, buffer)

    def cluster_round(self, edge: str, workers: list[str], local: tuple, t: int, period: int):
        x, v = local
        arrived = yield from self.exchange(edge, workers, t, period)
        if not arrived:
            return local
        spec = self.spec
        models, buffers = self.trainer.local_train(
            x, self.indices(arrived), period, spec.lr, spec.batch_size, momentum=spec.momentum,
            weight_decay=spec.weight_decay, initial_buffers=[v] * len(arrived),
            return_buffers=True)
        yield from self.charge_aggregation(edge, 2 * len(arrived), "edge", t)
        models = [self.compressed_towards(m, x) for m in models]
        mean_delta = sum(x - m for m in models) / len(models)
        self.edge_buffers[edge] = spec.edge_momentum * self.edge_buffers[edge] + mean_delta
        return (x - spec.eta_c * self.edge_buffers[edge], sum(buffers) / len(buffers))
