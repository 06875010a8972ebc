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

Two changes need no solving at all, because the max-min allocation provably stays the same for
every other flow: a flow that starts where it fits in the spare capacity of its path (it gets
min(cap, spare) and every channel it fills carries no faster flow), and a flow that ends
leaving only channels that were not full (no flow there was held by them). In a hierarchical FL
system, where each client's own access link is its bottleneck, most starts and ends are these.
"""

from __future__ import annotations

import heapq
import itertools
import math

import simpy

from netfl.network.maxmin import max_min_rates

_TOLERANCE = 1e-9  # relative: a channel this close to its capacity is full


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

    def sent_by(self, now: float) -> float:
        """Bits sent by ``now`` (at its current rate since its last update)."""
        if not self.alive:
            return self.sent_bits
        return self.nbits - max(self.remaining - self.rate * (now - self.last), 0.0)

    def _advance(self, now: float) -> None:
        if self.rate > 0 and now > self.last:
            self.remaining = max(self.remaining - self.rate * (now - self.last), 0.0)
        self.last = now


class Channel:
    """One direction of capacity (bit/s), shared by the flows crossing it."""

    __slots__ = ("fabric", "name", "capacity_bps", "flows", "load")

    def __init__(self, fabric: Fabric, name: str, capacity_bps: float):
        self.fabric, self.name = fabric, name
        self.capacity_bps = float(capacity_bps)
        self.flows: dict[Flow, None] = {}  # insertion-ordered: deterministic sums
        self.load = 0.0  # the sum of its flows' rates (bit/s)

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
        self.flows_fitted = 0  # flows started without solving

    @property
    def settled(self) -> bool:
        """True when no change awaits its solver pass (every rate is the max-min one)."""
        return not self._pending

    # ------------------------------------------------------------------------- changes

    def transmit(self, channels, links, nbits: float, cap: float = math.inf) -> Flow:
        """Start a flow of ``nbits`` over ``channels`` (failed when a link of ``links`` goes
        down), its rate at most ``cap`` bit/s."""
        flow = Flow(self.env.event(), channels, links, nbits, cap, self.env.now)
        if flow.remaining <= 0:
            flow.alive = False
            flow.event.succeed()
            return flow
        if not self._pending and self._fits(flow):
            return flow
        for channel in flow.channels:
            channel.flows[flow] = None
        self._dirty_flows[flow] = None
        self._schedule_pass()
        return flow

    def _fits(self, flow: Flow) -> bool:
        """Start ``flow`` without solving where it fits in its path's spare capacity (see the
        module docstring); False (nothing done) where the others' rates could change."""
        rate = self._rate_from_spare(flow)
        if rate is None:
            return False
        for channel in flow.channels:
            channel.flows[flow] = None
        self.flows_fitted += 1
        self._give(flow, rate)
        return True

    def set_cap(self, flow: Flow, cap: float) -> None:
        """Change a flow's own rate bound (a TCP window grew) from now on."""
        if not flow.alive or cap == flow.cap:
            return
        flow._advance(self.env.now)
        held_by_cap = flow.version > 0 and flow.rate >= flow.cap * (1 - _TOLERANCE)
        raised = cap > flow.cap
        flow.cap = float(cap)
        if self._pending or flow.version == 0:
            pass  # its rate is still to be solved this instant
        elif (raised and not held_by_cap) or (not raised and flow.rate <= cap):
            return  # a cap that does not bind: a channel holds the flow back, no rate changes
        elif raised and self._rise(flow):
            return
        self._dirty_flows[flow] = None
        self._schedule_pass()

    def _rise(self, flow: Flow) -> bool:
        """Raise a flow held by its own cap into its path's spare capacity without solving,
        where that changes no other flow's rate (as ``_fits``); False (nothing done) if not."""
        rate = self._rate_from_spare(flow)
        if rate is None:
            return False
        self._give(flow, rate)
        return True

    @staticmethod
    def _rate_from_spare(flow: Flow) -> float | None:
        """The rate ``flow`` reaches with its path's spare capacity (up to its cap), where
        taking it changes no other flow's rate: every channel it fills carries no faster flow.
        None where it does not rise above its current rate, or could change others."""
        rate = flow.cap
        for channel in flow.channels:
            rate = min(rate, channel.capacity_bps - channel.load + flow.rate)
        if not flow.rate < rate < math.inf:
            return None
        for channel in flow.channels:
            spare = channel.capacity_bps - channel.load + flow.rate
            if rate >= spare - _TOLERANCE * channel.capacity_bps and any(
                    other.rate > rate * (1 + _TOLERANCE)
                    for other in channel.flows if other is not flow):
                return None  # it fills a channel where a faster flow would have to slow down
        return rate

    def _give(self, flow: Flow, rate: float) -> None:
        """Set ``flow``'s rate (its channels' loads follow) and schedule its end."""
        for channel in flow.channels:
            channel.load += rate - flow.rate
        flow.rate = rate
        flow.version += 1
        heapq.heappush(self._heap, (flow.last + flow.remaining / rate, next(self._sequence),
                                    flow.version, flow))
        self._arm()

    def touch_channel(self, channel: Channel) -> None:
        """Recompute the rates of ``channel``'s flows this instant (its capacity changes now;
        their progress so far is at their old rates, which hold until the pass)."""
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
        changed = False
        for channel in flow.channels:
            del channel.flows[flow]
            full = channel.load >= channel.capacity_bps * (1 - _TOLERANCE)
            channel.load = max(channel.load - flow.rate, 0.0)
            # the others' rates can only change where this channel held some of them back
            if channel.flows and (full or self._pending):
                self._dirty_channels[channel] = None
                changed = True
        if changed:
            self._schedule_pass()

    # ------------------------------------------------------------------------- solving

    def _schedule_pass(self) -> None:
        if not self._pending:
            self._pending = True
            self.env.timeout(0).callbacks.append(self._pass)

    def _pass(self, _event=None) -> None:
        """Re-solve the flows the pending changes can affect, growing the set only as far as
        rates change: start from the new flows and the flows of changed channels, solve them
        against what the others leave of each channel, then add the flows of every channel
        where the new rates could break max-min fairness with the flows outside the set that
        cross it (``_unsettled``); repeat until no such channel is left. Channels below
        capacity hold no flow back, so changes do not spread through them."""
        self._pending = False
        now = self.env.now
        members: dict[Flow, None] = {f: None for f in self._dirty_flows if f.alive}
        for flow in list(members):  # a full channel the flow crosses: it must share it
            for channel in flow.channels:
                if len(channel.flows) > 1 and (
                        channel.load >= channel.capacity_bps * (1 - _TOLERANCE)):
                    members.update(dict.fromkeys(channel.flows))
        for channel in self._dirty_channels:
            members.update(dict.fromkeys(channel.flows))
        self._dirty_channels.clear()
        self._dirty_flows.clear()
        while members:
            flows = list(members)
            on: dict[Channel, list[Flow]] = {}
            for flow in flows:
                for c in flow.channels:
                    on.setdefault(c, []).append(flow)
            outside = {c: max(c.load - math.fsum(f.rate for f in inside), 0.0)
                       if len(inside) < len(c.flows) else 0.0 for c, inside in on.items()}
            capacity = {c: max(c.capacity_bps - outside[c], 0.0) for c in on}
            rates = max_min_rates([f.channels for f in flows], capacity, [f.cap for f in flows])
            rate_of = dict(zip(flows, rates, strict=True))
            grow = [c for c, inside in on.items()
                    if len(inside) < len(c.flows) and self._unsettled(c, inside, members,
                                                                      outside[c], rate_of)]
            if grow:
                for c in grow:
                    members.update(dict.fromkeys(c.flows))
                continue
            self.recomputations += 1
            self.flows_rated += len(flows)
            for flow, rate in rate_of.items():
                flow._advance(now)
                if rate != flow.rate or flow.version == 0:
                    flow.rate = rate
                    flow.version += 1
                    if rate > 0:
                        finish = now + flow.remaining / rate
                        heapq.heappush(self._heap, (finish, next(self._sequence), flow.version,
                                                    flow))
            for c, inside in on.items():
                c.load = outside[c] + math.fsum(f.rate for f in inside)
            break
        self._arm()

    @staticmethod
    def _unsettled(channel: Channel, inside: list[Flow], members, outside_load: float,
                   rate_of: dict) -> bool:
        """Whether ``channel``'s flows outside the solved set may have to change: it was full
        and no longer is (flows held back by it may speed up), or it is full and the fastest
        flows inside and outside the set differ (on a full channel the flows it holds back are
        its fastest, so one side is not where max-min puts it)."""
        limit = channel.capacity_bps * (1 - _TOLERANCE)
        if outside_load + math.fsum(rate_of[f] for f in inside) < limit:
            return channel.load >= limit
        fastest_inside = max(rate_of[f] for f in inside)
        fastest_outside = max(f.rate for f in channel.flows if f not in members)
        return abs(fastest_inside - fastest_outside) > _TOLERANCE * channel.capacity_bps

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
