"""The edge tier of hierarchical FL with an aggregation policy per tier (``hier-async``,
netfl/algorithms/hier_async.py): how one edge server turns the cloud's model into its own,
``edge_rounds`` (E) versions later, by the ``edge`` policy.

    edge cycle of edge server l, from the cloud's model w (an edge that has it adopts it):
        sync:      E times:  P clients train from w_l; w_l <- data-weighted average of all
        deadline:  E times:  P clients train from w_l; after ``deadline`` seconds (or all in):
                             drop:  the late ones are cancelled; average of the arrived
                             carry: the late ones go on; w_l <- w_l + sum_i p_i s(tau_i) Delta_i
                                    over the arrived and those carried from before
        buffered:  ``concurrency`` clients train at once, each replaced as it finishes;
                   every K arrivals  w_l <- w_l + eta_l sum_i s(tau_i) Delta_i / K
        async:     the same clients; each arrival  w_l <- (1 - a) w_l + a x_i,
                   a = alpha s(tau_i)                      until E versions were made

p_i = n_i / sum_j n_j over the updates taken, tau_i = the edge's versions since client i
downloaded its model (taking the cloud's model is one), Delta_i = x_i - (the model i started
from). A client's real training runs from the model it downloaded once its update is needed,
batched with the others waiting (message sizes do not depend on values). Buffered and async
edges start their clients only while inside a cycle, so what waits in
an edge's mailbox between cycles is bounded by ``concurrency``.

A ``cutoff`` (an absolute simulated time: the cloud's deadline, late edges dropped) bounds the
cycle: every wait in it ends there, and the transfer or training then under way is cancelled.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import simpy

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.asynchrony import Mailbox, ModelSlot, Update
from netfl.algorithms.base import Algorithm


@dataclass
class EdgeState:
    """An edge server's model, mailbox and client loops (buffered and async edges)."""

    slot: ModelSlot
    box: Mailbox
    open: simpy.Event  # triggered while a buffered or async edge is inside a cycle
    workers: list = field(default_factory=list)
    in_flight: int = 0  # its clients downloading, training or uploading now
    taken: simpy.Event | None = None  # triggered when the edge takes from its mailbox
    contributors: set = field(default_factory=set)
    buffer: list = field(default_factory=list)  # a buffered edge's arrivals not yet applied


