"""Primitives for rounds of clients: an exchange (download, local compute, upload for many
clients at once, optionally until the first K updates or a deadline), one client's part of it,
waiting for some of many processes, cancelling, and a round with real training. Mixed into
netfl.algorithms.base.Algorithm, whose ``__init__`` sets what they use."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.cohort import plan_cohort, run_cohort
from netfl.algorithms.primitive import defuse, primitive
from netfl.learn.compress import NoCompression
from netfl.sim.trace import Selected


@dataclass(frozen=True)
class RoundResult:
    """The clients whose updates arrived, their updated parameters and aggregation weights."""

    clients: list[str]
    updates: list
    weights: np.ndarray


class ClientRounds:
    """exchange, client_update, wait_for, cancel, train_round, compressed_towards."""

    @primitive
    def exchange(self, server: str, clients: Sequence[str], round_: int, steps: int,
                 first: int | None = None, deadline: float | None = None) -> Generator:
        """Clients download the model from ``server`` (one broadcast where it broadcasts),
        compute for ``steps`` local steps and upload (compressed), all in parallel in
        simulated time. Returns the clients whose uploads arrived, in ``clients``' order;
        when none did, waits ``idle_wait`` first (``wait_idle``).

        With ``links.closed_form``, an exchange whose clients have their links and devices to
        themselves is advanced in closed form (netfl.algorithms.cohort), to the same times.

        ``first=K`` returns once K uploads arrived, ``deadline`` (simulated seconds from now)
        at that time at the latest; the clients still under way are then cancelled
        (``cancel``: their transfers release their share at once and are counted as
        cancelled, their device time stops)."""
        self._trace.emit(Selected(time_s=self.env.now, server=server, round=round_,
                                  count=len(clients)))
        if first is None and deadline is None and self._network.closed_form_classes and (
                not self.broadcasts_from(server)):
            plan = plan_cohort(self, server, clients, steps)
            if plan is not None:
                self.book.closed_form_exchanges += 1
                return (yield from run_cohort(self, plan, round_, steps))
        received = None
        if clients and self.broadcasts_from(server):
            received = yield from self.broadcast(server, clients)
        jobs = [self.env.process(self.client_update(server, c, round_, steps, received))
                for c in clients]
        if first is None and deadline is None:
            yield self.env.all_of(jobs)
        else:
            yield from self.wait_for(jobs, first, deadline)
        arrived = [c for c, job in zip(clients, jobs, strict=True)
                   if job.triggered and job.ok and job.value]
        if not arrived:
            yield from self.wait_idle()
        return arrived

    @primitive
    def client_update(self, server: str, client: str, round_: int, steps: int,
                      received: set | None = None) -> Generator:
        """One client's part of an exchange: download the model (unless ``received`` says who
        got a broadcast), ``steps`` local steps on its device, upload. Returns whether the
        upload arrived."""
        if received is not None:
            if client not in received:
                return False
        elif not (yield from self.send(server, client, self.download_bytes)):
            return False
        if not (yield from self.local_compute(client, round_, steps)):
            return False
        return (yield from self.send_up(client, server))

    @primitive
    def wait_for(self, processes: Sequence[simpy.Process], count: int | None = None,
                 deadline: float | None = None) -> Generator:
        """Wait until ``count`` of ``processes`` have returned a true value (all of them have
        ended, when ``count`` is None or cannot be reached) or ``deadline`` simulated seconds
        have passed, whichever is first; then ``cancel`` those still running. Returns the
        processes that returned a true value, in order."""
        done, state = self.env.event(), {"hits": 0, "left": len(processes)}

        def ended(event) -> None:
            state["left"] -= 1
            state["hits"] += bool(event.ok and event.value)
            if not done.triggered and (state["left"] == 0 or (
                    count is not None and state["hits"] >= count)):
                done.succeed()

        for process in processes:
            if process.callbacks is None:  # processed already
                ended(process)
            else:
                process.callbacks.append(ended)
        if not done.triggered and (state["left"] == 0 or count == 0):
            done.succeed()
        waits = [done] if deadline is None else [done, self.env.timeout(deadline)]
        yield self.env.any_of(waits)
        for process in processes:
            self.cancel(process)
        return [p for p in processes if p.triggered and p.ok and p.value]

    def cancel(self, process: simpy.Process, cause: str = "cancelled") -> None:
        """Stop ``process`` where it is (nothing where it has ended): a transfer under way in
        it is cancelled (its share of every link is released at once; its bytes on the wire
        count as cancelled), device time under way stops. The interruption is not an error of
        the run. Processes it started itself run on."""
        if not process.is_alive:
            return
        process.interrupt(cause)
        process.callbacks.append(defuse)

    @primitive
    def train_round(self, server: str, clients: Sequence[str], params, round_: int,
                    steps: int | None = None, lr: float | None = None,
                    first: int | None = None, deadline: float | None = None,
                    **solver) -> Generator:
        """``exchange`` (with its ``first`` and ``deadline``), then real local training of
        exactly the clients whose uploads arrived.

        ``solver``: options of the local solver beyond the scenario's SGD (``prox_mu``:
        FedProx's proximal weight; see the trainer's ``local_train``).
        Returns a RoundResult with their updated parameters, as the server reconstructs them
        (params + the compressed update), and data-size weights normalized over them.
        """
        steps = self.spec.local_steps if steps is None else steps
        arrived = yield from self.exchange(server, clients, round_, steps, first, deadline)
        indices = self.indices(arrived)
        updates = self.trainer.local_train(
            params, indices, steps, self.spec.lr if lr is None else lr, self.spec.batch_size,
            momentum=self.spec.momentum, weight_decay=self.spec.weight_decay,
            **solver) if arrived else []
        if not isinstance(self.compressor, NoCompression):  # (the updates themselves if not)
            updates = [self.compressed_towards(u, params) for u in updates]
        return RoundResult(arrived, updates, data_weights(self.data_sizes(arrived)))

    def compressed_towards(self, model, reference):
        """What the receiver reconstructs of ``model`` sent compressed: reference +
        C(model - reference) for update compressors (QSGD), C(model) for model compressors
        (int8), the model itself without compression."""
        if isinstance(self.compressor, NoCompression):
            return model
        if self.compressor.applies_to == "model":
            return self.compressor.compress(model)
        return reference + self.compressor.compress(model - reference)
