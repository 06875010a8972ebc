"""FedBuff ("Federated Learning with Buffered Asynchronous Aggregation", Nguyen et al.,
AISTATS 2022, Algorithm 1), with the cloud as server:

    client i:  x_i <- x_tau (the server's model when it started);
               Q = local_steps SGD steps;  Delta_i <- x_i - x_tau;  send Delta_i
    server:    on each Delta_i with staleness s_i:
                   buffer <- buffer + w(s_i) Delta_i;  k <- k + 1
                   if k = K:  x <- x + eta_g buffer / K;  buffer <- 0;  k <- 0  (a new version)

with w(s) = 1 / sqrt(1 + s) by default (``staleness``: polynomial, a = 0.5) and ``concurrency``
clients training at once (netfl.algorithms.async_clients). Staleness is the server's version at
arrival minus the version the client downloaded. (The paper writes Delta_i = x_tau - x_i and
subtracts the buffer; the sign is carried here instead, the same step.)
"""

from __future__ import annotations

from netfl.algorithms.async_clients import AsyncClients


class FedBuff(AsyncClients):
    def run(self):
        spec = self.spec
        opened = self.open_server()
        if opened is None:  # the initial evaluation ended the run
            return
        slot, box = opened
        buffered, weights = [], []
        while slot.version < spec.rounds:
            update = yield from self.receive(box)
            buffered.append(update)
            weights.append(self.staleness_weight(self.staleness(slot, update), spec.staleness))
            if len(buffered) < spec.buffer_size:
                continue
            version = yield from self.apply_buffer(slot, buffered, weights, spec.server_lr,
                                                   "cloud")
            buffered, weights = [], []
            if self.end_round(version, slot.params):
                return

    def client_message(self, client, base):
        """Delta_i: the client's model after Q steps, less the model it started from."""
        return self.train_client(client, base, then=lambda model: model - base)
