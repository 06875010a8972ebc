"""Parts of the ``devices`` section: a device's power figures and a device trace."""

from __future__ import annotations

from netfl.scenario.types import ExistingFile, Section, Watts


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
