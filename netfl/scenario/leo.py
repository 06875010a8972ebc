"""The ``leo`` world's section: a constellation, ground users, ground stations and the links.

Two roles (``clients``): ``users`` (the default): satellites above a user's elevation mask are
edge servers for that user and users are clients; ``satellites``: the satellites are the
clients (Earth-observation satellites holding their own images), the ground stations are edge
servers, each on a terrestrial link to the cloud, and a satellite reaches one only inside their
contact windows. Angles are plain degrees (``_deg`` fields); distances, rates and times take
units.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from netfl.scenario.kinds import algorithm_kinds, algorithm_spec, builtin_world
from netfl.scenario.leo_links import (  # noqa: F401 (re-exported: the leo section's parts)
    Beams,
    DedicatedBeams,
    FixedGsl,
    Gsl,
    GslDirection,
    LinkBudgetGsl,
    Rain,
    SharedBeams,
    Weather,
)
from netfl.scenario.mobile_parts import ResumeUploads
from netfl.scenario.types import (
    Distance,
    Duration,
    Energy,
    ExistingFile,
    PositiveDistance,
    PositiveDuration,
    Probability,
    Rate,
    Section,
    Watts,
)
from netfl.scenario.world_checks import mobile_common

Latitude = Annotated[float, Field(ge=-90, le=90)]
Longitude = Annotated[float, Field(ge=-180, le=180)]
ElevationMask = Annotated[float, Field(ge=0, lt=90)]


class _Subset(Section):
    max_satellites: PositiveInt | None = Field(
        None, description="keep only the N satellites longest in view of the users")


class WalkerConstellation(_Subset):
    """A Walker-delta shell i: T/P/F with T = planes x per_plane."""

    kind: Literal["walker"]
    altitude: PositiveDistance
    inclination_deg: Annotated[float, Field(ge=0, le=180)]
    planes: PositiveInt
    per_plane: PositiveInt
    phasing: NonNegativeInt = 1

    @model_validator(mode="after")
    def _phasing(self) -> WalkerConstellation:
        if self.phasing >= self.planes:
            raise ValueError(f"phasing F ({self.phasing}) must be below planes ({self.planes})")
        return self


class PresetConstellation(_Subset):
    """starlink-shell1 (550 km, 53 deg, 72 x 22), kuiper (630 km, 51.9 deg, 34 x 34), telesat
    (1015 km, 98.98 deg, 27 x 13), walker-40-5 (500 km, 80 deg, 5 x 8)."""

    kind: Literal["preset"]
    preset: Literal["starlink-shell1", "kuiper", "telesat", "walker-40-5"]


class TleConstellation(_Subset):
    """Satellites from a TLE (2-line) or 3LE (with name lines) file, propagated by SGP4."""

    kind: Literal["tle"]
    path: ExistingFile


Constellation = Annotated[WalkerConstellation | PresetConstellation | TleConstellation,
                          Field(discriminator="kind")]


class Region(Section):
    """``count`` users uniform over the spherical cap of ``radius_km`` around a point."""

    count: PositiveInt
    lat_deg: Latitude
    lon_deg: Longitude
    radius_km: PositiveFloat


class Users(Section):
    """Ground users (the clients): ``points`` [[lat_deg, lon_deg], ...], one ``region`` or
    several ``regions``; ``altitude`` above the WGS84 ellipsoid."""

    points: list[tuple[Latitude, Longitude]] | None = None
    region: Region | None = None
    regions: list[Region] | None = None
    altitude: Distance = 0.0

    @model_validator(mode="after")
    def _one_way(self) -> Users:
        given = [name for name in ("points", "region", "regions")
                 if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of points, region, regions (got "
                             f"{', '.join(given) or 'none'})")
        if (self.points is not None and not self.points) or (
                self.regions is not None and not self.regions):
            raise ValueError("the user list must not be empty")
        return self


class GridIsl(Section):
    """+Grid inter-satellite links: each satellite to its two neighbours in its plane and the
    same slot in the two adjacent planes (across the last plane and plane 0, the phased
    neighbour); delay = range / c, updated as satellites move. A link is up only while its
    chord clears the Earth by ``clearance`` (the atmosphere); one that never does is left out,
    with a note. ``earth_blocks: false`` keeps every +Grid link up, through the Earth or not:
    the idealization of FL-over-LEO studies whose shells (walker-40-5) cannot clear it."""

    kind: Literal["grid"] = "grid"
    rate: Rate = 10e9
    clearance: Distance = Field(80_000.0, description="least height of an ISL's chord above "
                                "the Earth's mean radius")
    earth_blocks: bool = True


class NoIsl(Section):
    """No inter-satellite links: satellites reach each other through the ground (bent pipe)."""

    kind: Literal["none"]


Isl = Annotated[GridIsl | NoIsl, Field(discriminator="kind")]


class GroundStations(Section):
    """Gateways joining satellites to the cloud: a satellite has a feeder link to the cloud
    while some gateway sees it above ``min_elevation_deg``; its delay is the slant range / c
    plus ``terrestrial_delay``. With ``clients: satellites`` the ground stations are the edge
    servers: a satellite reaches one while it is above ``min_elevation_deg`` there (every
    satellite in view on a carrier of its own), and each station reaches the cloud over a
    terrestrial link of ``rate`` and ``terrestrial_delay``."""

    positions: list[tuple[Latitude, Longitude]]
    min_elevation_deg: ElevationMask = 25.0
    rate: Rate = 1e9
    terrestrial_delay: Duration = 0.010

    @model_validator(mode="after")
    def _some(self) -> GroundStations:
        if not self.positions:
            raise ValueError("positions must list at least one ground station")
        return self


class OrbitalRateUpdate(Section):
    """A ground-satellite link's rate and delay are recomputed at least every ``interval``
    while it carries traffic."""

    interval: PositiveDuration = 1.0
    distance: PositiveDistance = 10_000.0


class Reconfiguration(Section):
    """A global schedule that reassigns users to satellites only at its boundaries: every
    ``period``, ``phase`` seconds past each UTC minute (Starlink's: 15 s, at 12, 27, 42 and 57
    s past the minute; docs/models/leo.md)."""

    period: PositiveDuration = 15.0
    phase: Duration = 12.0

    @model_validator(mode="after")
    def _within_a_period(self) -> Reconfiguration:
        if self.phase >= self.period:
            raise ValueError(f"phase {self.phase:g} s must be below the period "
                             f"({self.period:g} s)")
        return self


class Association(Section):
    """Which satellite in view serves a user (its primary: hierarchical FedAvg's clusters,
    FedAvg's access route): ``longest-remaining`` (the longest rest of its window: the default),
    ``highest-elevation``, or ``earliest-risen`` (the one in view longest, hence about to
    set). A user keeps its satellite until it sets, or until another beats it by
    ``hysteresis_s`` of remaining window (``longest-remaining``) or ``hysteresis_deg`` of
    elevation (``highest-elevation``), so it does not flap. With ``reconfiguration``, a user's
    satellite changes only at the schedule's boundaries: at each, the policy (with its
    hysteresis) picks among the satellites in view for the whole interval ahead, and the user
    keeps it until the next boundary; only where none stays in view that long is the best in
    view taken, and replaced as soon as it sets."""

    policy: Literal["longest-remaining", "highest-elevation", "earliest-risen"] = (
        "longest-remaining")
    hysteresis_s: NonNegativeFloat = 30.0
    hysteresis_deg: NonNegativeFloat = 5.0
    reconfiguration: Reconfiguration | None = None

    @model_validator(mode="after")
    def _scored(self) -> Association:
        if self.reconfiguration is not None and self.policy == "earliest-risen":
            raise ValueError("reconfiguration picks by a score at each boundary: use policy "
                             "longest-remaining or highest-elevation")
        return self


# Coarse contact-plan steps at most: 100 days at the default 10 s step.
MAX_PLAN_STEPS = 864_000


class SatelliteBattery(Section):
    """A satellite's battery: ``capacity``, the deepest discharge allowed, charge and discharge
    efficiencies, and its charge at the start (a fraction of the capacity)."""

    capacity: Energy
    max_depth_of_discharge: Probability = 0.3
    eta_charge: Probability = 0.95
    eta_discharge: Probability = 0.95
    initial: Probability = 1.0

    @model_validator(mode="after")
    def _sane(self) -> SatelliteBattery:
        for name in ("max_depth_of_discharge", "eta_charge", "eta_discharge"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.initial < 1 - self.max_depth_of_discharge:
            raise ValueError(f"initial charge {self.initial:g} is below the floor "
                             f"{1 - self.max_depth_of_discharge:g} (1 - max_depth_of_discharge)")
        return self


class PowerPolicy(Section):
    """What an on-board job does when the battery is low: ``defer`` waits (bus load only, the
    array charging in sunlight) until the charge is at least ``min_charge`` of the capacity;
    ``ignore`` runs at once and the battery pays (an unmet load is reported, not prevented)."""

    kind: Literal["defer", "ignore"] = "defer"
    min_charge: Probability = 0.8


class SatellitePower(Section):
    """Every satellite's power system (docs/models/energy.md): a solar ``array`` giving its
    output in full sunlight, a ``bus`` load drawn always, a battery, and the policy for
    on-board jobs (which draw devices.edge.power.active on top of the bus). Sunlight follows
    each satellite's SGP4 orbit and a ``shadow`` model on a ``step`` grid."""

    array: Watts
    bus: Watts
    battery: SatelliteBattery
    policy: PowerPolicy = PowerPolicy()
    shadow: Literal["conical", "cylindrical"] = "conical"
    step: PositiveDuration = Field(30.0, description="sunlight grid step")


