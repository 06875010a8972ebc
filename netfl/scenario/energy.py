"""The ``energy:`` section: what a run charges in joules (docs/models/energy.md).

Absent (the default), a run counts no energy and its results are those of a run without this
section. Present, every compute job is charged its device's active power (``devices.<tier>.power``,
or the preset's), idle time its idle power where ``idle`` is true, and every hop of a transfer
that touches a client (its access hop: a cell, a radio link, a ground-to-satellite link) the
radio power of each end's tier given under ``radios`` while the hop's bits are on the air.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netfl.scenario.types import Section, Watts

Tier = Literal["clients", "edge", "cloud"]


class RadioPower(Section):
    """A radio's electrical draw while it transmits (``tx``) and receives (``rx``)."""

    tx: Watts
    rx: Watts = 0.0


class EnergySpec(Section):
    """Energy accounting: ``idle`` charges each device's idle power between its jobs over the
    whole run; ``radios`` the transmit and receive power of each tier's radio on access hops
    (a tier not named is charged no radio energy)."""

    idle: bool = False
    radios: dict[Tier, RadioPower] = Field(default_factory=dict)
