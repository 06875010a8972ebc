"""How a transfer crosses its path: TCP, fluid or store-and-forward (docs/models/network.md).

Each transport's ``deliver(network, path, nbits, held, label)`` is a generator that returns
``(wire_bits, retransmissions, path)`` (the path it took) once the last bit has arrived at the
path's end, or raises :class:`HopFailed`. ``wire_bits`` counts every bit sent on every hop
(headers and re-sends included); ``HopFailed.progress_bits`` is the part of the payload that got
through before a cut. A transfer's process interrupted in ``deliver`` (a cancel) takes its flow
out of the fabric at once and raises :class:`Cancelled` with the bits sent so far.

* :class:`Pipelined` (``tcp`` and ``fluid``): one flow holds every link of the path at once at
  its max-min fair share (``fabric.py``); the last bit arrives a one-way latency after it was
  sent. ``tcp`` adds the connection set-up (one round trip), slow start (a window of
  ``initial_window`` segments, doubled every round trip while the window is smaller than the
  flow's share of the path times the round trip: each round's window is sent at the flow's
  share, then the flow waits for the round trip to end) and header overhead per segment.
* :class:`StoreAndForward`: each hop receives the whole message before it is sent on; a node
  holds the message while its next hop is down, for at most ``custody_timeout``.
"""

from __future__ import annotations

import math

from simpy import Interrupt

from netfl.network.access import COVERAGE, SIGNAL
from netfl.network.flow import LinkDown
from netfl.network.link import Link
from netfl.sim.trace import HopEnd
from netfl.world.base import CLIENT

MATHIS_CONSTANT = math.sqrt(1.5)  # Mathis et al. 1997: rate = MSS / RTT * sqrt(3 / (2 p))


class HopFailed(Exception):
    """A transfer attempt failed on ``link`` (None: no route) for ``reason``."""

    def __init__(self, link: Link | None, reason: str, wire_bits: float,
                 progress_bits: float = 0.0):
        self.link, self.reason, self.wire_bits = link, reason, wire_bits
        self.progress_bits = progress_bits  # of the payload, delivered before the cut


CANCELLED = "cancelled"


class Cancelled(HopFailed):
    """The transfer's process was interrupted: its flow is out of the fabric, ``wire_bits`` went
    on the wire before that. Never retried."""

    def __init__(self, wire_bits: float):
        super().__init__(None, CANCELLED, wire_bits)


def down_reason(link: Link) -> str:
    return "left-coverage" if link.down_reason in (COVERAGE, SIGNAL) else "link-down"


def emit_hops(network, label: tuple[int, str] | None, links: list[Link], path: list[str],
              channels: list, began: float, ended: float, wire_bits: float) -> None:
    """HopEnd records for ``wire_bits`` sent over ``path``'s ``links`` (their ``channels``) as
    one flow from ``began`` to ``ended``: hop k's data enters its link the earlier hops' delays
    after ``began`` and leaves it the delays up to its own after ``ended``. Only for a transfer
    that asked (``label``: its id and tag)."""
    if label is None:
        return
    now, duration = ended, ended - began
    rate = wire_bits / duration if duration > 0 else math.inf
    ahead = 0.0
    for link, u, v, channel in zip(links, path[:-1], path[1:], channels, strict=True):
        capacity = channel.capacity_bps
        share = min(rate / capacity, 1.0) if capacity > 0 else 0.0
        network.trace.emit(HopEnd(time_s=now + ahead + link.delay_s, transfer_id=label[0],
                                  tag=label[1], u=u, v=v, link=link.name,
                                  start_s=began + ahead, wire_bytes=wire_bits / 8.0,
                                  rate_share=share))
        ahead += link.delay_s


def _message_lost(link: Link) -> bool:
    return link.loss.retransmit_p > 0 and link.loss_rng.random() < link.loss.retransmit_p


