"""Hierarchical FedAvg whose edge servers aggregate only the first uploads of each edge round:

    for each cloud round t = 1, ..., T:
        for each edge server l that serves clients, in parallel:
            w_l <- w                                             (download from the cloud)
            for edge round k = 1 .. edge_rounds:
                P_l <- l's clients now; K_l = ceil(fraction |P_l|)
                each client i of P_l in parallel: w_i <- local_steps SGD steps from w_l
                l takes the first K_l uploads to arrive (or those in by ``deadline``);
                    the others are cancelled where they are
                w_l <- sum over those of (n_i / n) w_i           (edge aggregation)
            edge server l sends w_l to the cloud
        w <- sum_l (D_l / D) w_l                                 (cloud aggregation)

Waiting for the fastest K of N is the classic straggler remedy (over-selection in Bonawitz et
al., "Towards Federated Learning at Scale: System Design", MLSys 2019). Cancelling the slow
clients frees their share of the radio cell at once, so the fast ones' next round starts
sooner. Built only from netfl's public primitives (docs/extending.md).
"""

from __future__ import annotations

import math

from pydantic import Field, PositiveInt

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.base import Algorithm
from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.types import PositiveDuration


class FirstKSpec(AlgorithmSpec):
    """fraction: the share of an edge's clients whose uploads it waits for; deadline: the
    longest an edge round waits (seconds; none: until the fraction is in)."""

    kind: str
    fraction: float = Field(0.5, gt=0, le=1)
    deadline: PositiveDuration | None = None
    edge_rounds: PositiveInt = 2

    USES_CLOUD = True  # it aggregates at the cloud: the world must have one


class FirstKHierFedAvg(Algorithm):
    Spec = FirstKSpec

    def run(self):
        w = self.trainer.init_params()
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

    def edge_round(self, edge: str, w, t: int):
        """One cloud round at ``edge``: (w_l, its contributors' data) if it reached the
        cloud, else None."""
        if not (yield from self.send(self.world.cloud, edge, self.download_bytes)):
            return None
        w_edge, contributors = w, set()
        for _ in range(self.spec.edge_rounds):
            clients = self.world.primary_clients_of(edge)  # changes as vehicles move
            first = max(1, math.ceil(self.spec.fraction * len(clients)))
            result = yield from self.train_round(edge, clients, w_edge, t, first=first,
                                                 deadline=self.spec.deadline)
            if result.updates:
                contributors.update(result.clients)
                w_edge = yield from self.aggregate(edge, result.updates, result.weights,
                                                   "edge", t)
        if not contributors or not (yield from self.send_up(edge, self.world.cloud)):
            return None
        data = int(self.data_sizes(sorted(contributors)).sum())
        return self.compressed_towards(w_edge, w), data
