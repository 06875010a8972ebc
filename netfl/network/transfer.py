"""Transfers, broadcasts and resumed uploads over the network's links.

``network.send(src, dst, nbytes)`` is a SimPy process. It routes over the shortest path by
propagation delay among links that are up (``routing.py``; a client reaches the network through
the edge server it is attached to now), then crosses the path with its transport
(``transport.py``: TCP or fluid, pipelined over the whole path at the max-min fair share of
``fabric.py``; or store-and-forward). The process returns the transfer's
:class:`~netfl.sim.trace.TransferEnd` record, or raises :class:`~netfl.errors.TransferFailed`
after the retries are spent, or when it is cancelled (``Network.transfer``). Every transfer is
tagged by the tiers of its ends ("client->edge", ...). ``helper.build_network`` makes a Network
from the scenario.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import simpy
from simpy import Interrupt

from netfl.errors import SimulationError, TransferFailed
from netfl.network.fabric import Fabric
from netfl.network.link import Link
from netfl.network.routing import Topology
from netfl.network.transport import (
    CANCELLED,
    Cancelled,
    HopFailed,
    down_reason,
    emit_hops,
)
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import HopEnd, TraceBus, TransferEnd, TransferFail, TransferStart
from netfl.world.base import CLIENT, EDGE, World


@dataclass(frozen=True)
class RetryPolicy:
    """A failed transfer is tried again ``attempts`` more times, ``backoff_s`` seconds after
    its first failure, the wait multiplied by ``backoff_factor`` at each further one."""

    attempts: int = 0
    backoff_s: float = 1.0
    backoff_factor: float = 2.0


class Network(Topology):
    """Links on the world's graph (``Topology``) and the transfers that cross them.

    ``transport``: the transport of every link whose class has none of its own in
    ``class_transports`` (link class -> transport); ``streams``: the random streams of the
    network's parts (a mobile world's losses and shadowing); ``mobile``: the access side of a
    mobile world (set by the helper; None on a fixed world). ``start()`` runs what ``on_start``
    was given (the helper's outage processes) when the simulation starts.
    """

    def __init__(self, env: simpy.Environment, world: World, streams: RandomStreams,
                 trace: TraceBus, transport, class_transports: dict | None = None,
                 retry: RetryPolicy = RetryPolicy()):
        super().__init__(env, world, trace)
        self.streams, self.retry = streams, retry
        self._ids = itertools.count()
        self.fabric = Fabric(env)
        self.transport = transport
        self._class_transport = dict(class_transports or {})
        self.mobile = None
        self._starters: list = []
        # links.closed_form: the link classes whose links a client has to itself (own_links.py),
        # and the links an exchange advanced in closed form holds until it ends
        self.closed_form_classes: frozenset[str] = frozenset()
        self.reserved_count = 0

    def on_start(self, starter) -> None:
        """Have ``start`` call ``starter()`` (no arguments)."""
        self._starters.append(starter)

    def start(self) -> None:
        """Start the processes that run from the simulation's start (link outages)."""
        for starter in self._starters:
            starter()

    def next_transfer_id(self) -> int:
        """A new transfer's id (ids count up from 0 in the order transfers start)."""
        return next(self._ids)

    def reserve(self, links, held: bool = True) -> None:
        """Mark ``links`` as held by an exchange advanced in closed form (``held``), or no
        longer."""
        for link in links:
            link.reserved = held
        self.reserved_count += len(links) if held else -len(links)

    def _refuse_reserved(self, path: list[str]) -> None:
        """A per-event transfer may not cross a link an exchange advanced in closed form holds
        (own_links.py): it would have shared a link booked as the client's alone."""
        for link in self.path_parts(path)[0]:
            if link.reserved:
                raise SimulationError(
                    f"a transfer {path[0]} -> {path[-1]} at {self.env.now:.6g} s crosses link "
                    f"{link.name}, which an exchange advanced in closed form holds "
                    f"(links.closed_form: true) for its client's own transfers: the algorithm "
                    f"uses that client's link for two things at once; set links.closed_form: "
                    f"false to simulate it event by event")

    # ------------------------------------------------------------------------ transfers

    def send(self, src: str, dst: str, nbytes: float, tag: str | None = None,
             raw_nbytes: float | None = None) -> simpy.Process:
        """Start a transfer: the process's value is its TransferEnd record; or TransferFailed.

        ``raw_nbytes``: the payload's size before compression, for accounting only. Interrupting
        the process cancels the transfer (``transfer``); the process then fails with
        TransferFailed("cancelled"), defused: a waiter sees it, and none is needed.
        """
        raw = float(nbytes if raw_nbytes is None else raw_nbytes)
        return self.env.process(self._transfer(src, dst, float(nbytes), tag or self.tag(src, dst),
                                               raw, own_process=True))

    def transfer(self, src: str, dst: str, nbytes: float, tag: str | None = None,
                 raw_nbytes: float | None = None):
        """``send`` as a generator, for a process to run with ``yield from`` (one process
        fewer per transfer: about a quarter of a transfer's host time); returns the
        TransferEnd record or raises TransferFailed. (The transfer's own generator itself,
        not one around it: a frame fewer on every resume.)

        Cancelling: interrupting the process running the transfer, at any point of it (set-up,
        slow start, sending, propagation, a retry's back-off, waiting for coverage, custody at a
        relay, a resumed upload's forwarded parts, which are cancelled too), takes its flows out
        of the fabric at once (the others' max-min shares are recomputed that instant), emits
        one TransferFail record (reason "cancelled", ``will_retry`` False, ``wire_bytes`` the
        bits sent so far, earlier attempts included) and raises TransferFailed("cancelled").
        A transfer never interrupted runs exactly as without this."""
        raw = float(nbytes if raw_nbytes is None else raw_nbytes)
        return self._transfer(src, dst, float(nbytes), tag or self.tag(src, dst), raw)

    def _transfer(self, src: str, dst: str, nbytes: float, tag: str, raw_nbytes: float,
                  own_process: bool = False):
        """The transfer's generator (``transfer``); ``own_process``: it runs a process of its
        own (``send``), defused when cancelled. Longer than 80 lines: one generator, so a resume
        crosses no extra frame."""
        transfer_id, retry, started = next(self._ids), self.retry, self.env.now
        nbits, wire_bits, retransmissions = nbytes * 8.0, 0.0, 0
        label = (transfer_id, tag) if self.trace.wants(HopEnd) else None
        retries, forwards = 0, []

        def record_failure(time_s: float, reason: str, link: Link | None, will_retry: bool):
            self.trace.emit(TransferFail(
                time_s=time_s, transfer_id=transfer_id, src=src, dst=dst, tag=tag,
                nbytes=nbytes, reason=reason, wire_bytes=wire_bits / 8.0,
                link=link.name if link else "", will_retry=will_retry,
                duration_s=time_s - started))

        try:
            for attempt in itertools.count():
                if self.trace.wants(TransferStart):
                    self.trace.emit(TransferStart(time_s=self.env.now, transfer_id=transfer_id,
                                                  src=src, dst=dst, tag=tag, nbytes=nbytes,
                                                  attempt=attempt))
                path = self.route(src, dst)
                try:
                    if path is None:
                        raise HopFailed(None, "no-route", 0.0)
                    if self.reserved_count:
                        self._refuse_reserved(path)
                    sent, lost, path = yield from self._deliver(path, nbits, label)
                    wire_bits += sent
                    retransmissions += lost
                except HopFailed as failure:
                    wire_bits += failure.wire_bits
                    if failure.reason == CANCELLED:
                        raise
                    cut_at, link = self.env.now, failure.link
                    if self._resumable(src, failure):
                        old = link.v if link.u == src else link.u
                        everything_sent = failure.progress_bits >= nbits * (1 - 1e-12)
                        try:
                            back = everything_sent or (
                                yield from self.mobile.wait_for_coverage(src))
                        except Interrupt:  # the cut stands, then the cancel
                            record_failure(cut_at, failure.reason, link, will_retry=True)
                            raise
                        # one record per cut, stamped when it happened, once its outcome is known
                        record_failure(cut_at, failure.reason, link, will_retry=bool(back))
                        if not back:
                            raise TransferFailed(src, dst, failure.reason,
                                                 (link.u, link.v)) from None
                        nbits -= failure.progress_bits
                        # a pipelined flow's received part went on with it; a stored one is sent on
                        pipelined = self.transport_of(link).pipelined
                        if not pipelined and old != dst and failure.progress_bits > 0:
                            forwards.append(self.env.process(
                                self._forward_part(old, dst, failure.progress_bits / 8.0)))
                        if not everything_sent:
                            continue
                        if not pipelined:
                            path = [src, old]  # the old RSU got it all; the forward carries it on
                    else:
                        will_retry = retries < retry.attempts
                        record_failure(cut_at, failure.reason, link, will_retry)
                        if not will_retry:
                            ends = (link.u, link.v) if link else None
                            raise TransferFailed(src, dst, failure.reason, ends) from None
                        yield self.env.timeout(retry.backoff_s * retry.backoff_factor**retries)
                        retries += 1
                        continue
                if forwards:  # the parts received before a hand-over still cross the backhaul
                    outcomes = yield self.env.all_of(forwards)
                    lost = next((e for e in outcomes.values() if e is not None), None)
                    if lost is not None:
                        record_failure(self.env.now, f"resumed-part {lost.reason}", None, False)
                        raise TransferFailed(src, dst, f"resumed-part {lost.reason}",
                                             lost.link) from None
                report = TransferEnd(
                    time_s=self.env.now, transfer_id=transfer_id, src=src, dst=dst, tag=tag,
                    nbytes=nbytes, path=tuple(path), duration_s=self.env.now - started,
                    wire_bytes=wire_bits / 8.0, retransmissions=retransmissions,
                    raw_nbytes=raw_nbytes)
                self.trace.emit(report)
                return report
        except (Interrupt, Cancelled):  # a cancel: see transfer()
            for forward in forwards:
                if forward.is_alive:
                    forward.interrupt(CANCELLED)
            record_failure(self.env.now, CANCELLED, None, will_retry=False)
            if own_process:  # failed as asked: no waiter needed
                self.env.active_process.defused = True
            raise TransferFailed(src, dst, CANCELLED, None) from None

    def broadcasts_from(self, node: str) -> bool:
        """Whether ``node`` (an RSU) sends its downlinks as one broadcast to its cell."""
        return (self.mobile is not None and self.mobile.broadcast_rate_bps > 0
                and self.world.tier(node) == EDGE)

    def broadcast(self, src: str, receivers: list[str], nbytes: float,
                  tag: str | None = None) -> simpy.Process:
        """Broadcast ``nbytes`` from the RSU ``src`` to those of ``receivers`` in its cell, once
        on the air (``broadcasts_from``). The process's value maps each receiver to its
        TransferEnd, or None where it missed the broadcast (a TransferFail record says why:
        no-route, left-coverage or broadcast-missed). The bits on the air are counted once,
        split over the receivers' records (``wire_bytes``); each record delivers ``nbytes``.
        Interrupting the process cancels the broadcast: it leaves the air at once, and every
        receiver gets None and a TransferFail record "cancelled" (the bits sent so far split
        over them)."""
        return self.env.process(self._broadcast(src, list(receivers), float(nbytes),
                                                tag or f"{self.world.tier(src)}->{CLIENT}"))

    def _broadcast(self, src: str, receivers: list[str], nbytes: float, tag: str):
        started, ids = self.env.now, {r: next(self._ids) for r in receivers}
        links = {r: self.find_link(r, src) for r in receivers}
        listening = {r: link.down_epoch for r, link in links.items() if link is not None
                     and link.up and self.world.is_attached(r, src)}
        if self.trace.wants(TransferStart):
            for r in receivers:
                self.trace.emit(TransferStart(time_s=started, transfer_id=ids[r], src=src,
                                              dst=r, tag=tag, nbytes=nbytes, attempt=0))
        air_bytes, cancelled = 0.0, False
        if listening:
            flow, air_bits = self.mobile.broadcast_flow(src, nbytes)
            air_bytes = float(air_bits) / 8.0
            began = self.env.now
            try:
                yield flow.event
                if self.trace.wants(HopEnd):  # one hop on the air, heard by every listener
                    for r in listening:
                        emit_hops(self, (ids[r], tag), [links[r]], [src, r], flow.channels[:1],
                                  began, self.env.now, float(air_bits))
                yield self.env.timeout(max(links[r].delay_s for r in listening))
            except Interrupt:  # cancelled: off the air now, what went out so far counted
                self.fabric.cancel(flow)
                air_bytes, cancelled = flow.sent_bits / 8.0, True
        share, results = air_bytes / max(len(receivers), 1), {}
        for r in receivers:
            link, reason = links[r], None
            if cancelled:
                reason = CANCELLED
            elif r not in listening:
                reason = "no-route"
            elif not link.up or link.down_epoch != listening[r]:
                reason = down_reason(link)
            elif not self.mobile.hears_broadcast(link, src):
                reason = "broadcast-missed"
            if reason is None:
                results[r] = TransferEnd(
                    time_s=self.env.now, transfer_id=ids[r], src=src, dst=r, tag=tag,
                    nbytes=nbytes, path=(src, r), duration_s=self.env.now - started,
                    wire_bytes=share, retransmissions=0, raw_nbytes=nbytes)
                self.trace.emit(results[r])
            else:
                results[r] = None
                self.trace.emit(TransferFail(
                    time_s=self.env.now, transfer_id=ids[r], src=src, dst=r, tag=tag,
                    nbytes=nbytes, reason=reason, wire_bytes=share,
                    link=link.name if link else "", will_retry=False,
                    duration_s=self.env.now - started))
        return results

    def transport_of(self, link: Link):
        """The transport that carries ``link``: its class's, or links.transport."""
        return self._class_transport.get(link.link_class, self.transport)

    def class_transport(self, link_class: str):
        """The transport that carries the links of ``link_class``."""
        return self._class_transport.get(link_class, self.transport)

    def _deliver(self, path: list[str], nbits: float, label: tuple[int, str] | None = None):
        """Cross ``path``: in one piece, or (where link classes have transports of their own)
        piece by piece, each run of links with one transport carried by it, the node between
        two runs receiving the whole message before the next starts. Returns (wire bits,
        retransmissions, the path taken) or raises HopFailed (wire bits of the whole attempt)."""
        if not self._class_transport:
            return (yield from self.transport.deliver(self, path, nbits, label=label))
        wire, lost, taken, k = 0.0, 0, [path[0]], 0
        while k < len(path) - 1:
            transport = self.transport_of(self.link(path[k], path[k + 1]))
            end = k + 1
            while end < len(path) - 1 and self.transport_of(
                    self.link(path[end], path[end + 1])) is transport:
                end += 1
            try:
                sent, resent, piece = yield from transport.deliver(self, path[k:end + 1], nbits,
                                                                   held=k > 0, label=label)
            except HopFailed as failure:
                failure.wire_bits += wire
                raise
            wire, lost = wire + sent, lost + resent
            taken += piece[1:]
            k = end
        return wire, lost, taken

    def _forward_part(self, old: str, dst: str, nbytes: float):
        """Carry the part of a resumed upload that ``old`` received on to ``dst``; returns
        None, or the TransferFailed that stopped it."""
        process = self.send(old, dst, nbytes, tag="resumed-part")
        try:
            yield process
        except TransferFailed as failure:
            return failure
        except Interrupt:  # the transfer it belongs to was cancelled: so is this part
            if process.is_alive:
                process.interrupt(CANCELLED)
        return None

    def _resumable(self, src: str, failure: HopFailed) -> bool:
        """An upload cut on its first hop by leaving coverage, where the world resumes them."""
        return (self.mobile is not None and self.mobile.resume.enabled
                and failure.reason == "left-coverage" and failure.link is not None
                and src in (failure.link.u, failure.link.v)
                and self.world.tier(src) == CLIENT and failure.progress_bits > 0)