class Pipelined:
    """``tcp`` or ``fluid``: one flow over the whole path (see the module docstring)."""

    pipelined = True

    def __init__(self, spec):
        self.tcp = spec.kind == "tcp"
        self.spec = spec
        if self.tcp:
            self.segment_bits = (spec.mss + spec.header_bytes) * 8.0
            self.overhead = (spec.mss + spec.header_bytes) / spec.mss
        else:
            self.segment_bits, self.overhead = 0.0, 1.0

    def deliver(self, network, path: list[str], nbits: float, held: bool = False,
                label: tuple[int, str] | None = None):
        links, channels, own = network.path_parts(path)
        if network.mobile is not None:  # first: a link's signal may have come back
            for link in links:
                network.mobile.before_transmit(link)
        for link in links:
            if not link.up:
                raise HopFailed(link, down_reason(link), 0.0)
        hops = len(links)
        one_way = sum(link.delay_s for link in links)
        per_packet = [self.segment_bits / c.capacity_bps for c in own if c.capacity_bps > 0]
        # each hop but the bottleneck adds one segment's store-and-forward to the latency
        latency = one_way + (sum(per_packet) - max(per_packet) if per_packet else 0.0)
        rtt = 2.0 * one_way + sum(per_packet)
        wire, lost, lost_on = 0.0, 0, {}
        while True:  # once, plus once per message lost (re-sent end to end)
            epochs = [link.down_epoch for link in links]
            windows, largest = self._windows(rtt)
            sending = PipelinedSend(network, links, channels, nbits * self.overhead, rtt,
                                    latency, self._cap(links, rtt), windows, largest,
                                    self.segment_bits, epochs)
            set_up = self.tcp and self.spec.handshake and one_way > 0
            sending.start(2.0 * one_way if set_up else 0.0)
            try:
                yield sending.done
            except HopFailed as failure:  # in the set-up
                failure.wire_bits += wire
                raise
            except LinkDown as down:
                sent = sending.flow.sent_bits
                raise HopFailed(down.link, down_reason(down.link), wire + sent * hops,
                                sent / self.overhead) from None
            except Interrupt:
                raise Cancelled(wire + sending.cancel() * hops) from None
            began, sent_at = sending.began, sending.flow.ended_at
            wire += nbits * self.overhead * hops
            self._check(links, epochs, wire, nbits)
            emit_hops(network, label, links, path, own, began, sent_at, nbits * self.overhead)
            if self.tcp and self.spec.loss_limited:
                return wire, lost, path
            for link in links:
                if _message_lost(link):
                    lost += 1
                    lost_on[link.name] = lost_on.get(link.name, 0) + 1
                    if lost_on[link.name] > link.loss.max_retransmissions:
                        raise HopFailed(link, "loss", wire)
                    break
            else:
                return wire, lost, path

    @staticmethod
    def _check(links: list[Link], epochs: list[int], wire: float, progress: float) -> None:
        """Fail if a link of the path went down since ``epochs`` (while bits were in flight)."""
        for link, epoch in zip(links, epochs, strict=True):
            if link.down_epoch != epoch:
                raise HopFailed(link, down_reason(link), wire, progress)

    def _cap(self, links: list[Link], rtt: float) -> float:
        """The flow's own bound: its receive window, or (``loss_limited``) Mathis' rate."""
        cap = math.inf
        if not self.tcp or rtt <= 0:
            return cap
        if self.spec.receive_window is not None:
            cap = self.spec.receive_window * self.overhead * 8.0 / rtt
        if self.spec.loss_limited:
            survive = math.prod(1.0 - link.loss.retransmit_p for link in links)
            if survive < 1.0:
                cap = min(cap, self.segment_bits / rtt * MATHIS_CONSTANT
                          / math.sqrt(1.0 - survive))
        return cap

    def _windows(self, rtt: float):
        """Slow start's segments per round (None: no slow start) and the largest window."""
        if not (self.tcp and rtt > 0):
            return None, math.inf
        largest = math.inf  # the receive window, in segments
        if self.spec.receive_window is not None:
            largest = max(self.spec.receive_window / self.spec.mss, 1.0)
        return slow_start_windows(self.spec.initial_window, self.spec.delayed_ack), largest


