"""Primitives of asynchronous algorithms: mailboxes, model versions, atomic mixes, timers and
managed background loops (docs/extending.md, "Asynchronous algorithms").

An aggregator's model lives in a ``ModelSlot`` with a version that counts the updates (or
buffers) applied to it. A client or edge that downloads it takes the version with it
(``Update.base_version``); when its update arrives the aggregator is at some later version,
and the difference is the update's staleness. Updates travel to an aggregator's ``Mailbox``
and are taken in arrival order (simultaneous arrivals in the order their events were
scheduled: SimPy's, deterministic for a scenario and seed); ``receive`` waits for the next one
without cancelling anything else, up to an optional timeout.

``mix`` and ``apply_model`` change a slot under its lock, after charging the aggregation to
the aggregator's processor, so two updates that arrive together are applied one after the
other, the second to the model the first left (a plug-in that read the model before its
processor charge ran lost one of them).

A client's real training (``train_later``) waits until its model is first needed (a mix, a
buffered step): every update waiting then is trained in one batched call, as a synchronous
round's clients are. Message sizes never depend on values, each client's batches come from
its own generator in its own order, and on the trainer's batch-invariant paths (the per-client
loop, the dense MLP path: ``trainer.batch_invariant``) a client's sums do not depend on who
shares the call, so this gives the same floats as training each at its arrival (tested); on
another path (vmap over a convolutional model, the default on a GPU) each is trained alone
when needed. With a compressor, whose draws follow the order of compressions, each is trained
and compressed at its arrival.

Loops an algorithm runs beside ``run()`` (a client's train-and-upload cycle, an edge's
forwarding loop) are started with ``background``: where ``run()`` returns, those still running
are cancelled where they are, their transfers and training counted as cancelled, not lost.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, replace

import simpy

from netfl.algorithms.primitive import RunOver, primitive
from netfl.algorithms.staleness import staleness_weight
from netfl.learn.compress import NoCompression
from netfl.sim.trace import ModelMixed, Selected


@dataclass(frozen=True)
class Update:
    """What a client (or an edge) sends an aggregator: its model ``params`` trained from the
    aggregator's version ``base_version``, with its data ``weight`` (samples); ``base``, where
    given, is the model it started from (for rules that step by the change, params - base)."""

    source: str
    params: object
    base_version: int
    weight: float = 1.0
    base: object = None
    arrived_s: float | None = None  # stamped by the mailbox it is delivered to

    def change(self):
        """params - base: what the source's work changed (needs ``base``)."""
        if self.base is None:
            raise ValueError(f"the update from {self.source} carries no base model")
        return model_of(self.params) - self.base

    def as_change(self) -> Update:
        """This update carrying its change (params - base) instead of its model, for
        ``apply_buffer`` (FedBuff's step adds changes)."""
        return replace(self, params=self.change(), base=None)


class Pending:
    """A model still to be trained (``AsyncPrimitives.train_later``); ``value()`` trains it,
    with every other one waiting, in one batched call."""

    __slots__ = ("_pool", "_result")

    def __init__(self, pool: TrainingPool):
        self._pool, self._result = pool, None

    def value(self):
        if self._result is None:
            self._pool.train_all()
        return self._result


def _arrived(update: Update) -> float:
    return -1.0 if update.arrived_s is None else update.arrived_s


def model_of(params):
    """``params``, trained first where it is a ``Pending`` model."""
    return params.value() if isinstance(params, Pending) else params


