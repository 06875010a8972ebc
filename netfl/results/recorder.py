"""Trace records -> counters, a metrics row per evaluation, and (optionally) the event table.

Accounting conventions (docs/models/network.md):

* ``bytes_*`` count the payload of *delivered* transfers: by tag, by link (each link on the
  path carries the payload once) and hop-weighted (payload x hops); ``bytes_raw_*`` the same
  payloads before compression;
* ``at_target`` freezes the counters (time, round, local steps, bytes, cost) when the
  deployable model first reaches the target accuracy (a TargetReached record: the algorithms
  check every update, so this is exact to one update);
* ``wire_bytes_total`` counts every bit sent on every hop, TCP headers, retransmissions and the
  partial progress of failed attempts included;
* ``handovers`` counts model hand-overs that arrived, ``handovers_failed`` failed attempts;
  ``model_path`` lists (time, holder): the first sender, then each node that received it;
* ``cost_by_kind`` sums Group-FEL's eq. (5) costs (seconds of client time) by kind;
* ``transfers_failed`` counts transfers that failed for good (retries spent);
  ``transfer_attempts_failed`` counts every failed attempt;
* ``transfers_cancelled`` counts transfers cancelled by their sender (not failures),
  ``bytes_cancelled`` their bytes on the wire until then (in ``wire_bytes_total`` too);
  ``trainings_cancelled`` and ``compute_cancelled_s`` likewise the local computations the
  algorithm stopped and the device time they had run (in the compute time per tier too);
* ``failed_transfer_time_s_by_tag`` / ``cancelled_transfer_time_s_by_tag`` sum, per tag, the
  simulated seconds from start to end of transfers that failed for good / were cancelled (time
  a node spent on sending that delivered nothing; ``transfer_time_s_by_tag`` has the delivered);
* ``coverage_cuts`` counts attempts cut by a vehicle leaving coverage (IoV);
  ``uploads_lost`` / ``downloads_lost`` the client uploads / downloads that failed for good so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from netfl.network.link import PATH_CACHE_SIZE, link_name
from netfl.network.transport import CANCELLED
from netfl.sim.trace import (
    Aggregate,
    Cost,
    Dropout,
    Evaluation,
    ExchangeBooked,
    HandOver,
    Record,
    TargetReached,
    TraceBus,
    TrainEnd,
    TransferEnd,
    TransferFail,
)


class Recorder:
    """Subscribes to a trace bus; read its counters and rows after the run."""

    def __init__(self, trace: TraceBus, tier_of: Callable[[str], str], keep_events: bool = False,
                 spool=None):
        """``keep_events``: keep every record as a row of the event table, in ``events``, or
        (given an EventSpool, ``spool``) on disk as the run goes."""
        self._tier = tier_of
        self.at_target: dict | None = None  # the counters when the target was first reached
        self.bytes_raw_total = 0.0
        self.bytes_raw_by_tag: Counter[str] = Counter()
        self.bytes_total = 0.0
        self.bytes_hop_weighted = 0.0
        self.wire_bytes_total = 0.0
        self.bytes_by_tag: Counter[str] = Counter()
        self.bytes_by_link: Counter[str] = Counter()
        self._link_names: dict[tuple[str, ...], tuple[str, ...]] = {}  # a path's links' names
        self.transfer_time_s_by_tag: Counter[str] = Counter()
        self.failed_transfer_time_s_by_tag: Counter[str] = Counter()
        self.cancelled_transfer_time_s_by_tag: Counter[str] = Counter()
        self.transfers_delivered = 0
        self.transfers_failed = 0
        self.transfer_attempts_failed = 0
        self.transfers_cancelled = 0
        self.bytes_cancelled = 0.0  # wire bytes of cancelled transfers
        self.trainings_cancelled = 0  # local computations cancelled by the algorithm
        self.compute_cancelled_s = 0.0  # the device time they had run (in compute time too)
        self.coverage_cuts = 0  # transfer attempts cut by a vehicle leaving coverage (IoV)
        self.uploads_lost = 0  # client uploads that failed for good that way
        self.downloads_lost = 0
        self.retransmissions = 0
        self.dropouts = 0
        self.handovers = 0
        self.handovers_failed = 0
        self.model_path: list[tuple[float, str]] = []  # (time, node) where hand-overs put it
        self.aggregators: set[str] = set()  # nodes that aggregated (two at most are kept)
        self.compute_time_s_by_tier: Counter[str] = Counter()
        self.aggregation_time_s_by_tier: Counter[str] = Counter()
        self.updates_lost_in_training = 0
        self.cost_by_kind: Counter[str] = Counter()
        self.metrics: list[dict] = []
        self.spool = spool if keep_events else None
        self.events: list[dict] | None = [] if keep_events and spool is None else None

        trace.subscribe(self._on_transfer_end, TransferEnd)
        trace.subscribe(self._on_exchange_booked, ExchangeBooked)
        trace.subscribe(self._on_transfer_fail, TransferFail)
        trace.subscribe(self._on_train_end, TrainEnd)
        trace.subscribe(self._on_aggregate, Aggregate)
        trace.subscribe(self._on_dropout, Dropout)
        trace.subscribe(self._on_handover, HandOver)
        trace.subscribe(self._on_evaluation, Evaluation)
        trace.subscribe(self._on_cost, Cost)
        trace.subscribe(self._on_target_reached, TargetReached)
        if self.spool is not None:
            trace.subscribe(self.spool.add)
        elif keep_events:
            trace.subscribe(self._keep)

    def _keep(self, record: Record) -> None:
        self.events.append(record.as_row())

    def _on_transfer_end(self, r: TransferEnd) -> None:
        hops = len(r.path) - 1
        self.transfers_delivered += 1
        self.bytes_total += r.nbytes
        self.bytes_hop_weighted += r.nbytes * hops
        self.wire_bytes_total += r.wire_bytes
        self.bytes_by_tag[r.tag] += r.nbytes
        raw = r.nbytes if r.raw_nbytes < 0 else r.raw_nbytes
        self.bytes_raw_total += raw
        self.bytes_raw_by_tag[r.tag] += raw
        self.transfer_time_s_by_tag[r.tag] += r.duration_s
        self.retransmissions += r.retransmissions
        names = self._link_names.get(r.path)
        if names is None:
            names = tuple(link_name(u, v) for u, v in zip(r.path, r.path[1:], strict=False))
            if len(self._link_names) < PATH_CACHE_SIZE:  # bounded at a million clients
                self._link_names[r.path] = names
        for name in names:
            self.bytes_by_link[name] += r.nbytes

    def _on_exchange_booked(self, r: ExchangeBooked) -> None:
        """An exchange in closed form: its 2 x n transfers and n computations at once."""
        n = len(r.clients)
        down, up = r.down_nbytes, r.up_nbytes
        self.transfers_delivered += 2 * n
        self.bytes_total += n * (down + up)
        self.bytes_hop_weighted += n * (down + up)  # one hop each
        self.wire_bytes_total += n * (r.down_wire_bytes + r.up_wire_bytes)
        self.bytes_by_tag[r.down_tag] += n * down
        self.bytes_by_tag[r.up_tag] += n * up
        self.bytes_raw_total += n * (down + r.up_raw_nbytes)
        self.bytes_raw_by_tag[r.down_tag] += n * down
        self.bytes_raw_by_tag[r.up_tag] += n * r.up_raw_nbytes
        self.transfer_time_s_by_tag[r.down_tag] += float((r.down_end_s - r.start_s).sum())
        self.transfer_time_s_by_tag[r.up_tag] += float((r.up_end_s - r.trained_s).sum())
        by_link, both = self.bytes_by_link, down + up
        for name in r.links:
            by_link[name] += both
        self.compute_time_s_by_tier[self._tier(r.clients[0])] += float(
            (r.trained_s - r.down_end_s).sum())

    def _on_transfer_fail(self, r: TransferFail) -> None:
        if r.reason == CANCELLED:
            self.transfers_cancelled += 1
            self.bytes_cancelled += r.wire_bytes
            self.wire_bytes_total += r.wire_bytes
            self.cancelled_transfer_time_s_by_tag[r.tag] += r.duration_s
            return
        self.transfer_attempts_failed += 1
        if r.reason == "left-coverage":
            self.coverage_cuts += 1
        if not r.will_retry:
            self.transfers_failed += 1
            self.wire_bytes_total += r.wire_bytes
            self.failed_transfer_time_s_by_tag[r.tag] += r.duration_s
            if r.reason == "left-coverage":
                self.uploads_lost += self._tier(r.src) == "client"
                self.downloads_lost += self._tier(r.dst) == "client"

    def _on_train_end(self, r: TrainEnd) -> None:
        self.compute_time_s_by_tier[self._tier(r.node)] += r.duration_s
        if r.cancelled:  # stopped by the algorithm (first K, a deadline): not a loss
            self.trainings_cancelled += 1
            self.compute_cancelled_s += r.duration_s
        elif not r.ok:
            self.updates_lost_in_training += 1

    def _on_aggregate(self, r: Aggregate) -> None:
        self.aggregation_time_s_by_tier[self._tier(r.node)] += r.duration_s
        if len(self.aggregators) < 2:
            self.aggregators.add(r.node)

    def _on_dropout(self, r: Dropout) -> None:
        if not r.up:
            self.dropouts += 1

    def _on_handover(self, r: HandOver) -> None:
        if not self.model_path:
            self.model_path.append((0.0, r.src))
        if r.ok:
            self.handovers += 1
            self.model_path.append((r.time_s, r.dst))
        else:
            self.handovers_failed += 1

    def _on_cost(self, r: Cost) -> None:
        self.cost_by_kind[r.kind] += r.cost_s

    @property
    def cost_total(self) -> float | None:
        """Eq. (5)'s learning cost so far; None for algorithms that charge none."""
        return sum(self.cost_by_kind.values()) if self.cost_by_kind else None

    def _on_target_reached(self, r: TargetReached) -> None:
        if self.at_target is not None:
            return
        self.at_target = {
            "time_s": r.time_s,
            "round": r.round,
            "accuracy": r.accuracy,
            "local_steps": r.local_steps,
            "bytes_total": self.bytes_total,
            "bytes_by_tag": dict(sorted(self.bytes_by_tag.items())),
            "bytes_hop_weighted": self.bytes_hop_weighted,
            "bytes_uncompressed": self.bytes_raw_total,
            "bytes_uncompressed_by_tag": dict(sorted(self.bytes_raw_by_tag.items())),
            "wire_bytes_total": self.wire_bytes_total,
            "cost_total": self.cost_total,
        }

    def _on_evaluation(self, r: Evaluation) -> None:
        self.metrics.append({
            "sim_time_s": r.time_s, "round": r.round, "accuracy": r.accuracy, "loss": r.loss,
            "bytes_total": self.bytes_total, "bytes_hop_weighted": self.bytes_hop_weighted,
            "wire_bytes_total": self.wire_bytes_total, "transfers_failed": self.transfers_failed,
            "dropouts": self.dropouts, "cost_total": self.cost_total,
        })
