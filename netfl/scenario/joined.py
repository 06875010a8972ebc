"""An ``iov`` world's satellite backhaul: road-side units that reach the cloud and each other
through a LEO constellation (docs/models/joined.md).

The RSUs listed in ``rsus`` have no fibre: each has a user terminal (a dish) with the ``gsl``
link budget, served by one satellite in view at a time by the ``association`` policy, in a beam
it shares with the beam's background users; satellites are joined by ``isl`` links and reach
the cloud through ``ground_stations``. The road's local x/y metres are placed on the Earth at
``site`` (the road's origin), its x axis along ``heading_deg`` (clockwise from north).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, model_validator

from netfl.scenario.leo import (
    MAX_PLAN_STEPS,
    Association,
    Beams,
    Constellation,
    ElevationMask,
    GridIsl,
    GroundStations,
    Gsl,
    Isl,
    Latitude,
    LeoWorld,
    LinkBudgetGsl,
    Longitude,
    OrbitalRateUpdate,
    SharedBeams,
)
from netfl.scenario.types import PositiveDuration, Section

EARTH_RADIUS_M = 6_371_008.8  # the mean radius: metres on the road to degrees at its site


class RoadSite(Section):
    """Where the road's origin (x = 0, y = 0) is on the Earth, and which way its x axis
    points (degrees clockwise from north: 90 = east)."""

    lat_deg: Latitude
    lon_deg: Longitude
    heading_deg: Annotated[float, Field(ge=0, lt=360)] = 90.0

    def lat_lon(self, x_m: float, y_m: float) -> tuple[float, float]:
        """The latitude and longitude (degrees) of road point (x, y) metres: a local tangent
        plane (good to metres over the tens of km of a road)."""
        heading = math.radians(self.heading_deg)
        # x along the heading, y 90 deg to its left (counter-clockwise, as the road's axes)
        north = x_m * math.cos(heading) + y_m * math.sin(heading)
        east = x_m * math.sin(heading) - y_m * math.cos(heading)
        lat = self.lat_deg + math.degrees(north / EARTH_RADIUS_M)
        lon = self.lon_deg + math.degrees(
            east / (EARTH_RADIUS_M * math.cos(math.radians(self.lat_deg))))
        return lat, (lon + 180.0) % 360.0 - 180.0


class SatelliteBackhaul(Section):
    """The RSUs in ``rsus`` (``all``, or their indices in placement order) reach the network
    through a LEO constellation instead of fibre; the others keep their fibre. The fields after
    ``site`` are the ``leo`` world's (docs/models/leo.md), for the RSUs' terminals."""

    kind: Literal["satellite"]
    rsus: Literal["all"] | list[NonNegativeInt] = "all"
    site: RoadSite
    constellation: Constellation
    min_elevation_deg: ElevationMask = 25.0
    start: datetime = Field(datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
                            description="UTC epoch of simulated time 0")
    horizon: PositiveDuration = Field(86400.0, description="how far the contact plan goes")
    step: PositiveDuration = Field(10.0, description="contact plan's coarse step")
    gsl: Gsl = LinkBudgetGsl(kind="link-budget")
    beams: Beams = SharedBeams()
    association: Association = Association()
    isl: Isl = GridIsl()
    ground_stations: GroundStations | None = None
    delay_update: PositiveDuration = Field(10.0, description="ISL and feeder delays refresh")
    rate_update: OrbitalRateUpdate = OrbitalRateUpdate()
    cache: bool = Field(True, description="cache contact plans on disk")

    @model_validator(mode="after")
    def _reachable(self) -> SatelliteBackhaul:
        if self.start.tzinfo is None:
            raise ValueError("start needs a time zone, e.g. 2026-01-01T00:00:00Z")
        if isinstance(self.rsus, list):
            if not self.rsus:
                raise ValueError("rsus lists no RSU: give 'all' or some indices, or remove "
                                 "backhaul (fibre everywhere)")
            if len(set(self.rsus)) != len(self.rsus):
                raise ValueError(f"rsus lists an RSU twice: {self.rsus}")
        if self.ground_stations is None and self.isl.kind == "none":
            raise ValueError("with isl: {kind: none} and no ground_stations a satellite "
                             "reaches nothing: give ground_stations (gateways), ISLs, or both")
        if self.horizon / self.step > MAX_PLAN_STEPS:
            raise ValueError(f"horizon / step is {self.horizon / self.step:.3g} steps, more "
                             f"than {MAX_PLAN_STEPS:,}: a shorter horizon or a longer step")
        return self

    def terminal_rsus(self, count: int) -> list[int]:
        """The indices of the RSUs with a terminal among ``count`` placed; an index past the
        last is a scenario error (raised by the world, which knows the count)."""
        return list(range(count)) if self.rsus == "all" else sorted(self.rsus)

    def sky(self, sites: list[tuple[float, float]]) -> LeoWorld:
        """The ``leo`` world whose users are the terminals at ``sites`` (lat, lon)."""
        fields = self.model_dump(exclude={"kind", "rsus", "site"}, exclude_unset=False)
        return LeoWorld.model_validate(
            fields | {"kind": "leo", "users": {"points": [list(s) for s in sites]}})
