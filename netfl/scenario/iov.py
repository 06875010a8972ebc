"""The ``iov`` world's section: a road, road-side units on it, traffic, and the V2I radio.

Defaults follow the road (docs/models/iov.md gives the sources): coverage radius 500 m on a
highway, 300 m in town (grid, trace); speeds 110 +- 5.8 km/h on a highway, 38 +- 1 km/h in town;
DSRC's 6 Mbit/s when no radio is given. Distances and speeds take units ("10 km", "38 km/h").
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from netfl.scenario.joined import SatelliteBackhaul
from netfl.scenario.kinds import builtin_world
from netfl.scenario.mobile_parts import ResumeUploads  # noqa: F401 (re-exported)
from netfl.scenario.types import (
    Distance,
    Duration,
    ExistingFile,
    Frequency,
    Gain,
    NonNegativeGain,
    NonNegativeSpeed,
    PositiveDistance,
    PositiveDuration,
    Power,
    Rate,
    Section,
    Speed,
)
from netfl.scenario.world_checks import mobile_common, rates_given


class HighwayRoad(Section):
    """A straight road along the x axis from 0 to ``length``, ``lanes`` lanes per direction."""

    kind: Literal["highway"]
    length: PositiveDistance = 10_000.0
    lanes: PositiveInt = 2
    lane_width: PositiveDistance = 3.5
    directions: Literal[1, 2] = 2


class TurnProbabilities(Section):
    """What a vehicle does at an intersection (weights, normalized to sum to 1). A vehicle
    whose move would take it off the grid leaves there. Without straight, both turns are
    needed: left (or right) alone would circle one block for ever."""

    straight: NonNegativeFloat = 0.5
    left: NonNegativeFloat = 0.25
    right: NonNegativeFloat = 0.25

    @model_validator(mode="after")
    def _some(self) -> TurnProbabilities:
        if self.straight + self.left + self.right <= 0:
            raise ValueError("at least one of straight, left, right must be positive")
        if self.straight == 0 and (self.left == 0 or self.right == 0):
            raise ValueError(f"with straight 0, left ({self.left}) and right ({self.right}) "
                             f"must both be positive, or vehicles circle one block for ever")
        return self


class GridRoad(Section):
    """A Manhattan grid of ``blocks_x`` x ``blocks_y`` square blocks of side ``block`` (streets
    on x = i * block and y = j * block). Vehicles enter at every street end on the boundary."""

    kind: Literal["grid"]
    blocks_x: PositiveInt = 4
    blocks_y: PositiveInt = 4
    block: PositiveDistance = 250.0
    turns: TurnProbabilities = TurnProbabilities()


class TraceRoad(Section):
    """Vehicles from a SUMO floating-car-data trace (plain or .gz); the road is the trace's
    bounding box. ``start`` skips the trace's first seconds; its time then starts at 0."""

    kind: Literal["fcd"]
    path: ExistingFile
    start: Duration = 0.0
    max_vehicles: PositiveInt | None = Field(None, description="read only the first N vehicles")


Road = Annotated[HighwayRoad | GridRoad | TraceRoad, Field(discriminator="kind")]


class SpeedDistribution(Section):
    """Speeds ~ N(mean, std^2) truncated to [min, max] (default mean -+ 3 std, at least 1 m/s)."""

    mean: Speed
    std: NonNegativeSpeed = 0.0
    min: NonNegativeSpeed | None = None
    max: Speed | None = None

    def bounds(self) -> tuple[float, float, float, float]:
        """(mean, std, low, high) in m/s."""
        low = max(self.mean - 3 * self.std, 1.0) if self.min is None else self.min
        high = self.mean + 3 * self.std if self.max is None else self.max
        return self.mean, self.std, low, high

    @model_validator(mode="after")
    def _ordered(self) -> SpeedDistribution:
        _, _, low, high = self.bounds()
        if low > high or not low <= self.mean <= high:
            raise ValueError(f"need min <= mean <= max; got min={low:.3g} m/s, "
                             f"mean={self.mean:.3g} m/s, max={high:.3g} m/s")
        if high <= 0:
            raise ValueError("max speed must be positive")
        return self


# Vehicles drawn per road entry at most: a year of a busy highway lane is about 10 million.
MAX_ARRIVALS_PER_ENTRY = 10_000_000


