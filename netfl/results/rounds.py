"""Each round's critical path: the chain of activities that decided when the round ended.

A round is what an algorithm books with ``end_round`` (a global aggregation, a Fed-CHS visit, a
CHFL cycle, a Group-FEL round: a ``RoundEnd`` record); it runs from the end of the round before
(0 for the first) to its own end. Its critical path is found by walking back from the round's
last activity, the way a critical-path analysis of a parallel program walks back from its
exit: at node N and time T, the activity that last ended at N by T is what N waited for, its
start is when that began, and where it is a transfer the walk goes on at its sender. Time at a
node between one activity's end and the next one's start on the path is ``waiting`` (a queue,
a back-off, a wait for coverage, an untraced step). Every part of a round is one of:

    download, upload, handover    transfers down the tiers, up them, and between equals
    group_operation               Group-FEL's secure-aggregation messages and device overhead
    compute                       local training and other device work
    aggregation                   averaging at a server
    waiting                       the rest

and the parts add up to the round's duration (``waiting`` is what the others leave of it).

Where the world names the segments of a path (a road under a constellation: ``hop_segment``),
the transfers on the critical path are also split by the hops they crossed, into ``radio``,
``terminal``, ``isl``, ``feeder`` and ``fibre`` (:func:`hop_spans`): each hop's part is the time
from the last bit leaving the hop before to the last bit leaving it; on a pipelined path the
data's passage (its serialization at the bottleneck) is moved from the first hop to the hop
the flow used most of (the largest ``rate_share``). These add up to the transfers' parts.

Only the current round's activities are kept, indexed by the node they end at: memory does not
grow with the number of transfers of a run. The walk costs O(path length x log activities).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from netfl.sim.trace import (
    Aggregate,
    Busy,
    ExchangeBooked,
    HopEnd,
    RoundEnd,
    TraceBus,
    TrainEnd,
    TransferEnd,
)

PARTS = ("download", "compute", "upload", "aggregation", "group_operation", "handover",
         "waiting")
ROUND_COLUMNS = ["round", "start_s", "end_s", "duration_s", "ended_at", *(f"{p}_s" for p in PARTS)]
# the segments of a path on a road under a constellation (netfl.world.joined)
SEGMENTS = ("radio", "terminal", "isl", "feeder", "fibre")
SEGMENT_COLUMNS = [f"{s}_s" for s in SEGMENTS]
_RANK = {"client": 0, "edge": 1, "cloud": 2}
ROUNDING_ULPS = 16  # how far past a time an activity may end and still count as ended by it


def transfer_part(tag: str, src_tier: str, dst_tier: str) -> str:
    """The part a transfer is: by its tag where it names one, else by its ends' tiers."""
    if tag.startswith("secagg"):
        return "group_operation"
    if tag == "resumed-part":
        return "upload"
    up = _RANK[dst_tier] - _RANK[src_tier]
    return "upload" if up > 0 else "download" if up < 0 else "handover"


class Activity(NamedTuple):
    """Something that took time and ended at ``node``: ``src`` is where a transfer came from
    (None for work on the node itself); ``transfer`` its id where its hops are split (-1
    otherwise). A tuple: one is made per transfer and computation."""

    start: float
    end: float
    node: str
    src: str | None
    part: str
    transfer: int = -1


class Hop(NamedTuple):
    """One hop of a transfer: its first bit in, its last bit out, its share of the link's
    capacity (1: the flow's bottleneck) and the segment of the path it is."""

    start: float
    end: float
    rate_share: float
    segment: str


def hop_spans(start: float, hops: list[Hop]) -> list[tuple[str, float, float]]:
    """(segment, from, to) of each hop of a transfer that began at ``start``, in path order,
    adding up to its duration: from the last bit leaving the hop before (``start`` for the
    first) to the last bit leaving this one; on a pipelined path (the next hop's first bit in
    before this one's last bit out) the data's passage is the bottleneck's, not the first
    hop's: the first hop keeps only its delay (the next hop's first bit in, less its own) and
    the rest is moved to the hop of the largest ``rate_share``."""
    spans, before = [], start
    for hop in hops:
        spans.append([hop.segment, before, hop.end])
        before = hop.end
    if len(hops) > 1:
        passage = (hops[0].end - start) - max(hops[1].start - hops[0].start, 0.0)
        bottleneck = max(range(len(hops)), key=lambda i: (hops[i].rate_share, -i))
        if passage > 0 and bottleneck > 0:
            # the spans stay contiguous: the moved time sits where the bottleneck's hop is
            spans[0][2] -= passage
            for span in spans[1:bottleneck + 1]:
                span[1] -= passage
                if span is not spans[bottleneck]:
                    span[2] -= passage
    return [tuple(span) for span in spans]


