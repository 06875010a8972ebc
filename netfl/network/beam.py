"""Satellite beams: the users of one beam share its spectrum, scheduled (docs/models/leo.md).

A satellite serves the ground through spot beams, each with its own carrier per direction. A
beam's scheduler gives its backlogged users equal shares of time and frequency, so a user whose
own link (its budget at its slant range) would carry R_i alone gets R_i / k while k users of the
beam send in that direction (round robin, or proportional fair with steady channels). A beam is a
:class:`ScheduledPool` per direction; each user's direction is a channel of the pool, whose
capacity the pool sets whenever a flow joins or leaves one of them. ``background`` users of the
beam outside the study (a satellite operator's other subscribers) are always active and take
their shares too. A user held below its share
elsewhere does not pass its unused slots on (a scheduler would; the users of one beam rarely
leave slots idle in FL traffic). Each pool's :class:`~netfl.network.flow.Medium` counts its
users' flows, capacity and bits together (the beam's row in links.csv).

:class:`BeamPlan` assigns users to beams: users within one beam footprint (a ``diameter`` grid
cell on the ground) share a beam; a satellite lights at most ``per_satellite`` beams, and a cell
beyond that joins its least-used beam.
"""

from __future__ import annotations

import math

from netfl.network.flow import Channel, Medium
from netfl.network.propagation import MEAN_EARTH_RADIUS_M


class ScheduledPool:
    """One beam's spectrum in one direction (see the module docstring)."""

    def __init__(self, fabric, name: str, background: int = 0):
        self._fabric, self.name, self.background = fabric, name, background
        self._rates: dict[Channel, float] = {}  # member channel -> its rate alone (bit/s)
        self._active: dict[Channel, None] = {}  # members with flows now, in joining order
        self.medium = Medium(fabric, name)  # the beam's statistics (links.csv's medium row)

    @property
    def users(self) -> int:
        return len(self._rates)

    def member(self, name: str, rate_bps: float) -> Channel:
        """A user's channel in this beam, at ``rate_bps`` while alone."""
        channel = Channel(self._fabric, name, rate_bps / (1 + self.background))
        channel.medium = self.medium
        channel.watcher = lambda: self._changed(channel)
        self._rates[channel] = float(rate_bps)
        return channel

    def set_background(self, background: float) -> None:
        """The beam's background users changed (the hour turned): every member re-shares."""
        if background == self.background:
            return
        self.background = background
        for channel in self._rates:
            self._share(channel, len(self._active))

    def set_rate(self, channel: Channel, rate_bps: float) -> None:
        """A user's rate alone changed (the satellite moved)."""
        self._rates[channel] = float(rate_bps)
        self._share(channel, len(self._active))

    def _changed(self, channel: Channel) -> None:
        """A flow joined or left ``channel``: re-share among the active users only (a beam's
        members accumulate over a run; its active users are few)."""
        before = len(self._active)
        if channel.classes:
            self._active[channel] = None
        else:
            self._active.pop(channel, None)
        if len(self._active) != before:
            for other in self._active:
                self._share(other, len(self._active))
        self._share(channel, len(self._active))

    def _share(self, channel: Channel, active: int) -> None:
        """Set an active user's share (rate over the active users and the background), or an
        idle one's (what it would get on starting alone)."""
        users = (max(active, 1) if channel in self._active else 1) + self.background
        share = self._rates[channel] / users
        if share != channel.capacity_bps:
            channel.set_capacity(share)