class TrainingPool:
    """The trainings waiting to be needed, in the order they were asked for."""

    def __init__(self, trainer, spec):
        self.trainer, self.spec = trainer, spec
        self.waiting: list[tuple] = []  # (pending, client row, base, then, solver key)

    def add(self, row: int, base, then, solver: dict) -> Pending:
        pending = Pending(self)
        self.waiting.append((pending, row, base, then, tuple(sorted(solver.items()))))
        return pending

    def train_all(self) -> None:
        """Train every waiting model: one call per set of solver options, each in the order
        they were asked for (a client's trainings in its own order: its batches are drawn
        from its own generator, and on a batch-invariant path its sums do not depend on who
        shares the call, so the floats are those of training each alone)."""
        waiting, self.waiting = self.waiting, []
        spec = self.spec
        # a path whose per-client floats depend on who shares the call (vmap over a
        # convolutional model) trains each alone: the floats of training each at its arrival
        if getattr(self.trainer, "batch_invariant", True):
            calls = {}  # solver options -> their entries, in order
            for entry in waiting:
                calls.setdefault(entry[4], []).append(entry)
            calls = list(calls.values())
        else:
            calls = [[entry] for entry in waiting]
        for mine in calls:
            trained = self.trainer.local_train(
                [w[2] for w in mine], [w[1] for w in mine], spec.local_steps, spec.lr,
                spec.batch_size, momentum=spec.momentum, weight_decay=spec.weight_decay,
                **dict(mine[0][4]))
            for (pending, _row, _base, then, _key), model in zip(mine, trained, strict=True):
                pending._result = model if then is None else then(model)


class ModelSlot:
    """An aggregator's model and its version; changed only under its lock (``mix``,
    ``apply_model``)."""

    def __init__(self, env: simpy.Environment, node: str, params):
        self.node, self.params, self.version = node, params, 0
        self.lock = simpy.Resource(env, capacity=1)


class Mailbox:
    """Updates that arrived at a node, in arrival order."""

    def __init__(self, env: simpy.Environment, node: str):
        self.node, self._env = node, env
        self._store = simpy.Store(env)

    def deliver(self, update: Update) -> None:
        """Put an arrived update in the box (no simulated time: the transfer was charged),
        stamped with its arrival time."""
        self._store.put(replace(update, arrived_s=self._env.now))

    def take_all(self) -> list[Update]:
        """Every update waiting in the box, in arrival order, and the box emptied (no
        simulated time: for an aggregator that steps at times of its own, a deadline's)."""
        waiting = list(self._store.items)
        self._store.items.clear()
        return waiting

    def __len__(self) -> int:
        return len(self._store.items)


