"""Energy of activities and a battery's state of charge: pure functions (docs/models/energy.md).

Every activity is charged the electrical power its device or radio draws while it runs, times
its simulated duration (joules = watts x seconds)::

    compute      E = P_active * t_job                 (training, aggregation, group operations)
    idle         E = P_idle * (t_span - t_busy)       (where idle accounting is asked for)
    radio        E = P_tx * t_air (sender) + P_rx * t_air (receiver)
    LTE (UE)     P = alpha_up * r_up + alpha_down * r_down + beta   (Huang et al., MobiSys 2012:
                 a throughput-based model; rates in Mbit/s, powers in W; energy.radios'
                 ``kind: lte-throughput``)

A battery integrates power over steps of the time grid: charging stores ``eta_charge`` of what
flows in, discharging takes ``1 / eta_discharge`` of what flows out, and the state of charge stays
within [capacity x (1 - max_depth_of_discharge), capacity]; what the array cannot store once the
battery is full is shed, and a load the battery cannot supply at its floor is reported, not
drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def activity_energy_j(power_w: float, duration_s: float) -> float:
    """Joules drawn at ``power_w`` for ``duration_s``."""
    if power_w < 0 or duration_s < 0:
        raise ValueError(f"power ({power_w} W) and duration ({duration_s} s) must be >= 0")
    return power_w * duration_s


def idle_energy_j(idle_w: float, span_s: float, busy_s: float) -> float:
    """Joules drawn at ``idle_w`` over the part of ``span_s`` not busy (``busy_s``)."""
    if busy_s > span_s * (1 + 1e-12) + 1e-9:
        raise ValueError(f"busy time {busy_s} s exceeds the span {span_s} s")
    return idle_w * max(span_s - busy_s, 0.0)


def radio_energy_j(airtime_s: float, tx_w: float, rx_w: float) -> tuple[float, float]:
    """(sender's, receiver's) joules for one transmission of ``airtime_s``."""
    return activity_energy_j(tx_w, airtime_s), activity_energy_j(rx_w, airtime_s)


@dataclass(frozen=True)
class FixedRadio:
    """A radio drawing ``tx_w`` while it sends and ``rx_w`` while it receives."""

    tx_w: float
    rx_w: float

    def tx_j(self, airtime_s: float, nbytes: float) -> float:
        """Joules of sending ``nbytes`` over ``airtime_s``."""
        return activity_energy_j(self.tx_w, airtime_s)

    def rx_j(self, airtime_s: float, nbytes: float) -> float:
        """Joules of receiving ``nbytes`` over ``airtime_s``."""
        return activity_energy_j(self.rx_w, airtime_s)


@dataclass(frozen=True)
class LteUePower:
    """Huang et al.'s linear LTE UE power model, in W per Mbit/s and W: the draw at an uplink
    rate r_up and a downlink rate r_down is alpha_up r_up + alpha_down r_down + beta."""

    alpha_up_w_per_mbps: float
    alpha_down_w_per_mbps: float
    beta_w: float

    def power_w(self, up_mbps: float, down_mbps: float) -> float:
        return (self.alpha_up_w_per_mbps * up_mbps + self.alpha_down_w_per_mbps * down_mbps
                + self.beta_w)

    def transfer_energy_j(self, nbytes: float, duration_s: float, uplink: bool) -> float:
        """Joules of moving ``nbytes`` in ``duration_s`` one way (the throughput the model
        takes is the transfer's mean rate): alpha x 8 nbytes / 1e6 + beta x duration."""
        if duration_s <= 0:
            return 0.0
        mbps = nbytes * 8 / duration_s / 1e6
        up, down = (mbps, 0.0) if uplink else (0.0, mbps)
        return self.power_w(up, down) * duration_s

    def tx_j(self, airtime_s: float, nbytes: float) -> float:
        return self.transfer_energy_j(nbytes, airtime_s, uplink=True)

    def rx_j(self, airtime_s: float, nbytes: float) -> float:
        return self.transfer_energy_j(nbytes, airtime_s, uplink=False)


def radio_model(spec) -> FixedRadio | LteUePower:
    """The radio of an ``energy.radios`` entry: fixed powers, or LTE's by throughput."""
    if getattr(spec, "kind", None) == "lte-throughput":
        return LteUePower(spec.alpha_up_mw_per_mbps / 1e3, spec.alpha_down_mw_per_mbps / 1e3,
                          spec.beta)
    return FixedRadio(spec.tx, spec.rx)


@dataclass(frozen=True)
class BatterySpec:
    """capacity_wh; max_depth_of_discharge in (0, 1]; eta_charge, eta_discharge in (0, 1]."""

    capacity_wh: float
    max_depth_of_discharge: float = 1.0
    eta_charge: float = 1.0
    eta_discharge: float = 1.0

    def __post_init__(self):
        if self.capacity_wh <= 0:
            raise ValueError(f"battery capacity_wh must be > 0, not {self.capacity_wh}")
        for name in ("max_depth_of_discharge", "eta_charge", "eta_discharge"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"battery {name} must be in (0, 1], not {value}")

    @property
    def floor_wh(self) -> float:
        """The lowest charge allowed: capacity x (1 - max depth of discharge)."""
        return self.capacity_wh * (1.0 - self.max_depth_of_discharge)


@dataclass(frozen=True)
class BatteryStep:
    charge_wh: float  # after the step
    shed_wh: float  # what the source offered that the full battery could not take
    unmet_wh: float  # what the load asked for that the battery at its floor could not give


def battery_step(spec: BatterySpec, charge_wh: float, source_w: float, load_w: float,
                 dt_s: float) -> BatteryStep:
    """One step of ``dt_s`` seconds with ``source_w`` in (solar) and ``load_w`` out: the net
    power charges (x eta_charge) or discharges (/ eta_discharge) the battery, clamped to
    [floor, capacity]."""
    if dt_s < 0 or source_w < 0 or load_w < 0:
        raise ValueError("dt, source and load must be >= 0")
    net_wh = (source_w - load_w) * dt_s / 3600.0
    if net_wh >= 0:
        stored = net_wh * spec.eta_charge
        room = spec.capacity_wh - charge_wh
        taken = min(stored, room)
        return BatteryStep(charge_wh + taken, (stored - taken) / spec.eta_charge, 0.0)
    drawn = -net_wh / spec.eta_discharge
    available = max(charge_wh - spec.floor_wh, 0.0)
    given = min(drawn, available)
    return BatteryStep(charge_wh - given, 0.0, (drawn - given) * spec.eta_discharge)


def draw_at_once(spec: BatterySpec, charge_wh: float, wh: float) -> tuple[float, float]:
    """(charge after, unmet Wh) of taking ``wh`` from the battery in one go (a hop's radio
    energy): ``wh / eta_discharge`` leaves it, down to the floor; what the floor holds back is
    unmet."""
    if wh < 0:
        raise ValueError(f"energy drawn must be >= 0, not {wh}")
    needed = wh / spec.eta_discharge
    available = max(charge_wh - spec.floor_wh, 0.0)
    if needed <= available:
        return charge_wh - needed, 0.0
    return charge_wh - available, wh - available * spec.eta_discharge


def time_to_charge_s(spec: BatterySpec, charge_wh: float, target_wh: float, source_w: float,
                     load_w: float) -> float:
    """Seconds until the charge, at a constant ``source_w`` in and ``load_w`` out, reaches
    ``target_wh`` (0 where it is there; infinity where it moves away from it, stands still, or
    the target lies beyond the clamp it would stop at: above the capacity, below the floor).
    The inverse of :func:`battery_step` on one segment."""
    gap_wh = target_wh - charge_wh
    if abs(gap_wh) <= 1e-12 * spec.capacity_wh:
        return 0.0
    if gap_wh > 0:
        if source_w <= load_w or target_wh > spec.capacity_wh:
            return math.inf
        return gap_wh * 3600.0 / ((source_w - load_w) * spec.eta_charge)
    if load_w <= source_w or target_wh < spec.floor_wh:
        return math.inf
    return -gap_wh * 3600.0 * spec.eta_discharge / (load_w - source_w)


def battery_trajectory(spec: BatterySpec, start_wh: float, source_w: np.ndarray,
                       load_w: np.ndarray, dt_s: float) -> np.ndarray:
    """The charge (Wh) after each step of equal ``dt_s`` (a loop: each step depends on the
    clamp of the one before)."""
    charge = start_wh
    out = np.empty(len(source_w))
    for i, (source, load) in enumerate(zip(source_w, load_w, strict=True)):
        charge = battery_step(spec, charge, float(source), float(load), dt_s).charge_wh
        out[i] = charge
    return out
