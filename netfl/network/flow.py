"""Flows, their classes and the channels they cross (the fabric's state; ``fabric.py``).

A :class:`Flow` is a number of bits crossing one or more channels together; flows over the same
channels with the same cap form one :class:`FlowClass`, which has one rate and a virtual clock
(the bits each member has been sent since the class was made), so a rate change is one update
per class. A :class:`Channel` is one direction of capacity (this module is where the network's
modules and a user's code import it from); a :class:`Medium` sums the statistics of the channels
that share one medium's capacity (an LTE carrier's direction, a satellite beam's); each keeps
its carried bits per time bin in bounded memory (``time_bins.py``).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netfl.network.time_bins import TimeBins

if TYPE_CHECKING:
    from netfl.network.fabric import Fabric

TOLERANCE = 1e-9  # relative: a channel this close to its capacity is full


class LinkDown(Exception):
    """Internal: a link of the flow's path went down. The network turns it into TransferFailed."""

    def __init__(self, link):
        super().__init__(link)  # args must be the constructor's: SimPy re-creates the exception
        self.link = link

    def __str__(self) -> str:
        return f"link {getattr(self.link, 'name', self.link)} went down"


class FlowClass:
    """The flows over the same channels with the same cap: one rate, one virtual clock."""

    __slots__ = ("key", "channels", "cap", "members", "heap", "rate", "virtual", "last",
                 "version", "watched")

    def __init__(self, key, channels, cap: float, now: float):
        self.key, self.channels, self.cap = key, channels, cap
        self.watched = any(c.watcher is not None for c in channels)  # a radio cell's
        self.members: dict[Flow, None] = {}  # insertion-ordered: deterministic
        self.heap: list[tuple[float, int, Flow]] = []  # (finish tag, seq, flow), lazy
        self.rate, self.virtual, self.last, self.version = 0.0, 0.0, now, 0

    @property
    def count(self) -> int:
        return len(self.members)

    def virtual_at(self, now: float) -> float:
        return self.virtual + self.rate * (now - self.last)

    def advance(self, now: float) -> None:
        self.virtual, self.last = self.virtual_at(now), now

    def first(self) -> Flow | None:
        """The member that finishes first (stale heap entries dropped)."""
        heap = self.heap
        while heap and (heap[0][2].cls is not self or heap[0][2].entry != heap[0][1]):
            heapq.heappop(heap)  # it left (or left and came back: another entry)
        return heap[0][2] if heap else None


class Flow:
    """``nbits`` crossing ``channels`` together. ``event`` succeeds ``tail_s`` seconds after
    the last bit has been sent (the transport's propagation to the path's end, so that a
    transfer waits on one event, not on the flow's end and then a timeout), or fails
    with :class:`LinkDown` at once when a link of ``links`` goes down while bits are still
    being sent. ``ended_at``: when the last bit was sent (None before); ``started_s``: when it
    joined the fabric (for the channels' time bins)."""

    __slots__ = ("event", "channels", "links", "nbits", "cap", "cls", "tag", "entry",
                 "sent_at_end", "tail_s", "ended_at", "started_s")

    def __init__(self, event, channels, links, nbits: float, cap: float, tail_s: float = 0.0):
        self.event, self.channels, self.links = event, tuple(channels), tuple(links)
        self.nbits, self.cap = float(nbits), float(cap)
        self.cls: FlowClass | None = None
        self.tag = 0.0  # the class's virtual time at which the last bit is sent
        self.entry = -1  # the sequence number of its live entry in its class's heap
        self.sent_at_end = 0.0
        self.tail_s = float(tail_s)
        self.ended_at: float | None = None
        self.started_s = 0.0

    def finish(self, now: float) -> None:
        """The last bit is sent at ``now``: ``event`` succeeds ``tail_s`` later."""
        self.sent_at_end, self.ended_at = self.nbits, now
        event = self.event
        if self.tail_s > 0:  # what Event.succeed does, but later (as a Timeout does)
            event._ok, event._value = True, None
            event.env.schedule(event, delay=self.tail_s)
        else:
            event.succeed()

    @property
    def alive(self) -> bool:
        return self.cls is not None

    @property
    def rate(self) -> float:
        return self.cls.rate if self.cls is not None else 0.0

    @property
    def sent_bits(self) -> float:
        """Bits sent so far (as of its class's last update, or its end)."""
        if self.cls is None:
            return self.sent_at_end
        return self.nbits - max(self.tag - self.cls.virtual, 0.0)

    def sent_by(self, now: float) -> float:
        """Bits sent by ``now`` (at its current rate since its class's last update)."""
        if self.cls is None:
            return self.sent_at_end
        return self.nbits - max(self.tag - self.cls.virtual_at(now), 0.0)


