"""Access links of a mobile world (IoV): made as vehicles first meet RSUs, up while in
coverage, with rates that follow the vehicle-RSU distance.

* Contact events: the world's association changes bring a vehicle's access link up (creating
  it on first contact) and take it down when the vehicle leaves; every flow then crossing it
  fails (reason ``left-coverage``).
* Rates: while a link carries traffic, a tracker process recomputes both directions' capacity
  from the radio model at least every ``rate_update.interval`` of simulated time and every
  ``rate_update.distance`` the vehicle moves. Between transfers nothing is tracked (no cost).
* Shadowing: one correlated shadowing process per link (its own random stream, drawn in link
  creation order), stepped by the distance moved since the link's last update.
"""

from __future__ import annotations

import math

import simpy

from netfl.network.link import Channel, Link, LossModel
from netfl.network.radio import AccessRadio
from netfl.sim.trace import LinkState
from netfl.world.base import CLIENT

COVERAGE = "coverage"  # the hold-down reason of a vehicle out of an RSU's coverage


class MobileAccess:
    """The access side of a Network on a mobile world (``world.mobile``)."""

    def __init__(self, network):
        self.network = network
        self.env: simpy.Environment = network.env
        self.world = network.world
        spec = self.world.spec
        self.radio = AccessRadio(spec.radio)
        self.interval_s = spec.rate_update.interval
        self.step_m = spec.rate_update.distance
        self.resume = spec.resume_uploads
        self._shadowing: dict[str, object] = {}
        self._last_position: dict[str, tuple[float, float] | None] = {}
        self._waiters: dict[str, list[simpy.Event]] = {}
        self._count = 0
        loss = network.spec.access.loss
        self._goodput = 1.0 - loss.probability if loss.kind == "rate-reduction" else 1.0
        self.world.subscribe(self._on_association)

    # ------------------------------------------------------------------- contact events

    def _on_association(self, client: str, rsu: str, attached: bool) -> None:
        network = self.network
        link = network.find_link(client, rsu)
        if link is None:
            link = self._new_link(client, rsu)
            if attached and link.up and network.trace.wants(LinkState):
                network.trace.emit(LinkState(time_s=self.env.now, link=link.name, up=True))
        network.set_link_state(link, attached, COVERAGE)
        if attached:
            for event in self._waiters.pop(client, []):
                event.succeed(rsu)

    def _new_link(self, client: str, rsu: str) -> Link:
        spec = self.network.spec.access
        up, down = self._rates(self.world.distance_m(client, rsu, self.env.now), 0.0)
        loss, loss_rng = LossModel(), None
        if spec.loss.kind == "retransmit":
            loss = LossModel(spec.loss.probability, spec.loss.max_retransmissions)
            loss_rng = self.network.streams.derive("network-loss-access", self._count)
        link = Link(client, rsu, "access", spec.delay, Channel(self.env, f"{client}->{rsu}", up),
                    Channel(self.env, f"{rsu}->{client}", down), loss, loss_rng)
        if self.radio.varies:
            rng = self.network.streams.derive("radio-shadowing", self._count)
            self._shadowing[link.name] = self.radio.shadowing(rng)
            self._last_position[link.name] = self.world.position(client, self.env.now)
        self._count += 1
        self.network.add_link(link)
        return link

    def wait_for_coverage(self, client: str):
        """Generator: wait until the vehicle that is ``client`` now is attached to some RSU, at
        most ``resume_uploads.within``; returns the RSU, or None when the wait ran out or the
        client id passed to another vehicle (the first one has then left the road)."""
        vehicle = self.world.vehicle_of(client, self.env.now)
        if self.world.edge_of(client) is None:
            event = self.env.event()
            self._waiters.setdefault(client, []).append(event)
            yield self.env.any_of([event, self.env.timeout(self.resume.within)])
            if not event.triggered:
                self._waiters[client].remove(event)
                return None
        if self.world.vehicle_of(client, self.env.now) != vehicle:
            return None
        return self.world.edge_of(client)

    def _rates(self, distance_m: float, shadowing_db: float) -> tuple[float, float]:
        """(uplink, downlink) capacity: the radio's rates times the goodput of rate-reduction
        loss."""
        up, down = self.radio.rates_bps(distance_m, shadowing_db)
        return up * self._goodput, down * self._goodput

    # ------------------------------------------------------------------------- rates

    def before_transmit(self, link: Link) -> None:
        """Bring the link's rates up to date and keep them so while it carries traffic."""
        if not self.radio.varies or link.link_class != "access":
            return
        if not link.tracking:  # a running tracker keeps the rate at most an interval old
            self._refresh(link)
        if not link.tracking:
            link.tracking = True
            self.env.process(self._track(link))

    def _ends(self, link: Link) -> tuple[str, str]:
        return (link.u, link.v) if self.world.tier(link.u) == CLIENT else (link.v, link.u)

    def _refresh(self, link: Link) -> None:
        client, rsu = self._ends(link)
        now = self.env.now
        here = self.world.position(client, now)
        if here is None:  # off the road: the link is about to go down; keep the last rate
            return
        before = self._last_position[link.name]
        moved = 0.0 if before is None else math.dist(here, before)
        self._last_position[link.name] = here
        shadowing = self._shadowing[link.name]
        shadow_db = shadowing.step(moved) if moved > 0 else shadowing.value_db
        up, down = self._rates(math.dist(here, self.world.rsu_xy[rsu]), shadow_db)
        link.channel(client, rsu).set_capacity(up)
        link.channel(rsu, client).set_capacity(down)

    def _track(self, link: Link):
        client, rsu = self._ends(link)
        channels = (link.channel(client, rsu), link.channel(rsu, client))
        try:
            while link.up and any(c.active_flows for c in channels):
                speed = self.world.speed_mps(client, self.env.now)
                wait = min(self.interval_s, self.step_m / speed) if speed > 0 else self.interval_s
                yield self.env.timeout(wait)
                if link.up:
                    self._refresh(link)
        finally:
            link.tracking = False