def satellite_client_kinds() -> list[str]:
    """The algorithm kinds that run with satellites as clients (their Spec's
    SATELLITE_CLIENTS)."""
    return [k for k in algorithm_kinds() if algorithm_spec(k).SATELLITE_CLIENTS]


@builtin_world
class LeoWorld(Section):
    """Ground users are clients of the satellites in view; satellites are joined by ISLs
    (+Grid) or through ground stations, which also lead to the cloud."""

    kind: Literal["leo"]
    BUILDER: ClassVar[str] = "netfl.world.leo:build_leo_world"
    constellation: Constellation
    clients: Literal["users", "satellites"] = Field(
        "users", description="who trains: ground users under the satellites, or the "
        "satellites themselves (ground stations as edge servers)")
    users: Users | None = None
    min_elevation_deg: ElevationMask = 25.0
    start: datetime = Field(datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
                            description="UTC epoch of simulated time 0")
    horizon: PositiveDuration = Field(86400.0, description="how far the contact plan goes")
    step: PositiveDuration = Field(10.0, description="contact plan's coarse step")
    gsl: Gsl = FixedGsl()
    beams: Beams = SharedBeams()
    association: Association = Association()
    isl: Isl = GridIsl()
    ground_stations: GroundStations | None = None
    handover_margin: Duration = Field(30.0, description="hand the model over this long before "
                                      "the serving satellite sets")
    delay_update: PositiveDuration = Field(10.0, description="ISL and feeder delays refresh")
    rate_update: OrbitalRateUpdate = OrbitalRateUpdate()
    resume_uploads: ResumeUploads = ResumeUploads()
    cache: bool = Field(True, description="cache contact plans on disk")
    power: SatellitePower | None = None

    @model_validator(mode="after")
    def _aware(self) -> LeoWorld:
        if self.start.tzinfo is None:
            raise ValueError("start needs a time zone, e.g. 2026-01-01T00:00:00Z")
        self._roles()
        if self.horizon / self.step > MAX_PLAN_STEPS:
            raise ValueError(f"horizon / step is {self.horizon / self.step:.3g} steps of every "
                             f"satellite and site, more than {MAX_PLAN_STEPS:,}: a shorter "
                             f"horizon or a longer step (TLEs are good for days, not years)")
        return self

    def _roles(self) -> None:
        """The fields each ``clients`` role needs, and those it has no use for."""
        if self.clients == "users":
            if self.users is None:
                raise ValueError("users is required (the clients), unless clients: satellites")
            return
        if self.users is not None:
            raise ValueError("with clients: satellites the satellites are the clients; remove "
                             "users")
        if self.ground_stations is None:
            raise ValueError("with clients: satellites give ground_stations: they are the edge "
                             "servers a satellite uploads to in its contact windows")
        given = self.model_fields_set
        refused = {
            "isl": ("grid" if "isl" in given and self.isl.kind == "grid" else None,
                    "satellites as clients never relay: isl must be {kind: none}"),
            "beams": ("shared" if "beams" in given and self.beams.kind == "shared" else None,
                      "every satellite in a station's view has a carrier of its own: beams "
                      "must be {kind: dedicated}"),
            "min_elevation_deg": (self.min_elevation_deg if "min_elevation_deg" in given
                                  else None, "the contact mask is "
                                  "ground_stations.min_elevation_deg"),
            "handover_margin": (self.handover_margin if "handover_margin" in given else None,
                                "it is Fed-CHS's, which does not run with satellites as "
                                "clients"),
            "power": (self.power, "satellites' power systems are modelled where satellites are "
                      "edge servers (clients: users) only"),
        }
        for name, (value, why) in refused.items():
            if value is not None:
                raise ValueError(f"{name} = {value!r} does not apply with clients: satellites "
                                 f"({why})")

    @property
    def satellites_train(self) -> bool:
        """Whether the satellites are the clients (``clients: satellites``)."""
        return self.clients == "satellites"

    @property
    def cloud(self) -> bool:
        return self.ground_stations is not None

    def check_scenario(self, scenario) -> None:
        """What a leo world allows: the algorithms that declare it and their partitions; link
        rates from the world section (GSL, ISL, gateways) rather than the links classes
        (netfl.scenario.kinds)."""
        mobile_common(scenario, "leo")
        algo = scenario.algorithm
        if self.satellites_train and not algo.SATELLITE_CLIENTS:
            raise ValueError(f"algorithm {algo.kind!r} does not run with clients: satellites "
                             f"(ground stations as edge servers, reached only in contact "
                             f"windows); use one of {', '.join(satellite_client_kinds())}")
        if algo.USES_CLOUD and self.ground_stations is None:
            raise ValueError(f"{algo.kind} aggregates at the cloud: give "
                             f"world.ground_stations (gateways to the cloud)")
        links = scenario.links
        for name, where in (("access", "world.gsl"), ("backhaul", "world.isl"),
                            ("core", "world.ground_stations")):
            spec = getattr(links, name)
            given = spec.model_fields_set if name in links.model_fields_set else set()
            for field in ("rate", "rate_up", "rate_down", "delay"):
                if field in given:
                    raise ValueError(f"on a leo world links.{name}.{field} comes from {where} "
                                     f"and the geometry; remove it")