class Channel:
    """One direction of capacity (bit/s), shared by the flows crossing it.

    Its statistics (read only by ``statistics`` and ``time_bins``; they never enter a rate)
    are kept online by the fabric as flows join and leave and by ``set_capacity``:
    ``flows_now`` (flows on it now), ``peak_flows``, and since the start, ``busy_s`` (seconds
    with at least one flow), ``flow_s`` (the integral of the number of flows over time,
    flow-seconds), ``capacity_bit`` (the integral of the capacity over its busy time, bits),
    ``carried_bits`` (bits of the flows that ended or were removed, as far as they got),
    ``wasted_bits`` (those of the flows removed before their end: cancelled, or failed by a link
    going down), integrals up to ``stat_s`` (the last change), and ``bins`` (the carried bits
    per time bin, each flow's spread evenly over its time on the channel). ``medium``: the
    :class:`Medium` whose capacity it shares with others (a beam's, an LTE carrier's), told
    when its flows come and go; None for most."""

    __slots__ = ("fabric", "name", "capacity_bps", "classes", "load", "watcher", "medium",
                 "flows_now", "peak_flows", "stat_s", "busy_s", "flow_s", "capacity_bit",
                 "carried_bits", "wasted_bits", "bins")

    def __init__(self, fabric: Fabric, name: str, capacity_bps: float):
        self.fabric, self.name = fabric, name
        self.capacity_bps = float(capacity_bps)
        self.classes: dict[FlowClass, None] = {}  # insertion-ordered: deterministic sums
        self.load = 0.0  # the sum of its flows' rates (bit/s)
        self.watcher = None  # called (no arguments) after a flow joins or leaves it
        self.medium: Medium | None = None
        self.flows_now = self.peak_flows = 0
        self.stat_s = self.busy_s = self.flow_s = self.capacity_bit = 0.0
        self.carried_bits = self.wasted_bits = 0.0
        self.bins: TimeBins | None = None  # None before a flow leaves it

    @property
    def flows(self) -> list[Flow]:
        return [flow for cls in self.classes for flow in cls.members]

    @property
    def active_flows(self) -> int:
        return sum(cls.count for cls in self.classes)

    def full(self) -> bool:
        return self.load >= self.capacity_bps * (1 - TOLERANCE)

    def set_capacity(self, capacity_bps: float) -> None:
        """Change the capacity from now on (rates of the flows on it follow)."""
        self.fabric.touch_channel(self)
        if self.flows_now:
            self.count_flows(self.fabric.env.now, 0)
        self.capacity_bps = float(capacity_bps)

    def count_flows(self, now: float, change: int) -> None:
        """Bring the statistics' integrals up to ``now`` and change the number of flows on
        the channel by ``change`` (the fabric's, as a flow joins (+1) or leaves (-1))."""
        flows = self.flows_now
        if flows and now > self.stat_s:  # (an infinite capacity times 0 s would be NaN)
            elapsed = now - self.stat_s
            self.busy_s += elapsed
            self.flow_s += flows * elapsed
            self.capacity_bit += self.capacity_bps * elapsed
        self.stat_s = now
        if change and self.medium is not None:
            self.medium.count_member(self, now, change)
        flows += change
        self.flows_now = flows
        if flows > self.peak_flows:
            if not self.peak_flows:  # its first flow: the fabric lists it from now on
                self.fabric.channels_used[self] = None
            self.peak_flows = flows

    def carry(self, started_s: float, now: float, bits: float, wasted: bool) -> None:
        """A flow that joined at ``started_s`` left at ``now`` having carried ``bits`` (all
        ``wasted`` if it was cancelled or failed)."""
        self.carried_bits += bits
        if wasted:
            self.wasted_bits += bits
        bins = self.bins
        if bins is None:
            bins = self.bins = TimeBins(now)
        bins.add(started_s, now, bits)

    def carry_alone(self, started_s: float, ended_s: float, bits: float) -> None:
        """A flow that had the channel to itself from ``started_s`` to ``ended_s`` (at or after
        its last change), booked afterwards (a transfer advanced in closed form): what its
        joining, leaving and ``carry`` would have done, in one call. Not for a medium's
        channel."""
        if not self.peak_flows:
            self.fabric.channels_used[self] = None
            self.peak_flows = 1
        if ended_s > started_s:
            elapsed = ended_s - started_s
            self.busy_s += elapsed
            self.flow_s += elapsed
            self.capacity_bit += self.capacity_bps * elapsed
        self.stat_s = ended_s
        self.carried_bits += bits
        bins = self.bins
        if bins is None:
            bins = self.bins = TimeBins(ended_s)
        bins.add(started_s, ended_s, bits)

    def statistics(self, now: float) -> ChannelStats:
        """What the channel did from the start to ``now`` (at or after its last change), the
        flows still on it counted with the bits they have sent so far."""
        elapsed = now - self.stat_s if self.flows_now and now > self.stat_s else 0.0
        in_flight = math.fsum(flow.sent_by(now) for flow in self.flows) if self.flows_now \
            else 0.0
        return ChannelStats(
            name=self.name, capacity_bps=self.capacity_bps, busy_s=self.busy_s + elapsed,
            flow_s=self.flow_s + self.flows_now * elapsed,
            capacity_bit=self.capacity_bit + (self.capacity_bps * elapsed if elapsed else 0.0),
            carried_bits=self.carried_bits + in_flight, wasted_bits=self.wasted_bits,
            peak_flows=self.peak_flows, flows_now=self.flows_now)

    def time_bins(self, now: float) -> TimeBins:
        """The bits carried per time bin up to ``now``, the flows still on it spread over
        their time so far (a copy: reading it changes nothing)."""
        bins = self.bins.copy() if self.bins is not None else TimeBins()
        if self.flows_now:
            for flow in self.flows:
                bins.add(flow.started_s, now, flow.sent_by(now))
        return bins

    def fail(self, link: object) -> int:
        """Fail every flow on this channel whose path includes ``link``; return how many."""
        return self.fabric.fail_link_on(self, link)