class Traffic(Section):
    """Built-in traffic: vehicles arrive at each road entry (a highway's two ends; every street
    end of a grid) as a Poisson process of ``arrivals_per_hour``, during [0, ``duration``)."""

    arrivals_per_hour: PositiveFloat = 2000.0
    speed: SpeedDistribution | None = None
    duration: PositiveDuration = 3600.0

    @model_validator(mode="after")
    def _bounded(self) -> Traffic:
        expected = self.arrivals_per_hour * self.duration / 3600.0
        if expected > MAX_ARRIVALS_PER_ENTRY:
            raise ValueError(f"arrivals_per_hour x duration is {expected:.3g} vehicles per road "
                             f"entry, more than {MAX_ARRIVALS_PER_ENTRY:,} (every one is "
                             f"drawn and kept): a shorter duration or fewer arrivals")
        return self


class RsuPlacement(Section):
    """Road-side units every ``spacing`` (along a highway; on a square lattice over a grid or a
    trace's bounding box, starting at ``offset``), or at the given ``positions`` [[x, y], ...]
    in metres. Each covers a disc of radius ``coverage``."""

    spacing: PositiveDistance | None = None
    offset: Distance | None = Field(None, description="first RSU's distance from the origin; "
                                    "default half a spacing (0 on a grid: at intersections)")
    positions: list[tuple[float, float]] | None = None
    coverage: PositiveDistance | None = None

    @model_validator(mode="after")
    def _one_way(self) -> RsuPlacement:
        if (self.spacing is None) == (self.positions is None):
            raise ValueError("give exactly one of spacing or positions")
        if self.positions is not None and not self.positions:
            raise ValueError("positions must list at least one RSU")
        return self


class FixedRadio(Section):
    """A fixed V2I rate (DSRC / IEEE 802.11p: 3-27 Mbit/s, 6 Mbit/s the default data rate)."""

    kind: Literal["fixed"] = "fixed"
    rate: Rate = 6e6


class ShannonRadio(Section):
    """Rate from the SNR on the current vehicle-RSU distance, with log-normal shadowing
    correlated over ``decorrelation`` metres (Gudmundson). Uplink: vehicle -> RSU; downlink:
    RSU -> vehicle. On an 802.11p medium the SNR picks an 802.11p rate; on a dedicated one the
    rate is ``implementation_factor`` * B log2(1 + SNR), at most ``max_spectral_efficiency`` *
    B (3GPP TR 36.942 A.2's link adaptation: 0.6 and 4.4 bit/s/Hz) and ``max_rate``."""

    kind: Literal["shannon"]
    path_loss: Literal["winner-b1-los", "winner-b1-manhattan", "tr36942-macro", "free-space",
                       "tr36885-v2i"] = Field(
        "winner-b1-los", description="winner-b1-manhattan: line of sight along the RSU's "
        "streets, WINNER+ B1 NLOS around corners of an axis-aligned street grid")
    street_width: PositiveDistance = Field(20.0, description="winner-b1-manhattan: within "
                                           "half of it of an RSU's street axis is in sight")
    rsu_height: PositiveDistance = Field(5.0, description="a UE-type RSU (TR 36.885)")
    vehicle_height: PositiveDistance = 1.5
    frequency: Frequency = 5.9e9
    bandwidth: Frequency = 10e6
    vehicle_tx_power: Power = 23.0
    rsu_tx_power: Power = 23.0
    vehicle_antenna_gain: Gain = 3.0
    rsu_antenna_gain: Gain = 8.0
    vehicle_noise_figure: NonNegativeGain = 9.0
    rsu_noise_figure: NonNegativeGain = 5.0
    shadowing_std: NonNegativeGain | None = Field(
        None, description="dB; default 3 for winner-b1-los, 8 for tr36942-macro, 0 for "
                          "free-space")
    decorrelation: PositiveDistance | None = Field(
        None, description="default 10 m for winner-b1-los, 50 m for tr36942-macro")
    max_rate: Rate | None = None
    implementation_factor: Annotated[float, Field(gt=0, le=1)] = 0.6
    max_spectral_efficiency: Annotated[float, Field(gt=0, le=30,
                                                    description="bit/s/Hz")] = 4.4

    def shadowing_sigma_db(self) -> float:
        if self.shadowing_std is not None:
            return self.shadowing_std
        return {"winner-b1-los": 3.0, "winner-b1-manhattan": 3.0,
                "tr36942-macro": 8.0}.get(self.path_loss, 0.0)

    def decorrelation_m(self) -> float:
        if self.decorrelation is not None:
            return self.decorrelation
        return 10.0 if self.path_loss.startswith("winner-b1") else 50.0

    @model_validator(mode="after")
    def _renamed(self) -> ShannonRadio:
        if self.path_loss == "tr36885-v2i":
            raise ValueError(
                "path_loss tr36885-v2i was the 2 GHz macro-cell law 128.1 + 37.6 log10(d_km) "
                "(from TR 36.942), not TR 36.885's RSU model; use winner-b1-los (TR 36.885's "
                "LOS model for a 5 m UE-type RSU) or tr36942-macro (the macro law, now with "
                "its frequency term)")
        return self


