"""Satellites' power systems at run time: sunlight, array, battery, bus and on-board jobs
(docs/models/energy.md, "Satellite power").

Each satellite's sunlight is computed once, on the ``step`` grid along its SGP4 orbit, up to the
contact plan's horizon (netfl.world.eclipses); its battery is integrated lazily, step by step,
with the array's output times the sunlit fraction coming in and the bus load plus its running
on-board jobs going out (netfl.compute.energy.battery_step); where the scenario gives the edge
tier a radio (``energy.radios.edge``), each hop between a client and the satellite takes its
radio energy from the battery as the hop ends. Before an on-board job the policy
decides: ``defer`` waits until the charge, with the bus load alone, reaches ``min_charge`` of the
capacity (the wait is found by integrating ahead); ``ignore`` runs at once. A job's load counts
from its start until it ends (queueing for the on-board computer included).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.compute.energy import BatterySpec, battery_step, draw_at_once
from netfl.sim.trace import HopEnd, TraceBus
from netfl.world.eclipses import sunlight_grid

WH = 3600.0  # joules per watt-hour


@dataclass
class BatteryState:
    """One satellite: its sunlight row, charge (Wh) at time ``t``, running job loads (W)."""

    light: np.ndarray
    charge_wh: float
    t: float = 0.0
    job_w: float = 0.0
    lowest_wh: float = math.inf
    unmet_wh: float = 0.0
    deferrals: int = 0
    deferred_s: float = 0.0
    radio_wh: float = 0.0


class SatellitePowerSystem:
    """The power systems of ``sats`` (names) with SGP4 records ``satrecs``."""

    def __init__(self, env: simpy.Environment, spec, sats: list[str], satrecs, start,
                 horizon_s: float, job_w: float):
        self.env, self.spec, self.job_w = env, spec, job_w
        self.battery = BatterySpec(spec.battery.capacity / WH, spec.battery.max_depth_of_discharge,
                                   spec.battery.eta_charge, spec.battery.eta_discharge)
        self.step = spec.step
        self.grid = np.arange(0.0, horizon_s + spec.step, spec.step)
        light = sunlight_grid(satrecs, start, self.grid, spec.shadow)
        start_wh = self.battery.capacity_wh * spec.battery.initial
        self.states = {s: BatteryState(light[k], start_wh, lowest_wh=start_wh)
                       for k, s in enumerate(sats)}

    def __contains__(self, node: str) -> bool:
        return node in self.states

    # ---------------------------------------------------------------- physics
    def _source_w(self, state: BatteryState, t: float) -> float:
        i = min(int(t // self.step), len(self.grid) - 1)
        return self.spec.array * float(state.light[i])

    def _integrate(self, state: BatteryState, until: float, job_w: float, record: bool
                   ) -> tuple[float, float, float]:
        """(charge, lowest, unmet) from ``state.t`` to ``until`` with ``job_w`` of jobs, step
        by step (each step of the grid at its own sunlight); ``record``: write into ``state``."""
        charge, t, lowest, unmet = state.charge_wh, state.t, state.lowest_wh, 0.0
        load = self.spec.bus + job_w
        while t < until - 1e-12:
            end = min((math.floor(t / self.step + 1e-9) + 1) * self.step, until)
            result = battery_step(self.battery, charge, self._source_w(state, t), load, end - t)
            charge, unmet = result.charge_wh, unmet + result.unmet_wh
            lowest = min(lowest, charge)
            t = end
        if record:
            state.charge_wh, state.t, state.lowest_wh = charge, until, lowest
            state.unmet_wh += unmet
        return charge, lowest, unmet

    def charge_wh(self, node: str, t: float | None = None) -> float:
        """The battery's charge (Wh) at ``t`` (default now), with what is running."""
        state = self.states[node]
        self._integrate(state, self.env.now if t is None else t, state.job_w, record=True)
        return state.charge_wh

    def wait_for_charge_s(self, node: str) -> float:
        """Seconds from now until the charge reaches ``min_charge`` x capacity with the bus
        load alone (0 if it is there; the remaining horizon if it never gets there)."""
        state = self.states[node]
        self.charge_wh(node)
        target = self.spec.policy.min_charge * self.battery.capacity_wh
        if state.charge_wh >= target - 1e-9:
            return 0.0
        probe = BatteryState(state.light, state.charge_wh, state.t)
        t = state.t
        while t < self.grid[-1]:
            end = (math.floor(t / self.step + 1e-9) + 1) * self.step
            probe.charge_wh, _, _ = self._integrate(probe, end, state.job_w, record=False)
            probe.t = end
            if probe.charge_wh >= target - 1e-9:
                # the crossing inside the step, by the step's constant net power
                return max(end - self.env.now, 0.0)
            t = end
        return max(self.grid[-1] - self.env.now, 0.0)

    def draw_radio(self, node: str, joules: float) -> None:
        """Take a hop's radio energy from ``node``'s battery at once (down to its floor; the
        rest is unmet), as the hop ends."""
        state = self.states[node]
        self.charge_wh(node)
        wh = joules / WH
        state.charge_wh, unmet = draw_at_once(self.battery, state.charge_wh, wh)
        state.unmet_wh += unmet
        state.radio_wh += wh
        state.lowest_wh = min(state.lowest_wh, state.charge_wh)

    def listen_to_radios(self, trace: TraceBus, clients: set[str], radio) -> None:
        """Draw ``radio``'s energy (``netfl.compute.energy.FixedRadio`` or ``LteUePower``) for
        every hop between a client and a satellite, as the energy meter charges it: the
        satellite's receive energy on an uplink hop, its transmit energy on a downlink one."""

        def on_hop(r: HopEnd) -> None:
            airtime_s = r.time_s - r.start_s
            if airtime_s <= 0:
                return
            if r.v in self.states and r.u in clients:
                self.draw_radio(r.v, radio.rx_j(airtime_s, r.wire_bytes))
            elif r.u in self.states and r.v in clients:
                self.draw_radio(r.u, radio.tx_j(airtime_s, r.wire_bytes))

        trace.subscribe(on_hop, HopEnd)

    # ------------------------------------------------------------------- jobs
    def run(self, node: str, duration_s: float, slots) -> Generator:
        """An on-board job under the policy: (defer: wait for charge), then draw ``job_w``
        while it queues and runs on ``slots``."""
        state = self.states[node]
        if self.spec.policy.kind == "defer":
            wait = self.wait_for_charge_s(node)
            if wait > 0:
                state.deferrals += 1
                began = self.env.now
                try:
                    yield self.env.timeout(wait)
                finally:  # interrupted (the algorithm gave up on it): the time it did wait
                    state.deferred_s += self.env.now - began
        self.charge_wh(node)
        state.job_w += self.job_w
        try:
            yield from slots.run(duration_s)
        finally:
            self.charge_wh(node)
            state.job_w -= self.job_w

    # --------------------------------------------------------------- results
    def _eclipse_fraction(self, state: BatteryState) -> float:
        """The shadow's share of the run so far (the grid points up to now)."""
        upto = min(int(self.env.now // self.step) + 1, len(state.light))
        return float(1.0 - state.light[:upto].mean())

    def summary(self) -> dict:
        """summary.json's ``satellite_power``: eclipse fractions over the run, deferrals and the
        lowest charge over all satellites."""
        for node in self.states:
            self.charge_wh(node)
        fractions = [self._eclipse_fraction(s) for s in self.states.values()]
        lowest_node = min(self.states, key=lambda n: self.states[n].lowest_wh)
        return {"satellite_power": {
            "eclipse_fraction": {"min": min(fractions), "mean": float(np.mean(fractions)),
                                 "max": max(fractions)},
            "deferrals": sum(s.deferrals for s in self.states.values()),
            "deferred_s": sum(s.deferred_s for s in self.states.values()),
            "lowest_charge": self.states[lowest_node].lowest_wh / self.battery.capacity_wh,
            "lowest_charge_satellite": lowest_node,
            "unmet_wh": sum(s.unmet_wh for s in self.states.values()),
            "policy": self.spec.policy.kind,
        }}

    def table(self) -> list[dict]:
        """satellite_power.csv: per satellite its eclipse fraction, deferrals, deferred seconds,
        radio Wh (where the energy section gives the edge tier a radio), lowest and final charge
        (fractions of the capacity), unmet Wh."""
        capacity = self.battery.capacity_wh
        return [{"satellite": n, "eclipse_fraction": self._eclipse_fraction(s),
                 "deferrals": s.deferrals, "deferred_s": s.deferred_s, "radio_wh": s.radio_wh,
                 "lowest_charge": s.lowest_wh / capacity, "final_charge": s.charge_wh / capacity,
                 "unmet_wh": s.unmet_wh} for n, s in self.states.items()]
