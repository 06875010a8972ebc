"""The network: links laid on the world graph, routing, and transfers.

``network.send(src, dst, nbytes)`` is a SimPy process. It routes over the shortest path by
propagation delay (fewest hops breaks ties) among links that are up (a client reaches the network
through the edge server it is attached to now), then crosses the path with the scenario's
transport (``transport.py``: TCP or fluid, pipelined over the whole path at the max-min fair
share of ``fabric.py``; or store-and-forward). The process returns the transfer's
:class:`~netfl.sim.trace.TransferEnd` record, or raises :class:`~netfl.errors.TransferFailed`
after the scenario's retries are spent. Every transfer is tagged by the tiers of its ends
("client->edge", ...).
"""

from __future__ import annotations

import itertools

import networkx as nx
import simpy
from simpy import Interrupt

from netfl.errors import TransferFailed
from netfl.network.access import SIGNAL, MobileAccess
from netfl.network.fabric import Fabric
from netfl.network.link import PATH_CACHE_SIZE, Channel, Link, LossModel
from netfl.network.transport import (
    CANCELLED,
    Cancelled,
    HopFailed,
    down_reason,
    emit_hops,
    make_transport,
)
from netfl.scenario.sections import (
    Links,
    LinkSpec,
    RandomOnOff,
    RateReductionLoss,
    RetransmitLoss,
    ScheduledOnOff,
)
from netfl.sim.clock import RandomStreams
from netfl.sim.onoff import random_onoff, scheduled_onoff
from netfl.sim.trace import (
    HopEnd,
    LinkState,
    TraceBus,
    TransferEnd,
    TransferFail,
    TransferStart,
)
from netfl.world.base import CLIENT, CLOUD, EDGE, World

_TIER_RANK = {CLIENT: 0, EDGE: 1, CLOUD: 2}
_HOP_TIE_BREAK_S = 1e-9  # added to every hop's routing weight so equal delays prefer fewer hops


# A node with this many links to edge servers or the cloud is routed to by one shortest-path
# tree rather than a search per source (the same paths where shortest paths are unique).
HUB_DEGREE = 16


