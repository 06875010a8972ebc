"""Transfers over a client's own link, advanced in closed form (``links.closed_form``).

A client's access link is *its own* where its class is neither shared (one radio cell), subject
to outages nor to retransmission losses, is carried by a pipelined transport (tcp or fluid),
the world is fixed (no mobile access side) and the link is the whole path between the client
and its edge server. A transfer over such a link while no other flow is on it has the times
``closed_form.pipelined_times`` gives, so a cohort of clients exchanging with their edge server
needs no SimPy event per transfer: :func:`own_link` finds the link, :func:`transfer_times`
gives many transfers' times at once (numpy), :func:`book_transfer` books one as the per-event
path would (its channel's statistics, its HopEnd and TransferEnd records, stamped with its own
times) once the simulation has reached its end.

While the caller advances such transfers, it reserves the links (``Network.reserve``): a
per-event transfer that would cross a reserved link is refused with a SimulationError, since it
would have shared the link with the transfers already booked as alone on it.
"""

from __future__ import annotations

import math

import numpy as np

from netfl.network.closed_form import path_timing, pipelined_times, slow_start_bits
from netfl.network.link import Link
from netfl.network.transport import emit_hops
from netfl.sim.trace import HopEnd, TransferEnd
from netfl.world.base import EDGE


def own_link(network, server: str, client: str) -> Link | None:
    """The link between ``server`` and ``client`` where it is the client's own (module
    docstring), up, idle (no flow on it either way) and not reserved; None otherwise."""
    if not network.closed_form_classes or network.mobile is not None:
        return None
    link = network.find_link(client, server)
    # on a fixed world the client reaches the network through ``server`` where it is
    # attached to it and their link is up (Topology.access_point)
    if (link is None or link.link_class not in network.closed_form_classes or not link.up
            or link.reserved or not network.world.is_attached(client, server)
            or network.world.tier(server) != EDGE or link.busy()):
        return None
    return link


def transfer_times(network, links: list[Link], srcs: list[str], dsts: list[str],
                   nbytes: float, starts: np.ndarray):
    """When each transfer of ``nbytes`` from ``srcs[i]`` to ``dsts[i]`` over ``links[i]`` (each
    a one-hop path of its own, ``own_link``) started at ``starts[i]`` sends its first bit, sends
    its last bit and arrives (simulated seconds; three float arrays)."""
    transport = network.transport_of(links[0])
    spec = transport.spec
    wire = nbytes * 8.0 * transport.overhead
    timing = {}  # (delay, capacity) -> (rtt, latency, handshake, cap, capacity)
    rows = []
    for key in [(link.delay_s, link.channel(src, dst).capacity_bps)
                for link, src, dst in zip(links, srcs, dsts, strict=True)]:
        figures = timing.get(key)
        if figures is None:
            delay, capacity = key
            path = path_timing([delay], [capacity], transport.segment_bits)
            rtt = path.rtt_s
            handshake = (2.0 * path.one_way_s if transport.tcp and spec.handshake
                         and path.one_way_s > 0 else 0.0)
            cap = (spec.receive_window * transport.overhead * 8.0 / rtt
                   if transport.tcp and rtt > 0 and spec.receive_window is not None
                   else math.inf)
            figures = timing[key] = (rtt, path.latency_s, handshake, cap, capacity)
        rows.append(figures)
    rtt, latency, handshake, cap, capacity = (np.array(column) for column in zip(*rows,
                                                                                 strict=True))
    windows = None
    if transport.tcp and (rtt > 0).all():
        largest = (max(spec.receive_window / spec.mss, 1.0) if spec.receive_window is not None
                   else math.inf)
        rounds = 1
        while slow_start_bits(spec.initial_window, spec.delayed_ack, transport.segment_bits,
                              largest, rounds).sum() < wire:
            rounds *= 2
        windows = slow_start_bits(spec.initial_window, spec.delayed_ack, transport.segment_bits,
                                  largest, rounds + 1)
    elif transport.tcp and (rtt > 0).any():
        raise ValueError("a cohort mixes links with and without a round trip")
    first, sent, arrival = pipelined_times(wire, capacity, rtt, latency, handshake, windows, cap)
    return starts + first, starts + sent, starts + arrival


def book_transfer(network, link: Link, src: str, dst: str, nbytes: float, raw_nbytes: float,
                  start: float, first: float, sent: float, arrival: float) -> None:
    """Book a transfer advanced in closed form (``transfer_times``) as the per-event path
    would have: its flow on the link's channel from ``first`` to ``sent`` (the channel's
    statistics and time bins), its HopEnd record where one is wanted, its TransferEnd record.
    The caller books a channel's transfers in the order of their times, at or after them."""
    wire = book_flows(network, [link], [src], [dst], nbytes, [first], [sent]) * 8.0
    channels = link.channels(src, dst)
    tag = network.tag(src, dst)
    transfer_id = network.next_transfer_id()
    if network.trace.wants(HopEnd):
        emit_hops(network, (transfer_id, tag), [link], [src, dst], channels[:1], first, sent,
                  wire)
    network.trace.emit(TransferEnd(
        time_s=arrival, transfer_id=transfer_id, src=src, dst=dst, tag=tag, nbytes=nbytes,
        path=(src, dst), duration_s=arrival - start, wire_bytes=wire / 8.0, retransmissions=0,
        raw_nbytes=raw_nbytes))


def book_flows(network, links: list[Link], srcs: list[str], dsts: list[str], nbytes: float,
               first: list[float], sent: list[float]) -> float:
    """Book many transfers' flows on their own links' channels (``book_transfer``'s channel
    part, without records); returns each one's wire bytes."""
    wire = nbytes * 8.0 * network.transport_of(links[0]).overhead
    for link, src, dst, began, ended in zip(links, srcs, dsts, first, sent, strict=True):
        for channel in link.channels(src, dst):
            channel.carry_alone(began, ended, wire)
    return wire / 8.0
