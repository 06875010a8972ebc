"""Access links of a mobile world (IoV, LEO): made as clients first meet edge servers (vehicles
and RSUs, users and satellites), up while in coverage, with rates that follow the distance.

* Contact events: the world's association changes bring a vehicle's access link up (creating
  it on first contact) and take it down when the vehicle leaves; every flow then crossing it
  fails (reason ``left-coverage``).
* Rates: while a link carries traffic, a tracker process recomputes both directions' capacity
  from the radio model at least every ``rate_update.interval`` of simulated time and every
  ``rate_update.distance`` the vehicle moves. Between transfers nothing is tracked (no cost).
* Shadowing: one correlated shadowing process per link (its own random stream, drawn in link
  creation order), stepped by the distance moved since the link's last update.
* Orbits (``world.propagation_delays``): an access link's delay is its current range / c,
  refreshed with its rate; ISL and feeder delays are refreshed every ``delay_update`` for the
  whole constellation, and feeder links go up and down with the gateways' windows.
"""

from __future__ import annotations

import math

import simpy

from netfl.network.beam import shared_beams
from netfl.network.cell import DcfParameters, Dot11Cell, Framing
from netfl.network.flow import Channel
from netfl.network.link import Link, LossModel
from netfl.network.lte import RESOURCE_BLOCKS, LteCell
from netfl.network.radio import SPEED_OF_LIGHT_MPS, AccessRadio
from netfl.network.terminals import TERMINAL, TerminalLinks
from netfl.network.weather import weather_model
from netfl.sim.trace import Association, LinkState, Serving
from netfl.world.base import CLIENT

COVERAGE = "coverage"  # the hold-down reason of a client out of an edge server's coverage
SIGNAL = "signal"  # ... of a client whose SNR is below the shared medium's lowest rate
GROUND = "no-ground-station"  # the hold-down reason of a feeder link no gateway sees
EARTH = "earth-blocked"  # the hold-down reason of an ISL whose chord does not clear the Earth


def framing_of(transport) -> Framing:
    """How the scenario's transport fills 802.11 frames: TCP segments of ``mss`` with TCP/IP
    headers (timestamps: 52 bytes) and an acknowledgement every ``delayed_ack`` segments; the
    other transports, full 1500-byte packets and no acknowledgements."""
    if transport.kind != "tcp":
        return Framing()
    return Framing(ip_bytes=transport.mss + 52.0,
                   bits_per_frame=(transport.mss + transport.header_bytes) * 8.0,
                   acks_per_frame=1.0 / transport.delayed_ack)