def slow_start_windows(initial_window: int, delayed_ack: int):
    """The segments TCP sends in each round trip of slow start (an endless generator).

    Each acknowledged segment grows the window by one (byte counting, RFC 3465); the receiver
    acknowledges every ``delayed_ack``-th segment (RFC 1122, 5681), the first data segment at
    once, and a segment left over at the end of a round is acknowledged with the next round's.
    With ``delayed_ack`` 1 the window doubles: 10, 20, 40, ...; with 2 (ns-3's and most stacks'
    default): 10, 18, 36, 72, ... (a trace of ns-3 3.44's Cubic shows exactly these).
    """
    window, in_flight_left, first = initial_window, 0, True
    cwnd = initial_window
    while True:
        yield window
        pending = in_flight_left + window
        if first and delayed_ack > 1:
            acked = 1 + delayed_ack * ((pending - 1) // delayed_ack)
        else:
            acked = delayed_ack * (pending // delayed_ack)
        first = False
        in_flight_left = pending - acked
        cwnd += acked
        window = cwnd - in_flight_left


class PipelinedSend:
    """One attempt of a pipelined transfer: ``wire_bits`` over ``links`` (crossing
    ``channels``) as one flow, after the connection set-up that ``start`` is given.

    The transfer's process waits on one event, ``done``: it succeeds a latency after the last
    bit was sent (``Flow.tail_s``), or fails with HopFailed (a link went down during the set-up)
    or LinkDown (while bits were being sent). The set-up and each slow-start round are timeouts
    whose callbacks do the round's work at once, in the order a process waking on them would:
    the same results as a process looping over the rounds, without waking the transfer's
    process (and the generators it is nested in) once per round trip.

    ``rtt``: the path's round trip; ``latency``: from the last bit sent to its arrival at the
    path's end; ``cap``: the flow's own bound (receive window, Mathis' rate); ``windows``: the
    segments of each slow-start round (None: no slow start, as ``fluid``), at most ``largest``
    each, of ``segment_bits`` each; ``epochs``: the links' down epochs when the attempt began.
    """

    __slots__ = ("env", "fabric", "links", "channels", "epochs", "wire_bits", "rtt", "latency",
                 "cap", "windows", "largest", "segment_bits", "done", "flow", "began", "_window",
                 "_round_start_bits", "_cancelled")

    def __init__(self, network, links: list[Link], channels, wire_bits: float, rtt: float,
                 latency: float, cap: float, windows, largest: float, segment_bits: float,
                 epochs: list[int]):
        self.env, self.fabric = network.env, network.fabric
        self.links, self.channels, self.epochs = links, channels, epochs
        self.wire_bits, self.rtt, self.latency, self.cap = wire_bits, rtt, latency, cap
        self.windows, self.largest, self.segment_bits = windows, largest, segment_bits
        self.done = self.env.event()
        self.flow = None
        self.began = math.nan  # when the first bit was sent
        self._window = math.inf
        self._round_start_bits = 0.0
        self._cancelled = False

    def cancel(self) -> float:
        """Stop the attempt now (its process was interrupted): no flow starts after the set-up,
        no round ends, and the flow leaves the fabric. Returns the flow's bits sent so far."""
        self._cancelled = True
        if self.flow is None:
            return 0.0
        self.fabric.cancel(self.flow)
        return self.flow.sent_bits

    def start(self, handshake_s: float) -> None:
        if handshake_s > 0:
            self.env.timeout(handshake_s).callbacks.append(self._after_handshake)
        else:
            self._begin()

    def _after_handshake(self, _event) -> None:
        if self._cancelled:
            return
        for link, epoch in zip(self.links, self.epochs, strict=True):
            if link.down_epoch != epoch:  # went down during the set-up
                self.done.fail(HopFailed(link, down_reason(link), 0.0, 0.0))
                return
        self._begin()

    def _begin(self) -> None:
        """Start the flow: under slow start at its first window per round trip, unless that
        window covers it all (then at its fair share at once)."""
        env = self.env
        self.began = env.now
        if self.windows is not None:
            self._window = min(next(self.windows), self.largest) * self.segment_bits
        ramping = self._window < self.wire_bits
        self.flow = self.fabric.transmit(
            self.channels, self.links, self.wire_bits,
            min(self.cap, self._window / self.rtt) if ramping else self.cap,
            tail_s=self.latency, event=self.done)
        if ramping:
            self._next_round()

    def _next_round(self) -> None:
        self._round_start_bits = self.flow.sent_by(self.env.now)
        self.env.timeout(self.rtt).callbacks.append(self._round_end)

    def _round_end(self, _event) -> None:
        """A round sent at most its window, less than what was left, so the flow cannot have
        ended within it (but within rounding of its last bit, or by failing). The round whose
        window covers the rest, or the first whose window the flow's fair share could not carry
        within the round trip (the window has reached the share's bandwidth-delay product),
        lifts the window's cap: the rest goes at the fair share."""
        if self.done.triggered or self._cancelled:
            return
        flow = self.flow
        sent = flow.sent_by(self.env.now)
        kept_up = sent - self._round_start_bits >= self._window * (1 - 1e-9)
        self._window = min(next(self.windows), self.largest) * self.segment_bits
        ramping = kept_up and self._window < self.wire_bits - sent
        self.fabric.set_cap(flow, min(self.cap, self._window / self.rtt) if ramping
                            else self.cap)
        if ramping:
            self._next_round()


class StoreAndForward:
    """Message custody at every hop (see the module docstring)."""

    pipelined = False

    def __init__(self, spec):
        self.custody_timeout_s = spec.custody_timeout

    def deliver(self, network, path: list[str], nbits: float, held: bool = False,
                label: tuple[int, str] | None = None):
        """``held``: the message is already in the network at ``path[0]`` (it arrived there over
        links of another transport), so that node holds it in custody too. ``label``: the
        transfer's id and tag, for its HopEnd records (None: none wanted)."""
        world, dst = network.world, path[-1]
        wire, lost, k = 0.0, 0, 0
        while k < len(path) - 1:
            u, v = path[k], path[k + 1]
            link = network.link(u, v)
            relay = k > 0 or held
            if relay and not link.up:  # in custody at u: wait for a way on
                path = path[:k] + (yield from self._custody(network, u, dst, link, wire))
                continue
            if v == dst and world.tier(dst) == CLIENT and not world.is_attached(dst, u):
                rest = network.route(u, dst)  # the receiver moved on: follow it
                if rest is None:
                    if not relay:
                        raise HopFailed(None, "no-route", wire)
                    rest = yield from self._custody(network, u, dst, None, wire)
                path = path[:k] + rest
                continue
            try:
                sent, resent = yield from self._hop(network, link, u, v, nbits, label)
            except HopFailed as failure:
                if not relay or failure.reason in ("loss", CANCELLED):
                    failure.wire_bits += wire
                    raise
                wire += failure.wire_bits  # the message is still at u: try again from there
                continue
            wire += sent
            lost += resent
            k += 1
        return wire, lost, path

    def _custody(self, network, node: str, dst: str, link: Link | None, wire: float):
        """Hold the message at ``node`` until a route to ``dst`` is up; returns it."""
        env, deadline = network.env, network.env.now + self.custody_timeout_s
        while True:
            route = network.route(node, dst)
            if route is not None and network.link(route[0], route[1]).up:
                return route
            if env.now >= deadline:
                reason = down_reason(link) if link is not None else "no-route"
                raise HopFailed(link, reason, wire)
            try:
                yield env.any_of([network.link_came_up(), env.timeout(deadline - env.now)])
            except Interrupt:
                raise Cancelled(wire) from None

    @staticmethod
    def _hop(network, link: Link, u: str, v: str, nbits: float, label=None):
        """Cross one hop; returns (bits sent, retransmissions) or raises HopFailed."""
        env, channels, sent, lost = network.env, link.channels(u, v), 0.0, 0
        while True:
            if network.mobile is not None:
                network.mobile.before_transmit(link)
            if not link.up:
                raise HopFailed(link, down_reason(link), sent)
            epoch = link.down_epoch
            began = env.now
            flow = network.fabric.transmit(channels, [link], nbits, tail_s=link.delay_s)
            try:
                yield flow.event  # the last bit has crossed the link
            except LinkDown:
                raise HopFailed(link, down_reason(link), sent + flow.sent_bits,
                                flow.sent_bits) from None
            except Interrupt:
                network.fabric.cancel(flow)
                raise Cancelled(sent + flow.sent_bits) from None
            sent += nbits
            sent_at = flow.ended_at
            if link.down_epoch != epoch:  # cut while the last bits were in flight
                raise HopFailed(link, down_reason(link), sent, nbits)
            emit_hops(network, label, [link], [u, v], channels[:1], began, sent_at, nbits)
            if _message_lost(link):
                lost += 1
                if lost > link.loss.max_retransmissions:
                    raise HopFailed(link, "loss", sent)
                continue
            return sent, lost
