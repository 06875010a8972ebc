"""The ``leo`` world's ground-satellite links: their rates (a fixed rate or a link budget per
direction, with the ITU's weather), and the beams that share a satellite's spectrum."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt, model_validator

from netfl.scenario.diurnal import profile
from netfl.scenario.types import (
    ExistingFile,
    Frequency,
    Gain,
    NonNegativeGain,
    PositiveDistance,
    Power,
    Rate,
    Section,
)


class FixedGsl(Section):
    """A fixed ground-satellite rate, each direction."""

    kind: Literal["fixed"] = "fixed"
    rate: Rate = 50e6


class GslDirection(Section):
    """One direction of a ground-satellite link: carrier ``frequency``, occupied ``bandwidth``,
    the transmitter's ``eirp`` and the receiver's ``g_over_t``."""

    frequency: Frequency
    bandwidth: Frequency
    eirp: Power
    g_over_t: Gain = Field(description="receiver G/T in dB/K")


class Rain(Section):
    """Rain over the ground end of every link: a constant ``rate`` (mm/h) or a ``series``
    (CSV: ``time_s``, ``rate_mm_h``; the rate from each row's time until the next, 0 before
    the first), up to ``height`` (ITU-R P.839's h_R at the site: 2.45 km in London), through
    ITU-R P.618's path at the link's elevation; ``tilt_deg``: the polarisation (45:
    circular)."""

    rate: NonNegativeFloat | None = None
    series: ExistingFile | None = None
    height: PositiveDistance
    tilt_deg: Annotated[float, Field(ge=0, le=90)] = 45.0

    @model_validator(mode="after")
    def _one_source(self) -> Rain:
        if (self.rate is None) == (self.series is None):
            raise ValueError("give rain.rate (mm/h) or rain.series (a CSV of time_s, "
                             "rate_mm_h), one of them")
        return self


class Weather(Section):
    """ITU-R models on the ground end of every link (netfl/network/weather.py): ``rain``
    (P.838 and P.618), and ``gas`` (P.676, a standard atmosphere at Ku band: 11.7-14.25 GHz)."""

    rain: Rain | None = None
    gas: bool = True


class LinkBudgetGsl(Section):
    """A budget per direction at the current slant range d (docs/models/leo.md):
    C/N0 = EIRP - FSPL(d, f) - L_atm + G/T + 228.6 dB-Hz; with ``rates: dvb-s2`` the rate is the
    best DVB-S2 MODCOD the Es/N0 allows with ``implementation_margin`` (ETSI EN 302 307-1) times
    the symbol rate B / (1 + ``roll_off``); with ``shannon``, B log2(1 + C/N0 / B) (the capacity
    bound, above any real MODCOD). ``atmosphere``: gas and rain loss at zenith (dB), scaled by
    1 / sin(elevation).
    ``uplink`` is ground -> satellite, ``downlink`` satellite -> ground: with users as clients
    a user's upload rides the uplink; with satellites as clients a satellite's upload (to its
    ground station) rides the downlink and its download the uplink."""

    kind: Literal["link-budget"]
    # Starlink's user downlink as "A Technical Comparison of Three Low Earth Orbit Satellite
    # Constellation Systems to Provide Global Broadband" (Acta Astronautica 2019) budgets it: a
    # 250 MHz Ku carrier, satellite EIRP 36.7 dBW, a 0.7 m user dish (37.7 dBi, 362.9 K: G/T
    # 12.1 dB/K), roll-off 0.1. No public uplink budget was found: a 62.5 MHz carrier at
    # 14.25 GHz to a G/T of 9.8 dB/K, the terminal's EIRP (25 dBW) calibrated so that a user
    # alone in a beam with its 9 background users uploads at Ookla's median (14.8 Mbit/s, US,
    # Q1 2025) over a day (benchmarks/leo_rates.py).
    downlink: GslDirection = GslDirection(frequency=11.7e9, bandwidth=250e6, eirp=66.7,
                                          g_over_t=12.1)
    uplink: GslDirection = GslDirection(frequency=14.25e9, bandwidth=62.5e6, eirp=55.0,
                                        g_over_t=9.8)
    rates: Literal["dvb-s2", "shannon"] = "dvb-s2"
    implementation_margin: NonNegativeGain = 1.0
    roll_off: Annotated[float, Field(ge=0.05, le=0.35)] = 0.1
    atmosphere: NonNegativeGain = Field(0.0, description="zenith loss in dB (0: clear sky)")
    weather: Weather | None = None
    max_rate: Rate | None = None

    @model_validator(mode="after")
    def _one_atmosphere(self) -> LinkBudgetGsl:
        if self.weather is not None and self.atmosphere > 0:
            raise ValueError("give atmosphere (a fixed zenith loss) or weather (the ITU "
                             "models), not both: they would count the sky twice")
        if self.weather is not None and self.weather.gas:
            for name in ("uplink", "downlink"):
                f = getattr(self, name).frequency / 1e9
                if not 11.7 <= f <= 14.25:
                    raise ValueError(f"weather.gas covers 11.7-14.25 GHz (Ku), {name} is at "
                                     f"{f:g} GHz; set weather.gas: false")
        return self


Gsl = Annotated[FixedGsl | LinkBudgetGsl, Field(discriminator="kind")]


class SharedBeams(Section):
    """A satellite serves the ground through spot beams, each with its own carrier per
    direction, shared by the users in its footprint (scheduled: equal shares of time and
    frequency). Users within one ``diameter`` cell share a beam; a satellite lights at most
    ``per_satellite`` beams (a cell beyond that joins the least-used one). ``background_users``
    other subscribers of each beam are always active: by default 9 with a ``link-budget`` GSL
    (a lone study user then gets about the public per-user medians, docs/models/leo.md) and 0
    with a ``fixed`` one (its rate is already a user's)."""

    kind: Literal["shared"] = "shared"
    diameter: PositiveDistance = Field(25_000.0, description="a beam's footprint on the ground")
    per_satellite: PositiveInt = 16
    background_users: NonNegativeInt | None = None
    background_by_hour: list[NonNegativeFloat] | None = Field(
        None, description="a beam's background users in each local hour 0-23 (solar time at "
        "its cell; fractions are average active users): load that varies with the hour, "
        "instead of background_users; or 'wetlinks', a measured day of Starlink load around "
        "background_users (default 9) background users (netfl/scenario/diurnal.py)")

    background_spread: NonNegativeFloat = Field(
        0.0, description="cells differ in subscribers: each ground cell's background users "
        "times a lognormal factor of median 1 and this log-spread (sigma), drawn once per cell "
        "(0: every cell alike)")

    @model_validator(mode="before")
    @classmethod
    def _named_day(cls, data):
        """A named profile becomes its 24 values around ``background_users`` (default 9)."""
        if isinstance(data, dict) and isinstance(data.get("background_by_hour"), str):
            data = dict(data)
            mean = data.pop("background_users", None)
            data["background_by_hour"] = profile(data["background_by_hour"],
                                                 9 if mean is None else mean)
        return data

    @model_validator(mode="after")
    def _a_day(self) -> SharedBeams:
        if self.background_by_hour is not None:
            if len(self.background_by_hour) != 24:
                raise ValueError(f"background_by_hour needs 24 values (local hours 0-23), got "
                                 f"{len(self.background_by_hour)}")
            if self.background_users is not None:
                raise ValueError("give background_users or background_by_hour, not both")
        return self

    def background(self, gsl_kind: str) -> int:
        if self.background_users is not None:
            return self.background_users
        return 9 if gsl_kind == "link-budget" else 0


class DedicatedBeams(Section):
    """Every user has a carrier of its own per direction, however many share a satellite (for
    studies that assume orthogonal carriers)."""

    kind: Literal["dedicated"]


Beams = Annotated[SharedBeams | DedicatedBeams, Field(discriminator="kind")]