class Network:
    """Links on the world's graph and the transfers that cross them."""

    def __init__(self, env: simpy.Environment, world: World, spec: Links,
                 streams: RandomStreams, trace: TraceBus):
        self.env, self.world, self.spec, self.trace = env, world, spec, trace
        self.streams = streams
        self._links: dict[frozenset, Link] = {}
        self._by_pair: dict[tuple[str, str], Link] = {}  # both orders: no frozenset per lookup
        self._path_parts: dict[tuple[str, ...], tuple] = {}  # see path_parts
        self._ids = itertools.count()
        self._route_cache: dict[tuple[str, str], list[str] | None] = {}
        self._hub_trees: dict[str, dict[str, list[str]]] = {}  # hub -> its shortest-path tree
        self._nodes_down: set[str] = set()  # dropped-out nodes (their new links start down)
        self._link_up_event: simpy.Event | None = None
        self.fabric = Fabric(env)
        self.transport = make_transport(spec.transport)  # links.transport
        self._class_transport = {name: make_transport(getattr(spec, name).transport)
                                 for name in ("access", "backhaul", "core")
                                 if getattr(spec, name).transport is not None}
        self._build_links()
        # Routes among edge servers and the cloud; clients join through their access point.
        self._up_graph = nx.subgraph_view(
            world.graph, filter_node=lambda n: world.tier(n) != CLIENT,
            filter_edge=lambda u, v: self._by_pair[(u, v)].up)
        self._hubs = {n for n in world.graph if world.tier(n) != CLIENT and sum(
            1 for v in world.graph[n] if world.tier(v) != CLIENT) >= HUB_DEGREE}
        self.mobile = MobileAccess(self) if world.mobile else None

    def _route_weight(self, u: str, v: str, _data: dict) -> float:
        return self._by_pair[(u, v)].delay_s + _HOP_TIE_BREAK_S

    # ------------------------------------------------------------------------ construction

    def _class_spec(self, link_class: str) -> LinkSpec:
        return getattr(self.spec, link_class)

    def _rate(self, spec: LinkSpec, src: str, dst: str, override: float | None) -> float:
        rank_src, rank_dst = _TIER_RANK[self.world.tier(src)], _TIER_RANK[self.world.tier(dst)]
        if override is not None:
            rate = override
        elif rank_dst > rank_src:
            rate = spec.rate_up or spec.rate
        elif rank_dst < rank_src:
            rate = spec.rate_down or spec.rate
        else:
            rate = spec.rate
        if isinstance(spec.loss, RateReductionLoss):
            rate *= 1.0 - spec.loss.probability
        return rate

    def _build_links(self) -> None:
        cells: dict[tuple[str, str], Channel] = {}  # shared access: a channel per ES, direction
        edges = sorted(self.world.graph.edges(data=True), key=lambda e: (e[0], e[1]))
        for index, (u, v, data) in enumerate(edges):
            spec = self._class_spec(data["link_class"])
            override = data.get("rate_bps")
            if spec.shared:
                edge_node = u if self.world.tier(u) == EDGE else v
                channels = []
                for src, dst in ((u, v), (v, u)):
                    key = (edge_node, "up" if dst == edge_node else "down")
                    if key not in cells:
                        cells[key] = Channel(self.fabric, f"cell {key[0]} {key[1]}",
                                             self._rate(spec, src, dst, None))
                    channels.append(cells[key])
            else:
                channels = [Channel(self.fabric, f"{src}->{dst}",
                                    self._rate(spec, src, dst, override))
                            for src, dst in ((u, v), (v, u))]
            loss, loss_rng = LossModel(), None
            if isinstance(spec.loss, RetransmitLoss):
                loss = LossModel(spec.loss.probability, spec.loss.max_retransmissions)
                loss_rng = self.streams.derive("network-loss", index)
            link = Link(u, v, data["link_class"], data.get("delay_s", spec.delay), channels[0],
                        channels[1], loss, loss_rng)
            self._remember(link)

    def start(self) -> None:
        """Start the outage processes of link classes whose availability is not 'always'."""
        for index, link in enumerate(self.links()):
            availability = self._class_spec(link.link_class).availability
            setter = self._outage_setter(link)
            if isinstance(availability, RandomOnOff):
                rng = self.streams.derive("network-outages", index)
                self.env.process(random_onoff(self.env, rng, availability.mean_up,
                                              availability.mean_down, setter))
            elif isinstance(availability, ScheduledOnOff):
                self.env.process(scheduled_onoff(self.env, availability.down, setter))

    def _outage_setter(self, link: Link):
        return lambda up: self.set_link_state(link, up, "outage")

    # -------------------------------------------------------------------------- state

    def links(self) -> list[Link]:
        return list(self._links.values())

    def link(self, u: str, v: str) -> Link:
        return self._by_pair[(u, v)]

    def _remember(self, link: Link) -> None:
        self._links[frozenset((link.u, link.v))] = link
        self._by_pair[(link.u, link.v)] = self._by_pair[(link.v, link.u)] = link

    def path_parts(self, path: list[str]) -> tuple[tuple[Link, ...], tuple, tuple]:
        """``path``'s links, every channel a flow over it crosses (once each), and each hop's
        own channel (the first it crosses). Cached per path: a pair's link and a link's channels
        never change during a run (a mobile world adds links, never replaces one)."""
        if len(path) == 2:
            return self._by_pair[(path[0], path[1])].hop_parts[(path[0], path[1])]
        key = tuple(path)
        parts = self._path_parts.get(key)
        if parts is None:
            links = tuple(self._by_pair[hop] for hop in zip(path, path[1:], strict=False))
            crossed = [link.channels(u, v)
                       for link, u, v in zip(links, path, path[1:], strict=False)]
            own = tuple(channels[0] for channels in crossed)
            if all(len(channels) == 1 for channels in crossed):
                channels = own
            else:  # a channel crossed twice (two links of one radio cell) counts once
                channels = tuple(dict.fromkeys(c for cs in crossed for c in cs))
            parts = (links, channels, own)
            if len(self._path_parts) < PATH_CACHE_SIZE:
                self._path_parts[key] = parts
        return parts

    def clear_routes(self) -> None:
        """Forget cached routes (after link delays changed)."""
        self._route_cache.clear()
        self._hub_trees.clear()

    def find_link(self, u: str, v: str) -> Link | None:
        return self._by_pair.get((u, v))

    def add_link(self, link: Link) -> None:
        """Add a link made during the run (a mobile world's access link on first contact); it
        starts down where an end has dropped out."""
        self._remember(link)
        for end in (link.u, link.v):
            if end in self._nodes_down:
                link.hold_down(f"node {end}")

    def set_link_state(self, link: Link, up: bool, reason: str) -> None:
        """Hold ``link`` down for ``reason`` (up=False) or release that reason (up=True)."""
        changed = link.release(reason) if up else link.hold_down(reason)
        if changed and up and self._link_up_event is not None:
            self._link_up_event.succeed()
            self._link_up_event = None
        if changed:
            if link.link_class != "access":  # access links are not in the cached routes
                self.clear_routes()
            if self.trace.wants(LinkState):
                self.trace.emit(LinkState(time_s=self.env.now, link=link.name, up=up))

    def link_came_up(self) -> simpy.Event:
        """An event that succeeds when some link next comes up (messages in custody wait on it)."""
        if self._link_up_event is None:
            self._link_up_event = self.env.event()
        return self._link_up_event

    def set_node_state(self, node: str, up: bool) -> None:
        """Take every link of ``node`` down (a dropout) or bring them back."""
        (self._nodes_down.discard if up else self._nodes_down.add)(node)
        for neighbour in self.world.graph.neighbors(node):
            self.set_link_state(self.link(node, neighbour), up, f"node {node}")

    def access_point(self, client: str, towards: str | None = None) -> str | None:
        """The edge server ``client`` reaches the network through now: ``towards`` itself
        where the client is attached to it (a satellite in view), else its primary edge
        server; None when that has no access link up. A link down only for its signal
        counts (sending re-checks the signal, and fails as out of coverage if still lost)."""
        for edge in (towards, self.world.edge_of(client)):
            if edge is not None and self.world.tier(edge) == EDGE and (
                    self.world.is_attached(client, edge)):
                link = self.link(client, edge)
                if link.up or link.down_only_for(SIGNAL):
                    return edge
        return None

    def route(self, src: str, dst: str) -> list[str] | None:
        """Shortest path by delay over links that are up, or None where there is none."""
        head, tail = [], []
        if self.world.tier(src) == CLIENT:
            head, src = [src], self.access_point(src, towards=dst)
        if self.world.tier(dst) == CLIENT:
            tail, dst = [dst], self.access_point(dst, towards=src)
        if src is None or dst is None:
            return None
        middle = [src] if src == dst else self._core_route(src, dst)
        return None if middle is None else head + middle + tail

    def _core_route(self, src: str, dst: str) -> list[str] | None:
        key = (src, dst)
        if key not in self._route_cache:
            if src in self._hubs:
                path = self._hub_tree(src).get(dst)
            elif dst in self._hubs:  # links are symmetric: the way back, reversed
                path = self._hub_tree(dst).get(src)
                path = None if path is None else path[::-1]
            else:
                try:
                    path = nx.shortest_path(self._up_graph, src, dst, weight=self._route_weight)
                except (nx.NetworkXNoPath, nx.NodeNotFound):
                    path = None
            self._route_cache[key] = path
        return self._route_cache[key]

    def _hub_tree(self, hub: str) -> dict[str, list[str]]:
        """Shortest paths from ``hub`` (the cloud, an edge server with many neighbours) to
        every node, made once per link-state change: a search between two points expands all
        of a hub's neighbours, so routing each of M edge servers to the cloud on its own costs
        O(M^2) (a random topology of 20,000 edge servers never finished its first round)."""
        tree = self._hub_trees.get(hub)
        if tree is None:
            tree = self._hub_trees[hub] = nx.single_source_dijkstra_path(
                self._up_graph, hub, weight=self._route_weight)
        return tree

    def tag(self, src: str, dst: str) -> str:
        return f"{self.world.tier(src)}->{self.world.tier(dst)}"

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
        transfer_id, retry, started = next(self._ids), self.spec.retry, self.env.now
        nbits, wire_bits, retransmissions = nbytes * 8.0, 0.0, 0
        label = (transfer_id, tag) if self.trace.wants(HopEnd) else None
        retries, forwards = 0, []

        def record_failure(time_s: float, reason: str, link: Link | None, will_retry: bool):
            self.trace.emit(TransferFail(
                time_s=time_s, transfer_id=transfer_id, src=src, dst=dst, tag=tag,
                nbytes=nbytes, reason=reason, wire_bytes=wire_bits / 8.0,
                link=link.name if link else "", will_retry=will_retry))

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
                        yield self.env.timeout(retry.backoff * retry.backoff_factor**retries)
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
                    link=link.name if link else "", will_retry=False))
        return results

    def transport_of(self, link: Link):
        """The transport that carries ``link``: its class's, or links.transport."""
        return self._class_transport.get(link.link_class, self.transport)

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
