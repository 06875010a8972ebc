"""FedBuff ("Federated Learning with Buffered Asynchronous Aggregation", AISTATS 2022) at the
cloud over synchronous edge servers:

    each edge server l, in a loop of its own (beside the cloud's):
        (w, tau) <- the cloud's model and its version              (download from the cloud)
        w_l <- w
        for edge round k = 1 .. edge_rounds:                        (synchronous at the edge)
            w_l <- the data-weighted average of its clients' models after local_steps
        send Delta_l = w_l - w up, with tau                         (into the cloud's mailbox)
    the cloud, on each Delta_l arriving with staleness s (versions since tau):
        buffer <- buffer + Delta_l / sqrt(1 + s);  k <- k + 1
        if k = buffer_size:  w <- w + server_lr x buffer / k        (a new version)

The cloud never waits for a round: an edge whose clients are slow (or gone) only delays its
own updates, which arrive staler and count less. Built only from netfl's public primitives
(docs/extending.md, "Asynchronous algorithms").
"""

from __future__ import annotations

import math

from pydantic import PositiveFloat, PositiveInt

from netfl.algorithms.asynchrony import Update
from netfl.algorithms.base import Algorithm
from netfl.scenario.algorithm_base import AlgorithmSpec


class HierFedBuffSpec(AlgorithmSpec):
    """rounds: cloud versions; edge_rounds: synchronous edge rounds between two uploads;
    buffer_size: edge updates per cloud step (K); server_lr: the cloud's step (eta_g)."""

    kind: str
    edge_rounds: PositiveInt = 2
    buffer_size: PositiveInt = 2
    server_lr: PositiveFloat = 1.0

    USES_CLOUD = True
    ASYNCHRONOUS = True  # follow each update's life (updates.csv)


class HierFedBuff(Algorithm):
    Spec = HierFedBuffSpec

    def run(self):
        cloud = self.world.cloud
        slot = self.model_slot(cloud, self.trainer.init_params())
        if self.evaluate(slot.params, 0):
            return
        box = self.mailbox(cloud)
        for edge in self.world.edge_servers:
            self.background(self.edge_loop(edge, slot, box))
        buffered, weights = [], []
        while slot.version < self.spec.rounds:
            update = yield from self.receive(box)
            buffered.append(update)
            weights.append(1.0 / math.sqrt(1.0 + self.staleness(slot, update)))
            if len(buffered) < self.spec.buffer_size:
                continue
            version = yield from self.apply_buffer(slot, buffered, weights,
                                                   self.spec.server_lr, "cloud")
            buffered, weights = [], []
            if self.end_round(version, slot.params):
                return

    def edge_loop(self, edge, slot, box):
        """Edge server ``edge``'s endless cycle: download, synchronous edge rounds, upload."""
        cloud = self.world.cloud
        while True:
            base, version = slot.params, slot.version
            if not (yield from self.send(cloud, edge, self.download_bytes)):
                yield from self.wait_idle()
                continue
            w_edge = base
            for _ in range(self.spec.edge_rounds):
                clients = self.world.primary_clients_of(edge)  # changes as vehicles move
                if not clients:
                    yield from self.wait_idle()
                    continue
                result = yield from self.train_round(edge, clients, w_edge, version)
                if result.updates:
                    w_edge = yield from self.aggregate(edge, result.updates, result.weights,
                                                       "edge", version)
            if w_edge is not base and (yield from self.send_up(edge, cloud)):
                box.deliver(Update(edge, self.compressed_towards(w_edge, base) - base, version))
