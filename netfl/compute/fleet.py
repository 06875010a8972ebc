"""The compute side of a running simulation: every node's device, job queue and availability.

* Each node has a profile by tier (clients, edge servers, cloud), a straggler slowdown (drawn once
  per run) and job slots (``jobs.py``, SimPy's Resource to the bit): ``accelerators`` jobs at
  once on servers, one on a client; further jobs queue in arrival order.
* Clients may drop out: random on/off periods or a trace file. A dropped client's links go down
  (its transfers fail) and any training it started before dropping is void.
* Clients may run on batteries (``client_battery.py``) whose policy is a second reason to be
  down: a client is up where neither its availability nor its battery holds it down.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import simpy

from netfl.compute.client_battery import ClientBatteries
from netfl.compute.device import DeviceProfile, no_power_figure, resolve_profile
from netfl.compute.device_trace import assign_devices, outages_from_availability, read_device_trace
from netfl.compute.energy import radio_model
from netfl.compute.interval_trace import read_client_intervals
from netfl.compute.jobs import JobSlots
from netfl.compute.satellite_power import SatellitePowerSystem
from netfl.compute.timing import aggregation_time_s, jitter_factor, pick_stragglers, train_time_s
from netfl.errors import ScenarioError, ScenarioProblem, SimulationError
from netfl.network.transfer import Network
from netfl.scenario.energy import EnergySpec
from netfl.scenario.sections import Devices, DeviceSpec, RandomOnOff, TraceAvailability
from netfl.sim.clock import RandomStreams
from netfl.sim.onoff import random_onoff, scheduled_onoff
from netfl.sim.trace import Dropout, TraceBus
from netfl.world.base import CLIENT, CLOUD, EDGE, World


class Fleet:
    """Devices of every node in ``world``; built from the scenario's ``devices`` section."""

    def __init__(self, env: simpy.Environment, world: World, spec: Devices,
                 streams: RandomStreams, trace: TraceBus, network: Network,
                 energy: EnergySpec | None = None):
        """``energy``: the scenario's energy section, whose client radio the clients'
        batteries also power, and whose edge radio the satellites' batteries."""
        self.env, self.world, self.spec, self.trace, self.network = env, world, spec, trace, network
        self._streams = streams
        self._node_index = {node: i for i, node in enumerate(world.graph.nodes)}
        self._jitter_rngs: dict[str, object] = {}
        self._tier_spec: dict[str, DeviceSpec] = {CLIENT: spec.clients, EDGE: spec.edge,
                                                  CLOUD: spec.cloud}
        self.profiles = {tier: resolve_profile(s) for tier, s in self._tier_spec.items()}
        self._slowdown: dict[str, float] = {}
        for tier, nodes in ((CLIENT, world.clients), (EDGE, world.edge_servers),
                            (CLOUD, [world.cloud] if world.cloud else [])):
            stragglers = self._tier_spec[tier].stragglers
            if stragglers and nodes:
                rng = streams.derive("devices-stragglers", ("client", "edge", "cloud").index(tier))
                mask = pick_stragglers(rng, len(nodes), stragglers.fraction)
                for node, slow in zip(nodes, mask, strict=True):
                    if slow:
                        self._slowdown[node] = stragglers.slowdown
        self._slots: dict[str, JobSlots] = {}
        self._up: dict[str, bool] = defaultdict(lambda: True)
        self._held_down: dict[str, set[str]] = defaultdict(set)  # node -> reasons it is down
        self._last_down_s: dict[str, float] = {}
        availability = spec.clients.availability
        self._outages = (read_outage_trace(availability.path, len(world.clients))
                         if isinstance(availability, TraceAvailability) else {})
        self.satellite_power = _satellite_power(env, world, self.profiles[EDGE])
        satellite_radio = energy.radios.get("edge") if energy is not None else None
        if self.satellite_power is not None and satellite_radio is not None:
            self.satellite_power.listen_to_radios(trace, set(world.clients),
                                                  radio_model(satellite_radio))
        self._node_flops: dict[str, float] = {}
        self.node_power: dict[str, tuple[float | None, float | None]] = {}
        self.client_devices: list[str] = []
        if spec.clients.trace is not None:
            self._draw_devices(spec.clients.trace, streams)
        radio = energy.radios.get("clients") if energy is not None else None
        self.batteries = (self._batteries(spec.clients.battery, radio and radio_model(radio))
                          if spec.clients.battery is not None else None)
        # links.closed_form: whether jobs run exactly their train time (no availability
        # changes, batteries or power policy)
        self._fixed_devices = (self.satellite_power is None and self.batteries is None
                               and not isinstance(availability, RandomOnOff))
        self._with_outages = {world.clients[index] for index in self._outages}

    # ----------------------------------------------------------------------- profiles

    def profile(self, node: str) -> DeviceProfile:
        return self.profiles[self.world.tier(node)]

    def _draw_devices(self, trace_spec, streams: RandomStreams) -> None:
        """Give each client a device of the trace (stream ``device-trace``): its FLOP/s, its
        power where the trace has it, and its availability intervals as outages."""
        trace = read_device_trace(trace_spec.path, trace_spec.availability)
        rows = assign_devices(len(self.world.clients), len(trace.devices),
                              streams.get("device-trace"), trace_spec.with_replacement)
        for index, (client, row) in enumerate(zip(self.world.clients, rows, strict=True)):
            device = trace.devices.iloc[int(row)]
            self.client_devices.append(str(device["device"]))
            self._node_flops[client] = float(device["flops"])
            active, idle = device["active_w"], device["idle_w"]
            self.node_power[client] = (None if math.isnan(active) else float(active),
                                       None if math.isnan(idle) else float(idle))
            if str(device["device"]) in trace.available:
                self._outages[index] = outages_from_availability(
                    trace.available[str(device["device"])])

    def _batteries(self, spec, radio) -> ClientBatteries:
        """The clients' batteries, each powering its device's own figures (a traced device's,
        else the tier's)."""
        profile, power = self.profiles[CLIENT], {}
        for client in self.world.clients:
            active, idle = self.node_power.get(client, (None, None))
            active = profile.active_w if active is None else active
            idle = (profile.idle_w if idle is None else idle) or 0.0
            if active is None:
                raise ScenarioError([no_power_figure(
                    "clients", self.spec.clients.preset,
                    "a battery powers the client's computing")])
            power[client] = (active, idle)
        return ClientBatteries(self.env, spec, list(self.world.clients), power, radio,
                               self._streams, self.trace,
                               lambda node, allowed: self._hold(node, "battery", not allowed))

    def flops(self, node: str) -> float:
        """The node's effective FLOP/s: its traced device's, or its tier's profile's."""
        return self._node_flops.get(node) or self.profile(node).flops

    def slowdown(self, node: str) -> float:
        """The node's straggler factor (1.0 for a normal node)."""
        return self._slowdown.get(node, 1.0)

    def train_time_s(self, node: str, train_flops_per_sample: float, samples: int) -> float:
        """Simulated seconds for ``node`` to train on ``samples`` samples of
        ``train_flops_per_sample`` FLOPs each.

        Jitter is drawn from the node's own stream (``devices-jitter``, keyed by node), so a
        node's k-th job gets the same factor whatever the other nodes did before it.
        """
        sigma = self._tier_spec[self.world.tier(node)].jitter
        jitter = 1.0
        if sigma > 0:
            if node not in self._jitter_rngs:
                self._jitter_rngs[node] = self._streams.derive("devices-jitter",
                                                               self._node_index[node])
            jitter = jitter_factor(self._jitter_rngs[node], sigma)
        return train_time_s(train_flops_per_sample, samples, self.flops(node),
                            self.slowdown(node), jitter)

    def aggregation_time_s(self, node: str, num_params: int, n_updates: int) -> float:
        return aggregation_time_s(num_params, n_updates, self.flops(node))

    def slots(self, node: str) -> JobSlots:
        """The node's job queue: ``accelerators`` slots on servers, one on a client."""
        slots = self._slots.get(node)
        if slots is None:
            spec = self._tier_spec[self.world.tier(node)]
            slots = self._slots[node] = JobSlots(self.env, getattr(spec, "accelerators", 1))
        return slots

    def closed_form_ready(self, node: str) -> bool:
        """Whether a job started on ``node`` now would run at once for exactly the time
        ``train_time_s`` gives, whatever happens meanwhile: no jitter, outages, availability
        process, battery or power policy, no job running or queued."""
        if (not self._fixed_devices or node in self._with_outages
                or not self._up.get(node, True)
                or self._tier_spec[self.world.tier(node)].jitter > 0):
            return False
        slots = self._slots.get(node)
        return slots is None or (slots.users == 0 and not slots.waiting)

    def _in_closed_form(self, node: str) -> bool:
        """Whether ``node`` is a client whose own link an exchange advanced in closed form
        holds (its device is then that exchange's too)."""
        if self.world.tier(node) != CLIENT:
            return False
        link = self.network.find_link(node, self.world.edge_of(node))
        return link is not None and link.reserved

    def run_job(self, node: str, duration_s: float):
        """Generator: queue for a slot on ``node``, then hold it for ``duration_s``; on a
        satellite with a power system, under its policy (netfl.compute.satellite_power)."""
        if self.network.reserved_count and self._in_closed_form(node):
            raise SimulationError(
                f"a job on {node} at {self.env.now:.6g} s, while an exchange advanced in closed "
                f"form (links.closed_form: true) holds its device: the algorithm uses that "
                f"client for two things at once; set links.closed_form: false to simulate it "
                f"event by event")
        if self.satellite_power is not None and node in self.satellite_power:
            return self.satellite_power.run(node, duration_s, self.slots(node))
        if self.batteries is not None and node in self.batteries:
            return self.batteries.run(node, duration_s, self.slots(node))
        return self.slots(node).run(duration_s)

    def power_summary(self) -> dict:
        """summary.json's ``satellite_power`` and ``client_battery``, where there are any."""
        out = {}
        for system in (self.satellite_power, self.batteries):
            if system is not None:
                out |= system.summary()
        return out

    def power_tables(self) -> list[tuple[str, list[dict]]]:
        """(file name, rows): satellite_power.csv, battery.csv, where there are any."""
        return [(name, system.table()) for name, system in
                (("satellite_power", self.satellite_power), ("battery", self.batteries))
                if system is not None]

    # --------------------------------------------------------------------- availability

    def dropped_since(self, node: str, since_s: float) -> bool:
        """Whether ``node`` is down now or went down at any time at or after ``since_s``."""
        return not self._up[node] or self._last_down_s.get(node, -1.0) >= since_s

    def set_up(self, node: str, up: bool) -> None:
        if self._up[node] == up:
            return
        self._up[node] = up
        if not up:
            self._last_down_s[node] = self.env.now
        self.network.set_node_state(node, up)
        self.trace.emit(Dropout(time_s=self.env.now, node=node, up=up))

    def _hold(self, node: str, reason: str, down: bool) -> None:
        """Hold ``node`` down for ``reason`` (availability, battery), or release that hold;
        it is up where nothing holds it."""
        held = self._held_down[node]
        if down:
            held.add(reason)
        else:
            held.discard(reason)
        self.set_up(node, not held)

    def start(self) -> None:
        """Start client availability processes (random on/off, or a trace) and batteries."""
        availability = self.spec.clients.availability
        if isinstance(availability, RandomOnOff):
            for index, client in enumerate(self.world.clients):
                rng = self._streams.derive("devices-availability", index)
                self.env.process(random_onoff(self.env, rng, availability.mean_up,
                                              availability.mean_down, self._setter(client)))
        for index, intervals in self._outages.items():
            client = self.world.clients[index]
            self.env.process(scheduled_onoff(self.env, intervals, self._setter(client)))
        if self.batteries is not None:
            self.batteries.start()

    def _setter(self, node: str):
        return lambda up: self._hold(node, "availability", not up)


def read_outage_trace(path: Path, n_clients: int) -> dict[int, list[tuple[float, float]]]:
    """Read a ``client,down_s,up_s`` CSV into sorted, checked outage intervals per client."""
    return read_client_intervals(path, n_clients, "devices.clients.availability.path",
                                 "down_s", "up_s")


def _satellite_power(env: simpy.Environment, world: World, edge: DeviceProfile):
    """The satellites' power systems where the LEO world has ``power:`` (None otherwise)."""
    power = getattr(getattr(world, "spec", None), "power", None)
    if power is None or not hasattr(world, "satellite_records"):
        return None
    if edge.active_w is None:
        raise ScenarioError([ScenarioProblem(
            "devices.edge.power", "world.power charges on-board jobs the on-board computer's "
            "power, and this device has no figure: give devices.edge.power.active",
            has_value=False)])
    sats = list(world.edge_servers)
    return SatellitePowerSystem(env, power, sats, world.satellite_records(sats),
                                world.spec.start, world.spec.horizon, edge.active_w)
