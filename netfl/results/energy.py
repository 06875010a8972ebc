"""Energy of a run, charged where each activity happens (docs/models/energy.md).

``EnergyMeter`` listens to the trace: a training job (``TrainEnd``: the time it ran, cancelled
or not), an aggregation (``Aggregate``) and other device work (``Busy``: group operations, a
local solver's extra work) are charged the node's active power for their duration; every hop of a
transfer that touches a client (``HopEnd``: its bits on the air from ``start_s`` to ``time_s``)
the transmit power of the sender's tier and the receive power of the receiver's tier, where the
scenario's ``energy.radios`` names them; idle power, where asked for, over each node's time not
busy. It snapshots the cumulative energy at each evaluation (metrics.csv's ``energy_j``), at each
round's end (rounds.csv's ``energy_j``) and when the target is first reached
(``energy_to_target_j``).

Joules only: the meter changes no event and no random draw, so a run's other results are the
same with and without it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import pandas as pd

from netfl.compute.device import no_power_figure
from netfl.compute.energy import (
    FixedRadio,
    LteUePower,
    activity_energy_j,
    idle_energy_j,
    radio_model,
)
from netfl.errors import ScenarioError
from netfl.sim.trace import (
    Aggregate,
    Busy,
    Evaluation,
    HopEnd,
    RoundEnd,
    TargetReached,
    TraceBus,
    TrainEnd,
)

ACTIVITIES = ("compute", "aggregation", "group_operation", "radio_tx", "radio_rx", "idle")
TIER_OF_SECTION = {"clients": "client", "edge": "edge", "cloud": "cloud"}


class EnergyMeter:
    """Joules per node and activity. ``active_w``/``idle_w``: per tier (client, edge, cloud),
    None where unknown (a tier without an active figure that does work is an error, raised when
    the work happens); ``node_power``: a traced device's own figures, before its tier's;
    ``radios``: tier -> its radio (``netfl.compute.energy.FixedRadio`` or ``LteUePower``)."""

    def __init__(self, trace: TraceBus, tier_of: Callable[[str], str], clients: set[str],
                 active_w: dict[str, float | None], idle_w: dict[str, float | None],
                 radios: dict[str, FixedRadio | LteUePower], idle: bool, nodes: list[str],
                 node_power: dict[str, tuple[float | None, float | None]] | None = None):
        self.tier_of, self.clients = tier_of, clients
        self.node_power = node_power or {}  # a traced device's own (active, idle) W
        self.active_w, self.idle_w, self.radios, self.idle = active_w, idle_w, radios, idle
        self.nodes = nodes
        self.joules: dict[tuple[str, str], float] = defaultdict(float)
        self.busy_s: dict[str, float] = defaultdict(float)
        self.per_evaluation: list[float] = []
        self.per_round: dict[int, float] = {}
        self.to_target_j: float | None = None
        # running sums, so a snapshot costs O(1), not O(nodes): joules charged so far, the
        # idle power of every node, and each node's busy seconds weighted by its idle power
        self._charged_j = 0.0
        self._idle_w_total = sum(self._idle_power(n) or 0.0 for n in nodes) if idle else 0.0
        self._idle_busy_ws = 0.0
        trace.subscribe(self._on_train_end, TrainEnd)
        trace.subscribe(self._on_aggregate, Aggregate)
        trace.subscribe(self._on_busy, Busy)
        trace.subscribe(self._on_hop, HopEnd)
        trace.subscribe(self._on_evaluation, Evaluation)
        trace.subscribe(self._on_round_end, RoundEnd)
        trace.subscribe(self._on_target, TargetReached)

    # ------------------------------------------------------------------ charges
    def _active(self, node: str) -> float:
        tier = self.tier_of(node)
        power = self.node_power.get(node, (None, None))[0]
        if power is None:
            power = self.active_w.get(tier)
        if power is None:
            section = {v: k for k, v in TIER_OF_SECTION.items()}[tier]
            raise ValueError(f"energy: devices.{section}.power.active is not set and the "
                             f"device preset has no power figure (docs/models/energy.md)")
        return power

    def _charge(self, node: str, activity: str, joules: float) -> None:
        self.joules[(node, activity)] += joules
        self._charged_j += joules

    def _work(self, node: str, duration_s: float, activity: str) -> None:
        self._charge(node, activity, activity_energy_j(self._active(node), duration_s))
        self.busy_s[node] += duration_s
        if self.idle:
            self._idle_busy_ws += (self._idle_power(node) or 0.0) * duration_s

    def _on_train_end(self, r: TrainEnd) -> None:
        self._work(r.node, r.duration_s, "compute")

    def _on_aggregate(self, r: Aggregate) -> None:
        self._work(r.node, r.duration_s, "aggregation")

    def _on_busy(self, r: Busy) -> None:
        self._work(r.node, r.duration_s,
                   "group_operation" if r.what == "group_operation" else "compute")

    def _on_hop(self, r: HopEnd) -> None:
        if r.u not in self.clients and r.v not in self.clients:
            return  # a wired hop between servers: no radio
        airtime = r.time_s - r.start_s
        sender = self.radios.get(self.tier_of(r.u))
        receiver = self.radios.get(self.tier_of(r.v))
        if sender is not None:
            self._charge(r.u, "radio_tx", sender.tx_j(airtime, r.wire_bytes))
        if receiver is not None:
            self._charge(r.v, "radio_rx", receiver.rx_j(airtime, r.wire_bytes))

    # ---------------------------------------------------------------- snapshots
    def total_j(self, now_s: float | None = None) -> float:
        """Joules so far; with ``now_s`` and idle accounting, the idle energy up to then (from
        running sums: each node's busy time is taken as at most the time elapsed, as it is on
        a device that runs one job at a time)."""
        total = self._charged_j
        if self.idle and now_s is not None:
            total += max(self._idle_w_total * now_s - self._idle_busy_ws, 0.0)
        return total

    def _idle_power(self, node: str) -> float | None:
        power = self.node_power.get(node, (None, None))[1]
        return self.idle_w.get(self.tier_of(node)) if power is None else power

    def _idle_j(self, node: str, now_s: float) -> float:
        power = self._idle_power(node)
        if power is None:
            return 0.0
        return idle_energy_j(power, now_s, min(self.busy_s[node], now_s))

    def _on_evaluation(self, r: Evaluation) -> None:
        self.per_evaluation.append(self.total_j(r.time_s))

    def _on_round_end(self, r: RoundEnd) -> None:
        self.per_round[r.round] = self.total_j(r.time_s)

    def _on_target(self, r: TargetReached) -> None:
        if self.to_target_j is None:
            self.to_target_j = self.total_j(r.time_s)

    # ------------------------------------------------------------------ results
    def node_table(self, now_s: float) -> pd.DataFrame:
        """energy.csv: one row per node (node, tier, joules per activity, total)."""
        rows = []
        for node in self.nodes:
            row = {"node": node, "tier": self.tier_of(node)}
            for activity in ACTIVITIES:
                row[f"{activity}_j"] = (self._idle_j(node, now_s) if activity == "idle"
                                        and self.idle else self.joules.get((node, activity), 0.0))
            row["total_j"] = sum(row[f"{a}_j"] for a in ACTIVITIES)
            rows.append(row)
        return pd.DataFrame(rows)

    def summary(self, now_s: float) -> dict:
        """summary.json's energy fields."""
        table = self.node_table(now_s)
        by_activity = {a: float(table[f"{a}_j"].sum()) for a in ACTIVITIES
                       if a != "idle" or self.idle}
        per_round = list(self.round_energy().values())
        return {
            "energy_j_total": float(table["total_j"].sum()),
            "energy_j_by_tier": {t: float(v) for t, v in
                                 table.groupby("tier")["total_j"].sum().items()},
            "energy_j_by_activity": by_activity,
            "energy_to_target_j": self.to_target_j,
            "energy_j_per_round_p50": (float(pd.Series(per_round).median()) if per_round
                                       else None),
        }

    def add_tables(self, tables: dict[str, pd.DataFrame], now_s: float) -> None:
        """energy.csv, and rounds.csv's ``energy_j`` (spent in each round), into ``tables``."""
        rounds = tables["rounds"]
        spent = self.round_energy()
        rounds["energy_j"] = [spent.get(r) for r in rounds["round"]] if len(rounds) else []
        tables["energy"] = self.node_table(now_s)

    def round_energy(self) -> dict[int, float]:
        """Joules spent in each round (between the previous round's end and its own)."""
        out, before = {}, 0.0
        for round_, total in sorted(self.per_round.items()):
            out[round_] = total - before
            before = total
        return out


def build_energy_meter(scenario, world, fleet, trace: TraceBus) -> EnergyMeter | None:
    """The run's EnergyMeter where the scenario has an ``energy:`` section (None otherwise:
    no listener, no cost)."""
    if scenario.energy is None:
        return None
    radios = {TIER_OF_SECTION[t]: radio_model(r) for t, r in scenario.energy.radios.items()}
    nodes = [*world.clients, *world.edge_servers, *([world.cloud] if world.cloud else [])]
    missing = [no_power_figure(section, getattr(scenario.devices, section).preset,
                               "the run counts energy (energy:)")
               for section, tier in TIER_OF_SECTION.items()
               if any(world.tier(n) == tier and fleet.node_power.get(n, (None,))[0] is None
                      for n in nodes) and fleet.profiles[tier].active_w is None]
    if missing:
        raise ScenarioError(missing)
    return EnergyMeter(trace, world.tier, set(world.clients),
                       {t: p.active_w for t, p in fleet.profiles.items()},
                       {t: p.idle_w for t, p in fleet.profiles.items()},
                       radios, scenario.energy.idle, nodes, fleet.node_power)