class BeamPlan:
    """Which beam of a satellite serves a user (see the module docstring)."""

    def __init__(self, fabric, diameter_m: float, per_satellite: int, background: int = 0,
                 by_hour: list[float] | None = None, utc_hours=None, cell_load=None):
        """``by_hour``: background users per local hour (instead of ``background``);
        ``utc_hours()``: the UTC time of day now, in hours (with ``by_hour``); ``cell_load(cell)``:
        a factor on the background of the beam a cell first lights (cells differ in
        subscribers; 1 without it)."""
        self._fabric, self.diameter_m, self.per_satellite = fabric, diameter_m, per_satellite
        self.background, self.by_hour, self._utc_hours = background, by_hour, utc_hours
        self._cell_load = cell_load
        self._beams: dict[str, list[tuple[ScheduledPool, ScheduledPool]]] = {}
        self._cell_beam: dict[tuple[str, tuple[int, int]], int] = {}
        self._cell_lon: dict[tuple[int, int], float] = {}
        self._pool_lon: list[tuple[float, ScheduledPool]] = []

    def cell(self, lat_deg: float, lon_deg: float) -> tuple[int, int]:
        """The ground cell (about ``diameter_m`` across) of a site."""
        step = math.degrees(self.diameter_m / MEAN_EARTH_RADIUS_M)
        cell = (math.floor(lat_deg / step),
                math.floor(lon_deg * math.cos(math.radians(lat_deg)) / step))
        self._cell_lon.setdefault(cell, lon_deg)
        return cell

    def load_factor(self, cell: tuple[int, int]) -> float:
        """The factor on the background of the beam ``cell`` lights (1 without a cell load)."""
        return 1.0 if self._cell_load is None else self._cell_load(cell)

    def background_at(self, lon_deg: float, factor: float = 1.0) -> float:
        """A beam's background users now at a cell of longitude ``lon_deg`` whose load
        factor is ``factor``."""
        if self.by_hour is None:
            return self.background * factor
        return self.by_hour[local_hour(self._utc_hours(), lon_deg)] * factor

    def advance(self) -> float:
        """Set every beam's background for the hour now; returns the hours until the next
        beam's local hour turns (1 with no beam yet)."""
        now = self._utc_hours()
        for lon, factor, pool in self._pool_lon:
            pool.set_background(self.by_hour[local_hour(now, lon)] * factor)
        return min((1.0 - (now + lon / 15.0) % 1.0 for lon, _, _ in self._pool_lon),
                   default=1.0)

    def pools(self, sat: str, cell: tuple[int, int]) -> tuple[ScheduledPool, ScheduledPool]:
        """(uplink, downlink) pools of the beam of ``sat`` that serves ``cell``."""
        beams = self._beams.setdefault(sat, [])
        index = self._cell_beam.get((sat, cell))
        if index is None:
            if len(beams) < self.per_satellite:
                index = len(beams)
                lon, factor = self._cell_lon.get(cell, 0.0), self.load_factor(cell)
                pair = (ScheduledPool(self._fabric, f"{sat} beam {index} up",
                                      self.background_at(lon, factor)),
                        ScheduledPool(self._fabric, f"{sat} beam {index} down",
                                      self.background_at(lon, factor)))
                beams.append(pair)
                self._pool_lon += [(lon, factor, pool) for pool in pair]
            else:
                index = min(range(len(beams)), key=lambda b: (beams[b][0].users, b))
            self._cell_beam[(sat, cell)] = index
        return beams[index]


def shared_beams(network, beams, gsl_kind: str, start) -> BeamPlan | None:
    """The :class:`BeamPlan` of a world's ``beams`` section (None where beams are dedicated)
    on ``network``'s fabric: its background for a ``gsl_kind`` link, its hourly load turning
    with the simulated time from the UTC ``start`` (a process on the network's clock) and its
    cells' load spread drawn from the network's streams."""
    if beams is None or beams.kind != "shared":
        return None
    env = network.env
    day_start = start.hour + start.minute / 60 + start.second / 3600
    plan = BeamPlan(network.fabric, beams.diameter, beams.per_satellite,
                    beams.background(gsl_kind), beams.background_by_hour,
                    lambda: (day_start + env.now / 3600.0) % 24.0,
                    lognormal_cell_load(network.streams, beams.background_spread)
                    if beams.background_spread > 0 else None)
    if beams.background_by_hour is not None:
        def turn_hours():  # each beam's background as its local hour turns
            while True:
                yield env.timeout(plan.advance() * 3600.0)

        env.process(turn_hours())
    return plan


def lognormal_cell_load(streams, sigma: float):
    """``cell -> factor``: a lognormal factor of median 1 and log-spread ``sigma`` per ground
    cell, drawn from the run's ``beam-load`` stream keyed by the cell (the same cell, the same
    factor, whatever the order beams are lit in)."""
    offset = 2**31  # cell indices may be negative; stream keys may not

    def factor(cell: tuple[int, int]) -> float:
        rng = streams.derive("beam-load", cell[0] + offset, cell[1] + offset)
        return float(math.exp(sigma * rng.standard_normal()))

    return factor


def local_hour(utc_hours: float, lon_deg: float) -> int:
    """The local (solar) hour 0-23 at longitude ``lon_deg`` when UTC is ``utc_hours``."""
    return int(math.floor((utc_hours + lon_deg / 15.0) % 24.0 + 1e-9)) % 24
