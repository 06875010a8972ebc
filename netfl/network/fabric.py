"""Flows that hold every channel of their path at once, at their max-min fair rates.

A :class:`Flow` (``flow.py``) crosses one or more channels together; the :class:`Fabric` keeps
every flow at its max-min fair rate (``maxmin.py``) and schedules only the earliest completion.

**Classes.** Flows over the same channels with the same cap get the same max-min rate, so the
fabric solves and schedules them as one class: the solver sees a class once, with its count,
and a class keeps a virtual clock (the bits each member has been sent since the class was made,
growing at the class's rate) against which each member's finish tag is set when it joins,
processor-sharing style. A rate change is then one update per class, not per flow: a radio cell
shared by a hundred vehicles costs the same to re-solve as one shared by two.

**Incremental.** A change (a flow starts, ends or fails, a channel's capacity or a flow's cap
changes) marks what it touches; the rates are recomputed once per instant of simulated time
(every change at that instant in one pass) and only for the classes whose max-min rates can
change (``_pass``). Two changes need no solving at all, because the allocation provably stays
the same for every other class: a class that starts (or raises its cap) where it fits in the
spare capacity of its path, every channel it fills carrying no faster class; and a flow that
ends leaving only channels that were not full. In a hierarchical FL system, where each client's
own access link is its bottleneck, most starts and ends are these. A pass left with one class
whose shared channels have room before and after is solved directly (its cap, or the tightest
channel's room over its members: the floats the solver would give). The pass is ``solver.py``.
"""

from __future__ import annotations

import heapq
import itertools
import math

import simpy

from netfl.network.flow import (
    TOLERANCE,
    Channel,
    Flow,
    FlowClass,
    LinkDown,
    Medium,
    notify_watchers,
)
from netfl.network.solver import Solver

__all__ = ["Fabric"]

_MOVED, _FINISHED, _REMOVED = 0, 1, 2  # how a flow leaves its class (``Fabric._leave``)


