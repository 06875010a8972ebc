"""The algorithm base and the primitives every algorithm is built from.

An algorithm is one SimPy process, ``run()``, that reads like its paper's algorithm box. The
primitives here carry the simulation's physics so algorithms need not:

* ``send`` moves bytes over the network and reports whether they arrived;
* ``train_round`` has clients download a model, train (charged to the simulated clock by the
  device model) and upload, all in parallel, and returns the updates that arrived. Uploads are
  simulated first and real training runs afterwards for exactly the clients whose uploads arrived:
  message sizes never depend on the values sent, so this is exact, and work on lost updates is
  never wasted on the host;
* ``aggregate`` charges the weighted average to the aggregating node's processor;
* ``evaluate`` measures the global model (no simulated time) and says when to stop.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.algorithms.aggregation import data_weights, weighted_average
from netfl.compute.fleet import Fleet
from netfl.errors import TransferFailed
from netfl.network.transfer import Network
from netfl.scenario.sections import Stop
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import Aggregate, Evaluation, TraceBus, TrainEnd, TrainStart
from netfl.world.base import World


@dataclass
class Context:
    """Everything an algorithm may use, handed in by the Simulation (no globals)."""

    env: simpy.Environment
    world: World
    network: Network
    fleet: Fleet
    trainer: object  # TorchTrainer or FakeTrainer (see netfl.learn.trainer for the contract)
    streams: RandomStreams
    trace: TraceBus
    stop: Stop


@dataclass(frozen=True)
class RoundResult:
    """The clients whose updates arrived, their updated parameters and aggregation weights."""

    clients: list[str]
    updates: list
    weights: np.ndarray


class Algorithm:
    """Base class. Subclasses set ``spec`` fields in the scenario schema and write ``run()``."""

    def __init__(self, ctx: Context, spec):
        self.ctx, self.spec = ctx, spec
        self.env, self.world, self.trainer = ctx.env, ctx.world, ctx.trainer
        self._client_index = {name: i for i, name in enumerate(ctx.world.clients)}
        self.reached_target = False
        self.rounds_done = 0
        self.rounds_without_updates = 0

    def run(self) -> Generator:
        raise NotImplementedError

    # -------------------------------------------------------------------- primitives

    def send(self, src: str, dst: str, nbytes: float) -> Generator:
        """Transfer ``nbytes``; returns True if delivered, False if it failed (after retries)."""
        try:
            yield self.ctx.network.send(src, dst, nbytes)
        except TransferFailed:
            return False
        return True

    def train_round(self, server: str, clients: Sequence[str], params, round_: int,
                    steps: int | None = None) -> Generator:
        """Clients download ``params`` from ``server``, train ``steps`` local steps, upload.

        All clients run in parallel in simulated time; returns a RoundResult over the clients
        whose uploads arrived, with data-size weights normalized over them. A round in which no
        update arrives ends with a wait of ``idle_wait`` seconds.
        """
        steps = self.spec.local_steps if steps is None else steps
        jobs = [self.env.process(self._client_job(server, c, round_, steps)) for c in clients]
        yield self.env.all_of(jobs)
        arrived = [c for c, job in zip(clients, jobs, strict=True) if job.value]
        if not arrived:
            self.rounds_without_updates += 1
            yield self.env.timeout(self.spec.idle_wait)
        indices = [self._client_index[c] for c in arrived]
        updates = self.trainer.local_train(
            params, indices, steps, self.spec.lr, self.spec.batch_size,
            momentum=self.spec.momentum, weight_decay=self.spec.weight_decay) if arrived else []
        return RoundResult(arrived, updates, data_weights(self.trainer.client_sizes[indices]))

    def _client_job(self, server: str, client: str, round_: int, steps: int) -> Generator:
        """Download, train, upload for one client; returns whether the upload arrived."""
        payload = self.trainer.payload_bytes
        if not (yield from self.send(server, client, payload)):
            return False
        fleet = self.ctx.fleet
        samples = steps * self.trainer.samples_per_step(self._client_index[client],
                                                        self.spec.batch_size)
        duration = fleet.train_time_s(client, self.trainer.flops_per_sample, samples)
        started = self.env.now
        self.ctx.trace.emit(TrainStart(time_s=started, node=client, round=round_,
                                       samples=samples, duration_s=duration))
        yield from fleet.run_job(client, duration)
        ok = not fleet.dropped_since(client, started)
        self.ctx.trace.emit(TrainEnd(time_s=self.env.now, node=client, round=round_,
                                     duration_s=self.env.now - started, ok=ok))
        if not ok:
            return False
        return (yield from self.send(client, server, payload))

    def aggregate(self, node: str, updates: list, weights: np.ndarray, level: str,
                  round_: int) -> Generator:
        """Weighted average of ``updates`` at ``node``, charged to its processor."""
        duration = self.ctx.fleet.aggregation_time_s(node, self.trainer.num_params, len(updates))
        started = self.env.now
        yield from self.ctx.fleet.run_job(node, duration)
        self.ctx.trace.emit(Aggregate(time_s=self.env.now, node=node, round=round_, level=level,
                                      n_updates=len(updates), duration_s=self.env.now - started))
        return weighted_average(updates, weights)

    def evaluate(self, params, round_: int) -> bool:
        """Evaluate ``params`` after ``round_`` rounds; returns True when the run should stop."""
        accuracy, loss = self.trainer.evaluate(params)
        self.ctx.trace.emit(Evaluation(time_s=self.env.now, round=round_, accuracy=accuracy,
                                       loss=loss))
        target = self.ctx.stop.target_accuracy
        if target is not None and accuracy >= target:
            self.reached_target = True
        return self.reached_target and self.ctx.stop.at_target

    def end_round(self, round_: int, params) -> bool:
        """Book round ``round_`` as done and evaluate ``params`` when due (every ``eval_every``
        rounds and after the last); returns True when the run should stop."""
        self.rounds_done = round_
        due = round_ % self.spec.eval_every == 0 or round_ == self.spec.rounds
        return due and self.evaluate(params, round_)

    def sample_clients(self, clients: Sequence[str], count: int | None) -> list[str]:
        """``count`` clients uniformly without replacement (sampling stream), in client order."""
        if count is None or count >= len(clients):
            return list(clients)
        rng = self.ctx.streams.get("sampling")
        chosen = np.sort(rng.choice(len(clients), size=count, replace=False))
        return [clients[i] for i in chosen]
