"""Fed-CHS: sequential FL across edge servers (Algorithm 1 of "Sequential Federated Learning in
Hierarchical Architecture", ../shared/seeds/000_8caa492600db5cc0.txt).

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
visit counts, as the appendix describes: the serving satellite m(t) trains with the users that
see it; ``world.handover_margin`` before it would set (stop seeing every user), even mid-round
(the exchange under way is abandoned), it hands the model to the satellite in view with the
longest remaining window, over an ISL route or through a gateway. A failed hand-over leaves
the model with the last satellite that held it: it keeps training while it still sees users
and tries again after each round, and once it sees nobody it tries again every
``world.delay_update``; that wait, and waiting for the next rise
while no satellite sees a user, are reported as ``model_idle_s``.
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


def abandon(process) -> None:
    """Stop a running process and forget it: its Interrupt is not an error (its clients'
    transfers and training, started as processes of their own, run out on their own)."""
    process.interrupt("hand-over due")
    process.callbacks.append(_defuse)


def _defuse(event) -> None:
    if not event.ok:
        event.defused = True


def rank_next(candidates: Sequence[str], visits: Mapping[str, int],
              data: Mapping[str, float], order: Mapping[str, int]) -> list[str]:
    """Candidates in the order Fed-CHS's two-step rule prefers them: least visited first, then
    largest data, then lowest index. The first is m(t+1); the rest are fallbacks."""
    return sorted(candidates, key=lambda m: (visits[m], -data[m], order[m]))


class FedCHS(Algorithm):
    model_idle_s = 0.0

    def run(self):
        if getattr(self.world, "orbital", False):
            yield from self.run_orbital()
            return
        spec, world = self.spec, self.world
        graph = world.edge_graph()
        order = {m: i for i, m in enumerate(world.edge_servers)}
        neighbours = {m: list(graph.neighbors(m)) for m in world.edge_servers}
        visits = dict.fromkeys(world.edge_servers, 0)
        rng = self.ctx.streams.get("sampling")
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

    def run_orbital(self):
        """Fed-CHS over a constellation: visibility-driven hand-overs (module docstring)."""
        spec, world = self.spec, self.world
        w = self.trainer.init_params()
        if self.evaluate(w, 0):
            return
        m = yield from self.wait_for_visibility()
        for t in range(1, spec.rounds + 1):
            if m is not None and world.remaining_s(m, self.env.now) <= (
                    world.spec.handover_margin):
                m = yield from self.orbital_handover(m, t)
            if m is None:
                self.stopped_by = "out_of_contacts"
                return
            # the hand-over is a timed event: due a margin before m sets, even mid-round (where
            # m is already within the margin, no better satellite was in view: m trains on)
            due = world.remaining_s(m, self.env.now) - world.spec.handover_margin
            deadline = self.env.timeout(due) if due > 0 else None
            w = yield from self.train_cluster(m, w, t, deadline=deadline)
            if self.end_round(t, w):
                return

    def orbital_handover(self, m: str, t: int):
        """Hand the model from ``m`` to the satellite in view with the longest remaining
        window (the next ones as fallbacks); returns the new holder, ``m`` itself where no
        better satellite is in view, or None when no satellite will rise again."""
        world = self.world
        while True:
            now = self.env.now
            left = world.remaining_s(m, now)
            candidates = [s for s in world.visible_satellites(now)
                          if s != m and world.remaining_s(s, now) > left]
            if not candidates:
                if left > 0:
                    return m
                return (yield from self.wait_for_visibility(holder=m, round_=t))
            routable = [s for s in candidates if self.ctx.network.route(m, s) is not None]
            if routable:
                holder = yield from self.move_model(m, routable, t)
                if holder != m:
                    return holder
            if left > 0:  # m still sees users: it keeps serving and tries again next round
                return m
            # no route now (m has no ISL neighbour and no gateway), or the hand-over failed,
            # and m sees nobody: it keeps the model and tries again when the geometry moved on
            started = self.env.now
            yield self.env.timeout(world.spec.delay_update)
            self.model_idle_s += self.env.now - started

    def wait_for_visibility(self, holder: str | None = None, round_: int = 0):
        """Wait (idle) until a satellite sees a user; returns it (after the model has moved
        there from ``holder``), or None when none will."""
        world = self.world
        started = self.env.now
        while not world.visible_satellites(self.env.now):
            rise = world.next_rise_s(self.env.now)
            if rise is None:
                self.model_idle_s += self.env.now - started
                return None
            yield self.env.timeout(max(rise - self.env.now, 0.0) + 1e-6)
        self.model_idle_s += self.env.now - started
        best = world.visible_satellites(self.env.now)
        if holder is None:
            return best[0]
        return (yield from self.move_model(holder, best, round_))

    def summary_extras(self) -> dict:
        if getattr(self.world, "orbital", False):
            return {"model_idle_s": self.model_idle_s}
        return {}

    def cluster_data(self) -> dict[str, float]:
        """D_A,m: the data held by each ES's cluster now."""
        sizes = self.trainer.client_sizes
        return {m: float(sizes[self.indices(self.world.clients_of(m))].sum())
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
                abandon(process)
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
                gamma = data_weights(self.trainer.client_sizes[self.indices(arrived)])
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

