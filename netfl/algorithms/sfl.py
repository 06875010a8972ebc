"""Sequential FL (Li and Lyu 2024, as the CHFL paper uses it): clients in a random order, each
taking K local steps from the model the previous client passed it.

    initialize x_0
    for each round t = 0 .. T-1:
        pi <- a random permutation of P sampled clients          (order: ring: the next P
                                                                  clients of the fixed ring)
        for client j in pi:                       (receives x from the previous client, the
                                                   last of round t-1 for the first of round t)
            x <- x after K local SGD steps on client j's data
            pass x to the next client

A pass is a real client -> client transfer over the world's network (through their edge
servers). With one client per edge server and R = 1, CHFL performs the same updates (tested).
With ``order: ring`` and P < N clients per round the ring rotates as CHFL's does: round t takes
the P clients after those of round t-1, so every client has its turn once in every N / P rounds.
On a mobile world (IoV, LEO) the P clients are drawn among those in coverage as the round starts,
and the model lives at an edge server between turns: a client receives it, trains and sends it
back to the edge server it is under; a client that drives off loses its turn's update, not the
model.
"""

from __future__ import annotations

from netfl.algorithms.base import Algorithm
from netfl.algorithms.chfl import visiting_order


class SFL(Algorithm):
    def run(self):
        spec, clients = self.spec, self.world.clients
        rng = self.stream("sampling")
        x = self.trainer.init_params()
        holder: str | None = None
        if self.evaluate(x, 0):
            return
        for t in range(1, spec.rounds + 1):
            started = self.env.now
            # on a mobile world, drawn among the clients in coverage as the round starts
            present = ([c for c in clients if self.world.edge_of(c) is not None]
                       if self.world.mobile else clients)
            for client in visiting_order(present, spec.clients_per_round, spec.order, rng,
                                         t - 1):
                if self.world.mobile:
                    x, holder = yield from self.turn_through_edge(client, x, holder, t)
                    continue
                holder = yield from self.carry_model(holder, client, t)
                if holder != client:
                    continue
                if (yield from self.local_compute(client, t, spec.local_steps)):
                    x = self.train_client(client, x)
            if self.world.mobile and self.env.now == started:  # nobody in coverage
                yield from self.wait_idle()
            if self.end_round(t, x):
                return

    def train_client(self, client: str, x):
        """K local steps of ``client`` from ``x``."""
        spec = self.spec
        return self.trainer.local_train(
            x, self.indices([client]), spec.local_steps, spec.lr, spec.batch_size,
            momentum=spec.momentum, weight_decay=spec.weight_decay)[0]

    def turn_through_edge(self, client: str, x, holder: str | None, t: int):
        """A client's turn where clients move: the edge server holding the model (``holder``;
        None before the first turn) sends it to ``client``, which trains and sends it back to
        the edge server it is under then. Returns (model, holder): the trained model at that
        edge server, or, where any step failed (a vehicle that drove off), the model as it was
        at ``holder``, whose copy stays there."""
        if (yield from self.carry_model(holder, client, t)) != client:
            return x, holder
        trained = self.train_client(client, x) if (
            yield from self.local_compute(client, t, self.spec.local_steps)) else x
        serving = self.world.edge_of(client)
        if serving is None or (yield from self.carry_model(client, serving, t)) != serving:
            return x, holder
        return trained, serving
