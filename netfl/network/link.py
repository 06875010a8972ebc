"""Links: a channel per direction, a delay, a loss model and an up/down state.

A :class:`~netfl.network.flow.Channel` is one direction of capacity, shared by the flows
crossing it at their max-min fair rates (``fabric.py``). A :class:`Link` is an undirected graph
edge: one channel per direction (its own, or a channel shared by a whole radio cell; or its own
and a radio cell's, both crossed: ``cell.py``), a propagation delay, a loss model and an up/down
state. A link is down while any reason holds it down (a scheduled outage, a random outage, a
dropped node); taking it down fails every flow whose path crosses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from netfl.network.flow import Channel

__all__ = ["PATH_CACHE_SIZE", "Link", "LossModel", "link_name"]

# Paths whose per-path facts (links, channels, link names) a cache keeps: the first this many
# seen, then no more (memory stays bounded where every client of a million has paths of its own;
# a cache forgotten when full and refilled cost more than it saved when 100,000 clients' 200,000
# paths cycled through it each round: 4.6 s of a 59 s round under a profiler).
PATH_CACHE_SIZE = 1 << 16


@dataclass
class LossModel:
    """``retransmit_p``: a hop delivery is lost and re-sent with this probability (at most
    ``max_retransmissions`` times). Rate-reduction loss is applied to the capacity instead."""

    retransmit_p: float = 0.0
    max_retransmissions: int = 0


def _as_tuple(channels: Channel | tuple[Channel, ...]) -> tuple[Channel, ...]:
    return channels if isinstance(channels, tuple) else (channels,)


def link_name(u: str, v: str) -> str:
    """The one name of the link between ``u`` and ``v``, whatever the direction: 'e0-e1'."""
    return "-".join(sorted((u, v)))


class Link:
    """An undirected edge (u, v) with a channel per direction, a delay, loss and up/down state.

    ``loss_rng`` draws this link's retransmission losses (its own stream, so losses on one link
    do not depend on traffic elsewhere).
    """

    # slotted, the directions' channels and parts as pairs of tuples, not dicts: a million
    # clients' links each weigh about 700 bytes less
    __slots__ = ("u", "v", "link_class", "name", "loss_rng", "delay_s", "loss", "_uv", "_vu",
                 "_parts_uv", "_parts_vu", "_held_down", "down_epoch", "down_reason", "tracking",
                 "reserved")

    def __init__(self, u: str, v: str, link_class: str, delay_s: float,
                 channel_uv: Channel | tuple[Channel, ...],
                 channel_vu: Channel | tuple[Channel, ...], loss: LossModel, loss_rng=None):
        self.u, self.v, self.link_class = u, v, link_class
        self.name = link_name(u, v)
        self.loss_rng = loss_rng
        self.delay_s = float(delay_s)
        self.loss = loss
        self._uv, self._vu = _as_tuple(channel_uv), _as_tuple(channel_vu)
        # a one-hop path's (links, channels crossed, own channels), per direction: on the link,
        # not in the network's bounded path cache, so a million clients' own paths all hit
        self._parts_uv = ((self,), tuple(dict.fromkeys(self._uv)), self._uv[:1])
        self._parts_vu = ((self,), tuple(dict.fromkeys(self._vu)), self._vu[:1])
        # the reasons holding it down: replaced, never changed in place, so that the links of a
        # million clients share the one empty frozenset (a set of its own is 216 bytes)
        self._held_down: frozenset[str] = frozenset()
        self.down_epoch = 0
        self.down_reason = ""  # the reason that last took the link down
        self.tracking = False  # a rate tracker runs for this link (moving radio ends)
        self.reserved = False  # an exchange advanced in closed form holds it (own_links.py)

    @property
    def up(self) -> bool:
        return not self._held_down

    def _direction(self, src: str, dst: str) -> tuple[Channel, ...]:
        if src == self.u and dst == self.v:
            return self._uv
        if src == self.v and dst == self.u:
            return self._vu
        raise KeyError((src, dst))

    def channel(self, src: str, dst: str) -> Channel:
        """The direction's own channel (the first it crosses)."""
        return self._direction(src, dst)[0]

    def busy(self) -> bool:
        """Whether a flow is on any of its channels, either way."""
        for channel in self._uv + self._vu:
            if channel.flows_now:
                return True
        return False

    def channels(self, src: str, dst: str) -> tuple[Channel, ...]:
        """Every channel a flow from ``src`` to ``dst`` over this link crosses."""
        return self._direction(src, dst)

    def hop_parts(self, src: str, dst: str) -> tuple:
        """The one-hop path ``src``-``dst``'s (links, channels crossed once each, own channel):
        ``Topology.path_parts`` of it."""
        if src == self.u and dst == self.v:
            return self._parts_uv
        if src == self.v and dst == self.u:
            return self._parts_vu
        raise KeyError((src, dst))

    def hold_down(self, reason: str) -> bool:
        """Hold the link down for ``reason``; returns True if this took it from up to down,
        in which case every flow crossing it fails."""
        was_up = self.up
        self._held_down = self._held_down | {reason}
        if was_up:
            self.down_reason = reason
            self.down_epoch += 1
            for channel in dict.fromkeys(self._uv + self._vu):
                channel.fail(self)
        return was_up

    def held_for(self, reason: str) -> bool:
        """Whether ``reason`` is one of those holding the link down."""
        return reason in self._held_down

    def down_only_for(self, reason: str) -> bool:
        """Whether ``reason`` alone holds the link down."""
        return self._held_down == {reason}

    def release(self, reason: str) -> bool:
        """Drop ``reason``; returns True if the link is now up again."""
        if reason not in self._held_down:
            return False
        self._held_down = self._held_down - {reason}
        return self.up
