"""Flows that hold every channel of their path at once, at their max-min fair rates.

A :class:`Flow` is a number of bits crossing one or more channels together (a pipelined
transfer: packets are on every link of the path at once, so the bottleneck decides the rate).
The :class:`Fabric` keeps every flow's rate at its max-min fair share (``maxmin.py``) and
schedules only the earliest completion.

Incremental: a change (a flow starts, ends or fails, a channel's capacity or a flow's cap
changes) marks its channels dirty; the rates are recomputed once per instant of simulated time
(all changes at one instant in one pass) and only for the flows connected to a dirty channel
through shared channels, the only ones whose max-min rates can change. Flows whose rate did not
change keep their scheduled completion. A flow's progress is kept lazily: bits left at its
last update and its rate since.
"""

from __future__ import annotations

import heapq
import itertools
import math

import simpy

from netfl.network.maxmin import max_min_rates


class LinkDown(Exception):
    """Internal: a link of the flow's path went down. The network turns it into TransferFailed."""

    def __init__(self, link):
        super().__init__(link)  # args must be the constructor's: SimPy re-creates the exception
        self.link = link

    def __str__(self) -> str:
        return f"link {getattr(self.link, 'name', self.link)} went down"


class Flow:
    """``nbits`` crossing ``channels`` together. ``event`` succeeds when the last bit has been
    sent (serialization at the flow's rate; propagation is the transport's business) or fails
    with :class:`LinkDown` when a link of ``links`` goes down."""

    __slots__ = ("channels", "links", "nbits", "remaining", "rate", "cap", "last", "event",
                 "alive", "version")

    def __init__(self, event, channels, links, nbits: float, cap: float, now: float):
        self.event, self.channels, self.links = event, tuple(channels), tuple(links)
        self.nbits = self.remaining = float(nbits)
        self.rate, self.cap, self.last = 0.0, float(cap), now
        self.alive, self.version = True, 0

    @property
    def sent_bits(self) -> float:
        """Bits sent so far (as of the flow's last update, or its end)."""
        return self.nbits - self.remaining

    def _advance(self, now: float) -> None:
        if self.rate > 0 and now > self.last:
            self.remaining = max(self.remaining - self.rate * (now - self.last), 0.0)
        self.last = now


class Channel:
    """One direction of capacity (bit/s), shared by the flows crossing it."""

    __slots__ = ("fabric", "name", "capacity_bps", "flows")

    def __init__(self, fabric: Fabric, name: str, capacity_bps: float):
        self.fabric, self.name = fabric, name
        self.capacity_bps = float(capacity_bps)
        self.flows: dict[Flow, None] = {}  # insertion-ordered: deterministic sums

    @property
    def active_flows(self) -> int:
        return len(self.flows)

    def set_capacity(self, capacity_bps: float) -> None:
        """Change the capacity from now on (rates of the flows on it follow)."""
        self.fabric.touch_channel(self)
        self.capacity_bps = float(capacity_bps)

    def transmit(self, nbits: float, owner: object = None) -> Flow:
        """A flow over this channel alone (``owner``: the link whose going down fails it)."""
        return self.fabric.transmit([self], [owner] if owner is not None else [], nbits)

    def fail(self, link: object) -> int:
        """Fail every flow on this channel whose path includes ``link``; return how many."""
        return self.fabric.fail_link_on(self, link)