class Medium:
    """The channels that share one medium's capacity (an LTE carrier's direction, a satellite
    beam's), counted together (``statistics``, ``time_bins``: what a :class:`Channel` gives):
    its flows are its channels' flows, its capacity at a moment the sum of the capacities of
    its channels that carry flows then, its bits theirs. It keeps online only what its
    channels cannot add up to (the time with a flow on any of them, the most flows at once),
    told by them as their flows come and go (``Channel.medium``); the rest is their sums when
    read (a channel's capacity integral over its busy time is its share of the medium's)."""

    __slots__ = ("fabric", "name", "members", "active", "flows_now", "peak_flows", "stat_s",
                 "busy_s")

    def __init__(self, fabric: Fabric, name: str):
        self.fabric, self.name = fabric, name
        self.members: dict[Channel, None] = {}  # its channels that have had flows
        self.active: dict[Channel, None] = {}  # those with flows now
        self.flows_now = self.peak_flows = 0
        self.stat_s = self.busy_s = 0.0

    def count_member(self, channel: Channel, now: float, change: int) -> None:
        """``channel`` (one of its own, with ``channel.flows_now`` flows before) gains
        ``change`` (not 0) flows at ``now``."""
        if self.flows_now and now > self.stat_s:
            self.busy_s += now - self.stat_s
        self.stat_s = now
        before = channel.flows_now
        if not before:
            self.active[channel] = self.members[channel] = None
        elif before + change == 0:
            del self.active[channel]
        flows = self.flows_now + change
        self.flows_now = flows
        if flows > self.peak_flows:
            if not self.peak_flows:  # its first flow: the fabric lists it from now on
                self.fabric.channels_used[self] = None
            self.peak_flows = flows

    @property
    def capacity_bps(self) -> float:
        """Its capacity now: the sum of its busy channels' (0 while none is busy)."""
        return math.fsum(channel.capacity_bps for channel in self.active)

    def statistics(self, now: float) -> ChannelStats:
        """What its channels did together from the start to ``now`` (``Channel.statistics``)."""
        parts = [channel.statistics(now) for channel in self.members]
        elapsed = now - self.stat_s if self.flows_now and now > self.stat_s else 0.0
        return ChannelStats(
            name=self.name, capacity_bps=self.capacity_bps, busy_s=self.busy_s + elapsed,
            flow_s=math.fsum(p.flow_s for p in parts),
            capacity_bit=math.fsum(p.capacity_bit for p in parts),
            carried_bits=math.fsum(p.carried_bits for p in parts),
            wasted_bits=math.fsum(p.wasted_bits for p in parts),
            peak_flows=self.peak_flows, flows_now=self.flows_now)

    def time_bins(self, now: float) -> TimeBins:
        """Its channels' bits per time bin up to ``now``, added up at the widest of their
        bins (a new object: reading it changes nothing)."""
        parts = [channel.time_bins(now) for channel in self.members]
        total = TimeBins(max([0.0, *(p.limit_s / 2 for p in parts)]))
        for part in parts:
            for k, value in enumerate(part.at_width(total.width_s)):
                total.values[k] += value
        return total


