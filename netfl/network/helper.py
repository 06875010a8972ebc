"""Build a :class:`~netfl.network.transfer.Network` from the scenario's ``links`` section.

The network's modules (links, flows, the fabric, routing, transfers) know nothing of the schema;
this helper reads it (ns-3's model/helper split): each graph edge's link class gives its rates
per direction (``rate_up`` towards the cloud, ``rate_down`` away from it, a rate-reduction loss
applied to them), its delay and loss model; a class with ``shared`` access puts every access
link of an edge server on one channel per direction (a radio cell); the transports of
``links.transport`` and of classes with their own; the retry policy; and, at ``start``, the
outage processes of classes whose availability is not ``always``. A mobile world's access side
(:class:`~netfl.network.access.MobileAccess`) reads the world's section and ``links.access``.
"""

from __future__ import annotations

import simpy

from netfl.network.access import MobileAccess
from netfl.network.flow import Channel
from netfl.network.link import Link, LossModel
from netfl.network.transfer import Network, RetryPolicy
from netfl.network.transport import Pipelined, StoreAndForward
from netfl.scenario.sections import (
    AlwaysUp,
    Links,
    LinkSpec,
    RandomOnOff,
    RateReductionLoss,
    RetransmitLoss,
    ScheduledOnOff,
)
from netfl.sim.clock import RandomStreams
from netfl.sim.onoff import random_onoff, scheduled_onoff
from netfl.sim.trace import TraceBus
from netfl.world.base import CLIENT, CLOUD, EDGE, RELAY, World

_TIER_RANK = {CLIENT: 0, EDGE: 1, RELAY: 1.5, CLOUD: 2}  # a relay: between the two
LINK_CLASSES = ("access", "backhaul", "core")


def build_network(env: simpy.Environment, world: World, spec: Links, streams: RandomStreams,
                  trace: TraceBus) -> Network:
    """The network of ``world``'s graph with the links ``spec`` describes; ``start()`` it when
    the simulation starts (outages)."""
    network = Network(
        env, world, streams, trace, transport=make_transport(spec.transport),
        class_transports={name: make_transport(getattr(spec, name).transport)
                          for name in LINK_CLASSES if getattr(spec, name).transport is not None},
        retry=RetryPolicy(spec.retry.attempts, spec.retry.backoff, spec.retry.backoff_factor))
    for link in _links(network, world, spec, streams):
        network.add_link(link)
    network.on_start(lambda: _start_outages(network, spec, streams))
    if world.mobile:
        network.mobile = MobileAccess(network, spec)
    elif spec.closed_form:
        network.closed_form_classes = frozenset(_own_link_classes(network, spec))
    return network


def _own_link_classes(network: Network, spec: Links):
    """The link classes whose links are their clients' own (own_links.py): not shared, never
    down, without retransmission losses, carried by a pipelined transport."""
    for name in LINK_CLASSES:
        link_spec = getattr(spec, name)
        transport = network.class_transport(name)
        if (not link_spec.shared and isinstance(link_spec.availability, AlwaysUp)
                and not isinstance(link_spec.loss, RetransmitLoss)
                and isinstance(transport, Pipelined)):
            yield name


def make_transport(spec):
    """The transport object of a ``links.transport`` section."""
    return StoreAndForward(spec) if spec.kind == "store-and-forward" else Pipelined(spec)


def _rate(world: World, spec: LinkSpec, src: str, dst: str, override: float | None) -> float:
    """The capacity from ``src`` to ``dst`` (bit/s): the edge's own (``override``), else the
    class's rate for that direction; less a rate-reduction loss."""
    rank_src, rank_dst = _TIER_RANK[world.tier(src)], _TIER_RANK[world.tier(dst)]
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


def _links(network: Network, world: World, spec: Links, streams: RandomStreams):
    """The links of ``world``'s graph, in the order of their sorted ends (each retransmitting
    link's loss stream is derived from its index in that order)."""
    cells: dict[tuple[str, str], Channel] = {}  # shared access: a channel per ES, direction
    edges = sorted(world.graph.edges(data=True), key=lambda e: (e[0], e[1]))
    for index, (u, v, data) in enumerate(edges):
        if data["link_class"] not in LINK_CLASSES:  # a world's own (terminals: terminals.py)
            continue
        link_spec = getattr(spec, data["link_class"])
        override = data.get("rate_bps")
        if link_spec.shared:
            edge_node = u if world.tier(u) == EDGE else v
            channels = []
            for src, dst in ((u, v), (v, u)):
                key = (edge_node, "up" if dst == edge_node else "down")
                if key not in cells:
                    cells[key] = Channel(network.fabric, f"cell {key[0]} {key[1]}",
                                         _rate(world, link_spec, src, dst, None))
                channels.append(cells[key])
        else:
            channels = [Channel(network.fabric, f"{src}->{dst}",
                                _rate(world, link_spec, src, dst, override))
                        for src, dst in ((u, v), (v, u))]
        loss, loss_rng = LossModel(), None
        if isinstance(link_spec.loss, RetransmitLoss):
            loss = LossModel(link_spec.loss.probability, link_spec.loss.max_retransmissions)
            loss_rng = streams.derive("network-loss", index)
        yield Link(u, v, data["link_class"], data.get("delay_s", link_spec.delay), channels[0],
                   channels[1], loss, loss_rng)


def _start_outages(network: Network, spec: Links, streams: RandomStreams) -> None:
    """Start the outage processes of link classes whose availability is not 'always' (each
    random one's stream derived from its link's index among the network's links now)."""
    env = network.env
    for index, link in enumerate(network.links()):
        if link.link_class not in LINK_CLASSES:  # a world's own, up and down with it
            continue
        availability = getattr(spec, link.link_class).availability
        setter = _outage_setter(network, link)
        if isinstance(availability, RandomOnOff):
            rng = streams.derive("network-outages", index)
            env.process(random_onoff(env, rng, availability.mean_up, availability.mean_down,
                                     setter))
        elif isinstance(availability, ScheduledOnOff):
            env.process(scheduled_onoff(env, availability.down, setter))


def _outage_setter(network: Network, link: Link):
    return lambda up: network.set_link_state(link, up, "outage")
