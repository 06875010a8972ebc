"""Parts of the ``devices`` section: a device's power figures, a device trace, a client's
battery."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from netfl.scenario.types import (
    Energy,
    ExistingFile,
    PositiveDuration,
    Probability,
    Section,
    Watts,
)


class DevicePower(Section):
    """Electrical power of a device: ``active`` while it computes (training, aggregation, group
    operations), ``idle`` between jobs (charged only where ``energy.idle`` asks for it)."""

    active: Watts
    idle: Watts | None = None


class DeviceTraceSpec(Section):
    """A population of measured devices, each client drawn one by seed (compute.md, "Device
    traces"): ``path``, a CSV or Parquet file ``device,flops[,active_w,idle_w]``; ``availability``,
    an optional one ``device,start_s,end_s`` of the intervals each device is available."""

    path: ExistingFile
    availability: ExistingFile | None = None
    with_replacement: bool = False


class RandomCharging(Section):
    """Each client is plugged in and out at random: exponential unplugged and plugged periods
    with these means (an alternating renewal process per client, started in its steady
    state), drawing ``power`` from its charger while plugged."""

    kind: Literal["random"]
    mean_unplugged: PositiveDuration
    mean_plugged: PositiveDuration
    power: Watts


class TraceCharging(Section):
    """A CSV file with header ``client,plug_s,unplug_s``: each row one period a client (by
    index) is plugged in, drawing ``power`` from its charger."""

    kind: Literal["trace"]
    path: ExistingFile
    power: Watts


Charging = Annotated[RandomCharging | TraceCharging, Field(discriminator="kind")]


class BatteryPolicy(Section):
    """When a client on a battery may take part (docs/models/energy.md, "Client batteries"):
    ``ignore``, always (the battery is tracked and reported only); ``charging``, only while
    plugged in; ``threshold``, until its charge falls to ``min_charge`` of the capacity, then
    not again until it is back at ``resume_charge`` (default ``min_charge`` + 0.05: without that
    margin a client at the threshold would flip at every job)."""

    kind: Literal["ignore", "charging", "threshold"] = "ignore"
    min_charge: Probability | None = None
    resume_charge: Probability | None = None

    @model_validator(mode="after")
    def _thresholds(self) -> BatteryPolicy:
        if self.kind != "threshold":
            if self.min_charge is not None or self.resume_charge is not None:
                raise ValueError(f"min_charge and resume_charge belong to the threshold "
                                 f"policy, not {self.kind!r}")
            return self
        if self.min_charge is None:
            raise ValueError("the threshold policy needs min_charge (a fraction of the "
                             "capacity, e.g. 0.3)")
        if self.resume_charge is None:
            self.resume_charge = min(self.min_charge + 0.05, 1.0)
        if not self.resume_charge > self.min_charge:
            raise ValueError(f"resume_charge ({self.resume_charge:g}) must be above "
                             f"min_charge ({self.min_charge:g})")
        return self


class ClientBattery(Section):
    """Every client's battery: ``capacity``; its charge at the start, a fraction of the
    capacity or a ``[low, high]`` range drawn uniformly per client by seed; the deepest
    discharge allowed and the charge and discharge efficiencies; a charger (``charging``,
    none by default); and the ``policy`` that turns the charge into availability. It powers
    the client's idle draw always, its active power while it computes, and its radio
    (``energy.radios.clients``) while it sends or receives."""

    capacity: Energy
    initial: Probability | tuple[Probability, Probability] = 1.0
    max_depth_of_discharge: Probability = 1.0
    eta_charge: Probability = 0.9
    eta_discharge: Probability = 1.0
    charging: Charging | None = None
    policy: BatteryPolicy = BatteryPolicy()

    @model_validator(mode="after")
    def _sane(self) -> ClientBattery:
        for name in ("max_depth_of_discharge", "eta_charge", "eta_discharge"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        floor = 1 - self.max_depth_of_discharge
        low, high = self.initial if isinstance(self.initial, tuple) else (self.initial,) * 2
        if low > high:
            raise ValueError(f"initial range [{low:g}, {high:g}] must have low <= high")
        if low < floor:
            raise ValueError(f"initial charge {low:g} is below the floor {floor:g} "
                             f"(1 - max_depth_of_discharge)")
        if self.policy.kind == "charging" and self.charging is None:
            raise ValueError("the charging policy needs charging: (random or trace)")
        if self.policy.kind == "threshold" and self.policy.min_charge <= floor:
            raise ValueError(f"min_charge ({self.policy.min_charge:g}) must be above the "
                             f"battery's floor ({floor:g}, 1 - max_depth_of_discharge): the "
                             f"charge never falls below the floor")
        return self