def critical_path(by_node: dict[str, list[Activity]], last: Activity, start: float,
                  end: float, visit: Callable[[Activity, float, float], None] | None = None
                  ) -> tuple[dict[str, float], str]:
    """The parts (seconds) of the round from ``start`` to ``end`` whose last activity is
    ``last``, walking back over ``by_node`` (each node's activities in order of their ends),
    and the node it ended at. The parts add up to ``end - start``. ``visit(activity, from,
    to)`` is told each activity on the path and the span of it counted."""
    parts = dict.fromkeys(PARTS, 0.0)
    limit: dict[str, int] = {}  # per node visited: its activities from here on are picked
    node, t = last.node, end
    while t > start:
        acts = by_node.get(node)
        if not acts:
            break
        # an activity that ended at t up to float rounding ended by t: a record's start is
        # its end less its duration, which can fall an ulp before the end of what it followed
        i = min(bisect.bisect_right(acts, t + ROUNDING_ULPS * math.ulp(t), key=_end),
                limit.get(node, len(acts))) - 1
        if i < 0 or acts[i].end <= start:
            break
        activity, limit[node] = acts[i], i
        began = max(activity.start, start)
        parts[activity.part] += max(min(activity.end, t) - began, 0.0)
        if visit is not None and min(activity.end, t) > began:
            visit(activity, began, min(activity.end, t))
        t = min(t, began)
        if activity.src is not None:
            node = activity.src
    busy = math.fsum(parts[p] for p in PARTS if p != "waiting")
    parts["waiting"] = max(end - start - busy, 0.0)
    return parts, last.node


def _end(activity: Activity) -> float:
    return activity.end


