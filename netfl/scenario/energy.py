"""The ``energy:`` section: what a run charges in joules (docs/models/energy.md).

Absent (the default), a run counts no energy and its results are those of a run without this
section. Present, every compute job is charged its device's active power (``devices.<tier>.power``,
or the preset's), idle time its idle power where ``idle`` is true, and every hop of a transfer
that touches a client (its access hop: a cell, a radio link, a ground-to-satellite link) the
radio power of each end's tier given under ``radios`` while the hop's bits are on the air.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag

from netfl.scenario.types import Section, Watts

Tier = Literal["clients", "edge", "cloud"]


class RadioPower(Section):
    """A radio's electrical draw while it transmits (``tx``) and receives (``rx``)."""

    tx: Watts
    rx: Watts = 0.0


class LteThroughputPower(Section):
    """An LTE phone's draw by its throughput (Huang et al., "A Close Examination of Performance
    and Power Characteristics of 4G LTE Networks", MobiSys 2012): while a hop's bits are on the
    air, P = alpha_up x its uplink rate + beta when the phone sends, alpha_down x its downlink
    rate + beta when it receives (rates in Mbit/s, the hop's mean on the wire)."""

    kind: Literal["lte-throughput"]
    alpha_up_mw_per_mbps: float = Field(gt=0)
    alpha_down_mw_per_mbps: float = Field(gt=0)
    beta: Watts


def _radio_kind(value: object) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return kind if kind is not None else "fixed"


Radio = Annotated[Annotated[RadioPower, Tag("fixed")]
                  | Annotated[LteThroughputPower, Tag("lte-throughput")],
                  Discriminator(_radio_kind)]


class EnergySpec(Section):
    """Energy accounting: ``idle`` charges each device's idle power between its jobs over the
    whole run; ``radios`` the transmit and receive power of each tier's radio on access hops,
    fixed (``{tx, rx}``) or, for a tier of LTE phones, by throughput (``kind: lte-throughput``);
    a tier not named is charged no radio energy."""

    idle: bool = False
    radios: dict[Tier, Radio] = Field(default_factory=dict)