class Fabric(Solver):
    """Every active flow of one simulation and the max-min rates they get (the re-solving
    pass: ``solver.py``)."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._classes: dict[tuple, FlowClass] = {}
        self._heap: list[tuple[float, int, int, FlowClass]] = []  # (finish, seq, version, class)
        self._sequence = itertools.count()
        self._dirty_channels: dict[Channel, None] = {}
        self._dirty_classes: dict[FlowClass, None] = {}
        self._pending = False
        self._wake_at = math.inf
        self._generation = 0
        self.recomputations = 0  # passes of the solver (for benchmarks)
        self.classes_solved = 0  # classes given a rate, over all passes
        self.classes_fitted = 0  # classes started or raised without solving
        # every channel (and medium) that has carried a flow, in the order of their first flows
        # (for their statistics: Channel.statistics)
        self.channels_used: dict[Channel | Medium, None] = {}

    @property
    def settled(self) -> bool:
        """True when no change awaits its solver pass (every rate is the max-min one)."""
        return not self._pending

    # ------------------------------------------------------------------------- changes

    def transmit(self, channels, links, nbits: float, cap: float = math.inf,
                 tail_s: float = 0.0, event: simpy.Event | None = None) -> Flow:
        """Start a flow of ``nbits`` over ``channels`` (failed when a link of ``links`` goes
        down), its rate at most ``cap`` bit/s; its event (``event``, or a new one) succeeds
        ``tail_s`` seconds after its last bit is sent."""
        flow = Flow(self.env.event() if event is None else event, channels, links, nbits, cap,
                    tail_s)
        if flow.nbits <= 0:
            flow.finish(self.env.now)
            return flow
        flow.started_s = self.env.now
        self._join(flow, flow.nbits)
        return flow

    def set_cap(self, flow: Flow, cap: float) -> None:
        """Change a flow's own rate bound (a TCP window grew) from now on: it moves to the class
        of its channels and its new cap, with the bits it has left."""
        if flow.cls is None or cap == flow.cap:
            return
        old, cap = flow.cls, float(cap)
        if old.count == 1 and (flow.channels, cap) not in self._classes:
            self._recap_alone(flow, cap)
            return
        if not self._pending and cap > flow.cap and old.rate < old.cap * (1 - TOLERANCE):
            target = self._classes.get((flow.channels, cap))
            if target is None or target.rate == old.rate:
                self._move(flow, cap, target)  # a cap that does not bind: same rate
                return
        left = flow.nbits - flow.sent_by(self.env.now)
        self._leave(flow)
        flow.cap = cap
        self._join(flow, left)

    def _recap_alone(self, flow: Flow, cap: float) -> None:
        """Change the cap of a flow alone in its class: the class is re-keyed in place, and its
        rate changes without solving where the new cap does not bind (a channel holds it back)
        or where it rises into spare capacity that no other class needs."""
        cls = flow.cls
        held_by_cap = cls.rate >= cls.cap * (1 - TOLERANCE)
        raised = cap > cls.cap
        del self._classes[cls.key]
        cls.key, cls.cap, flow.cap = (flow.channels, cap), cap, cap
        self._classes[cls.key] = cls
        if self._pending or cls.version == 0:
            pass  # its rate is still to be solved this instant
        elif (raised and not held_by_cap) or (not raised and cls.rate <= cap):
            return  # a cap that does not bind: no rate changes
        elif raised and self._take_spare(cls):
            return
        self._dirty_classes[cls] = None
        self._schedule_pass()

    @staticmethod
    def _rate_from_spare(cls: FlowClass) -> float | None:
        """The rate a class of one flow reaches with its path's spare capacity (up to its cap),
        where taking it changes no other class's rate: every channel it fills carries no faster
        class. None where it does not rise above its current rate, or could change others."""
        rate = cls.cap
        for channel in cls.channels:
            rate = min(rate, channel.capacity_bps - channel.load + cls.rate)
        if not cls.rate < rate < math.inf:
            return None
        for channel in cls.channels:
            spare = channel.capacity_bps - channel.load + cls.rate
            if rate >= spare - TOLERANCE * channel.capacity_bps and any(
                    other.rate > rate * (1 + TOLERANCE)
                    for other in channel.classes if other is not cls):
                return None  # it fills a channel where a faster flow would have to slow down
        return rate

    def _move(self, flow: Flow, cap: float, target: FlowClass | None) -> None:
        """Move ``flow`` to the class of its new cap at the same rate: no rate changes."""
        now, old = self.env.now, flow.cls
        old.advance(now)
        left = max(flow.tag - old.virtual, 0.0)
        del old.members[flow]
        if not old.members:
            self._drop(old)
        else:
            self._reschedule(old)
        flow.cap = cap
        if target is None:
            target = self._register(flow.channels, cap)
            target.rate = old.rate
        self._add(target, flow, left)
        self._reschedule(target)

    def _register(self, channels: tuple, cap: float) -> FlowClass:
        """A new, empty class of these channels and cap, known to them and to the fabric."""
        key = (channels, cap)
        cls = self._classes[key] = FlowClass(key, channels, cap, self.env.now)
        for channel in channels:
            channel.classes[cls] = None
        return cls

    def _drop(self, cls: FlowClass) -> None:
        """Forget an empty class (its scheduled end becomes void)."""
        del self._classes[cls.key]
        for channel in cls.channels:
            del channel.classes[cls]
        self._dirty_classes.pop(cls, None)
        cls.version += 1

    def _add(self, cls: FlowClass, flow: Flow, left_bits: float) -> None:
        """Make ``flow``, with ``left_bits`` to go, a member of ``cls`` from now on."""
        cls.advance(self.env.now)
        flow.cls, flow.tag, flow.entry = cls, cls.virtual + left_bits, next(self._sequence)
        cls.members[flow] = None
        heapq.heappush(cls.heap, (flow.tag, flow.entry, flow))

    def touch_channel(self, channel: Channel) -> None:
        """Recompute the rates of ``channel``'s flows this instant (its capacity changes now;
        their progress so far is at their old rates, which hold until the pass)."""
        if channel.classes:
            self._dirty_channels[channel] = None
            self._schedule_pass()

    def cancel(self, flow: Flow) -> None:
        """Take ``flow`` out now (a cancelled transfer's): its event never fires, its
        ``sent_bits`` stay what it had sent (counted as wasted on its channels), and the rates
        of the flows its channels held back are recomputed this instant. Nothing happens to a
        flow that has ended or failed."""
        if flow.cls is not None:
            self._leave(flow, _REMOVED)

    def fail_link_on(self, channel: Channel, link: object) -> int:
        failed = [flow for flow in channel.flows if link in flow.links]
        for flow in failed:
            self._leave(flow, _REMOVED)
            flow.event.fail(LinkDown(link))
        return len(failed)

    def _join(self, flow: Flow, left_bits: float) -> None:
        """Add ``flow`` with ``left_bits`` to go to the class of its channels and cap."""
        cls = self._classes.get((flow.channels, flow.cap))
        fresh = cls is None
        if fresh:
            cls = self._register(flow.channels, flow.cap)
        self._add(cls, flow, left_bits)
        now = self.env.now
        for channel in cls.channels:  # it runs at its class's rate until a pass says otherwise
            channel.load += cls.rate
            channel.count_flows(now, 1)
        if cls.watched:
            notify_watchers(cls.channels)
        fits = self._fits_fresh(cls) if fresh else self._fits_more(cls)
        if not fits:
            self._dirty_classes[cls] = None
            self._schedule_pass()
        elif not fresh:
            self._reschedule(cls)

    def _fits_fresh(self, cls: FlowClass) -> bool:
        """Give a new class a rate from its path's spare capacity without solving, where that
        changes no other class's rate: every channel it fills carries no faster class. False
        (nothing done) where it could."""
        return not self._pending and self._take_spare(cls)

    def _take_spare(self, cls: FlowClass) -> bool:
        """Give a class of one flow the rate ``_rate_from_spare`` allows (its channels' loads
        follow); False (nothing done) where there is none."""
        rate = self._rate_from_spare(cls)
        if rate is None:
            return False
        for channel in cls.channels:
            channel.load += rate - cls.rate
        self.classes_fitted += 1
        self._set_rate(cls, rate)
        return True

    def _fits_more(self, cls: FlowClass) -> bool:
        """Whether a class held by its own cap keeps its rate with one member more (counted in
        its channels' loads already) and changes no other class's: no channel over capacity,
        and every channel it fills carries no faster class."""
        if self._pending or cls.rate < cls.cap * (1 - TOLERANCE):
            return False  # held back by a channel: one more member changes the share there
        for channel in cls.channels:
            if channel.load > channel.capacity_bps * (1 + TOLERANCE):
                return False
            if channel.full() and any(other.rate > cls.rate * (1 + TOLERANCE)
                                      for other in channel.classes if other is not cls):
                return False
        return True

    def _leave(self, flow: Flow, end: int = _MOVED) -> None:
        """Take ``flow`` out of its class (its stale heap entry is dropped lazily); the classes
        its channels held back are re-solved this instant. ``end``: whether it leaves for good
        (``_FINISHED``: all its bits count as carried; ``_REMOVED``: those sent so far count as
        carried and wasted) or to join another class (``_MOVED``: nothing counted yet)."""
        cls, now = flow.cls, self.env.now
        cls.advance(now)
        flow.sent_at_end = flow.nbits - max(flow.tag - cls.virtual, 0.0)
        flow.cls = None
        del cls.members[flow]
        changed = False
        carried = flow.nbits if end == _FINISHED else flow.sent_at_end if end else 0.0
        for channel in cls.channels:
            channel.count_flows(now, -1)
            if end:  # for good: its bits count (a moved flow's count when it leaves for good)
                channel.carry(flow.started_s, now, carried, end == _REMOVED)
            full = channel.full()
            channel.load = max(channel.load - cls.rate, 0.0)
            if not cls.members and len(channel.classes) == 1:
                channel.load = 0.0  # empty now: no rounding left over
            # the others' rates can only change where this channel held some of them back
            if (full or self._pending) and (cls.members or len(channel.classes) > 1):
                self._dirty_channels[channel] = None
                changed = True
        if not cls.members:
            self._drop(cls)
        elif not changed:
            self._reschedule(cls)
        if changed:
            self._schedule_pass()
        if cls.watched:
            notify_watchers(cls.channels)

    # ------------------------------------------------------------------------- solving

    def _schedule_pass(self) -> None:
        if not self._pending:
            self._pending = True
            self.env.timeout(0).callbacks.append(self._pass)

    def _set_rate(self, cls: FlowClass, rate: float) -> None:
        """Set a class's rate from now on (its virtual clock advanced at the old one)."""
        cls.advance(self.env.now)
        cls.rate = rate
        self._reschedule(cls)

    def _reschedule(self, cls: FlowClass) -> None:
        """Schedule the class's next member end (its earlier schedule becomes void)."""
        cls.version += 1
        first = cls.first()
        if first is not None and cls.rate > 0:
            finish = cls.last + max(first.tag - cls.virtual, 0.0) / cls.rate
            heapq.heappush(self._heap, (finish, next(self._sequence), cls.version, cls))
            if finish < self._wake_at:  # else a wake-up at or before it is armed already
                self._arm()

    def _arm(self) -> None:
        """Make sure a wake-up is scheduled at the earliest valid class end."""
        heap = self._heap
        while heap and heap[0][2] != heap[0][3].version:
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
        horizon = _horizon(now)
        while heap:
            finish, _, version, cls = heap[0]
            if version != cls.version:
                heapq.heappop(heap)
                continue
            if finish > horizon:
                first = cls.first()
                left = first.tag - cls.virtual_at(now) if first is not None else 0.0
                # not done unless due, or the time left is too small to move the clock at all
                if first is not None and now + max(left, 0.0) / cls.rate > now:
                    break
            heapq.heappop(heap)
            self._finish_due(cls, now)
        self._arm()

    def _finish_due(self, cls: FlowClass, now: float) -> None:
        """End every member of ``cls`` whose last bit is sent by now, or due within the wake-up
        horizon: ``_wake`` pops a class due there, and a member it kept would be pushed back
        and popped again at a frozen clock, forever (a clock of hours makes the horizon tens
        of nanoseconds, more than this bit tolerance at Mb/s)."""
        cls.advance(now)
        tolerance = 1e-9 * max(1.0, abs(cls.virtual))
        horizon = _horizon(now)
        done = []
        while True:
            first = cls.first()
            if first is None or first.tag - cls.virtual > tolerance and not (
                    cls.rate > 0 and now + (first.tag - cls.virtual) / cls.rate <= horizon):
                break
            heapq.heappop(cls.heap)
            done.append(first)
        for flow in done:
            self._leave(flow, _FINISHED)
            flow.finish(now)
        if cls.members and cls.key in self._classes:
            self._reschedule(cls)


def _horizon(now: float) -> float:
    """The latest time that counts as now for ending flows (a relative 1e-12: float clocks of
    hours cannot resolve much finer)."""
    return now + 1e-12 * max(1.0, now)