class MobileAccess:
    """The access side of a Network on a mobile world (``world.mobile``), made by the network's
    helper from the world's section and ``links`` (the scenario's: its transport and access
    class); it adds the access links to ``network`` as clients first meet edge servers."""

    def __init__(self, network, links):
        self.network = network
        self._access_spec = links.access
        self.env: simpy.Environment = network.env
        self.world = network.world
        spec = self.world.spec
        medium = getattr(spec, "medium", None)
        self.medium = medium
        self.dot11p = medium is not None and medium.kind == "802.11p"
        self.lte = medium is not None and medium.kind in ("lte", "c-v2x")
        weather = getattr(self.world.access_radio_spec, "weather", None)
        self.radio = AccessRadio(self.world.access_radio_spec, dot11p=self.dot11p,
                                 orbit_radius_m=getattr(self.world, "orbit_radius_m", 0.0),
                                 weather=None if weather is None else weather_model(weather))
        self.broadcast_rate_bps = 0.0  # > 0: RSUs broadcast the downlink at this rate
        if self.dot11p:
            self._dcf = DcfParameters(medium.aifsn, medium.cw_min, medium.cw_max)
            self._framing = framing_of(links.transport)
        if (self.dot11p or self.lte) and medium.downlink == "broadcast":
            self.broadcast_rate_bps = medium.broadcast_rate
        self._cells: dict[str, Dot11Cell | LteCell] = {}
        self._beams = shared_beams(network, getattr(spec, "beams", None),
                                   self.world.access_radio_spec.kind, getattr(spec, "start", None))
        self._pool_of: dict = {}  # a beam user's channel -> its pool
        self.propagation = getattr(self.world, "propagation_delays", False)
        self.interval_s = spec.rate_update.interval
        self.step_m = spec.rate_update.distance
        self.resume = spec.resume_uploads
        self._shadowing: dict[str, object] = {}
        self._last_position: dict[str, tuple[float, float] | None] = {}
        self._waiters: dict[str, list[simpy.Event]] = {}
        self._count = 0
        loss = links.access.loss
        self._goodput = 1.0 - loss.probability if loss.kind == "rate-reduction" else 1.0
        # make before break: a link is up while its RSU's radio reaches the vehicle, so a
        # transfer in flight at a hand-over goes on with the old RSU until the vehicle is out
        # of its reach; new transfers go through the RSU the vehicle is attached to now
        self.keep_in_range = (hasattr(self.world, "subscribe_ranges")
                              and getattr(spec, "in_flight_at_handover", "cut") == "continue")
        self.world.subscribe(self._on_association)
        if self.keep_in_range:
            self.world.subscribe_ranges(self._on_range)
        if hasattr(self.world, "subscribe_links"):
            self.world.subscribe_links(self._on_feeder)
        if hasattr(self.world, "subscribe_serving") and network.trace.wants(Serving):
            self.world.subscribe_serving(lambda client, sat: network.trace.emit(
                Serving(time_s=self.env.now, client=client, cell=sat)))
        if hasattr(self.world, "link_delays_s"):
            self.env.process(self._update_delays(self.world.delay_update_s))
        # a road under a constellation: its RSUs' satellite terminals
        self.terminals = (TerminalLinks(network) if hasattr(self.world, "subscribe_terminals")
                          else None)

    def _on_feeder(self, u: str, v: str, up: bool) -> None:
        link = self.network.link(u, v)
        self.network.set_link_state(link, up, GROUND if link.link_class == "core" else EARTH)

    def _update_delays(self, every_s: float):
        """Refresh the delays of backhaul (ISL) and core (feeder) links from the geometry."""
        links = [link for link in self.network.links() if link.link_class != "access"]
        pairs = [(link.u, link.v) for link in links]
        while True:
            yield self.env.timeout(every_s)
            for link, delay in zip(links, self.world.link_delays_s(pairs, self.env.now),
                                   strict=True):
                link.delay_s = float(delay)
            self.network.clear_routes()

    # ------------------------------------------------------------------- contact events

    def _on_association(self, client: str, rsu: str, attached: bool) -> None:
        network = self.network
        if network.trace.wants(Association):
            network.trace.emit(Association(time_s=self.env.now, client=client, cell=rsu,
                                           attached=attached))
        link = self._link(client, rsu, attached)
        if attached:  # the signal is checked again on the next transfer
            network.set_link_state(link, True, SIGNAL)
        if not self.keep_in_range:
            network.set_link_state(link, attached, COVERAGE)
        elif attached:  # within reach by definition (at equal times the range may come later)
            network.set_link_state(link, True, COVERAGE)
        if attached:
            for event in self._waiters.pop(client, []):
                event.succeed(rsu)

    def _on_range(self, client: str, rsu: str, in_range: bool) -> None:
        link = self._link(client, rsu, in_range)
        if in_range:  # back in reach: the signal is checked again on the next transfer
            self.network.set_link_state(link, True, SIGNAL)
        self.network.set_link_state(link, in_range, COVERAGE)

    def _link(self, client: str, rsu: str, up: bool) -> Link:
        """The client's access link to ``rsu``, made on first contact."""
        link = self.network.find_link(client, rsu)
        if link is None:
            link = self._new_link(client, rsu)
            if up and link.up and self.network.trace.wants(LinkState):
                self.network.trace.emit(LinkState(time_s=self.env.now, link=link.name, up=True))
        return link

    def _new_link(self, client: str, rsu: str) -> Link:
        spec = self._access_spec
        distance = self.world.distance_m(client, rsu, self.env.now)
        offset = self._offset(client, rsu)
        up, down = self._rates(distance, 0.0, offset, (client, rsu))
        loss, loss_rng = LossModel(), None
        if spec.loss.kind == "retransmit":
            loss = LossModel(spec.loss.probability, spec.loss.max_retransmissions)
            loss_rng = self.network.streams.derive("network-loss-access", self._count)
        delay = distance / SPEED_OF_LIGHT_MPS if self.propagation else spec.delay
        fabric = self.network.fabric
        if self.dot11p:
            cell = self._cell(rsu)
            link = Link(client, rsu, "access", delay,
                        *cell.link(client, rsu, up, down, self._goodput), loss, loss_rng)
        elif self.lte:
            coupling = self.radio.coupling_db(distance, 0.0, offset) if self.radio.varies else 0.0
            fixed = None if self.radio.varies else (up, down)
            link = Link(client, rsu, "access", delay,
                        *self._cell(rsu).link(client, rsu, coupling, coupling, fixed),
                        loss, loss_rng)
        elif self._beams is not None:
            up_pool, down_pool = self._beams.pools(rsu, self._beams.cell(*self.world.site(client)))
            channels = (up_pool.member(f"{client}->{rsu}", up),
                        down_pool.member(f"{rsu}->{client}", down))
            self._pool_of.update(zip(channels, (up_pool, down_pool), strict=True))
            link = Link(client, rsu, "access", delay, *channels, loss, loss_rng)
        else:
            link = Link(client, rsu, "access", delay, Channel(fabric, f"{client}->{rsu}", up),
                        Channel(fabric, f"{rsu}->{client}", down), loss, loss_rng)
        if self.radio.varies:
            rng = self.network.streams.derive("radio-shadowing", self._count)
            self._shadowing[link.name] = shadowing = self.radio.shadowing(rng)
            if shadowing.sigma_db > 0:
                self._last_position[link.name] = self.world.position(client, self.env.now)
        self._count += 1
        self.network.add_link(link)
        return link

    def _cell(self, rsu: str) -> Dot11Cell | LteCell:
        cell = self._cells.get(rsu)
        if cell is None:
            if self.dot11p:
                cell = Dot11Cell(self.network.fabric, rsu, self._framing, self._dcf)
            else:
                cell = self._lte_cell(rsu)
            self._cells[rsu] = cell
        return cell

    def _lte_cell(self, rsu: str) -> LteCell:
        spec, medium = self.radio.spec, self.medium
        if spec.kind == "shannon":
            blocks = RESOURCE_BLOCKS[spec.bandwidth]
            powers = dict(vehicle_power_dbm=spec.vehicle_tx_power,
                          rsu_power_dbm=spec.rsu_tx_power,
                          rsu_noise_figure_db=spec.rsu_noise_figure,
                          vehicle_noise_figure_db=spec.vehicle_noise_figure)
        else:  # a fixed radio: rates without a link budget
            blocks = RESOURCE_BLOCKS[10e6]
            powers = dict(vehicle_power_dbm=23.0, rsu_power_dbm=23.0,
                          rsu_noise_figure_db=5.0, vehicle_noise_figure_db=9.0)
        return LteCell(self.network.fabric, rsu, blocks=blocks, p0_dbm=medium.p0,
                       alpha=medium.alpha, min_grant_rbs=medium.min_grant_rbs,
                       goodput=self._goodput, **powers)

    def broadcast_flow(self, rsu: str, nbytes: float):
        """A broadcast of ``nbytes`` from ``rsu`` on its medium: (the flow, its bits on air)."""
        cell = self._cell(rsu)
        bits = cell.frames_bits(nbytes)
        return self.network.fabric.transmit(cell.broadcast(self.broadcast_rate_bps), [],
                                            bits), bits

    def hears_broadcast(self, link: Link, rsu: str) -> bool:
        """Whether the vehicle of ``link`` decodes ``rsu``'s broadcasts now: its downlink's PHY
        rate (from its SNR) is at least the broadcast rate. A fixed radio has no SNR: its
        vehicles decode every broadcast."""
        client = link.u if link.v == rsu else link.v
        if not self.radio.varies:
            return True
        self._refresh(link)
        cell = self._cells[rsu]
        down = (cell.alone_bps if self.lte else cell.rate_of)(link.channel(rsu, client))
        return down >= self.broadcast_rate_bps

    def wait_for_coverage(self, client: str):
        """Generator: wait until the vehicle that is ``client`` now is attached to some RSU, at
        most ``resume_uploads.within``; returns the RSU, or None when the wait ran out or the
        client id passed to another vehicle (the first one has then left the road)."""
        vehicle = self.world.vehicle_of(client, self.env.now)
        if self.world.edge_of(client) is None:
            event = self.env.event()
            self._waiters.setdefault(client, []).append(event)
            try:
                yield self.env.any_of([event, self.env.timeout(self.resume.within)])
            except simpy.Interrupt:  # the transfer was cancelled: stop waiting
                if not event.triggered:
                    self._waiters[client].remove(event)
                raise
            if not event.triggered:
                self._waiters[client].remove(event)
                return None
        if self.world.vehicle_of(client, self.env.now) != vehicle:
            return None
        return self.world.edge_of(client)

    def _offset(self, client: str, rsu: str) -> tuple[float, float] | None:
        """The vehicle's ground offset from its RSU, where the path loss needs it (streets)."""
        spec = self.radio.spec
        if getattr(spec, "path_loss", None) != "winner-b1-manhattan":
            return None
        here = self.world.position(client, self.env.now)
        if here is None:
            return None
        there = self.world.rsu_xy[rsu]
        return here[0] - there[0], here[1] - there[1]

    def _rates(self, distance_m: float, shadowing_db: float,
               offset_xy: tuple[float, float] | None = None,
               ground: tuple[str, str] | None = None) -> tuple[float, float]:
        """(uplink, downlink) capacity: the radio's rates times the goodput of rate-reduction
        loss (on an 802.11p medium: the PHY rates; the cell charges the loss per frame).
        ``ground``: the link's (client, edge) where a link budget's weather needs its ground
        site's latitude."""
        latitude = 0.0
        if ground is not None and self.radio.weather is not None:
            latitude = self.world.ground_latitude(*ground)
        up, down = self.radio.rates_bps(distance_m, shadowing_db, offset_xy, latitude,
                                        self.env.now)
        if self.dot11p:
            return up, down
        return up * self._goodput, down * self._goodput

    # ------------------------------------------------------------------------- rates

    def before_transmit(self, link: Link) -> None:
        """Bring the link's rates up to date and keep them so while it carries traffic; a
        link held down only for its signal is re-checked (the vehicle may have come back)."""
        if link.link_class == TERMINAL:
            self.terminals.before_transmit(link)
            return
        if link.link_class != "access" or not (link.up or link.held_for(SIGNAL)):
            return
        if not self.radio.varies:
            if self.propagation:  # a fixed rate, but the range still changes
                client, server = self._ends(link)
                link.delay_s = self.world.distance_m(client, server, self.env.now) / (
                    SPEED_OF_LIGHT_MPS)
            return
        if not link.tracking:  # a running tracker keeps the rate at most an interval old
            self._refresh(link)
        if not link.tracking:
            link.tracking = True
            self.env.process(self._track(link))

    def _ends(self, link: Link) -> tuple[str, str]:
        return (link.u, link.v) if self.world.tier(link.u) == CLIENT else (link.v, link.u)

    def _refresh(self, link: Link) -> None:
        client, server = self._ends(link)
        now = self.env.now
        distance = self.world.distance_m(client, server, now)
        if not math.isfinite(distance):  # off the road: the link is about to go down
            return
        shadowing, shadow_db = self._shadowing[link.name], 0.0
        if shadowing.sigma_db > 0:
            here = self.world.position(client, now)
            before = self._last_position[link.name]
            moved = 0.0 if before is None else math.dist(here, before)
            self._last_position[link.name] = here
            shadow_db = shadowing.step(moved) if moved > 0 else shadowing.value_db
        offset = self._offset(client, server)
        if self.lte:
            coupling = self.radio.coupling_db(distance, shadow_db, offset)
            cell = self._cells[server]
            up_channel, down_channel = link.channel(client, server), link.channel(server, client)
            cell.set_coupling(up_channel, coupling, down_channel, coupling)
            self._signal(link, cell.alone_bps(up_channel) > 0 and cell.alone_bps(down_channel) > 0)
            if self.propagation:
                link.delay_s = distance / SPEED_OF_LIGHT_MPS
            return
        up, down = self._rates(distance, shadow_db, offset, (client, server))
        if self.dot11p:
            self._cells[server].set_rates(link.channel(client, server), up, down)
            self._signal(link, up > 0 and down > 0)
        else:
            for channel, rate in ((link.channel(client, server), up),
                                  (link.channel(server, client), down)):
                pool = self._pool_of.get(channel)
                if pool is not None:
                    pool.set_rate(channel, rate)
                else:
                    channel.set_capacity(rate)
        if self.propagation:
            link.delay_s = distance / SPEED_OF_LIGHT_MPS

    def _signal(self, link: Link, heard: bool) -> None:
        """On a shared medium a link is out of coverage while either direction's SNR is below
        the lowest rate's threshold (802.11p: 3 Mbit/s; LTE: CQI 1), whatever the radius says:
        flows then crossing it fail as having left coverage. It is re-checked whenever a
        transfer tries it and when the world brings the vehicle into reach."""
        if heard == link.held_for(SIGNAL):
            self.network.set_link_state(link, heard, SIGNAL)

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