@dataclass(frozen=True)
class ChannelStats:
    """A channel's statistics from the start to a moment (``Channel.statistics``): seconds
    ``busy_s`` with at least one flow, flow-seconds ``flow_s``, the capacity integrated over the
    busy time ``capacity_bit`` (bits), the bits carried (those of flows still on it included)
    and wasted (flows cancelled or failed), the most flows at once and the flows on it now;
    ``capacity_bps``: its capacity at that moment."""

    name: str
    capacity_bps: float
    busy_s: float
    flow_s: float
    capacity_bit: float
    carried_bits: float
    wasted_bits: float
    peak_flows: int
    flows_now: int

    @property
    def mean_flows(self) -> float:
        """The time-averaged number of flows over its busy time (0 if never busy)."""
        return self.flow_s / self.busy_s if self.busy_s > 0 else 0.0

    def utilisation(self, duration_s: float) -> float:
        """Bits carried over what the channel could carry in ``duration_s`` seconds at its
        mean capacity while busy: carried / (capacity x duration) for a fixed capacity. A radio
        medium whose capacity is 0 while idle counts its busy capacity only. 0 if never busy."""
        if self.capacity_bit <= 0 or duration_s <= 0:
            return 0.0
        return self.carried_bits * self.busy_s / (self.capacity_bit * duration_s)


def notify_watchers(channels) -> None:
    """Tell the channels that watch their flows (a radio cell) that one joined or left."""
    for channel in channels:
        if channel.watcher is not None:
            channel.watcher()


def unsettled(channel: Channel, inside: list[FlowClass], members, outside_load: float,
              rate_of: dict) -> bool:
    """For the fabric's pass, with the classes ``members`` solved to ``rate_of`` (``inside``:
    those on ``channel``) against ``outside_load`` from the others: whether ``channel``'s
    classes outside the solved set may have to change. They may where it was full and no longer
    is (classes held back by it may speed up), or where it is full and the fastest classes
    inside and outside the set differ (on a full channel the classes it holds back are its
    fastest, so one side is not where max-min puts it)."""
    limit = channel.capacity_bps * (1 - TOLERANCE)
    if outside_load + math.fsum(rate_of[k] * k.count for k in inside) < limit:
        return channel.load >= limit
    fastest_inside = max(rate_of[k] for k in inside)
    fastest_outside = max(k.rate for k in channel.classes if k not in members)
    return abs(fastest_inside - fastest_outside) > TOLERANCE * channel.capacity_bps
