"""Hierarchical FL with an aggregation policy per tier (``hier-async``): clients -> edge
servers -> cloud, where ``algorithm.edge`` says how an edge takes its clients' updates and
``algorithm.cloud`` how the cloud takes its edges' (sync, deadline, buffered or async; the edge
side in netfl/algorithms/edge_tier.py). Both ``sync`` is hierarchical FedAvg (HierFAVG, "Client-
Edge-Cloud Hierarchical Federated Learning", IEEE ICC 2020), to the same floats.

    cloud (sync, deadline):  until version T:
        S <- edges_per_round edges serving clients and not still at work, uniformly
        each edge l of S, in parallel: download w; its edge cycle (E versions); upload w_l
        sync:     wait for every l of S (arrived or failed)
        deadline: wait until ``deadline`` seconds passed (or all answered);
                  drop:  the late edges are cut off where they are (cancelled, counted)
                  carry: the late edges go on and are taken at a later step
        w <- data-weighted average of the w_l (every one fresh), else
             w <- w + sum_l p_l s(tau_l) (w_l - w_base,l)               (a new version)
    cloud (buffered, async): every edge loops by itself (download w, its cycle, upload);
        buffered: every K arrivals  w <- w + eta sum_l s(tau_l) (w_l - w_base,l) / K
        async:    each arrival      w <- (1 - a) w + a w_l,  a = alpha s(tau_l)

p_l = D_l / sum D (D_l: the data of the clients that went into w_l), tau_l = cloud versions
since edge l downloaded w. A cloud round in which nothing arrived makes no version (where no
simulated time passed in it, it waits ``idle_wait`` and counts in ``rounds_without_updates``).
With an async cloud an edge downloads its next model once the cloud has mixed its last one
in (Async-HFL's gateways restart from the model their report went into); with a buffered
cloud at once, as FedBuff's clients do.

The reading of the policies at a tier with more than one level of sources is netfl's: the
papers behind them (FedAsync, arXiv:1903.03934; FedBuff, AISTATS 2022) have one server and
its clients; here an edge is the cloud's client and its clients are its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator

from netfl.algorithms.asynchrony import Update
from netfl.algorithms.edge_tier import EdgeTier


class HierAsync(EdgeTier):
    def run(self):
        spec, cloud = self.spec, self.world.cloud
        self.slot = self.model_slot(cloud, self.trainer.init_params())
        if self.evaluate(self.slot.params, 0):
            return
        self.box = self.mailbox(cloud)
        self.edges = {es: self.edge_state(es, self.slot.params)
                      for es in self.world.edge_servers}
        self.edge_order = {es: i for i, es in enumerate(self.world.edge_servers)}
        self.training, self.at_work = set(), set()
        self.dropped_stale, self.dropped_late = Counter(), Counter()
        self.awaiting: dict[str, object] = {}  # edge -> the event of its update being taken
        if spec.cloud.policy in ("sync", "deadline"):
            yield from self.cloud_rounds()
        else:
            for es in self.world.edge_servers:
                self.background(self.edge_loop(es))
            yield from self.cloud_arrivals()

    # ------------------------------------------------------------------ sync and deadline

    def cloud_rounds(self) -> Generator:
        spec, slot, policy = self.spec, self.slot, self.spec.cloud
        while slot.version < spec.rounds:
            serving = (self.world.edge_servers if self.world.exclusive
                       else self.world.serving_edges())
            chosen = self.sample_clients([es for es in serving if es not in self.at_work],
                                         spec.edges_per_round)
            started, round_ = self.env.now, slot.version + 1
            cutoff = None
            if policy.policy == "deadline" and policy.late == "drop":
                cutoff = started + policy.deadline
                # an upload that landed at the last cutoff's instant, after that round took
                # its updates, belongs to no round: dropped, even where no version was made
                self.dropped_late["cloud"] += len(self.box.take_all())
            jobs = [self.background(self.edge_cycle(es, slot.params, slot.version, round_,
                                                    cutoff)) for es in chosen]
            waits = [self.env.all_of(jobs)]
            if policy.policy == "deadline":
                waits.append(self.env.timeout(policy.deadline))
            yield self.env.any_of(waits)
            # summed in edge order, not arrival order: sync is hierarchical FedAvg to the float
            updates = sorted(self.box.take_all(), key=lambda u: self.edge_order[u.source])
            if self.env.now == started:  # nothing could happen (nobody in view, no route)
                yield from self.wait_idle()
            if not updates:
                continue
            version = yield from self.take_step(slot, updates, policy, "cloud")
            if self.end_round(version, slot.params):
                return

    def edge_cycle(self, es: str, base, base_version: int, round_: int,
                   cutoff: float | None = None) -> Generator:
        """Edge ``es``'s download of the cloud's model, its E versions and its upload; the
        update goes into the cloud's mailbox. Returns whether it arrived."""
        cloud = self.world.cloud
        self.at_work.add(es)
        try:
            if not (yield from self.bounded(
                    lambda: self.send(cloud, es, self.download_bytes), cutoff)):
                return False
            made = yield from self.edge_cycle_models(es, base, round_, cutoff)
            if made is None:
                return False
            w_edge, data = made
            if not (yield from self.bounded(lambda: self.send_up(es, cloud), cutoff)):
                return False
        finally:
            self.at_work.discard(es)
        self.box.deliver(Update(es, self.compressed_towards(w_edge, base), base_version,
                                float(data), base=base))
        return True

    def bounded(self, work, cutoff: float | None) -> Generator:
        """The value of ``work()`` (a primitive's generator), or False where ``cutoff`` came
        first (the work then cancelled, or never begun)."""
        if cutoff is None:
            return (yield from work())
        left = cutoff - self.env.now
        if left <= 0:
            return False
        done, value = yield from self.within(work(), left)
        return done and value

    # ------------------------------------------------------------------ buffered and async

    def edge_loop(self, es: str) -> Generator:
        """Edge ``es``'s endless cycles beside the cloud's (buffered and async clouds). With
        an async cloud, the next cycle waits until the cloud has taken this one's update."""
        slot, waits = self.slot, self.spec.cloud.policy == "async"
        while True:
            if not self.world.primary_clients_of(es):  # (not a round of the cloud's)
                yield self.env.timeout(self.spec.idle_wait)
                continue
            started = self.env.now
            taken = self.awaiting[es] = self.env.event() if waits else None
            sent = yield from self.edge_cycle(es, slot.params, slot.version, slot.version + 1)
            if sent and taken is not None:
                yield taken
            if self.env.now == started:
                yield self.env.timeout(self.spec.idle_wait)

    def cloud_arrivals(self) -> Generator:
        spec, slot, policy = self.spec, self.slot, self.spec.cloud
        buffered = []
        while slot.version < spec.rounds:
            update = yield from self.receive(self.box)
            staleness = self.staleness(slot, update)
            if policy.policy == "async":
                if policy.max_staleness is not None and staleness > policy.max_staleness:
                    self.dropped_stale["cloud"] += 1
                    self.release(update.source)
                    continue
                rate = policy.alpha * self.staleness_weight(staleness, policy.staleness,
                                                            rule_offset=1)
                version = yield from self.mix(slot, update, rate, "cloud")
                self.release(update.source)
            else:
                buffered.append(update)
                if len(buffered) < policy.buffer_size:
                    continue
                weights = [self.staleness_weight(self.staleness(slot, u), policy.staleness)
                           for u in buffered]
                changes = [u.as_change() for u in buffered]
                buffered = []
                version = yield from self.apply_buffer(slot, changes, weights, policy.server_lr,
                                                       "cloud")
            if self.end_round(version, slot.params):
                return

    def release(self, edge: str) -> None:
        """The cloud has taken (or dropped) ``edge``'s update: its next cycle may start."""
        taken = self.awaiting.pop(edge, None)
        if taken is not None and not taken.triggered:
            taken.succeed()

    def summary_extras(self) -> dict:
        return {"updates_dropped_stale_edge": self.dropped_stale["edge"],
                "updates_dropped_stale_cloud": self.dropped_stale["cloud"],
                "updates_dropped_late_edge": self.dropped_late["edge"],
                "updates_dropped_late_cloud": self.dropped_late["cloud"]}