class EdgeTier(Algorithm):
    """The edge cycle by policy (module docstring); ``hier_async.HierAsync`` runs the cloud."""

    def solver(self) -> dict:
        """The local solver's options beyond SGD: the proximal weight where one is set."""
        return {"prox_mu": self.spec.rho} if self.spec.rho else {}

    def edge_state(self, es: str, params) -> EdgeState:
        return EdgeState(self.model_slot(es, params), self.mailbox(es), self.env.event(),
                         taken=self.env.event())

    def edge_cycle_models(self, es: str, base, round_: int, cutoff: float | None) -> Generator:
        """E edge versions at ``es`` from the cloud's model ``base``: (w_l, D_l), the edge's
        model and the data of the clients that went into it this cycle; None where none did
        or the cutoff came first."""
        state, policy = self.edges[es], self.spec.edge
        yield from self.adopt(state.slot, base)
        state.contributors = set()
        target = state.slot.version + self.spec.edge_rounds  # (buffered and async)
        if policy.policy in ("buffered", "async"):
            state.open.succeed()
            self.start_workers(es, state)
            try:
                yield from self.take_arrivals(es, state, target, cutoff)
            finally:
                self.close_cycle(state)
        else:  # E rounds, as hierarchical FedAvg's (a round where nothing arrived included)
            for _ in range(self.spec.edge_rounds):
                left = None if cutoff is None else cutoff - self.env.now
                if left is not None and left <= 0:
                    break
                yield from self.edge_round(es, state, round_, left)
        if cutoff is not None and self.env.now >= cutoff:
            return None
        if not state.contributors:
            return None
        return state.slot.params, int(self.data_sizes(sorted(state.contributors)).sum())

    # ------------------------------------------------------------------ sync and deadline

    def edge_round(self, es: str, state: EdgeState, round_: int, left: float | None):
        """One sync or deadline round: P clients from the edge's model (one version, or none
        where nothing arrived)."""
        policy, slot = self.spec.edge, state.slot
        present = [c for c in self.world.primary_clients_of(es) if c not in self.training]
        clients = self.sample_clients(present, self.spec.clients_per_round)
        deadline = policy.deadline if policy.policy == "deadline" else None
        if left is not None:
            deadline = left if deadline is None else min(deadline, left)
        if policy.policy == "deadline" and policy.late == "carry":
            yield from self.carry_round(es, state, clients, deadline)
            return
        base, version = slot.params, slot.version
        result = yield from self.train_round(es, clients, base, round_, deadline=deadline,
                                             **self.solver())
        if result.updates:
            state.contributors.update(result.clients)
            updates = [Update(c, u, version, base=base)
                       for c, u in zip(result.clients, result.updates, strict=True)]
            yield from self.average_into(slot, updates, result.weights, "edge")

    def carry_round(self, es: str, state: EdgeState, clients, deadline) -> Generator:
        """A deadline round whose late clients go on: their updates are taken at a later
        step, weighted by staleness."""
        jobs = [self.background(self.client_cycle(es, c, state)) for c in clients]
        waits = [self.env.all_of(jobs)]
        if deadline is not None:
            waits.append(self.env.timeout(deadline))
        yield self.env.any_of(waits)
        updates = state.box.take_all()
        if not updates:
            yield from self.wait_idle()
            return
        state.contributors.update(u.source for u in updates)
        yield from self.take_step(state.slot, updates, self.spec.edge, "edge")

    def take_step(self, slot: ModelSlot, updates: list[Update], policy, level: str):
        """A sync or deadline step at ``slot`` from ``updates``: their data-weighted average
        where every one is fresh, else w <- w + sum_i p_i s(tau_i) Delta_i. Returns the new
        version."""
        shares = data_weights([u.weight for u in updates])
        stale = [self.staleness(slot, u) for u in updates]
        if not any(stale):
            return (yield from self.average_into(slot, updates, shares, level))
        weights = [p * self.staleness_weight(s, policy.staleness)  # FedBuff's count: fresh 0
                   for p, s in zip(shares, stale, strict=True)]
        change = self.trainer.weighted_average([u.change() for u in updates], weights)
        return (yield from self.apply_model(slot, lambda x: x + change, updates, weights,
                                            level))

    # ------------------------------------------------------------------ buffered and async

    def start_workers(self, es: str, state: EdgeState) -> None:
        """Workers for this cycle, so that ``concurrency`` (every client the edge serves at
        the cycle's start when null) keep a client training while it lasts; those carried
        from the last cycle count."""
        state.workers = [w for w in state.workers if w.is_alive]
        wanted = self.spec.concurrency or max(1, len(self.world.primary_clients_of(es)))
        for _ in range(wanted - len(state.workers)):
            state.workers.append(self.background(self.edge_worker(es, state)))

    def edge_worker(self, es: str, state: EdgeState) -> Generator:
        """One client after another, drawn uniformly from the edge's idle clients, while the
        edge's cycle lasts."""
        while state.open.triggered:
            if len(state.box):  # updates carried from the last cycle are taken first
                yield state.taken
                continue
            idle = [c for c in self.world.primary_clients_of(es) if c not in self.training]
            if not idle:  # (a worker's wait is not a round of the aggregator's: not counted)
                yield self.env.timeout(self.spec.idle_wait)
                continue
            client = self.sample_clients(idle, 1)[0]
            self.select(es, [client], state.slot.version)
            started = self.env.now
            yield from self.client_cycle(es, client, state)
            if self.env.now == started:
                yield self.env.timeout(self.spec.idle_wait)

    def close_cycle(self, state: EdgeState) -> None:
        """The cycle is over: its workers start no client. With ``late: drop`` the clients
        under way are cancelled (counted), and the updates that arrived but were not taken
        (waiting in the mailbox or a part-filled buffer) are dropped and counted: none
        crosses into the next cycle (Async-HFL's gateways abandon every job after K_g).
        With ``carry`` they finish into the mailbox and the buffer keeps what it has."""
        state.open = self.env.event()
        if self.spec.edge.late == "drop":
            for worker in state.workers:
                self.cancel(worker, "edge cycle over")
            self.dropped_late["edge"] += len(state.box.take_all()) + len(state.buffer)
            state.buffer.clear()

    def take_arrivals(self, es: str, state: EdgeState, target: int,
                      cutoff: float | None) -> Generator:
        """Buffered and async: take the edge's arrivals until its version reaches
        ``target``; or until the cutoff, or until none of its clients is under way and none
        arrived for ``idle_wait`` (nobody to serve: the cycle ends short, not forever)."""
        policy, slot, buffered = self.spec.edge, state.slot, state.buffer
        idle_wait = self.spec.idle_wait
        while slot.version < target:
            timeout = idle_wait if cutoff is None else min(idle_wait, cutoff - self.env.now)
            if timeout <= 0:
                return
            update = yield from self.receive(state.box, timeout)
            if update is None:
                if state.in_flight == 0 or (cutoff is not None and self.env.now >= cutoff):
                    return
                continue
            if not len(state.box):
                state.taken.succeed()
                state.taken = self.env.event()
            staleness = self.staleness(slot, update)
            if policy.policy == "async":
                if policy.max_staleness is not None and staleness > policy.max_staleness:
                    self.dropped_stale["edge"] += 1
                    continue
                state.contributors.add(update.source)
                rate = policy.alpha * self.staleness_weight(staleness, policy.staleness,
                                                            rule_offset=1)
                yield from self.mix(slot, update, rate, "edge")
                continue
            # weighted by its staleness at arrival, as FedBuff's server does
            buffered.append((update, self.staleness_weight(staleness, policy.staleness)))
            if len(buffered) == policy.buffer_size:
                state.contributors.update(u.source for u, _ in buffered)
                changes = [u.as_change() for u, _ in buffered]
                weights = [w for _, w in buffered]
                buffered.clear()
                yield from self.apply_buffer(slot, changes, weights, policy.server_lr, "edge")

    # ------------------------------------------------------------------ one client

    def client_cycle(self, es: str, client: str, state: EdgeState) -> Generator:
        """Download ``es``'s model, train ``local_steps``, upload; the update (really trained
        from the downloaded model) goes into the edge's mailbox. Returns whether it
        arrived."""
        slot, spec = state.slot, self.spec
        base, version = slot.params, slot.version
        self.training.add(client)
        state.in_flight += 1
        try:
            arrived = ((yield from self.send(es, client, self.download_bytes))
                       and (yield from self.local_compute(client, version, spec.local_steps))
                       and (yield from self.send_up(client, es)))
        finally:
            self.training.discard(client)
            state.in_flight -= 1
        if arrived:  # trained once needed, batched with the others waiting (train_later)
            state.box.deliver(Update(client, self.train_later(client, base, **self.solver()),
                                     version, float(self.data_sizes([client])[0]), base=base))
        return arrived
