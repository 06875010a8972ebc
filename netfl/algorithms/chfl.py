"""Cyclic HFL (Algorithm 1 of "Convergence of Cyclic Hierarchical Federated Learning", the seed
002_176e1f7b26954d78.txt), and cyclic FL (Cho et al. 2023) as its R = 1, fixed-ring case.

    initialize x_0
    for each global round t = 0 .. T-1:
        Q <- a random permutation of S sampled edge servers      (order: ring keeps 0..M-1)
        for edge server i in Q:                (receives x from the previous edge, the last
                                                edge of round t-1 for the first of round t)
            for edge round r = 0 .. R-1:
                P of its N_i clients, sampled without replacement, in parallel:
                    x^{i,j}_{r,k+1} = x^{i,j}_{r,k} - eta g^{i,j}_{r,k},  k = 0 .. K-1
                x^i_{r+1} = x^i_r - eta / |N_i| sum_j g_{r,j}   (= the clients' models averaged)
            transmit x^i to the next edge server

The hop from one edge to the next is a real transfer routed over the world's graph: between
non-adjacent edges it crosses several links (or the cloud), and costs their time. Deviations
(docs/models/chfl.md): a failed hand-over is retried, then the model skips that edge; clients
whose exchange fails are left out of the average.
"""

from __future__ import annotations

import numpy as np

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.base import Algorithm


def visiting_order(edges: list[str], count: int | None, order: str,
                   rng: np.random.Generator) -> list[str]:
    """The queue Q of one global round: ``count`` edges (all when None) sampled without
    replacement in a random order, or the whole ring in its fixed order."""
    if order == "ring":
        return list(edges) if count is None else list(edges[:count])
    chosen = rng.permutation(len(edges))[: count or len(edges)]
    return [edges[i] for i in chosen]


class CHFL(Algorithm):
    def run(self):
        spec, edges = self.spec, self.world.edge_servers
        rng = self.ctx.streams.get("sampling")
        x = self.trainer.init_params()
        holder: str | None = None
        if self.evaluate(x, 0):
            return
        for t in range(1, spec.rounds + 1):
            for edge in visiting_order(edges, spec.edges_per_round, spec.order, rng):
                holder = yield from self.carry_model(holder, edge, t)
                if holder != edge:
                    continue  # the model could not reach this edge: it skips its turn
                x = yield from self.train_edge(edge, x, t)
            if self.end_round(t, x):
                return

    def train_edge(self, edge: str, x, t: int):
        """R edge rounds at ``edge``: sampled clients train K steps, the edge averages."""
        for _ in range(self.spec.edge_rounds):
            clients = self.sample_clients(self.world.clients_of(edge), self.spec.clients_per_round)
            result = yield from self.train_round(edge, clients, x, t)
            if result.updates:
                weights = (result.weights if self.spec.weighting == "data"
                           else data_weights(np.ones(len(result.updates))))
                x = yield from self.aggregate(edge, result.updates, weights, "edge", t)
        return x
