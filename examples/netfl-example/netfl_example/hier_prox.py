"""Hierarchical FedProx with edge-level momentum, as a netfl extension.

    for each cloud round t = 1, ..., T:
        cloud sends w to every edge server that serves clients
        for each such edge server l in parallel:
            w_l <- w
            for edge round k = 1 .. edge_rounds:
                each of l's clients i in parallel: w_i <- local_steps SGD steps on
                    f_i(v) + mu/2 ||v - w_l||^2                       (FedProx, Li et al. 2020)
                d <- sum_i (n_i / n_l) w_i - w_l                      (edge aggregation)
                m_l <- beta m_l + d;  w_l <- w_l + m_l                (edge momentum, kept per edge)
            edge server l sends w_l to the cloud
        w <- sum_l (D_l / D) w_l                                      (cloud aggregation)

Built only from netfl's public primitives (docs/extending.md lists them and their costs).
"""

from __future__ import annotations

from pydantic import Field, PositiveInt

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.base import Algorithm
from netfl.scenario.algorithm_base import AlgorithmSpec


class HierProxMomentumSpec(AlgorithmSpec):
    """mu: FedProx's proximal weight; beta: the edge servers' momentum; edge_rounds: edge
    aggregations per cloud round."""

    kind: str
    mu: float = Field(0.01, ge=0)
    beta: float = Field(0.5, ge=0, lt=1)
    edge_rounds: PositiveInt = 2

    USES_CLOUD = True  # it aggregates at the cloud: the world must have one


class HierProxMomentum(Algorithm):
    Spec = HierProxMomentumSpec

    def run(self):
        w = self.trainer.init_params()
        self.momentum_of = {}  # edge server -> its momentum m_l (from its first round)
        if self.evaluate(w, 0):
            return
        for t in range(1, self.spec.rounds + 1):
            serving = [e for e in self.world.edge_servers if self.world.primary_clients_of(e)]
            jobs = [self.env.process(self.edge_round(e, w, t)) for e in serving]
            yield self.env.all_of(jobs)
            arrived = [job.value for job in jobs if job.value is not None]
            if arrived:
                models, data = zip(*arrived, strict=True)
                w = yield from self.aggregate(self.world.cloud, list(models),
                                              data_weights(data), "cloud", t)
            else:
                yield from self.wait_idle()  # nobody reachable: wait, retry
            if self.end_round(t, w):
                return

    def edge_round(self, edge, w, t):
        """One cloud round at ``edge``: (w_l, its clients' data) if it reached the cloud."""
        if not (yield from self.send(self.world.cloud, edge, self.download_bytes)):
            return None
        w_edge, data = w, 0
        for _ in range(self.spec.edge_rounds):
            clients = self.world.primary_clients_of(edge)  # changes as vehicles move
            result = yield from self.train_round(edge, clients, w_edge, t, prox_mu=self.spec.mu)
            if not result.updates:
                continue
            averaged = yield from self.aggregate(edge, result.updates, result.weights, "edge", t)
            momentum = self.spec.beta * self.momentum_of.get(edge, 0.0) + (averaged - w_edge)
            self.momentum_of[edge] = momentum
            w_edge = w_edge + momentum
            data = max(data, int(self.data_sizes(result.clients).sum()))
        if data == 0 or not (yield from self.send_up(edge, self.world.cloud)):
            return None
        return self.compressed_towards(w_edge, w), data
