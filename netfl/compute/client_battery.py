"""Clients' batteries at run time: charge, charger and the policy that turns charge into
availability (docs/models/energy.md, "Client batteries").

Each client's battery holds a charge between its floor and its capacity. It powers the device's
idle draw always, its active power on top while a job runs (from the job's call until it ends,
as a satellite's), and its radio: each hop the client sends or receives on takes the radio's
transmit or receive power times the hop's airtime, drawn when the hop ends. While plugged in,
the charger's power comes in (``battery_step``'s efficiencies and clamps apply).

Between two changes of load or charger the powers are constant, so the charge moves linearly
and the moment it crosses a threshold is computed (``time_to_charge_s``), not searched for on a
grid. The policy decides availability:

* ``ignore``: always available; the charge is tracked and reported, an unmet load too;
* ``charging``: available only while plugged in;
* ``threshold``: a client goes down when its charge falls to ``min_charge`` of the capacity and
  comes back at ``resume_charge``; a job it had started is void (as for any dropout).

A policy's verdict is one reason a client may be down; the fleet's availability process is the
other (a client is up where neither holds it down).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import simpy

from netfl.compute.energy import (
    BatterySpec,
    FixedRadio,
    LteUePower,
    battery_step,
    draw_at_once,
    time_to_charge_s,
)
from netfl.compute.interval_trace import read_client_intervals
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import HopEnd, TraceBus

WH = 3600.0  # joules per watt-hour


@dataclass
class ClientBatteryState:
    """One client's battery: charge (Wh) at time ``t``, its loads and charger, and what the
    policy did."""

    charge_wh: float
    initial_wh: float
    idle_w: float
    active_w: float
    t: float = 0.0
    jobs: int = 0
    plugged: bool = False
    allowed: bool = True
    lowest_wh: float = math.inf
    unmet_wh: float = 0.0
    radio_wh: float = 0.0
    policy_drops: int = 0
    down_since: float | None = None
    down_s: float = 0.0
    plugged_since: float | None = None
    plugged_s: float = 0.0
    version: int = 0  # the threshold timer in force (older ones are stale)


class ClientBatteries:
    """The batteries of ``clients``. ``power``: each client's (active W, idle W); ``radio``:
    the clients' radio (``netfl.compute.energy.FixedRadio`` or ``LteUePower``), or None;
    ``set_allowed(client, allowed)``: how the policy's verdict reaches the fleet's
    availability."""

    def __init__(self, env: simpy.Environment, spec, clients: list[str],
                 power: dict[str, tuple[float, float]], radio: FixedRadio | LteUePower | None,
                 streams: RandomStreams, trace: TraceBus,
                 set_allowed: Callable[[str, bool], None]):
        self.env, self.spec, self.clients = env, spec, clients
        self.radio, self.set_allowed = radio, set_allowed
        self.battery = BatterySpec(spec.capacity / WH, spec.max_depth_of_discharge,
                                   spec.eta_charge, spec.eta_discharge)
        low, high = spec.initial if isinstance(spec.initial, tuple) else (spec.initial,) * 2
        rng = streams.get("devices-battery")
        fractions = rng.uniform(low, high, size=len(clients)) if high > low \
            else np.full(len(clients), low)
        self.states = {}
        for client, fraction in zip(clients, fractions, strict=True):
            start = self.battery.capacity_wh * float(fraction)
            active, idle = power[client]
            self.states[client] = ClientBatteryState(start, start, idle, active, lowest_wh=start)
        self._streams = streams
        self.charger_w = spec.charging.power if spec.charging is not None else 0.0
        self._plugged_intervals = (read_charging_trace(spec.charging.path, len(clients))
                                   if getattr(spec.charging, "kind", None) == "trace" else {})
        if radio is not None:
            trace.subscribe(self._on_hop, HopEnd)

    def __contains__(self, node: str) -> bool:
        return node in self.states

    # ---------------------------------------------------------------- physics
    def _load_w(self, state: ClientBatteryState) -> float:
        return state.idle_w + (state.active_w - state.idle_w) * (state.jobs > 0)

    def _source_w(self, state: ClientBatteryState) -> float:
        return self.charger_w if state.plugged else 0.0

    def _advance(self, state: ClientBatteryState) -> None:
        """Bring ``state`` to now at the constant powers since ``state.t``."""
        dt = self.env.now - state.t
        if dt > 0:
            step = battery_step(self.battery, state.charge_wh, self._source_w(state),
                                self._load_w(state), dt)
            state.charge_wh, state.unmet_wh = step.charge_wh, state.unmet_wh + step.unmet_wh
            state.lowest_wh = min(state.lowest_wh, state.charge_wh)
        state.t = self.env.now

    def charge_wh(self, node: str) -> float:
        """The client's charge (Wh) now."""
        state = self.states[node]
        self._advance(state)
        return state.charge_wh

    def _draw_wh(self, state: ClientBatteryState, wh: float) -> None:
        """Take ``wh`` at once (a hop's radio energy), down to the floor; the rest is unmet."""
        self._advance(state)
        state.charge_wh, unmet = draw_at_once(self.battery, state.charge_wh, wh)
        state.unmet_wh += unmet
        state.lowest_wh = min(state.lowest_wh, state.charge_wh)

    # ---------------------------------------------------------------- changes
    def _changed(self, node: str) -> None:
        """Loads or charger changed (the state is already advanced): judge the policy now and
        set the timer for the next threshold crossing."""
        state = self.states[node]
        self._judge(node, state)
        state.version += 1
        policy = self.spec.policy
        if policy.kind != "threshold":
            return
        target = (policy.min_charge if state.allowed else policy.resume_charge)
        wait = time_to_charge_s(self.battery, state.charge_wh,
                                target * self.battery.capacity_wh, self._source_w(state),
                                self._load_w(state))
        if math.isfinite(wait):
            self.env.process(self._crossing(node, state.version, wait))

    def _crossing(self, node: str, version: int, wait: float):
        yield self.env.timeout(wait)
        state = self.states[node]
        if state.version == version:
            self._advance(state)
            # the charge is at the threshold up to rounding: judge it as there
            target = (self.spec.policy.min_charge if state.allowed
                      else self.spec.policy.resume_charge) * self.battery.capacity_wh
            if abs(state.charge_wh - target) <= 1e-9 * self.battery.capacity_wh:
                state.charge_wh = target
            self._changed(node)

    def _judge(self, node: str, state: ClientBatteryState) -> None:
        policy = self.spec.policy
        allowed = state.allowed
        if policy.kind == "charging":
            allowed = state.plugged
        elif policy.kind == "threshold":
            fraction = state.charge_wh / self.battery.capacity_wh
            allowed = (fraction > policy.min_charge if state.allowed
                       else fraction >= policy.resume_charge)
        if allowed == state.allowed:
            return
        state.allowed = allowed
        if allowed:
            state.down_s += self.env.now - state.down_since
            state.down_since = None
        else:
            state.policy_drops += 1
            state.down_since = self.env.now
        self.set_allowed(node, allowed)

    def run(self, node: str, duration_s: float, slots):
        """A job on ``node``: its active power from the call until it ends."""
        state = self.states[node]
        self._advance(state)
        state.jobs += 1
        self._changed(node)
        try:
            yield from slots.run(duration_s)
        finally:
            self._advance(state)
            state.jobs -= 1
            self._changed(node)

    def _on_hop(self, r: HopEnd) -> None:
        airtime_s = r.time_s - r.start_s
        for node, joules in ((r.u, self.radio.tx_j), (r.v, self.radio.rx_j)):
            state = self.states.get(node)
            if state is not None and airtime_s > 0:
                wh = joules(airtime_s, r.wire_bytes) / WH
                state.radio_wh += wh
                self._draw_wh(state, wh)
                self._changed(node)

    def _plug(self, node: str, plugged: bool, judge: bool = True) -> None:
        state = self.states[node]
        self._advance(state)
        if plugged == state.plugged:
            return
        state.plugged = plugged
        if plugged:
            state.plugged_since = self.env.now
        else:
            state.plugged_s += self.env.now - state.plugged_since
            state.plugged_since = None
        if judge:
            self._changed(node)

    def start(self) -> None:
        """Plug in the clients that start plugged in, judge every client at time 0, and start
        the chargers' plugging processes."""
        charging = self.spec.charging
        for index, node in enumerate(self.clients):
            if getattr(charging, "kind", None) == "random":
                rng = self._streams.derive("devices-charging", index)
                share = charging.mean_plugged / (charging.mean_plugged + charging.mean_unplugged)
                self._plug(node, bool(rng.random() < share), judge=False)
                self.env.process(self._random_plugging(node, rng))
            elif index in self._plugged_intervals:
                intervals = self._plugged_intervals[index]
                self._plug(node, intervals[0][0] == 0.0, judge=False)
                self.env.process(self._scheduled_plugging(node, intervals))
            self._changed(node)

    def _random_plugging(self, node: str, rng: np.random.Generator):
        """Exponential unplugged and plugged periods from the process's steady state (start()
        drew the first state: plugged with probability mean_plugged / (mean_plugged +
        mean_unplugged)); the first period's rest is again exponential (memoryless)."""
        charging = self.spec.charging
        while True:
            plugged = self.states[node].plugged
            yield self.env.timeout(rng.exponential(
                charging.mean_plugged if plugged else charging.mean_unplugged))
            self._plug(node, not plugged)

    def _scheduled_plugging(self, node: str, intervals: list[tuple[float, float]]):
        for plug_s, unplug_s in intervals:
            yield self.env.timeout(max(plug_s - self.env.now, 0.0))
            self._plug(node, True)
            yield self.env.timeout(unplug_s - self.env.now)
            self._plug(node, False)

    # --------------------------------------------------------------- results
    def _close(self) -> None:
        for state in self.states.values():
            self._advance(state)
            if state.plugged_since is not None:
                state.plugged_s += self.env.now - state.plugged_since
                state.plugged_since = self.env.now
            if state.down_since is not None:
                state.down_s += self.env.now - state.down_since
                state.down_since = self.env.now

    def summary(self) -> dict:
        """summary.json's ``client_battery``: the policy, drops it made and the time clients
        spent down for it, the lowest charge of any client, the mean final charge, the share
        of time plugged in, and the energy the batteries could not give."""
        self._close()
        capacity = self.battery.capacity_wh
        lowest_node = min(self.states, key=lambda n: self.states[n].lowest_wh)
        span = max(self.env.now, 1e-12)
        return {"client_battery": {
            "policy": self.spec.policy.kind,
            "policy_drops": sum(s.policy_drops for s in self.states.values()),
            "policy_down_s": sum(s.down_s for s in self.states.values()),
            "lowest_charge": self.states[lowest_node].lowest_wh / capacity,
            "lowest_charge_client": lowest_node,
            "final_charge_mean": float(np.mean([s.charge_wh for s in self.states.values()])
                                       / capacity),
            "plugged_fraction_mean": float(np.mean([s.plugged_s for s in self.states.values()])
                                           / span),
            "unmet_wh": sum(s.unmet_wh for s in self.states.values()),
        }}

    def table(self) -> list[dict]:
        """battery.csv: per client its initial, lowest and final charge (fractions of the
        capacity), radio Wh, seconds plugged in, the policy's drops and seconds down, unmet Wh."""
        self._close()
        capacity = self.battery.capacity_wh
        return [{"client": n, "initial_charge": s.initial_wh / capacity,
                 "lowest_charge": s.lowest_wh / capacity, "final_charge": s.charge_wh / capacity,
                 "radio_wh": s.radio_wh, "plugged_s": s.plugged_s,
                 "policy_drops": s.policy_drops, "policy_down_s": s.down_s,
                 "unmet_wh": s.unmet_wh} for n, s in self.states.items()]


def read_charging_trace(path: Path, n_clients: int) -> dict[int, list[tuple[float, float]]]:
    """A ``client,plug_s,unplug_s`` CSV as each client's plugged-in intervals."""
    return read_client_intervals(path, n_clients, "devices.clients.battery.charging.path",
                                 "plug_s", "unplug_s")
