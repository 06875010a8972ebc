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

    def __init__(self, fabric, diameter_m: float, per_satellite: int, background: int = 0):
        self._fabric, self.diameter_m, self.per_satellite = fabric, diameter_m, per_satellite
        self.background = background
        self._beams: dict[str, list[tuple[ScheduledPool, ScheduledPool]]] = {}
        self._cell_beam: dict[tuple[str, tuple[int, int]], int] = {}

    def cell(self, lat_deg: float, lon_deg: float) -> tuple[int, int]:
        """The ground cell (about ``diameter_m`` across) of a site."""
        step = math.degrees(self.diameter_m / MEAN_EARTH_RADIUS_M)
        return (math.floor(lat_deg / step),
                math.floor(lon_deg * math.cos(math.radians(lat_deg)) / step))

    def pools(self, sat: str, cell: tuple[int, int]) -> tuple[ScheduledPool, ScheduledPool]:
        """(uplink, downlink) pools of the beam of ``sat`` that serves ``cell``."""
        beams = self._beams.setdefault(sat, [])
        index = self._cell_beam.get((sat, cell))
        if index is None:
            if len(beams) < self.per_satellite:
                index = len(beams)
                beams.append((ScheduledPool(self._fabric, f"{sat} beam {index} up",
                                            self.background),
                              ScheduledPool(self._fabric, f"{sat} beam {index} down",
                                            self.background)))
            else:
                index = min(range(len(beams)), key=lambda b: (beams[b][0].users, b))
            self._cell_beam[(sat, cell)] = index
        return beams[index]
