"""FedAsync ("Asynchronous Federated Optimization", Xie, Koyejo and Gupta, arXiv:1903.03934,
Algorithm 1), with the cloud as server:

    server (updater):  for t = 1..T:
                           receive (x_new, tau) from any worker
                           (dropped where t - 1 - tau > max_staleness)
                           alpha_t <- alpha x s(t - tau)
                           x_t <- (1 - alpha_t) x_{t-1} + alpha_t x_new
    worker:            receive (x_t, t); tau <- t
                       H local steps on g(x) = f(x) + rho/2 ||x - x_t||^2 from x_t
                       push (x_{tau,H}, tau)

The paper's scheduler "periodically triggers training tasks on some idle workers"; netfl keeps
``concurrency`` workers busy, each replaced as it finishes by an idle one drawn uniformly
(netfl.algorithms.async_clients). Staleness (updates.csv's) is the server's version at arrival
minus the version the worker downloaded, t - 1 - tau: 0 for an update from the latest model;
s takes t - tau, one more (the staleness section's offset, 1 by default).
"""

from __future__ import annotations

from netfl.algorithms.async_clients import AsyncClients


class FedAsync(AsyncClients):
    def run(self):
        spec = self.spec
        self.dropped_stale = 0
        opened = self.open_server()
        if opened is None:  # the initial evaluation ended the run
            return
        slot, box = opened
        while slot.version < spec.rounds:
            update = yield from self.receive(box)
            staleness = self.staleness(slot, update)
            if spec.max_staleness is not None and staleness > spec.max_staleness:
                self.dropped_stale += 1
                continue
            rate = spec.alpha * self.staleness_weight(staleness, spec.staleness, rule_offset=1)
            version = yield from self.mix(slot, update, rate, "cloud")
            if self.end_round(version, slot.params):
                return

    def client_message(self, client, base):
        """The worker's model after H steps on its regularized objective."""
        return self.train_client(client, base, prox_mu=self.spec.rho)

    def summary_extras(self) -> dict:
        return {"updates_dropped_stale": self.dropped_stale}
