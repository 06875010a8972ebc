"""WRWGD: weighted random-walk gradient descent (Ayache and El Rouayheb 2019, "Random Walk
Gradient Descent for Decentralized Learning on Graphs"), a Fed-CHS paper baseline.

One model walks a client graph (random, connected, degree at most 3, as the Fed-CHS paper sets
it). How this reads the paper (docs/models/fed-chs.md has the details):

    pi_i  proportional to L_i, the smoothness (Lipschitz) constant of client i's loss
          (uniform weighting: pi_i = 1 / N)
    P_ij  = (1 / deg_i) min(1, (pi_j deg_i) / (pi_i deg_j))  for neighbours j   (Metropolis-
    P_ii  = 1 - sum_j P_ij                                                     Hastings)
    at each step t, at client i:  K = local_steps SGD steps, step k (k = 0..K-1) at rate
                                  eta_k / (N pi_i)   (importance weighting keeps the
                                  expected step unbiased)
                                  then the model moves to j ~ P_i. (j = i: it stays.)

eta_k is the configured ``schedule`` (netfl.algorithms.schedules) with K = local_steps and k the
index of the local step within the visit, reset at every visit: the Fed-CHS paper's B.1 runs
WRWGD with "K = 20 training epochs in clients" and "1/(K sqrt(k+1)) in the k-th
communication", the same schedule, symbol and range (k < K) as Fed-CHS's K interactions per
round (``schedule_period`` reads it instead as FedAvg's: k counts visits in blocks of K, every
step of a visit at one rate; the reading with one local iteration per visit). Its "epochs" are
read as local iterations (mini-batch steps): the Ayache and El Rouayheb
walk updates the model with gradient steps at the visited node and has no notion of a pass
over local data, and B.1's sentences around it count iterations ("one local iteration per
round", "20 iterations per round within the cluster"). A walk step over a global k would drive
1/(K sqrt(k+1)) to 1/1265 by step 4000, far below every other algorithm's rate.

L_i is estimated once at the start, at the initial model, by a finite difference of client i's
gradient on a fixed set of its samples: ||g(w + delta) - g(w)|| / ||delta||. The graph is a
logical overlay: a move from client i to j is a real transfer routed over the world's network.
"""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx
import numpy as np

from netfl.algorithms.base import Algorithm
from netfl.algorithms.schedules import learning_rate
from netfl.world.edge import random_bounded_degree_graph


def metropolis_hastings(graph: nx.Graph, weights: Mapping) -> dict:
    """Per node: (candidates, probabilities) of the Metropolis-Hastings walk whose stationary
    distribution is proportional to ``weights``, with uniform proposals over neighbours. The
    node itself is the last candidate (the rejection mass)."""
    moves = {}
    for i in graph.nodes:
        neighbours = list(graph.neighbors(i))
        deg_i = len(neighbours)
        probs = [min(1.0, weights[j] * deg_i / (weights[i] * graph.degree(j))) / deg_i
                 for j in neighbours]
        moves[i] = (neighbours + [i], np.array(probs + [max(0.0, 1.0 - sum(probs))]))
    return moves


class WRWGD(Algorithm):
    def run(self):
        spec, clients = self.spec, self.world.clients
        n = len(clients)
        extra = n // 2 if spec.extra_edges is None else spec.extra_edges
        graph = random_bounded_degree_graph(n, spec.max_degree, extra,
                                            self.stream("world", 1))
        w = self.trainer.init_params()
        weights = (self.smoothness(w) if spec.weighting == "lipschitz" else np.ones(n))
        pi = weights / weights.sum()
        moves = metropolis_hastings(graph, dict(enumerate(weights)))
        rng = self.stream("sampling")
        here = int(rng.integers(n))
        if self.evaluate(w, 0):
            return
        for t in range(1, spec.rounds + 1):
            result = yield from self.train_here(clients[here], w, t, 1.0 / (n * pi[here]))
            if result is not None:
                w = result
            if self.end_round(t, w):  # the walk's model, checked before it moves on
                return
            candidates, probs = moves[here]
            nxt = int(candidates[int(rng.choice(len(candidates), p=probs))])
            if nxt != here:  # one try: after a failed move the model stays here
                holder = yield from self.move_model(clients[here], [clients[nxt]], t)
                here = nxt if holder == clients[nxt] else here

    def train_here(self, client: str, w, t: int, weight: float):
        """The visited client trains K = local_steps steps on the model it holds, step k at
        eta_k * ``weight`` (the importance weight 1 / (N pi_i)), charged to its device; None
        when it dropped out meanwhile (the model then waits ``idle_wait`` there)."""
        spec, steps = self.spec, self.spec.local_steps
        if not (yield from self.local_compute(client, t, steps)):
            yield from self.wait_idle()
            return None
        if spec.schedule_period is None:  # k: the step within the visit, K = local_steps
            rates = [weight * learning_rate(spec.schedule, k, steps, spec.lr)
                     for k in range(steps)]
        else:  # k: the visit, in blocks of K = schedule_period (as FedAvg's rounds)
            period = spec.schedule_period
            rates = [weight * learning_rate(spec.schedule, (t - 1) % period, period,
                                            spec.lr)] * steps
        options = {"momentum": spec.momentum, "weight_decay": spec.weight_decay}
        index = self.indices([client])
        if spec.schedule.kind == "constant" or spec.schedule_period is not None:  # one rate
            return self.trainer.local_train(w, index, steps, rates[0], spec.batch_size,
                                            **options)[0]
        buffers = None  # one step per rate; the momentum buffer carries over between them
        for rate in rates:
            (w,), buffers = self.trainer.local_train(w, index, 1, rate, spec.batch_size,
                                                     initial_buffers=buffers,
                                                     return_buffers=True, **options)
        return w

    def smoothness(self, w) -> np.ndarray:
        """L_i per client: finite-difference estimate at ``w`` (ones for the fake trainer)."""
        if not hasattr(self.trainer, "smoothness"):
            return np.ones(len(self.world.clients))
        rng = self.stream("sampling", 1)
        return np.array([self.trainer.smoothness(w, i, rng)
                         for i in range(len(self.world.clients))])
