"""The algorithm base and the primitives every algorithm is built from.

An algorithm is one SimPy process, ``run()``, that reads like its paper's algorithm box. The
primitives here carry the simulation's physics so algorithms need not, and they are all an
algorithm uses: netfl's own algorithms are written with exactly these (a test checks that no
algorithm module reaches past them), as a user's plug-in is (docs/extending.md).

Moving models: ``send``, ``send_up``, ``download`` (the scenario's broadcast medium where
there is one), ``broadcast``, ``move_model``, ``carry_model``, ``reachable``,
``wait_for_contact`` (until a client is attached to some edge server).
Rounds of clients: ``exchange`` (download, local compute, upload for many clients at once;
optionally until the first K updates or a deadline, the rest cancelled), ``client_update``
(one client's part), ``train_round`` (``exchange`` and the real training of exactly the
clients whose uploads arrived: message sizes never depend on the values sent, so this is
exact), ``wait_for`` and ``cancel``.
Asynchrony (netfl.algorithms.asynchrony): ``model_slot``, ``mailbox``, ``receive``, ``mix``,
``apply_model``, ``staleness``, ``staleness_weight``, ``every``, ``background``.
Devices: ``local_compute``, ``occupy``, ``charge_aggregation``, ``aggregate``,
``device_speed``, ``training_time_s``. Data: ``data_sizes``, ``label_counts``, ``indices``.
Randomness: ``stream``. The run: ``evaluate``, ``end_round``, ``charge_cost``, ``wait_idle``,
``stop`` (the bookkeeping behind them is netfl.algorithms.bookkeeping).

Every primitive that takes simulated time is a generator: ``yield from self.send(...)``. One
called and never run (``self.send(...)`` without ``yield from``) is an error naming the
algorithm, raised at its next primitive or at the end of the run.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.algorithms.asynchrony import AsyncPrimitives
from netfl.algorithms.bookkeeping import RunBook, all_finite
from netfl.algorithms.moves import ModelMoves
from netfl.algorithms.primitive import primitive
from netfl.algorithms.rounds import ClientRounds, RoundResult
from netfl.compute.fleet import Fleet
from netfl.compute.timing import train_time_s
from netfl.errors import SimulationError
from netfl.learn.compress import make_compressor
from netfl.network.transfer import Network
from netfl.scenario.sections import Stop
from netfl.sim.clock import RandomStreams
from netfl.sim.signals import interrupted
from netfl.sim.trace import Aggregate, Busy, TraceBus, TrainEnd, TrainStart
from netfl.world.base import World

__all__ = ["Algorithm", "Context", "RoundResult", "all_finite"]


@dataclass
class Context:
    """Everything the base needs, handed in by the Simulation (no globals). Algorithms use
    the primitives, not these objects."""

    env: simpy.Environment
    world: World
    network: Network
    fleet: Fleet
    trainer: object  # TorchTrainer or FakeTrainer (see netfl.learn.trainer for the contract)
    streams: RandomStreams
    trace: TraceBus
    stop: Stop


class Algorithm(ModelMoves, ClientRounds, AsyncPrimitives):
    """Base class. Subclasses set ``Spec`` in the scenario schema and write ``run()``, a
    generator (a SimPy process)."""

    MESSAGE_FACTOR = 1

    def __init__(self, ctx: Context, spec):
        self.ctx, self.spec = ctx, spec
        self.env, self.world, self.trainer = ctx.env, ctx.world, ctx.trainer
        self._network, self._fleet, self._streams, self._trace = (
            ctx.network, ctx.fleet, ctx.streams, ctx.trace)
        self._client_index = {name: i for i, name in enumerate(ctx.world.clients)}
        self._forgotten: list[str] = []
        self._background: list[simpy.Process] = []  # loops beside run() (AsyncPrimitives)
        # late-bound: a subclass's (or a test's) own test() and trainer count
        self.book = RunBook(ctx.trace, ctx.stop, lambda: self.env.now,
                            lambda *args: self.test(*args),
                            lambda: getattr(self.trainer, "test_labels", None),
                            lambda: ctx.streams.get("evaluation"))
        self.compressor = make_compressor(getattr(spec, "compression", None),
                                          ctx.streams.seed_for("compression"))
        # A message carries MESSAGE_FACTOR vectors of the model's size (2 where momentum travels
        # with the model); downloads are float32, uploads compressed as the scenario says.
        self.download_bytes = self.trainer.payload_bytes * self.MESSAGE_FACTOR
        self.upload_bytes = (self.compressor.payload_bytes(self.trainer.num_params)
                             * self.MESSAGE_FACTOR)

    # "module:Class" of the variant that runs on a constellation (a paper's appendix), if any
    ORBITAL_VARIANT: str | None = None

    @classmethod
    def for_world(cls, world: World) -> type[Algorithm]:
        """The class that runs this algorithm on ``world``: ``ORBITAL_VARIANT`` on a
        constellation where it is set (Fed-CHS's), this class otherwise. Named by reference,
        so the variant, a subclass, and its base import in one direction only."""
        if world.orbital and cls.ORBITAL_VARIANT is not None:
            module, _, name = cls.ORBITAL_VARIANT.partition(":")
            return getattr(importlib.import_module(module), name)
        return cls

    def run(self) -> Generator:
        raise NotImplementedError

    def start(self) -> simpy.Process:
        """``run()`` as the SimPy process of the run; a clear error where ``run`` is not a
        generator."""
        process = self.run()
        if not inspect.isgenerator(process):
            raise SimulationError(
                f"algorithm {self.spec.kind!r} ({type(self).__module__}."
                f"{type(self).__qualname__}): run() must be a generator (use 'yield' or "
                f"'yield from' in it; a primitive such as self.exchange is run with "
                f"'yield from'), got {type(process).__name__}")
        return self.env.process(process)

    def _report_forgotten(self) -> None:
        if interrupted():  # a signal cut a primitive's call short: the run ends as interrupted
            raise KeyboardInterrupt("interrupted")
        names = ", ".join(dict.fromkeys(self._forgotten))
        raise SimulationError(
            f"algorithm {self.spec.kind!r} ({type(self).__module__}.{type(self).__qualname__})"
            f" called self.{names}(...) but never ran it: a primitive that takes simulated "
            f"time is a generator; write 'yield from self.{self._forgotten[0]}(...)'")

    # -------------------------------------------------------------------- data and devices

    def indices(self, clients: Sequence[str]) -> list[int]:
        """The trainer's row of each client (the order of ``world.clients``)."""
        return [self._client_index[c] for c in clients]

    def data_sizes(self, clients: Sequence[str] | None = None) -> np.ndarray:
        """The number of training samples each of ``clients`` holds (every client's, in
        ``world.clients`` order, when None)."""
        sizes = self.trainer.client_sizes
        return sizes if clients is None else sizes[self.indices(clients)]

    def label_counts(self) -> np.ndarray:
        """Samples per class of every client: an array (clients x classes)."""
        return self.trainer.partition.counts

    def device_speed(self, node: str) -> tuple[float, float]:
        """``node``'s device: its effective FLOP/s and its straggler slowdown factor."""
        return self._fleet.flops(node), self._fleet.slowdown(node)

    def training_time_s(self, client: str, steps: int) -> float:
        """The simulated seconds ``steps`` local steps take on ``client``'s device at its
        nominal speed (its FLOP/s and straggler slowdown; no jitter, queue or outage): what a
        scheduler that knows the devices predicts."""
        samples = steps * self.trainer.samples_per_step(self._client_index[client],
                                                        self.spec.batch_size)
        flops, slowdown = self.device_speed(client)
        return train_time_s(self.trainer.train_flops_per_sample, samples, flops, slowdown, 1.0)

    def stream(self, name: str, *keys: int) -> np.random.Generator:
        """The run's named random stream ``name`` (the same generator on every call); with
        ``keys``, an independent stream derived from it."""
        return self._streams.derive(name, *keys) if keys else self._streams.get(name)

    @primitive
    def local_compute(self, client: str, round_: int, steps: int,
                      samples: int | None = None) -> Generator:
        """Charge ``steps`` local steps (``samples`` samples in all; by default steps x the
        client's batch) to ``client``'s device; returns False if it dropped out meanwhile (its
        work is then void). Cancelled, it books the time it ran and stops."""
        fleet = self._fleet
        if samples is None:
            samples = steps * self.trainer.samples_per_step(self._client_index[client],
                                                            self.spec.batch_size)
        duration = fleet.train_time_s(client, self.trainer.train_flops_per_sample, samples)
        started = self.env.now
        self.book.local_steps_done += steps
        if self._trace.wants(TrainStart):  # the event table's; no counter needs it
            self._trace.emit(TrainStart(time_s=started, node=client, round=round_,
                                        steps=steps, samples=samples, duration_s=duration))
        try:
            yield from fleet.run_job(client, duration)
        except simpy.Interrupt:
            self._trace.emit(TrainEnd(time_s=self.env.now, node=client, round=round_,
                                      duration_s=self.env.now - started, ok=False,
                                      cancelled=True))
            raise
        ok = not fleet.dropped_since(client, started)
        self._trace.emit(TrainEnd(time_s=self.env.now, node=client, round=round_,
                                  duration_s=self.env.now - started, ok=ok))
        return ok

    @primitive
    def occupy(self, node: str, seconds: float, what: str = "device") -> Generator:
        """Occupy ``node``'s device for ``seconds`` (queued behind its other jobs) with work
        of kind ``what`` (a Busy record; ``group_operation`` counts as such in a round's
        critical path, anything else as compute); returns False if it dropped out meanwhile
        (the work is then void)."""
        started = self.env.now
        yield from self._fleet.run_job(node, seconds)
        self._trace.emit(Busy(time_s=self.env.now, node=node, duration_s=self.env.now - started,
                              what=what))
        return not self._fleet.dropped_since(node, started)

    @primitive
    def charge_aggregation(self, node: str, n_updates: int, level: str,
                           round_: int) -> Generator:
        """Charge aggregating ``n_updates`` vectors to ``node``'s processor and trace it."""
        duration = self._fleet.aggregation_time_s(node, self.trainer.num_params, n_updates)
        started = self.env.now
        yield from self._fleet.run_job(node, duration)
        self._trace.emit(Aggregate(time_s=self.env.now, node=node, round=round_, level=level,
                                   n_updates=n_updates, duration_s=self.env.now - started))

    @primitive
    def aggregate(self, node: str, updates: list, weights: np.ndarray, level: str,
                  round_: int) -> Generator:
        """Weighted average of ``updates`` at ``node``, charged to its processor (the
        trainer's ``weighted_average``: aggregation's, on its threads where it is large)."""
        yield from self.charge_aggregation(node, len(updates), level, round_)
        return self.trainer.weighted_average(updates, weights)

    def sample_clients(self, clients: Sequence[str], count: int | None) -> list[str]:
        """``count`` clients uniformly without replacement (sampling stream), in client order."""
        if count is None or count >= len(clients):
            return list(clients)
        chosen = np.sort(self.stream("sampling").choice(len(clients), size=count,
                                                        replace=False))
        return [clients[i] for i in chosen]

    # -------------------------------------------------------------------- the run

    def evaluate(self, params, round_: int) -> bool:
        """Evaluate ``params`` on the full test set after ``round_`` rounds (a metrics row; no
        simulated time); returns True when the run should stop."""
        if self._forgotten:
            self._report_forgotten()
        self.book.record_evaluation(round_, *self.test(params),
                                    check_target=self.book.target_check_due())
        return self.book.stopped_by is not None

    def end_round(self, round_: int, params) -> bool:
        """Book round ``round_`` as done: ``params`` is the model the algorithm would deploy
        now. Checks it against the target (every round: time, bytes and steps to the target
        are exact to one update), and records a metrics row when due (every ``eval_every``
        rounds, after the last, when a budget is spent) or when the target is first reached.
        Returns True when the run should stop."""
        if self._forgotten:
            self._report_forgotten()
        return self.book.end_round(round_, params, self.spec.eval_every, self.spec.rounds)

    def record_final(self) -> None:
        """The run is over: a last metrics row where its last model has none
        (bookkeeping's ``record_final``)."""
        if self._forgotten:
            self._report_forgotten()
        self.book.record_final()

    def test(self, params, subset=None) -> tuple[float, float]:
        """(accuracy, loss) of what ``params`` stands for on the test set (on the test samples
        at indices ``subset`` when given): the global model here; an algorithm with several
        models (FedCLAR's clusters) says how it is measured."""
        if subset is None:  # trainers without test labels need not take a subset
            return self.trainer.evaluate(params)
        return self.trainer.evaluate(params, subset)

    def charge_cost(self, node: str, kind: str, cost_s: float, round_: int) -> None:
        """Book ``cost_s`` seconds of learning cost of ``kind`` against ``node`` (counts
        towards ``stop.max_cost``)."""
        self.book.charge_cost(node, kind, cost_s, round_)

    @primitive
    def wait_idle(self) -> Generator:
        """Nothing arrived: count a round without updates and wait ``idle_wait``."""
        self.book.rounds_without_updates += 1
        yield self.env.timeout(self.spec.idle_wait)

    def stop(self, reason: str) -> None:
        """End the run with ``reason`` (its ``stop_reason``) once ``run()`` returns; a reason
        given before (the target, a budget) stands."""
        if self.book.stopped_by is None:
            self.book.stopped_by = reason

    def summary_extras(self) -> dict:
        """Algorithm-specific figures for summary.json (none by default)."""
        return {}

    # the run's counters, as summary.json reports them
    rounds_done = property(lambda self: self.book.rounds_done)
    local_steps_done = property(lambda self: self.book.local_steps_done)
    stopped_by = property(lambda self: self.book.stopped_by)
    diverged_round = property(lambda self: self.book.diverged_round)
    reached_target = property(lambda self: self.book.reached_target)
    cost_spent = property(lambda self: self.book.cost_spent)
    rounds_without_updates = property(lambda self: self.book.rounds_without_updates)
