"""The algorithm base and the primitives every algorithm is built from.

An algorithm is one SimPy process, ``run()``, that reads like its paper's algorithm box. The
primitives here carry the simulation's physics so algorithms need not:

* ``send`` moves bytes over the network and reports whether they arrived; ``send_up`` does so
  for an upload, compressed as the scenario says;
* ``train_round`` has clients download a model, train (charged to the simulated clock by the
  device model) and upload, all in parallel, and returns the updates that arrived. Uploads are
  simulated first and real training runs afterwards for exactly the clients whose uploads arrived:
  message sizes never depend on the values sent, so this is exact, and work on lost updates is
  never wasted on the host;
* ``aggregate`` charges the weighted average to the aggregating node's processor;
* ``evaluate`` measures the global model (no simulated time) and says when to stop;
* ``end_round`` books a round: the model it is handed is checked against the target on every
  round (on a screening subset, confirmed on the full test set), so time, bytes and steps to
  the target are exact to one update whatever ``eval_every`` says.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.algorithms.aggregation import data_weights
from netfl.compute.fleet import Fleet
from netfl.errors import TransferFailed
from netfl.learn.compress import NoCompression, make_compressor
from netfl.learn.screening import passes_screen, screening_stages
from netfl.network.transfer import Network
from netfl.scenario.sections import Stop
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import (
    Aggregate,
    Cost,
    Evaluation,
    HandOver,
    TargetReached,
    TraceBus,
    TrainEnd,
    TrainStart,
)
from netfl.world.base import World


def all_finite(params) -> bool:
    """Whether every number of a model (a torch tensor, a numpy array, or a list or dict of
    them, as an algorithm with several models deploys) is finite."""
    if isinstance(params, dict):
        return all(all_finite(p) for p in params.values())
    if isinstance(params, list | tuple):
        return all(all_finite(p) for p in params)
    if hasattr(params, "isfinite"):  # a torch tensor (torch is not imported for fake runs)
        return bool(params.isfinite().all())
    return bool(np.isfinite(np.asarray(params, dtype=float)).all())


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

    MESSAGE_FACTOR = 1

    def __init__(self, ctx: Context, spec):
        self.ctx, self.spec = ctx, spec
        self.env, self.world, self.trainer = ctx.env, ctx.world, ctx.trainer
        self._client_index = {name: i for i, name in enumerate(ctx.world.clients)}
        self.reached_target = False
        self.rounds_done = 0
        self.rounds_without_updates = 0
        self.local_steps_done = 0
        self.cost_spent = 0.0  # eq. (5) of Group-FEL, for the algorithms that charge it
        # "target_accuracy", "max_local_steps", "max_cost", "diverged"
        self.stopped_by: str | None = None
        self.diverged_round: int | None = None  # the first round whose model was not finite
        self._screen: list | None = None  # the screen's stages, made on first use
        self._deployed: tuple | None = None  # (round, model) last handed to end_round
        self._last_row_round: int | None = None
        self.compressor = make_compressor(getattr(spec, "compression", None),
                                          ctx.streams.seed_for("compression"))
        # A message carries MESSAGE_FACTOR vectors of the model's size (2 where momentum travels
        # with the model); downloads are float32, uploads compressed as the scenario says.
        self.download_bytes = self.trainer.payload_bytes * self.MESSAGE_FACTOR
        self.upload_bytes = (self.compressor.payload_bytes(self.trainer.num_params)
                             * self.MESSAGE_FACTOR)

    def run(self) -> Generator:
        raise NotImplementedError

    # -------------------------------------------------------------------- primitives

    def send(self, src: str, dst: str, nbytes: float, raw_nbytes: float | None = None,
             tag: str | None = None) -> Generator:
        """Transfer ``nbytes``; returns True if delivered, False if it failed (after retries).
        ``raw_nbytes`` is the size before compression (for accounting); ``tag`` overrides the
        accounting tag (default: the tiers of the two ends)."""
        try:
            yield from self.ctx.network.transfer(src, dst, nbytes, tag=tag,
                                                 raw_nbytes=raw_nbytes)
        except TransferFailed:
            return False
        return True

    def broadcast(self, src: str, receivers: Sequence[str]) -> Generator:
        """Broadcast the model (``download_bytes``) from ``src`` to ``receivers`` at once;
        returns the set of receivers that got it (see Network.broadcast)."""
        results = yield self.ctx.network.broadcast(src, list(receivers), self.download_bytes)
        return {r for r, report in results.items() if report is not None}

    def send_up(self, src: str, dst: str) -> Generator:
        """Send a model or update upwards: compressed by ``compression``, counted both ways
        (``send``'s own generator, not one around it)."""
        return self.send(src, dst, self.upload_bytes, self.download_bytes)

    def exchange(self, server: str, clients: Sequence[str], round_: int, steps: int) -> Generator:
        """Clients download the model from ``server``, compute for ``steps`` local steps and
        upload (compressed), all in parallel in simulated time. Returns the clients whose
        uploads arrived; when none did, waits ``idle_wait`` first. Where ``server`` broadcasts
        (an RSU with ``medium.downlink: broadcast``) the model goes out once to all of them."""
        received = None
        if clients and self.ctx.network.broadcasts_from(server):
            received = yield from self.broadcast(server, clients)
        jobs = [self.env.process(self._client_job(server, c, round_, steps, received))
                for c in clients]
        yield self.env.all_of(jobs)
        arrived = [c for c, job in zip(clients, jobs, strict=True) if job.value]
        if not arrived:
            self.rounds_without_updates += 1
            yield self.env.timeout(self.spec.idle_wait)
        return arrived

    def train_round(self, server: str, clients: Sequence[str], params, round_: int,
                    steps: int | None = None, lr: float | None = None,
                    **solver) -> Generator:
        """``exchange``, then real local training of exactly the clients whose uploads arrived.

        ``solver``: options of the local solver beyond the scenario's SGD (``prox_mu``:
        FedProx's proximal weight; see the trainer's ``local_train``).
        Returns a RoundResult with their updated parameters, as the server reconstructs them
        (params + the compressed update), and data-size weights normalized over them.
        """
        steps = self.spec.local_steps if steps is None else steps
        arrived = yield from self.exchange(server, clients, round_, steps)
        indices = self.indices(arrived)
        updates = self.trainer.local_train(
            params, indices, steps, self.spec.lr if lr is None else lr, self.spec.batch_size,
            momentum=self.spec.momentum, weight_decay=self.spec.weight_decay,
            **solver) if arrived else []
        updates = [self.compressed_towards(u, params) for u in updates]
        return RoundResult(arrived, updates, data_weights(self.trainer.client_sizes[indices]))

    def compressed_towards(self, model, reference):
        """What the receiver reconstructs of ``model`` sent compressed: reference +
        C(model - reference) for update compressors (QSGD), C(model) for model compressors
        (int8), the model itself without compression."""
        if isinstance(self.compressor, NoCompression):
            return model
        if self.compressor.applies_to == "model":
            return self.compressor.compress(model)
        return reference + self.compressor.compress(model - reference)

    def indices(self, clients: Sequence[str]) -> list[int]:
        return [self._client_index[c] for c in clients]

    def _client_job(self, server: str, client: str, round_: int, steps: int,
                    received: set | None = None) -> Generator:
        """Download (unless ``received`` says who got a broadcast), train, upload for one
        client; returns whether the upload arrived."""
        if received is not None:
            if client not in received:
                return False
        elif not (yield from self.send(server, client, self.download_bytes)):
            return False
        if not (yield from self.local_compute(client, round_, steps)):
            return False
        return (yield from self.send_up(client, server))

    def local_compute(self, client: str, round_: int, steps: int,
                      samples: int | None = None) -> Generator:
        """Charge ``steps`` local steps (``samples`` samples in all; by default steps x the
        client's batch) to ``client``'s device; returns False if it dropped out meanwhile (its
        work is then void)."""
        fleet = self.ctx.fleet
        if samples is None:
            samples = steps * self.trainer.samples_per_step(self._client_index[client],
                                                            self.spec.batch_size)
        duration = fleet.train_time_s(client, self.trainer.flops_per_sample, samples)
        started = self.env.now
        self.local_steps_done += steps
        if self.ctx.trace.wants(TrainStart):  # the event table's; no counter needs it
            self.ctx.trace.emit(TrainStart(time_s=started, node=client, round=round_,
                                           steps=steps, samples=samples, duration_s=duration))
        yield from fleet.run_job(client, duration)
        ok = not fleet.dropped_since(client, started)
        self.ctx.trace.emit(TrainEnd(time_s=self.env.now, node=client, round=round_,
                                     duration_s=self.env.now - started, ok=ok))
        return ok

    def charge_aggregation(self, node: str, n_updates: int, level: str, round_: int) -> Generator:
        """Charge aggregating ``n_updates`` vectors to ``node``'s processor and trace it."""
        duration = self.ctx.fleet.aggregation_time_s(node, self.trainer.num_params, n_updates)
        started = self.env.now
        yield from self.ctx.fleet.run_job(node, duration)
        self.ctx.trace.emit(Aggregate(time_s=self.env.now, node=node, round=round_, level=level,
                                      n_updates=n_updates, duration_s=self.env.now - started))

    def aggregate(self, node: str, updates: list, weights: np.ndarray, level: str,
                  round_: int) -> Generator:
        """Weighted average of ``updates`` at ``node``, charged to its processor (the
        trainer's ``weighted_average``: aggregation's, on its threads where it is large)."""
        yield from self.charge_aggregation(node, len(updates), level, round_)
        return self.trainer.weighted_average(updates, weights)

    def evaluate(self, params, round_: int) -> bool:
        """Evaluate ``params`` on the full test set after ``round_`` rounds (a metrics row; no
        simulated time); returns True when the run should stop."""
        self._record_evaluation(round_, *self.test(params))
        return self.stopped_by is not None

    def _record_evaluation(self, round_: int, accuracy: float, loss: float) -> None:
        """Emit the Evaluation record, and TargetReached when it is the first to reach the
        target (stopping the run where ``stop.at_target`` says so)."""
        self.ctx.trace.emit(Evaluation(time_s=self.env.now, round=round_, accuracy=accuracy,
                                       loss=loss))
        self._last_row_round = round_
        if not math.isfinite(loss):
            self._diverged(round_)
        target = self.ctx.stop.target_accuracy
        if target is not None and not self.reached_target and accuracy >= target:
            self.reached_target = True
            self.ctx.trace.emit(TargetReached(time_s=self.env.now, round=round_,
                                              accuracy=accuracy,
                                              local_steps=self.local_steps_done))
            if self.ctx.stop.at_target:
                self.stopped_by = "target_accuracy"

    def record_final(self) -> None:
        """A last metrics row for the model of the last completed round, where the run stopped
        outside ``end_round`` (at ``stop.max_sim_time``, or out of contacts) and that round has
        none yet: final_accuracy is then the accuracy of the model at the stop. Stamped at the
        stop time."""
        if self._deployed is not None and self._deployed[0] != self._last_row_round:
            self._record_evaluation(self._deployed[0], *self.test(self._deployed[1]))

    def screen_for_target(self, params) -> tuple[float, float] | None:
        """Whether the update ``params`` may have reached the target: None when its accuracy
        on the screening subset is more than the margin below the target (or there is no
        target, or it was reached before); otherwise its (accuracy, loss) on the full test set,
        which decides (netfl.learn.screening)."""
        target = self.ctx.stop.target_accuracy
        if target is None or self.reached_target:
            return None
        if self._screen is None:
            self._screen = self._screening_stages()
        if not passes_screen(self._screen, target, lambda chosen: self.test(params, chosen)[0]):
            return None
        return self.test(params)

    def _screening_stages(self) -> list:
        """The screen's stages (netfl.learn.screening.screening_stages); none where the trainer
        has no test labels (the fake trainer, whose evaluation is free) or the subsets would be
        the whole test set."""
        labels = getattr(self.trainer, "test_labels", None)
        if labels is None:
            return []
        return screening_stages(labels, self.ctx.stop.target_screen_samples,
                                self.ctx.stop.target_accuracy, self.ctx.streams.get("evaluation"))

    def charge_cost(self, node: str, kind: str, cost_s: float, round_: int) -> None:
        """Book ``cost_s`` seconds of learning cost of ``kind`` against ``node``."""
        self.cost_spent += cost_s
        self.ctx.trace.emit(Cost(time_s=self.env.now, node=node, round=round_, kind=kind,
                                 cost_s=cost_s))

    def budget_spent(self) -> str | None:
        """The stop budget this run has used up ("max_local_steps", "max_cost"), if any."""
        stop = self.ctx.stop
        if stop.max_local_steps is not None and self.local_steps_done >= stop.max_local_steps:
            return "max_local_steps"
        if stop.max_cost is not None and self.cost_spent >= stop.max_cost:
            return "max_cost"
        return None

    def test(self, params, subset=None) -> tuple[float, float]:
        """(accuracy, loss) of what ``params`` stands for on the test set (on the test samples
        at indices ``subset`` when given): the global model here; an algorithm with several
        models (FedCLAR's clusters) says how it is measured."""
        if subset is None:  # trainers without test labels need not take a subset
            return self.trainer.evaluate(params)
        return self.trainer.evaluate(params, subset)

    def end_round(self, round_: int, params) -> bool:
        """Book round ``round_`` as done: ``params`` is the model the algorithm would deploy
        now. Checks it against the target (every round: time, bytes and steps to the target
        are exact to one update), and records a metrics row when due (every ``eval_every``
        rounds, after the last, when a budget is spent) or when the target is first reached.
        Returns True when the run should stop."""
        self.rounds_done = round_
        self._deployed = (round_, params)
        spent = self.budget_spent()
        due = round_ % self.spec.eval_every == 0 or round_ == self.spec.rounds or spent
        if self.diverged_round is None and not all_finite(params):
            self._diverged(round_)
            # a run that stops here ends with a row that shows it (loss NaN); a tolerant one
            # records rows as it would have
            due = due or self.stopped_by == "diverged"
        measured = self.screen_for_target(params)
        crossed = measured is not None and measured[0] >= self.ctx.stop.target_accuracy
        if due or crossed:
            self._record_evaluation(round_, *(measured or self.test(params)))
        stop = self.stopped_by is not None
        if spent and not stop:
            self.stopped_by = spent
        return stop or spent is not None

    def _diverged(self, round_: int) -> None:
        """The model stopped being finite (a learning rate too high, an exploding update):
        every later number would be noise. Stop (``stop_reason: diverged``) unless the
        scenario tolerates it (``stop.tolerate_divergence``)."""
        if self.diverged_round is None:
            self.diverged_round = round_
        if not self.ctx.stop.tolerate_divergence and self.stopped_by is None:
            self.stopped_by = "diverged"

    def summary_extras(self) -> dict:
        """Algorithm-specific figures for summary.json (none by default)."""
        return {}

    def carry_model(self, holder: str | None, node: str, round_: int) -> Generator:
        """Bring the model to ``node`` (no transfer where it is there, or nowhere yet: the
        initial model starts anywhere). Returns the node that holds it afterwards."""
        if holder is None or holder == node:
            return node
        return (yield from self.move_model(holder, [node], round_))

    def move_model(self, holder: str, candidates: Sequence[str], round_: int) -> Generator:
        """Send the model from ``holder`` to the first candidate that receives it: each is tried
        ``spec.handover.attempts`` times, the next ones only with ``fallback``. Every attempt is
        a hand-over record. Returns the node that holds the model afterwards (``holder`` when
        all failed)."""
        handover = self.spec.handover
        for candidate in candidates if handover.fallback else candidates[:1]:
            if candidate == holder:
                return holder
            for _ in range(handover.attempts):
                ok = yield from self.send(holder, candidate, self.download_bytes)
                self.ctx.trace.emit(HandOver(time_s=self.env.now, src=holder, dst=candidate,
                                             round=round_, ok=ok))
                if ok:
                    return candidate
        return holder

    def sample_clients(self, clients: Sequence[str], count: int | None) -> list[str]:
        """``count`` clients uniformly without replacement (sampling stream), in client order."""
        if count is None or count >= len(clients):
            return list(clients)
        rng = self.ctx.streams.get("sampling")
        chosen = np.sort(rng.choice(len(clients), size=count, replace=False))
        return [clients[i] for i in chosen]