class Ticker:
    """Ticks every ``period_s`` from its start (``AsyncPrimitives.every``)."""

    def __init__(self, env: simpy.Environment, period_s: float):
        self.env, self.period_s, self.start_s = env, period_s, env.now
        self.tick, self.missed = 0, 0

    def next(self) -> Generator:
        """Wait for the next tick; returns its number (1, 2, ...)."""
        due = int((self.env.now - self.start_s) // self.period_s) + 1
        self.missed += max(0, due - self.tick - 1)
        self.tick = due
        yield self.env.timeout(self.start_s + due * self.period_s - self.env.now)
        return self.tick


class AsyncPrimitives:
    """The asynchronous primitives, mixed into ``Algorithm``."""

    _over = False  # run() has returned: the loops cancelled then may start nothing more
    _stopped: set = frozenset()  # those loops' processes

    _pool: TrainingPool | None = None  # the trainings waiting to be needed (train_later)

    def model_slot(self, node: str, params) -> ModelSlot:
        """A versioned model held at ``node`` (version 0: ``params``)."""
        return ModelSlot(self.env, node, params)

    def mailbox(self, node: str) -> Mailbox:
        """An empty mailbox for updates arriving at ``node``."""
        return Mailbox(self.env, node)

    @primitive
    def receive(self, box: Mailbox, timeout: float | None = None) -> Generator:
        """The next update in ``box``, waiting for one to arrive; None where ``timeout``
        simulated seconds pass first (the wait is then withdrawn: no update is lost)."""
        get = box._store.get()
        if timeout is None:
            return (yield get)
        timer = self.env.timeout(timeout)
        yield get | timer
        if get.triggered:
            return get.value
        get.cancel()
        return None

    def select(self, server: str, clients: list[str], round_: int) -> None:
        """Record that ``server`` chose ``clients`` to train now (participation.csv's
        ``selected``), where an algorithm starts clients itself instead of by ``exchange``."""
        if self._over and self.env.active_process in self._stopped:
            raise RunOver(f"{server} selected clients after the run ended")
        self._trace.emit(Selected(time_s=self.env.now, server=server, round=round_,
                                  count=len(clients)))

    def train_later(self, client: str, base, then=None, **solver):
        """The model ``client`` makes from ``base`` with the scenario's ``local_steps`` of SGD,
        as its server receives it (``then`` applied: FedBuff's ``lambda m: m - base``): a
        ``Pending`` model, trained when first needed together with every other one waiting
        (see the module docstring). ``solver``: the local solver's options (``prox_mu``)."""
        if self._pool is None:
            self._pool = TrainingPool(self.trainer, self.spec)
        if isinstance(self.compressor, NoCompression):
            return self._pool.add(self._client_index[client], base, then, solver)
        spec = self.spec
        trained = self.trainer.local_train(base, self.indices([client]), spec.local_steps,
                                           spec.lr, spec.batch_size, momentum=spec.momentum,
                                           weight_decay=spec.weight_decay, **solver)[0]
        model = self.compressed_towards(trained, base)
        return model if then is None else then(model)

    def staleness(self, slot: ModelSlot, update: Update) -> int:
        """How many versions ``slot`` moved on since ``update`` left it."""
        return slot.version - update.base_version

    def staleness_weight(self, staleness: int, spec, rule_offset: int = 0) -> float:
        """s(staleness + offset) of a ``staleness`` section (kind constant, polynomial or
        hinge; its a, b and offset): netfl.algorithms.staleness. The section's ``offset`` where
        it sets one, else ``rule_offset``: the rule's own count of a fresh update (1 for
        FedAsync's mix, whose s takes t - tau; 0 for FedBuff's buffer)."""
        offset = getattr(spec, "offset", None)
        return staleness_weight(spec.kind, staleness + (rule_offset if offset is None
                                                        else offset),
                                getattr(spec, "a", 0.5), getattr(spec, "b", 0.0))

    @primitive
    def mix(self, slot: ModelSlot, update: Update, rate: float, level: str) -> Generator:
        """FedAsync's update at ``slot``: x <- (1 - rate) x + rate x_new, atomically (under
        the slot's lock, after one two-model aggregation is charged to its node's processor).
        Returns the new version."""
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"a mixing rate is in (0, 1], got {rate!r}")
        with slot.lock.request() as turn:
            yield turn
            yield from self.charge_aggregation(slot.node, 2, level, slot.version + 1)
            arrival = slot.version
            slot.params = (1.0 - rate) * slot.params + rate * model_of(update.params)
            slot.version += 1
            self._trace.emit(ModelMixed(
                time_s=self.env.now, node=slot.node, source=update.source,
                base_version=update.base_version, version=slot.version,
                staleness=arrival - update.base_version, weight=rate,
                arrived_s=_arrived(update)))
        self.book.note_progress()
        return slot.version

    @primitive
    def apply_model(self, slot: ModelSlot, new_params: Callable, updates: list[Update],
                    weights: list[float], level: str) -> Generator:
        """A buffered step at ``slot`` (FedBuff's): under its lock, after aggregating
        ``len(updates)`` vectors is charged to its node, ``slot.params = new_params(current)``;
        each update is traced with its staleness and ``weights``. Returns the new version."""
        with slot.lock.request() as turn:
            yield turn
            yield from self.charge_aggregation(slot.node, len(updates) + 1, level,
                                               slot.version + 1)
            arrival = slot.version
            slot.params = new_params(slot.params)
            slot.version += 1
            self._trace_mixed(slot, updates, weights, arrival)
        self.book.note_progress()
        return slot.version

    @primitive
    def average_into(self, slot: ModelSlot, updates: list[Update], weights,
                     level: str) -> Generator:
        """A synchronous step at ``slot``: under its lock, after averaging ``len(updates)``
        models is charged to its node (as ``aggregate``), ``slot.params`` = sum_i weights_i x
        updates_i.params (the trainer's ``weighted_average``: the same floats as
        ``aggregate``); each update traced with its staleness and weight. Returns the new
        version."""
        with slot.lock.request() as turn:
            yield turn
            yield from self.charge_aggregation(slot.node, len(updates), level,
                                               slot.version + 1)
            arrival = slot.version
            slot.params = self.trainer.weighted_average([model_of(u.params) for u in updates],
                                                        weights)
            slot.version += 1
            self._trace_mixed(slot, updates, weights, arrival)
        self.book.note_progress()
        return slot.version

    @primitive
    def adopt(self, slot: ModelSlot, params) -> Generator:
        """``slot`` takes ``params`` from above (an edge server the cloud's model): a new
        version, so updates under way from the model it held count it in their staleness;
        nothing charged (the download was). Returns the new version."""
        with slot.lock.request() as turn:
            yield turn
            slot.params = params
            slot.version += 1
        return slot.version

    def _trace_mixed(self, slot: ModelSlot, updates, weights, arrival: int) -> None:
        for update, weight in zip(updates, weights, strict=True):
            self._trace.emit(ModelMixed(
                time_s=self.env.now, node=slot.node, source=update.source,
                base_version=update.base_version, version=slot.version,
                staleness=arrival - update.base_version, weight=float(weight),
                arrived_s=_arrived(update)))

    @primitive
    def within(self, work: Generator, seconds: float) -> Generator:
        """Run ``work`` (a primitive's generator: a send, a computation) for at most
        ``seconds`` of simulated time. Returns ``(True, its value)`` where it ended in time,
        ``(False, None)`` where it was then cancelled (``cancel``: a transfer's bytes and a
        computation's time so far counted as cancelled). ``seconds`` is positive (check the
        time left before making ``work``)."""
        if not seconds > 0:
            raise ValueError(f"within() needs a positive time, got {seconds!r}")
        process = self.env.process(work)
        yield process | self.env.timeout(seconds)
        if process.triggered:
            return True, process.value
        self.cancel(process)
        return False, None

    @primitive
    def apply_buffer(self, slot: ModelSlot, updates: list[Update], weights: list[float],
                     server_lr: float, level: str) -> Generator:
        """FedBuff's server step at ``slot`` from a buffer of updates that carry deltas:
        x <- x + server_lr x (sum of weight_i Delta_i) / len(updates), through
        ``apply_model``. Returns the new version."""
        step = server_lr / len(updates) * sum(
            w * model_of(u.params) for w, u in zip(weights, updates, strict=True))
        return (yield from self.apply_model(slot, lambda x: x + step, updates, weights, level))

    def background(self, loop: Generator) -> simpy.Process:
        """Run ``loop`` beside ``run()``; where ``run()`` returns and it still runs, it is
        cancelled where it is (``stop_background``)."""
        process = self.env.process(loop)
        self._background.append(process)
        return process

    def every(self, period_s: float) -> Ticker:
        """A periodic timer from now: ``yield from ticker.next()`` waits for its next tick, at
        k x ``period_s`` after it was made whatever the work between took (a tick the work
        overran is skipped, and counted in ``ticker.missed``)."""
        if not period_s > 0:
            raise ValueError(f"a timer's period is positive, got {period_s!r}")
        return Ticker(self.env, period_s)

    def stop_background(self) -> int:
        """Cancel every background loop still running (their transfers and training count as
        cancelled) and let their cancellations take effect, without advancing simulated time;
        from then on a primitive (or ``select``) called by one of them ends it (``RunOver``): a
        loop whose cancelled transfer returned False does not start another. Returns how many
        were cancelled."""
        alive = [p for p in self._background if p.is_alive]
        self._over, self._stopped = True, set(alive)
        for process in alive:
            self.cancel(process)
        while any(p.is_alive for p in alive) and self.env.peek() <= self.env.now:
            self.env.step()
        self._background.clear()
        return len(alive)