Radio = Annotated[FixedRadio | ShannonRadio, Field(discriminator="kind")]


DOT11P_RATES_BPS = (3e6, 4.5e6, 6e6, 9e6, 12e6, 18e6, 24e6, 27e6)  # as netfl.network.dcf


def _rates_text() -> str:
    return ", ".join(f"{r / 1e6:g}" for r in DOT11P_RATES_BPS)


class Dot11pMedium(Section):
    """One IEEE 802.11p channel per RSU, shared by it and its vehicles (DCF): every frame, up
    or down, data or TCP acknowledgement, takes the medium in turn. The PHY rate is the fixed
    radio's ``rate`` (one of the 10 MHz rates) or, with a ``shannon`` radio, the highest rate
    whose threshold the SNR meets. ``aifsn``, ``cw_min`` and ``cw_max``: the access category
    (2, 15, 1023: DCF, as ns-3's ad hoc MAC; ITS-G5's best effort is 6, 15, 1023).
    ``downlink``: ``unicast`` (a TCP transfer per vehicle, as FL frameworks do) or
    ``broadcast`` (an RSU sends a model to the vehicles of its cell once, at
    ``broadcast_rate``, without acknowledgements or retries: a vehicle that cannot decode that
    rate at its SNR, or leaves before the end, misses it)."""

    kind: Literal["802.11p"] = "802.11p"
    aifsn: Annotated[int, Field(ge=1, le=15)] = 2
    cw_min: Annotated[int, Field(ge=1, le=1023)] = 15
    cw_max: Annotated[int, Field(ge=1, le=1023)] = 1023
    downlink: Literal["unicast", "broadcast"] = "unicast"
    broadcast_rate: Rate = Field(6e6, description="ITS-G5's default data rate")

    @model_validator(mode="after")
    def _windows(self) -> Dot11pMedium:
        for name in ("cw_min", "cw_max"):
            value = getattr(self, name)
            if (value + 1) & value:
                raise ValueError(f"{name} must be 2^k - 1 (3, 7, 15, ..., 1023); got {value}")
        if self.cw_max < self.cw_min:
            raise ValueError(f"cw_max ({self.cw_max}) must be >= cw_min ({self.cw_min})")
        if self.broadcast_rate not in DOT11P_RATES_BPS:
            raise ValueError(f"broadcast_rate {self.broadcast_rate / 1e6:g} Mbps is not an "
                             f"802.11p rate ({_rates_text()} Mbps)")
        return self


class DedicatedMedium(Section):
    """Every vehicle-RSU link has channels of its own at the radio's full rate, however many
    vehicles the RSU serves at once (for studies that assume orthogonal channels)."""

    kind: Literal["dedicated"]


LTE_BANDWIDTHS_HZ = (1.4e6, 3e6, 5e6, 10e6, 15e6, 20e6)  # as netfl.network.lte


class LteMedium(Section):
    """One LTE carrier per RSU (an eNB; ``c-v2x``: the same, for LTE-V2X with the base station
    scheduling the vehicles, mode 3), FDD: each direction's resource blocks are divided among
    its backlogged vehicles every 1 ms, equal whole numbers of blocks, at least
    ``min_grant_rbs``. ``scheduler``: round robin and proportional fair give the same equal
    shares here (no fast fading: a vehicle's channel is steady between rate updates). The
    rate of a block from the vehicle's SINR on the whole carrier (CQI and MCS, TS 36.213), the
    uplink under open-loop power control: ``p0`` dBm received per block (null: full power) and
    path-loss compensation ``alpha``. With a ``fixed`` radio, ``rate`` is what a vehicle gets
    alone on the whole carrier. ``downlink``: ``unicast``, or ``broadcast`` (a multicast to the
    cell at ``broadcast_rate``, scheduled like one more vehicle; a vehicle whose own downlink
    rate is below it misses it)."""

    kind: Literal["lte", "c-v2x"]
    scheduler: Literal["proportional-fair", "round-robin"] = "proportional-fair"
    p0: Power | None = Field(-80.0, description="dBm per resource block (ns-3's default)")
    alpha: Annotated[float, Field(ge=0, le=1)] = 1.0
    min_grant_rbs: Annotated[int, Field(ge=1, le=100)] = 3
    downlink: Literal["unicast", "broadcast"] = "unicast"
    broadcast_rate: Rate = Field(10e6, description="the multicast's rate on the whole carrier")

    @model_validator(mode="after")
    def _in_range(self) -> LteMedium:
        if self.p0 is not None and not -126.0 <= self.p0 <= 24.0:
            raise ValueError(f"p0 {self.p0:g} dBm is outside TS 36.213's -126..24 dBm")
        return self


