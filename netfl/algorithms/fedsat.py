"""Ground-assisted FL with satellites as clients: FedSat and the paper's FedAvg and FedAsync
(Razmi, Matthiesen, Dekorsy and Popovski, "Ground-Assisted Federated Learning in LEO Satellite
Constellations", IEEE WCL 2022, arXiv:2109.01348), with FedSatSchedule's scheduling ("Scheduling
for Ground-Assisted Federated Learning in LEO Satellite Constellations", EUSIPCO 2022,
arXiv:2206.01952). The ground stations are one parameter server: the cloud behind them.

Satellite k (the protocol of Sec. III-A; Algorithm 1 on board):
    loop:
        wait for a contact with some ground station                 (wait_for_contact)
        if it holds an update not yet sent: push (x_k, tau)          -> the server, which
                                                                      answers when it has
                                                                      taken it
        if SCHEDULE(k, t): receive (x_i, i); local_steps of SGD on f + lambda/2 ||x - x_i||^2
                           from x_i on board, in contact or not      -> an update to push
        else:              leave this pass (no new connection until the next one)
    Connections start at a contact's start. A computation that ends in the pass its model came
    in is returned at the next pass (exchanges_per_pass: one; a model next-pass held for this
    pass excepted), or at once (many).

Algorithm 3 (operation: asynchronous), the server on each update (x_k, tau):
    i <- i + 1;  x_i <- SERVERUPDATE(i, tau, x_{i-1}, x_k)
        unrolled (FedSat, eq. 7): x_i = x_{i-1} - (n_k / n)(x_k' - x_k), x_k' <- x_k, where
                                  x_k' is k's previous update (x_0 before its first)
        fedasync (eq. 4, 6):      x_i = (1 - a) x_{i-1} + a x_k, a = alpha s(t_i - t_tau)
    SCHEDULE(k, t): every-contact: true. next-pass (FedSatSchedule): true where k was told at
    its last connection to take the model at this pass; otherwise, where k's next pass lasts at
    least its training time t_l(k) (set - rise >= t_l), false, and k takes the model at that
    pass's start; else true.
Algorithm 2 (operation: synchronous, the paper's FedAvg): epoch i schedules S_i (every satellite,
    or clients_per_round of them); one of S_i gets x_i at a contact and returns x_k at a later
    one; when all have returned, x_{i+1} = sum_k n_k / (sum_{S_i} n) x_k (eq. 3), and the
    satellite whose update closed the epoch takes x_{i+1} in the same connection.

Readings (docs/models/fedsat.md): the previous updates x_k' start at x_0 (the paper does not
say; x = sum_k n_k / n x_k' then holds from the start); the ground stations share one model
(the paper has one station); transfers take their time on the contact links (the paper hides
communication delay); an upload a contact's end cuts is pushed again at the next contact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator

from netfl.algorithms.asynchrony import Update, model_of
from netfl.algorithms.base import Algorithm
from netfl.algorithms.staleness import time_hinge_weight


class FedSat(Algorithm):
    def run(self):
        spec, cloud = self.spec, self.world.cloud
        self.slot = self.model_slot(cloud, self.trainer.init_params())
        if self.evaluate(self.slot.params, 0):
            return
        self.box = self.mailbox(cloud)
        sizes = self.data_sizes()
        self.share = dict(zip(self.world.clients, sizes / sizes.sum(), strict=True))  # n_k / n
        self.previous = {k: self.slot.params for k in self.world.clients}  # x_k'
        self.made_at = {0: self.env.now}  # version -> when the server made it (eq. 6's t_i)
        self.pending: dict[str, Update] = {}
        self.answer: dict[str, object] = {}  # k -> the event of its update being taken
        self.to_send: set[str] = set()  # synchronous: S_i, those yet to get the epoch's model
        self.at_next_pass: set[str] = set()  # next-pass: told to take the model then
        self.held_model = False  # the model scheduled() just gave was held for this pass
        self.counts = Counter()
        for k in self.world.clients:
            self.background(self.satellite(k))
        if spec.operation == "synchronous":
            yield from self.epochs()
        else:
            yield from self.arrivals()

    # ----------------------------------------------------------------------- server

    def arrivals(self) -> Generator:
        """Algorithm 3: each update as its satellite connects."""
        spec, slot = self.spec, self.slot
        while slot.version < spec.rounds:
            update = yield from self.receive(self.box)
            if spec.server_update == "unrolled":
                version = yield from self.unrolled(update)
            else:
                version = yield from self.mix(slot, update, self.mixing_rate(update), "cloud")
            self.made_at[version] = self.env.now
            self.answer.pop(update.source).succeed()
            if self.end_round(version, slot.params):
                return

    def unrolled(self, update: Update) -> Generator:
        """eq. (7): x <- x - (n_k / n)(x_k' - x_k), x_k' <- x_k."""
        k, share = update.source, self.share[update.source]

        def step(x):
            new = model_of(update.params)
            moved = x - share * (self.previous[k] - new)
            self.previous[k] = new
            return moved

        return (yield from self.apply_model(self.slot, step, [update], [share], "cloud"))

    def mixing_rate(self, update: Update) -> float:
        """alpha s(t_i - t_tau) (eqs. 4 and 6): the time since the version it started from."""
        spec = self.spec
        if spec.staleness is None:
            return spec.alpha
        hinge = (1.0 + spec.staleness.epsilon) * self.world.orbital_period_s
        a = spec.staleness.a if spec.staleness.a is not None else 1.0 / (5.0 * hinge)
        elapsed = self.env.now - self.made_at[update.base_version]
        return spec.alpha * time_hinge_weight(elapsed, hinge, a)

    def epochs(self) -> Generator:
        """Algorithm 2: an epoch waits for every scheduled satellite to connect twice; the one
        whose update closes it stays connected for the next epoch's model (lines 16-18)."""
        spec, slot = self.spec, self.slot
        closing = None  # the satellite whose update closed the last epoch, still connected
        while slot.version < spec.rounds:
            scheduled = self.sample_clients(self.world.clients, spec.clients_per_round)
            self.select(self.world.cloud, scheduled, slot.version + 1)
            self.to_send, waiting, received = set(scheduled), set(scheduled), []
            if closing is not None:
                self.answer.pop(closing).succeed()
                closing = None
            while waiting:
                update = yield from self.receive(self.box)
                waiting.discard(update.source)
                received.append(update)
                if waiting:
                    self.answer.pop(update.source).succeed()
                else:
                    closing = update.source
            weights = [u.weight for u in received]
            total = sum(weights)
            version = yield from self.average_into(slot, received,
                                                   [w / total for w in weights], "cloud")
            self.made_at[version] = self.env.now
            if self.end_round(version, slot.params):
                return

    # -------------------------------------------------------------------- satellite

    def satellite(self, k: str) -> Generator:
        spec, cloud, slot = self.spec, self.world.cloud, self.slot
        while True:
            yield from self.wait_for_contact(k)
            if not self.world.in_contact(k, self.env.now):  # its contact ends now: the next
                rise = self.world.next_contact_s(k, self.env.now)
                if rise is None:
                    return  # the contact plan has no more passes for it
                yield self.env.timeout(rise - self.env.now)
                continue
            if k in self.pending:
                if not (yield from self.send_up(k, cloud)):
                    self.counts["uploads_retried"] += 1  # cut by the contact's end: next one
                    yield from self.leave_pass(k)
                    continue
                self.answer[k] = self.env.event()
                self.box.deliver(self.pending.pop(k))
                yield self.answer[k]
            if not self.scheduled(k):
                yield from self.leave_pass(k)
                continue
            held = self.held_model  # read before any other satellite's SCHEDULE runs
            base, version = slot.params, slot.version
            if spec.operation == "asynchronous":
                self.select(cloud, [k], version)
            if not (yield from self.send(cloud, k, self.download_bytes)):
                if spec.operation == "synchronous":
                    self.to_send.add(k)  # it still needs the epoch's model
                elif held:
                    self.at_next_pass.add(k)  # the held model goes at its next pass
                yield from self.leave_pass(k)
                continue
            got_at = self.env.now
            if (yield from self.local_compute(k, version, spec.local_steps)):
                self.pending[k] = Update(k, self.train_later(k, base, prox_mu=spec.prox),
                                         version, self.share[k])
            if spec.exchanges_per_pass == "one" and not held and self.same_pass(k, got_at):
                yield from self.leave_pass(k)  # one exchange a pass: returned at the next

    def scheduled(self, k: str) -> bool:
        """SCHEDULE(k, t): whether ``k`` takes the model at this connection (``held_model``:
        the model next-pass held for this pass)."""
        spec = self.spec
        self.held_model = False
        if spec.operation == "synchronous":
            if k in self.to_send:
                self.to_send.discard(k)
                return True
            return False
        if spec.schedule == "every-contact":
            return True
        if k in self.at_next_pass:
            self.at_next_pass.discard(k)
            self.held_model = True
            return True
        world, now = self.world, self.env.now
        rise = world.next_contact_s(k, now + world.contact_left_s(k, now) + 1e-6)
        if rise is not None and (world.contact_left_s(k, rise)
                                 >= self.training_time_s(k, spec.local_steps)):
            self.at_next_pass.add(k)
            self.counts["models_held_for_next_pass"] += 1
            return False
        return True

    def same_pass(self, k: str, then: float) -> bool:
        """Whether ``k`` is still in the contact it was in at ``then``."""
        now = self.env.now
        return self.world.in_contact(k, now) and then + self.world.contact_left_s(k, then) > now

    def leave_pass(self, k: str) -> Generator:
        """Wait out ``k``'s current contact (the connection terminated for this pass)."""
        left = self.world.contact_left_s(k, self.env.now)
        yield self.env.timeout(left)

    def summary_extras(self) -> dict:
        return {"uploads_retried": self.counts["uploads_retried"],
                "models_held_for_next_pass": self.counts["models_held_for_next_pass"]}
