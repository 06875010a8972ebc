"""The satellite terminals of RSUs under a constellation (``netfl.world.joined``).

A terminal RSU's ``terminal`` link to a satellite is made when that satellite first serves it,
and is up only while it does (hold-down reason ``not-serving``). A link's rates are the backhaul's
link budget at the current slant range (uplink: RSU -> satellite; downlink: satellite -> RSU),
with the ITU weather at the RSU's latitude where given; with shared beams the RSU is a user of
its satellite's beam over its ground cell, beside the beam's background users (and the other
terminal RSUs in that cell), as a ``leo`` world's users are (``beam.py``). Rates and the delay
(slant range / c) are refreshed when the link comes up, when a transfer starts over it, and at
least every ``rate_update.interval`` while it carries traffic.
"""

from __future__ import annotations

from netfl.network.beam import shared_beams
from netfl.network.flow import Channel
from netfl.network.link import Link, LossModel
from netfl.network.radio import SPEED_OF_LIGHT_MPS, AccessRadio
from netfl.network.weather import weather_model
from netfl.world.base import EDGE
from netfl.world.joined import TERMINAL

NOT_SERVING = "not-serving"  # the hold-down reason of a terminal link to a satellite not serving


class TerminalLinks:
    """The terminal links of ``network``'s joined world (see the module docstring)."""

    def __init__(self, network):
        self.network, self.env, self.world = network, network.env, network.world
        backhaul = self.world.spec.backhaul
        gsl = backhaul.gsl
        weather = getattr(gsl, "weather", None)
        self.radio = AccessRadio(gsl, orbit_radius_m=self.world.sky.orbit_radius_m,
                                 weather=None if weather is None else weather_model(weather))
        self.interval_s = backhaul.rate_update.interval
        self._beams = shared_beams(network, backhaul.beams, gsl.kind, backhaul.start)
        self._pool_of = {}
        self.world.subscribe_terminals(self._on_serving)

    def _new_link(self, rsu: str, sat: str) -> Link:
        fabric = self.network.fabric
        if self._beams is not None:
            cell = self._beams.cell(*self.world.terminal_site(rsu))
            up_pool, down_pool = self._beams.pools(sat, cell)
            channels = (up_pool.member(f"{rsu}->{sat}", 0.0),
                        down_pool.member(f"{sat}->{rsu}", 0.0))
            self._pool_of.update(zip(channels, (up_pool, down_pool), strict=True))
        else:
            channels = (Channel(fabric, f"{rsu}->{sat}", 0.0),
                        Channel(fabric, f"{sat}->{rsu}", 0.0))
        return Link(rsu, sat, TERMINAL, self.world.graph.edges[rsu, sat]["delay_s"], *channels,
                    LossModel(), None)

    def _on_serving(self, rsu: str, sat: str, serving: bool) -> None:
        link = self.network.find_link(rsu, sat)
        if link is None:  # first served by it: the link is made (an RSU sees hundreds a day)
            self.world.add_terminal_edge(rsu, sat)
            link = self._new_link(rsu, sat)
            self.network.add_link(link)
            if not serving:
                link.hold_down(NOT_SERVING)
        if serving:
            self._refresh(link)
        self.network.set_link_state(link, serving, NOT_SERVING)

    def before_transmit(self, link: Link) -> None:
        """Bring the link's rates up to date and keep them so while it carries traffic."""
        if not link.up:
            return
        if not link.tracking:
            self._refresh(link)
            link.tracking = True
            self.env.process(self._track(link))

    def _refresh(self, link: Link) -> None:
        rsu, sat = (link.u, link.v) if self.world.tier(link.u) == EDGE else (link.v, link.u)
        now = self.env.now
        distance = self.world.terminal_distance_m(rsu, sat, now)
        latitude = self.world.terminal_site(rsu)[0]
        up, down = self.radio.rates_bps(distance, 0.0, None, latitude, now)
        for channel, rate in ((link.channel(rsu, sat), up), (link.channel(sat, rsu), down)):
            pool = self._pool_of.get(channel)
            if pool is not None:
                pool.set_rate(channel, rate)
            else:
                channel.set_capacity(rate)
        link.delay_s = distance / SPEED_OF_LIGHT_MPS

    def _track(self, link: Link):
        channels = (link.channel(link.u, link.v), link.channel(link.v, link.u))
        try:
            while link.up and any(c.active_flows for c in channels):
                yield self.env.timeout(self.interval_s)
                if link.up:
                    self._refresh(link)
        finally:
            link.tracking = False
