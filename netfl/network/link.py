"""Links and channels: capacity shared by concurrent flows (processor sharing), delay, up/down.

A :class:`Channel` is one direction of capacity. Its active flows share it equally: with n flows
on a channel of C bit/s each progresses at C/n, and the rates are recomputed whenever a flow
starts or ends (or the capacity changes). The implementation keeps a virtual clock V(t), the
bits served to any one flow since the channel was made (dV/dt = C/n), so a flow of b bits that
starts at V0 finishes when V reaches V0 + b; only the earliest finish is ever scheduled.

A :class:`Link` is an undirected graph edge: one channel per direction (its own, or a channel
shared by a whole radio cell), a propagation delay, a loss model and an up/down state. A link is
down while any reason holds it down (a scheduled outage, a random outage, a dropped node);
taking it down fails every flow that is crossing it.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import simpy


class LinkDown(Exception):
    """Internal: a flow's link went down. The network turns it into TransferFailed."""


class _Flow:
    __slots__ = ("event", "finish_tag", "start_tag", "owner", "alive", "sent_bits")

    def __init__(self, event, start_tag, finish_tag, owner):
        self.event, self.owner = event, owner
        self.start_tag, self.finish_tag = start_tag, finish_tag
        self.alive, self.sent_bits = True, 0.0


class Channel:
    """One direction of capacity, shared equally by its active flows.

    ``transmit(nbits, owner)`` returns a flow whose ``event`` succeeds when its last bit has been
    sent (serialization only; propagation is the link's business) or fails with
    :class:`LinkDown` when ``fail(owner)`` is called for its owner.
    """

    def __init__(self, env: simpy.Environment, name: str, capacity_bps: float):
        self.env, self.name = env, name
        self.capacity_bps = float(capacity_bps)
        self._virtual = 0.0
        self._last_update = env.now
        self._heap: list[tuple[float, int, _Flow]] = []
        self._active = 0
        self._generation = 0
        self._sequence = itertools.count()

    @property
    def active_flows(self) -> int:
        return self._active

    def transmit(self, nbits: float, owner: object = None) -> _Flow:
        self._advance()
        flow = _Flow(self.env.event(), self._virtual, self._virtual + float(nbits), owner)
        heapq.heappush(self._heap, (flow.finish_tag, next(self._sequence), flow))
        self._active += 1
        self._reschedule()
        return flow

    def set_capacity(self, capacity_bps: float) -> None:
        """Change the capacity from now on (rates of active flows follow)."""
        self._advance()
        self.capacity_bps = float(capacity_bps)
        if self._active:  # an idle channel has nothing to reschedule
            self._reschedule()

    def fail(self, owner: object) -> int:
        """Fail every active flow of ``owner``; return how many failed."""
        self._advance()
        failed = 0
        for _, _, flow in self._heap:
            if flow.alive and flow.owner is owner:
                flow.alive = False
                flow.sent_bits = self._virtual - flow.start_tag
                flow.event.fail(LinkDown(self.name))
                failed += 1
        self._active -= failed
        if failed:
            self._reschedule()
        return failed

    def _advance(self) -> None:
        now = self.env.now
        if self._active and now > self._last_update:
            self._virtual += (now - self._last_update) * self.capacity_bps / self._active
        self._last_update = now

    def _reschedule(self) -> None:
        """Schedule a wake-up at the earliest finish; older wake-ups become no-ops."""
        self._generation += 1
        while self._heap and not self._heap[0][2].alive:
            heapq.heappop(self._heap)
        if not self._heap or self.capacity_bps <= 0:
            return
        remaining = max(self._heap[0][0] - self._virtual, 0.0)
        delay = remaining * self._active / self.capacity_bps
        generation = self._generation
        self.env.timeout(delay).callbacks.append(lambda _: self._wake(generation))

    def _wake(self, generation: int) -> None:
        if generation != self._generation:
            return
        self._advance()
        now, tolerance = self.env.now, 1e-9 * max(1.0, abs(self._virtual))
        while self._heap:
            tag, _, flow = self._heap[0]
            if flow.alive:
                remaining = tag - self._virtual
                # Done when within rounding in bits, or when the time left is too small to move
                # the clock at all (else a flow could wake up forever at one instant).
                done = remaining <= tolerance or (
                    self.capacity_bps > 0
                    and now + remaining * self._active / self.capacity_bps <= now)
                if not done:
                    break
                flow.alive = False
                flow.sent_bits = flow.finish_tag - flow.start_tag
                self._active -= 1
                flow.event.succeed()
            heapq.heappop(self._heap)
        self._reschedule()


@dataclass
class LossModel:
    """``retransmit_p``: a hop delivery is lost and re-sent with this probability (at most
    ``max_retransmissions`` times). Rate-reduction loss is applied to the capacity instead."""

    retransmit_p: float = 0.0
    max_retransmissions: int = 0


def link_name(u: str, v: str) -> str:
    """The one name of the link between ``u`` and ``v``, whatever the direction: 'e0-e1'."""
    return "-".join(sorted((u, v)))


class Link:
    """An undirected edge (u, v) with a channel per direction, a delay, loss and up/down state.

    ``loss_rng`` draws this link's retransmission losses (its own stream, so losses on one link
    do not depend on traffic elsewhere).
    """

    def __init__(self, u: str, v: str, link_class: str, delay_s: float,
                 channel_uv: Channel, channel_vu: Channel, loss: LossModel, loss_rng=None):
        self.u, self.v, self.link_class = u, v, link_class
        self.name = link_name(u, v)
        self.loss_rng = loss_rng
        self.delay_s = float(delay_s)
        self.loss = loss
        self._channels = {(u, v): channel_uv, (v, u): channel_vu}
        self._held_down: set[str] = set()
        self.down_epoch = 0
        self.down_reason = ""  # the reason that last took the link down
        self.tracking = False  # a rate tracker runs for this link (moving radio ends)

    @property
    def up(self) -> bool:
        return not self._held_down

    def channel(self, src: str, dst: str) -> Channel:
        return self._channels[(src, dst)]

    def hold_down(self, reason: str) -> bool:
        """Hold the link down for ``reason``; returns True if this took it from up to down,
        in which case every flow crossing it fails."""
        was_up = self.up
        self._held_down.add(reason)
        if was_up:
            self.down_reason = reason
            self.down_epoch += 1
            for channel in self._channels.values():
                channel.fail(self)
        return was_up

    def release(self, reason: str) -> bool:
        """Drop ``reason``; returns True if the link is now up again."""
        if reason not in self._held_down:
            return False
        self._held_down.discard(reason)
        return self.up