class RoundAnalyzer:
    """Subscribes to a run's trace; one row per round (``rows``) with its critical path."""

    def __init__(self, trace: TraceBus, tier_of: Callable[[str], str],
                 segment_of: Callable[[str, str], str] | None = None):
        """``segment_of(u, v)``: the segment a hop is (one of SEGMENTS), where the world
        names them: the rows then split the critical path's transfers by hop."""
        self._tier, self._segment_of = tier_of, segment_of
        self.columns = ROUND_COLUMNS + (SEGMENT_COLUMNS if segment_of is not None else [])
        self._hops: dict[int, list[Hop]] = {}  # transfer id -> its hops, this round
        self._segments = dict.fromkeys(SEGMENTS, 0.0)
        if segment_of is not None:
            trace.subscribe(self._on_hop, HopEnd)
        self.rows: list[dict] = []
        self._by_node: dict[str, list[Activity]] = {}
        self._last: Activity | None = None
        self._round_start = 0.0
        self._part_of_tag: dict[str, str] = {}  # tags that name their ends' tiers
        trace.subscribe(self._on_transfer, TransferEnd)
        trace.subscribe(self._on_exchange_booked, ExchangeBooked)
        trace.subscribe(self._on_train, TrainEnd)
        trace.subscribe(self._on_aggregate, Aggregate)
        trace.subscribe(self._on_busy, Busy)
        trace.subscribe(self._on_round, RoundEnd)

    def _add(self, activity: Activity) -> None:
        acts = self._by_node.get(activity.node)
        if acts is None:
            self._by_node[activity.node] = [activity]
        else:
            acts.append(activity)
        self._last = activity  # records come in the order of their ends

    def _on_transfer(self, r: TransferEnd) -> None:
        part = self._part_of_tag.get(r.tag)
        if part is None:
            part = transfer_part(r.tag, self._tier(r.src), self._tier(r.dst))
            ends = r.tag.split("->")
            if len(ends) == 2 and ends == [self._tier(r.src), self._tier(r.dst)]:
                self._part_of_tag[r.tag] = part  # the tag says the tiers: the same part always
        transfer = r.transfer_id if self._segment_of is not None else -1
        self._add(Activity(r.time_s - r.duration_s, r.time_s, r.dst, r.src, part, transfer))

    def _on_hop(self, r: HopEnd) -> None:
        self._hops.setdefault(r.transfer_id, []).append(
            Hop(r.start_s, r.time_s, r.rate_share, self._segment_of(r.u, r.v)))

    def _split(self, activity: Activity, began: float, ended: float) -> None:
        """Add the span [began, ended] of a transfer on the critical path to its hops'
        segments (its last attempt's hops: those within its time)."""
        if activity.transfer < 0:
            return
        hops = sorted((h for h in self._hops.get(activity.transfer, ())
                       if activity.start - 1e-9 <= h.start and h.end <= activity.end + 1e-9),
                      key=lambda h: (h.end, h.start))
        for segment, a, b in hop_spans(activity.start, hops):
            self._segments[segment] += max(min(b, ended) - max(a, began), 0.0)

    def _on_exchange_booked(self, r: ExchangeBooked) -> None:
        """An exchange in closed form: each client's download and computation, then the
        uploads at the server in the order they arrived."""
        tier, server = self._tier, r.server
        down = transfer_part(r.down_tag, tier(server), tier(r.clients[0]))
        up = transfer_part(r.up_tag, tier(r.clients[0]), tier(server))
        start, arrived, trained, ended = (r.start_s, r.down_end_s.tolist(), r.trained_s.tolist(),
                                          r.up_end_s.tolist())
        by_node = self._by_node
        for client, d, t in zip(r.clients, arrived, trained, strict=True):
            acts = [Activity(start, d, client, server, down), Activity(d, t, client, None,
                                                                        "compute")]
            before = by_node.get(client)
            if before is None:
                by_node[client] = acts
            else:
                before.extend(acts)
        for i in sorted(range(len(ended)), key=ended.__getitem__):
            self._add(Activity(trained[i], ended[i], server, r.clients[i], up))

    def _on_train(self, r: TrainEnd) -> None:
        self._add(Activity(r.time_s - r.duration_s, r.time_s, r.node, None, "compute"))

    def _on_aggregate(self, r: Aggregate) -> None:
        self._add(Activity(r.time_s - r.duration_s, r.time_s, r.node, None, "aggregation"))

    def _on_busy(self, r: Busy) -> None:
        part = "group_operation" if r.what == "group_operation" else "compute"
        self._add(Activity(r.time_s - r.duration_s, r.time_s, r.node, None, part))

    def _on_round(self, r: RoundEnd) -> None:
        start, end = self._round_start, r.time_s
        splitting = self._segment_of is not None
        if self._last is None:
            parts, node = dict.fromkeys(PARTS, 0.0) | {"waiting": end - start}, ""
        else:
            parts, node = critical_path(self._by_node, self._last, start, end,
                                        self._split if splitting else None)
        row = ({"round": r.round, "start_s": start, "end_s": end, "duration_s": end - start,
                "ended_at": node} | {f"{p}_s": parts[p] for p in PARTS})
        if splitting:
            row |= {f"{s}_s": self._segments[s] for s in SEGMENTS}
            self._segments = dict.fromkeys(SEGMENTS, 0.0)
            self._hops = {}
        self.rows.append(row)
        self._by_node, self._last, self._round_start = {}, None, end


def round_statistics(rows: Iterable[dict]) -> dict:
    """p50, p90 and max of the round duration and of each part, over ``rows``; {} for none."""
    rows = list(rows)
    if not rows:
        return {}
    out = {}
    segments = [c for c in SEGMENT_COLUMNS if c in rows[0]]
    for key in ["duration_s"] + [f"{p}_s" for p in PARTS] + segments:
        values = np.array([row[key] for row in rows], dtype=float)
        out[key] = {"p50": float(np.percentile(values, 50)),
                    "p90": float(np.percentile(values, 90)), "max": float(values.max())}
    return out
