"""Cyclic HFL (Algorithm 1 of "On the Convergence of Cyclic Hierarchical Federated Learning with
Heterogeneous Data", an anonymous submission under review), and cyclic FL (Cho et al. 2023) as
its R = 1, fixed-ring case.

    initialize x_0
    for each global round t = 0 .. T-1:
        Q <- a random permutation of S sampled edge servers      (order: ring: the next S
                                                                  edges of the fixed ring)
        for edge server i in Q:                (receives x from the previous edge, the last
                                                edge of round t-1 for the first of round t)
            for edge round r = 0 .. R-1:
                P of its N_i clients, sampled without replacement, in parallel:
                    x^{i,j}_{r,k+1} = x^{i,j}_{r,k} - eta g^{i,j}_{r,k},  k = 0 .. K-1
                x^i_{r+1} = x^i_r - eta / |N_i| sum_j g_{r,j}   (= the clients' models averaged)
            transmit x^i to the next edge server

With ``order: ring`` and S < M edges per round, the ring rotates: round t takes the S edges
after those of round t-1 (e0..e{S-1}, then e{S}..e{2S-1}, ... modulo M), so every edge takes its
turn once in every M / S rounds, as in CFL (Cho et al. 2023: a group that trained waits at
least M - 1 turns) and as the model's walk around the ring continues across rounds.

The hop from one edge to the next is a real transfer routed over the world's graph: between
non-adjacent edges it crosses several links (or the cloud), and costs their time. Deviations
(docs/models/chfl.md): a failed hand-over is retried, then the model skips that edge; clients
whose exchange fails are left out of the average. On a mobile world (IoV, LEO), where the paper's
fixed clusters do not exist, Q is drawn among the edge servers serving clients as the round
starts, and the P clients among those an edge serves as each edge round starts.
"""

from __future__ import annotations

import numpy as np

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.base import Algorithm


def visiting_order(edges: list[str], count: int | None, order: str,
                   rng: np.random.Generator, round_index: int = 0) -> list[str]:
    """The queue Q of global round ``round_index`` (0-based): ``count`` edges (all when None)
    sampled without replacement in a random order (``permutation``: draws from ``rng``), or
    (``ring``: no draws) the ``count`` edges of the fixed ring that follow the previous round's,
    starting from edges[0] in round 0 and wrapping around, so each edge has its turn once in
    every len(edges) / count rounds (when count divides len(edges); otherwise the turns still
    go round the ring one after another)."""
    if not edges:
        return []
    size = len(edges) if count is None else min(count, len(edges))
    if order == "ring":
        start = round_index * size % len(edges)
        return [edges[(start + i) % len(edges)] for i in range(size)]
    chosen = rng.permutation(len(edges))[:size]
    return [edges[i] for i in chosen]


class CHFL(Algorithm):
    def run(self):
        spec, edges = self.spec, self.world.edge_servers
        rng = self.stream("sampling")
        x = self.trainer.init_params()
        holder: str | None = None
        if self.evaluate(x, 0):
            return
        for t in range(1, spec.rounds + 1):
            started = self.env.now
            # on a mobile world, Q is drawn among the edges that serve clients as the round starts
            serving = self.world.serving_edges() if self.world.mobile else edges
            for edge in visiting_order(serving, spec.edges_per_round, spec.order, rng, t - 1):
                holder = yield from self.carry_model(holder, edge, t)
                if holder != edge:
                    continue  # the model could not reach this edge: it skips its turn
                x = yield from self.train_edge(edge, x, t)
            if self.world.mobile and self.env.now == started:  # no edge serves anyone
                yield from self.wait_idle()
            if self.end_round(t, x):
                return

    def train_edge(self, edge: str, x, t: int):
        """R edge rounds at ``edge``: sampled clients train K steps, the edge averages."""
        for _ in range(self.spec.edge_rounds):
            # those in the edge's coverage as the edge round starts (all, on a static world)
            clients = self.sample_clients(self.world.primary_clients_of(edge),
                                          self.spec.clients_per_round)
            result = yield from self.train_round(edge, clients, x, t)
            if result.updates:
                weights = (result.weights if self.spec.weighting == "data"
                           else data_weights(np.ones(len(result.updates))))
                x = yield from self.aggregate(edge, result.updates, weights, "edge", t)
        return x
