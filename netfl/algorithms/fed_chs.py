"""Fed-CHS: sequential FL across edge servers (Algorithm 1 of Yan et al., "Sequential Federated
Learning in Hierarchical Architecture on Non-IID Datasets", IEEE Transactions on Mobile
Computing, 2025; arXiv:2408.09762).

    4: each ES m knows its clients N_m, its data D_A,m and its neighbours A_m; c = 0;
       m(0) drawn at random; w^0_0 = w^0
    5: for t = 0 .. T-1:
    7:   for k = 0 .. K-1:                                     (K = interactions)
    8:     ES m(t) broadcasts w^t_k to its clients
    9-11:  every client n computes grad f(w^t_k, xi_{n,k}) on a fresh mini-batch and uploads it
    13:    w^t_{k+1} = w^t_k - eta_k sum_n gamma_n grad f(w^t_k, xi_{n,k})        (eq. 5)
    16:  m(t+1) <- the neighbour in A_m(t) least visited (min c), ties -> most data D_A
    17:  w^{t+1}_0 = w^t_K is sent to ES m(t+1)
    18:  c(m(t+1)) += 1

gamma_n are data-size weights within the cluster, over the clients whose gradients arrived.

On a mobile world (IoV: RSUs are the ESs, passing vehicles their clients) the cluster N_m is
whoever is in the RSU's coverage at each exchange, and only uploads that complete before the
vehicle leaves count; D_A,m in the next-ES rule is the data in the candidate's coverage when
the rule is applied. On a static world both are the fixed clusters of the paper.

On an orbital world (LEO, the paper's Appendix D) lines 16-18 follow visibility instead of the
visit counts: the class FedCHSOrbital (fed_chs_leo.py).
The E variant of the paper's Fig. 2 (``local_steps`` E > 1): K / E exchanges per round, in each
of which clients take E SGD steps from w^t_k (rate eta at the block's first k) and upload their
model; the ES averages the models with the same gamma_n (for E = 1 that is exactly eq. 5).

Deviations (docs/models/fed-chs.md): failures (clients whose exchange fails are left out of the
sum; a failed hand-over is retried or passed to the next candidate, and when all fail the model
stays at m(t), whose count c then grows); ties after D_A go to the lower ES index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.base import Algorithm
from netfl.algorithms.schedules import learning_rate


def rank_next(candidates: Sequence[str], visits: Mapping[str, int],
              data: Mapping[str, float], order: Mapping[str, int]) -> list[str]:
    """Candidates in the order Fed-CHS's two-step rule prefers them: least visited first, then
    largest data, then lowest index. The first is m(t+1); the rest are fallbacks."""
    return sorted(candidates, key=lambda m: (visits[m], -data[m], order[m]))


class FedCHS(Algorithm):
    # the paper's Appendix D: visibility-driven hand-overs on a constellation
    ORBITAL_VARIANT = "netfl.algorithms.fed_chs_leo:FedCHSOrbital"

    def run(self):
        spec, world = self.spec, self.world
        graph = world.edge_graph()
        order = {m: i for i, m in enumerate(world.edge_servers)}
        neighbours = {m: list(graph.neighbors(m)) for m in world.edge_servers}
        visits = dict.fromkeys(world.edge_servers, 0)
        rng = self.stream("sampling")
        m = world.edge_servers[int(rng.integers(len(world.edge_servers)))]
        w = self.trainer.init_params()
        if self.evaluate(w, 0):
            return
        for t in range(1, spec.rounds + 1):
            w = yield from self.train_cluster(m, w, t)
            # w^{t+1}_0 = w^t_K is this visit's model: checked before it moves on, so time and
            # bytes to the target do not include the hand-over that follows the crossing
            if self.end_round(t, w):
                return
            ranked = rank_next(neighbours[m], visits, self.cluster_data(), order)
            m = yield from self.move_model(m, ranked, t)
            visits[m] += 1

    def cluster_data(self) -> dict[str, float]:
        """D_A,m: the data held by each ES's cluster now."""
        return {m: float(self.data_sizes(self.world.clients_of(m)).sum())
                for m in self.world.edge_servers}

    def train_cluster(self, es: str, w, t: int, deadline=None):
        """Lines 7-14: K local iterations of ES ``es``'s cluster, in K / E exchanges. With a
        ``deadline`` (an event: the hand-over is due), an exchange still under way when it
        fires is abandoned (its clients' work is lost) and the round ends with the model of
        the exchanges done, so the model leaves before the satellite sets."""
        spec, steps = self.spec, self.spec.local_steps
        for block in range(spec.interactions // steps):
            if deadline is not None and deadline.processed:  # (a timeout is "triggered" at once)
                break
            clients = self.world.clients_of(es)
            eta = learning_rate(spec.schedule, block * steps, spec.interactions, spec.lr)
            step = self._exchange_step(es, clients, w, t, eta)
            if deadline is None:
                w = yield from step
                continue
            process = self.env.process(step)
            yield self.env.any_of([process, deadline])
            if not process.triggered:  # the hand-over is due: leave this exchange behind
                # (its clients' transfers and training, processes of their own, run out)
                self.cancel(process, "hand-over due")
                break
            w = process.value
        return w

    def _exchange_step(self, es: str, clients, w, t: int, eta: float):
        """One exchange of the round (lines 8-13 for E = 1; E local steps otherwise); returns
        the model after it."""
        steps = self.spec.local_steps
        if steps == 1:
            arrived = yield from self.exchange(es, clients, t, 1)
            if arrived:
                gamma = data_weights(self.data_sizes(arrived))
                yield from self.charge_aggregation(es, len(arrived), "edge", t)
                step = self.aggregated_gradient(w, arrived, gamma)  # a new tensor: ours
                step *= eta  # in place, the same floats as eta * step
                w = w - step
        else:
            result = yield from self.train_round(es, clients, w, t, steps=steps, lr=eta)
            if result.updates:
                w = yield from self.aggregate(es, result.updates, result.weights, "edge", t)
        return w

    def aggregated_gradient(self, w, clients: Sequence[str], gamma):
        """sum_n gamma_n grad f(w, xi_n): one fused pass, or, with compression, each client's
        gradient quantized before the sum (quantization is not linear)."""
        indices, batch = self.indices(clients), self.spec.batch_size
        if self.compressor.name == "none":
            return self.trainer.weighted_gradient(w, indices, batch, gamma)
        grads = self.trainer.gradients(w, indices, batch)
        return sum(g_n * self.compressor.compress(g) for g, g_n in zip(grads, gamma, strict=True))