Medium = Annotated[Dot11pMedium | LteMedium | DedicatedMedium, Field(discriminator="kind")]


class RateUpdate(Section):
    """A moving vehicle's rate is recomputed at least every ``interval`` of simulated time and
    every ``distance`` it moves, whichever comes first, while it is transferring."""

    interval: PositiveDuration = 0.1
    distance: PositiveDistance = 5.0


@builtin_world
class IovWorld(Section):
    """Vehicles on a road are clients of road-side units (edge servers), joined by fibre along
    the road, with an optional cloud behind them."""

    kind: Literal["iov"]
    BUILDER: ClassVar[str] = "netfl.world.joined:build_iov_world"
    road: Road
    rsus: RsuPlacement
    traffic: Traffic = Traffic()
    max_clients: PositiveInt = Field(
        200, description="distinct data-carrying vehicles; ids are recycled past this")
    radio: Radio = FixedRadio()
    medium: Medium = Dot11pMedium()
    rate_update: RateUpdate = RateUpdate()
    resume_uploads: ResumeUploads = ResumeUploads()
    in_flight_at_handover: Literal["continue", "cut"] = Field(
        "continue", description="continue: a transfer in flight when the vehicle becomes "
        "another RSU's client goes on with its RSU while within its coverage radius; cut: it "
        "fails at the hand-over")
    backhaul_delay_per_km: Duration = Field(5e-6, description="fibre: about 5 us per km")
    cloud: bool = True
    backhaul: SatelliteBackhaul | None = Field(
        None, description="RSUs backhauled by a LEO constellation instead of fibre "
        "(docs/models/joined.md); none: fibre everywhere")

    def coverage_m(self) -> float:
        if self.rsus.coverage is not None:
            return self.rsus.coverage
        return 500.0 if self.road.kind == "highway" else 300.0

    def speed_bounds(self) -> tuple[float, float, float, float]:
        """(mean, std, low, high) in m/s of the built-in traffic."""
        if self.traffic.speed is not None:
            return self.traffic.speed.bounds()
        mean, std = (110.0, 5.8) if self.road.kind == "highway" else (38.0, 1.0)
        return SpeedDistribution(mean=mean / 3.6, std=std / 3.6).bounds()

    @model_validator(mode="after")
    def _consistent(self) -> IovWorld:
        if self.road.kind == "fcd" and "traffic" in self.model_fields_set:
            raise ValueError("traffic applies to built-in roads; an fcd trace brings its own")
        if self.medium.kind == "802.11p":
            if self.radio.kind == "fixed" and self.radio.rate not in DOT11P_RATES_BPS:
                raise ValueError(f"radio.rate {self.radio.rate / 1e6:g} Mbps is not an 802.11p "
                                 f"rate (10 MHz: {_rates_text()} Mbps); or set medium: "
                                 f"{{kind: dedicated}}")
            if self.radio.kind == "shannon" and self.radio.bandwidth != 10e6:
                raise ValueError(f"802.11p uses 10 MHz channels; radio.bandwidth is "
                                 f"{self.radio.bandwidth / 1e6:g} MHz (or set medium: "
                                 f"{{kind: dedicated}})")
        if (self.medium.kind in ("lte", "c-v2x") and self.radio.kind == "shannon"
                and self.radio.bandwidth not in LTE_BANDWIDTHS_HZ):
            raise ValueError(f"an LTE carrier is 1.4, 3, 5, 10, 15 or 20 MHz wide; "
                             f"radio.bandwidth is {self.radio.bandwidth / 1e6:g} MHz")
        return self

    def check_scenario(self, scenario) -> None:
        """What an iov world allows: the algorithms that declare it, partitions over a vehicle
        population, and access links whose rate and ups and downs come from the radio and the
        road (netfl.scenario.kinds)."""
        mobile_common(scenario, "iov")
        rates_given(scenario, ("backhaul", "core"))
        algo = scenario.algorithm
        if algo.USES_CLOUD and not self.cloud:
            raise ValueError(f"{algo.kind} aggregates at the cloud: set world.cloud to true")
        if self.backhaul is not None and self.cloud and self.backhaul.ground_stations is None:
            raise ValueError("world.backhaul: RSUs behind satellites reach the cloud only "
                             "through gateways: give backhaul.ground_stations, or set "
                             "world.cloud: false")
        links = scenario.links
        access = links.access
        given = "access" in links.model_fields_set  # the edge default's rate is not used
        if given and (access.rate or access.rate_up or access.rate_down):
            raise ValueError("on an iov world the access rate comes from world.radio; remove "
                             "links.access.rate / rate_up / rate_down")