class Fabric:
    """Every active flow of one simulation and the max-min rates they get."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._heap: list[tuple[float, int, int, Flow]] = []  # (finish, seq, version, flow)
        self._sequence = itertools.count()
        self._dirty_channels: dict[Channel, None] = {}
        self._dirty_flows: dict[Flow, None] = {}
        self._pending = False
        self._wake_at = math.inf
        self._generation = 0
        self.recomputations = 0  # passes of the solver (for benchmarks)
        self.flows_rated = 0  # flows given a rate, over all passes

    # ------------------------------------------------------------------------- changes

    def transmit(self, channels, links, nbits: float, cap: float = math.inf) -> Flow:
        """Start a flow of ``nbits`` over ``channels`` (failed when a link of ``links`` goes
        down), its rate at most ``cap`` bit/s."""
        flow = Flow(self.env.event(), channels, links, nbits, cap, self.env.now)
        if flow.remaining <= 0:
            flow.alive = False
            flow.event.succeed()
            return flow
        for channel in flow.channels:
            channel.flows[flow] = None
        self._dirty_flows[flow] = None
        self._schedule_pass()
        return flow

    def set_cap(self, flow: Flow, cap: float) -> None:
        """Change a flow's own rate bound (a TCP window grew) from now on."""
        if flow.alive and cap != flow.cap:
            flow._advance(self.env.now)
            flow.cap = float(cap)
            self._dirty_flows[flow] = None
            self._schedule_pass()

    def touch_channel(self, channel: Channel) -> None:
        """Bring the flows of ``channel`` up to now; their rates are recomputed this instant."""
        now = self.env.now
        for flow in channel.flows:
            flow._advance(now)
        if channel.flows:
            self._dirty_channels[channel] = None
            self._schedule_pass()

    def fail_link_on(self, channel: Channel, link: object) -> int:
        failed = [flow for flow in channel.flows if link in flow.links]
        for flow in failed:
            self._remove(flow)
            flow.event.fail(LinkDown(link))
        return len(failed)

    def _remove(self, flow: Flow) -> None:
        flow._advance(self.env.now)
        flow.alive = False
        for channel in flow.channels:
            del channel.flows[flow]
            if channel.flows:
                self._dirty_channels[channel] = None
        self._schedule_pass()

    # ------------------------------------------------------------------------- solving

    def _schedule_pass(self) -> None:
        if not self._pending:
            self._pending = True
            self.env.timeout(0).callbacks.append(self._pass)

    def _component(self) -> list[Flow]:
        """The alive flows reachable from the dirty channels and flows through shared channels."""
        flows: dict[Flow, None] = {}
        seen: set[Channel] = set()
        stack = list(self._dirty_channels)
        for flow in self._dirty_flows:
            if flow.alive:
                flows[flow] = None
                stack.extend(flow.channels)
        while stack:
            channel = stack.pop()
            if channel in seen:
                continue
            seen.add(channel)
            for flow in channel.flows:
                if flow not in flows:
                    flows[flow] = None
                    stack.extend(c for c in flow.channels if c not in seen)
        self._dirty_channels.clear()
        self._dirty_flows.clear()
        return list(flows)

    def _pass(self, _event=None) -> None:
        self._pending = False
        now = self.env.now
        flows = self._component()
        if flows:
            self.recomputations += 1
            self.flows_rated += len(flows)
            capacity = {c: c.capacity_bps for f in flows for c in f.channels}
            rates = max_min_rates([f.channels for f in flows], capacity, [f.cap for f in flows])
            for flow, rate in zip(flows, rates, strict=True):
                flow._advance(now)
                if rate != flow.rate or flow.version == 0:
                    flow.rate = rate
                    flow.version += 1
                    if rate > 0:
                        finish = now + flow.remaining / rate
                        heapq.heappush(self._heap, (finish, next(self._sequence), flow.version,
                                                    flow))
        self._arm()

    def _arm(self) -> None:
        """Make sure a wake-up is scheduled at the earliest valid completion."""
        heap = self._heap
        while heap and (not heap[0][3].alive or heap[0][2] != heap[0][3].version):
            heapq.heappop(heap)
        finish = heap[0][0] if heap else math.inf
        if finish < self._wake_at:
            self._wake_at = finish
            self._generation += 1
            generation = self._generation
            self.env.timeout(max(finish - self.env.now, 0.0)).callbacks.append(
                lambda _: self._wake(generation))

    def _wake(self, generation: int) -> None:
        if generation != self._generation:
            return
        self._wake_at = math.inf
        now, heap = self.env.now, self._heap
        horizon = now + 1e-12 * max(1.0, now)
        while heap:
            finish, _, version, flow = heap[0]
            if flow.alive and version == flow.version:
                left = max(flow.remaining - flow.rate * (now - flow.last), 0.0)
                # not done unless due, or the time left is too small to move the clock at all
                if finish > horizon and now + left / flow.rate > now:
                    break
                heapq.heappop(heap)
                self._remove(flow)
                flow.remaining = 0.0
                flow.event.succeed()
            else:
                heapq.heappop(heap)
        self._arm()
