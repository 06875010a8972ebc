"""The Simulation: builds every stage from a Scenario, runs it, and summarizes it.

    scenario -> World -> Network -> Fleet (devices) -> trainer -> Algorithm -> Recorder

The Simulation owns the SimPy environment, the random streams (one root seed, named children)
and the trace bus, and hands them down; nothing is global. ``netfl.runner.run_scenario`` adds
the results directory and is what ``netfl.run`` and ``netfl run`` call.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import simpy

from netfl.algorithms.base import Context
from netfl.algorithms.registry import algorithm_class
from netfl.compute.fleet import Fleet
from netfl.errors import ScenarioError, ScenarioProblem
from netfl.learn import build_data, build_trainer
from netfl.network.helper import build_network
from netfl.results.energy import build_energy_meter
from netfl.results.event_spool import EventSpool
from netfl.results.recorder import Recorder
from netfl.results.run_analysis import RunAnalysis
from netfl.scenario import Scenario
from netfl.scenario.iov import IovWorld
from netfl.scenario.loader import locate
from netfl.scenario.sections import EdgeWorld, FakeModel
from netfl.sim.clock import RandomStreams
from netfl.sim.collector import RUN_GC_THRESHOLDS, collector_for_a_run  # noqa: F401
from netfl.sim.cores import available_memory_bytes
from netfl.sim.host_time import (
    ALGORITHM_COMPRESSION_METHODS,
    COMPRESSOR_METHODS,
    EVALUATION_METHODS,
    TRAINING_METHODS,
    HostTimes,
)
from netfl.sim.trace import TraceBus
from netfl.world import OrbitWorld, RoadWorld, build_world
from netfl.world.iov import VISIT_COLUMNS, space_time_segments, visit_rows
from netfl.world.leo_clients import SatelliteClientWorld

METRIC_COLUMNS = ["sim_time_s", "round", "accuracy", "loss", "bytes_total", "bytes_hop_weighted",
                  "wire_bytes_total", "transfers_failed", "dropouts", "cost_total"]
TRAINING_MEMORY_FACTOR = 3  # weights, gradients and one update buffer, float32 each


def _version() -> str:
    from netfl._version import __version__

    return __version__


# Host memory per client of a latency-only run (its links, processes, records and partition
# row): 1.5 GB at 100,000 clients in benchmarks/bench_scale.py, rounded up.
HOST_BYTES_PER_CLIENT = 16_000


def _client_count(world) -> tuple[str, int] | None:
    """(field, clients) of a world section that says how many clients it has before building."""
    if isinstance(world, EdgeWorld):
        return "world.clients", world.clients
    if isinstance(world, IovWorld):
        return "world.max_clients", world.max_clients
    users = getattr(world, "users", None)
    if users is not None:
        regions = users.regions or ([users.region] if users.region else [])
        count = len(users.points or []) + sum(r.count for r in regions)
        return ("world.users.regions" if users.regions else "world.users.region"
                if users.region else "world.users.points"), count
    return None


def _check_clients_fit(scenario: Scenario) -> None:
    """Refuse a world whose clients cannot fit in the host's memory before building it
    (``world.clients: 1000000000`` ran out of memory deep inside the world's construction)."""
    counted = _client_count(scenario.world)
    available = available_memory_bytes()
    if counted is None or available is None:
        return
    field, clients = counted
    needed = clients * HOST_BYTES_PER_CLIENT
    if needed > available:
        raise ScenarioError([ScenarioProblem(
            field, f"{clients:,} clients need about {needed / 1e9:,.1f} GB of host memory "
            f"(about {HOST_BYTES_PER_CLIENT // 1000} kB each); this machine has "
            f"{available / 1e9:,.1f} GB available", clients)])


class Simulation:
    """One scenario, built and ready to run once.

    With ``with_model=False`` every stage but the model, trainer and algorithm is built: a cheap
    check that the world, files, devices and partition are sound (``netfl validate --data``);
    with ``with_data=False`` as well, no data is read either (``dataset`` and ``partition`` are
    None: ``netfl validate``).
    """

    def __init__(self, scenario: Scenario, with_model: bool = True,
                 events_dir: Path | None = None, with_data: bool = True):
        """``events_dir``: where a run that keeps its events spools them as it goes (a folder
        of its own inside the output folder; in memory when None)."""
        if with_model and not with_data:
            raise ValueError("a Simulation with a model needs its data (with_data=True)")
        self._events = None
        try:
            self._build(scenario, with_model, events_dir, with_data)
        except ScenarioError as error:  # found while building: point at the file and line
            raise locate(error, scenario) from None

    def _build(self, scenario: Scenario, with_model: bool, events_dir: Path | None,
               with_data: bool = True) -> None:
        began = time.perf_counter()
        _check_clients_fit(scenario)
        self.host_times = HostTimes()
        self.scenario = scenario
        self.env = simpy.Environment()
        self.streams = RandomStreams(scenario.seed)
        self.trace = TraceBus()
        self.world = build_world(scenario.world, self.streams.get("world"))
        keep = scenario.output.trace or scenario.output.timeline
        spool = EventSpool(events_dir) if keep and events_dir is not None else None
        self.recorder = Recorder(self.trace, self.world.tier, keep_events=keep, spool=spool)
        self.analysis = RunAnalysis(  # rounds, participation, loads
            self.trace, self.world, getattr(scenario.algorithm, "ASYNCHRONOUS", False))
        self.rounds, self.participation = self.analysis.rounds, self.analysis.participation
        self.network = build_network(self.env, self.world, scenario.links, self.streams,
                                     self.trace)
        self.fleet = Fleet(self.env, self.world, scenario.devices, self.streams, self.trace,
                           self.network, scenario.energy)
        self.energy = build_energy_meter(scenario, self.world, self.fleet, self.trace)
        self.stop_reason: str | None = None
        self.host_time_s = 0.0
        if not with_data:
            self.dataset = self.partition = None
            return
        index = {client: i for i, client in enumerate(self.world.clients)}
        groups = [[index[c] for c in self.world.clients_of(es)] for es in self.world.edge_servers]
        if self.world.mobile:  # vehicles carry their data everywhere: one population
            groups = [list(range(len(self.world.clients)))]
        with self.host_times.timing("data_s"):
            self.dataset, self.partition = build_data(
                scenario.data, groups, self.streams,
                features=with_model and not isinstance(scenario.model, FakeModel))
        if not with_model:
            return
        self.trainer = build_trainer(scenario.model, self.dataset, self.partition, self.streams)
        self.host_times.time_methods(self.trainer, TRAINING_METHODS, "training_s")
        self.host_times.time_methods(self.trainer, EVALUATION_METHODS, "evaluation_s")
        self._check_memory()
        context = Context(self.env, self.world, self.network, self.fleet, self.trainer,
                          self.streams, self.trace, scenario.stop)
        self.algorithm = algorithm_class(scenario.algorithm.kind).for_world(self.world)(
            context, scenario.algorithm)
        self.host_times.time_methods(self.algorithm, ALGORITHM_COMPRESSION_METHODS,
                                     "compression_s")
        self.host_times.time_methods(getattr(self.algorithm, "compressor", None),
                                     COMPRESSOR_METHODS, "compression_s")
        self.host_times.parts["setup_s"] = (time.perf_counter() - began
                                            - self.host_times.parts["data_s"])

    def _check_memory(self) -> None:
        """A client must hold the model, its gradients and an update buffer."""
        needed = self.trainer.num_params * 4 * TRAINING_MEMORY_FACTOR
        profile = self.fleet.profiles["client"]
        if needed > profile.memory_bytes:
            raise ScenarioError([ScenarioProblem(
                "devices.clients.memory", f"the model needs about {needed / 1e9:.2f} GB to train "
                f"but a {profile.name} client has {profile.memory_bytes / 1e9:.2f} GB",
                self.scenario.devices.clients.memory)])

    def run(self) -> None:
        """Run until the algorithm ends, the target is reached, or ``stop.max_sim_time``."""
        started = time.perf_counter()
        self.world.start(self.env, self.streams)
        self.network.start()
        self.fleet.start()
        process = self.algorithm.start()
        stop = self.scenario.stop
        watchdog = (self.env.process(self._watchdog(stop.stall_after))
                    if stop.stall_after is not None else None)
        ends = [process, *([self.env.timeout(stop.max_sim_time)] if stop.max_sim_time else []),
                *([watchdog] if watchdog is not None else [])]
        with collector_for_a_run():
            self.env.run(until=ends[0] if len(ends) == 1 else self.env.any_of(ends))
        self.algorithm.stop_background()
        if not process.triggered:
            stalled = watchdog is not None and watchdog.triggered
            self.stop_reason = "stalled" if stalled else "max_sim_time"
        else:
            self.stop_reason = self.algorithm.stopped_by or "rounds"
        self.algorithm.record_final()
        self.host_time_s = time.perf_counter() - started
        self.host_times.close_run(self.host_time_s)

    def _watchdog(self, stall_s: float):
        """Ends once the algorithm has made no progress for ``stall_s`` simulated seconds."""
        book = self.algorithm.book
        while (wait := book.last_progress_s + stall_s - self.env.now) > 0:
            yield self.env.timeout(wait)

    def partition_table(self) -> pd.DataFrame:
        """One row per client: its edge server (its traced device where there is a device
        trace), sample count and count of each label."""
        counts = self.partition.counts
        table = pd.DataFrame(counts, columns=[f"label_{k}" for k in range(counts.shape[1])])
        table.insert(0, "samples", counts.sum(axis=1))
        # a mobile world's clients have no fixed edge server: "" there
        # edge_of per client: the client_edge property builds a dict of every client per access
        table.insert(0, "edge_server", ["" if self.world.mobile else self.world.edge_of(c)
                                        for c in self.world.clients])
        table.insert(0, "client", self.world.clients)
        if self.fleet.client_devices:  # each client's device of the trace
            table.insert(2, "device", self.fleet.client_devices)
        return table

    def analysis_tables(self) -> dict[str, pd.DataFrame]:
        """rounds.csv, participation.csv, links.csv and, on a road or orbital world,
        occupancy.csv (netfl.results.run_analysis); energy.csv and rounds' energy_j where the
        run counts energy; satellite_power.csv where satellites have a power budget; battery.csv
        where clients run on batteries."""
        tables = self.analysis.tables(self.network, self.env.now)
        if self.energy is not None:
            self.energy.add_tables(tables, self.env.now)
        tables.update({name: pd.DataFrame(rows) for name, rows in self.fleet.power_tables()})
        return tables

    def plot_rounds(self, directory: Path) -> None:
        """rounds.png: each round's critical path and the parts' distribution; updates.png
        where updates went into models asynchronously (netfl.results.update_plots)."""
        from netfl.results.round_plots import plot_rounds

        plot_rounds(self.analysis.rounds_table(), directory / "rounds.png", self.scenario.name)
        if self.analysis.updates.rows:
            from netfl.results.update_plots import plot_updates

            plot_updates(self.analysis.updates.table(), directory / "updates.png",
                         f"{self.scenario.name} ({self.scenario.algorithm.kind})")

    def plot_links(self, directory: Path) -> None:
        """links.png: the most utilised channels' utilisation over time; occupancy.png on a
        road or orbital world: clients per cell over time."""
        self.analysis.plot_links(self.network, self.env.now, directory, self.scenario.name)

    def world_tables(self) -> dict[str, pd.DataFrame]:
        """Tables of a mobile world for the results directory: visits.csv (each vehicle's
        time in each RSU's coverage) or windows.csv (each user's satellite windows)."""
        if isinstance(self.world, OrbitWorld):
            return {"windows": self.world.window_rows(self.env.now)}
        if isinstance(self.world, SatelliteClientWorld):
            return {"contacts": self.world.window_rows(self.env.now)}
        if not isinstance(self.world, RoadWorld):
            return {}
        return {"visits": pd.DataFrame(visit_rows(self.world, self.env.now),
                                       columns=VISIT_COLUMNS)}

    def plot_world(self, directory: Path) -> None:
        """space_time.png for a road world: vehicles, RSUs and where the model was;
        contact_chart.png for an orbital one: satellites in view and the model's holder."""
        if isinstance(self.world, OrbitWorld):
            from netfl.results.plots import contact_rows, plot_contact_chart
            from netfl.world.eclipses import world_eclipses

            world, now = self.world, self.env.now
            spans = {s: world.coverage(s) for s in world.edge_servers}
            plot_contact_chart(spans, self.recorder.model_path, now,
                               Path(directory) / "contact_chart.png",
                               f"{self.scenario.name}: satellites in view, the model and "
                               f"eclipses", start_holder=self._only_holder(),
                               eclipses=world_eclipses(world, contact_rows(spans, now), now))
            return
        if isinstance(self.world, SatelliteClientWorld):
            from netfl.results.plots import plot_contact_chart

            spans = {c: self.world.coverage(c) for c in self.world.clients}
            plot_contact_chart(spans, [], self.env.now, Path(directory) / "contact_chart.png",
                               f"{self.scenario.name}: satellites in contact with a ground "
                               f"station", seen_by="a ground station")
            return
        if not isinstance(self.world, RoadWorld):
            return
        from netfl.results.plots import plot_space_time

        world, now = self.world, self.env.now
        path = self.recorder.model_path or [(0.0, self._only_holder())]
        model = [(t, world.rsu_xy[node][0]) for t, node in path if node in world.rsu_xy]
        plot_space_time(space_time_segments(world, now, max_vehicles=len(world.visits)),
                        [x for x, _ in world.rsu_xy.values()],
                        world.coverage_m, model, now, Path(directory) / "space_time.png",
                        f"{self.scenario.name}: vehicles, RSUs and the model")

    def _only_holder(self) -> str | None:
        """The node that held the model all run long where no hand-over was tried and every
        aggregation was at that one node (Fed-CHS that never moved); None otherwise."""
        rec = self.recorder
        if rec.model_path or rec.handovers_failed or len(rec.aggregators) != 1:
            return None
        return next(iter(rec.aggregators))

    def metrics(self) -> pd.DataFrame:
        table = pd.DataFrame(self.recorder.metrics, columns=METRIC_COLUMNS)
        if self.energy is not None:  # joules spent by each evaluation, where counted
            table["energy_j"] = self.energy.per_evaluation[:len(table)]
        return table

    def events(self) -> pd.DataFrame | None:
        """The event table (None unless the run kept its events)."""
        if self.recorder.spool is not None:
            if self._events is None:
                self._events = self.recorder.spool.table()
            return self._events
        return None if self.recorder.events is None else pd.DataFrame(self.recorder.events)

    def summary(self) -> dict:
        rec, scenario = self.recorder, self.scenario
        target = scenario.stop.target_accuracy
        last = rec.metrics[-1] if rec.metrics else {}
        at_target = rec.at_target or {}
        bytes_to_target = at_target.get("bytes_total")
        summary = {
            "name": scenario.name,
            "algorithm": scenario.algorithm.kind,
            "seed": scenario.seed,
            "stop_reason": self.stop_reason,
            "sim_time_s": self.env.now,
            "rounds": self.algorithm.rounds_done,
            "rounds_without_updates": self.algorithm.rounds_without_updates,
            "local_steps": self.algorithm.local_steps_done,
            "final_accuracy": last.get("accuracy"),
            "final_loss": last.get("loss"),
            "best_accuracy": max((r["accuracy"] for r in rec.metrics), default=None),
            "target_accuracy": target,
            "time_to_target_s": at_target.get("time_s"),
            "rounds_to_target": at_target.get("round"),
            "local_steps_to_target": at_target.get("local_steps"),
            "accuracy_at_target": at_target.get("accuracy"),
            "bytes_to_target": bytes_to_target,
            "bits_to_target": None if bytes_to_target is None else 8 * bytes_to_target,
            "bytes_to_target_by_tag": at_target.get("bytes_by_tag"),
            "bytes_hop_weighted_to_target": at_target.get("bytes_hop_weighted"),
            "bytes_uncompressed_to_target": at_target.get("bytes_uncompressed"),
            "bytes_uncompressed_to_target_by_tag": at_target.get("bytes_uncompressed_by_tag"),
            "wire_bytes_to_target": at_target.get("wire_bytes_total"),
            "bytes_total": rec.bytes_total,
            "bytes_by_tag": dict(sorted(rec.bytes_by_tag.items())),
            "bytes_uncompressed_total": rec.bytes_raw_total,
            "bytes_uncompressed_by_tag": dict(sorted(rec.bytes_raw_by_tag.items())),
            "bytes_hop_weighted": rec.bytes_hop_weighted,
            "bytes_by_link": dict(sorted(rec.bytes_by_link.items())),
            "wire_bytes_total": rec.wire_bytes_total,
            "transfers_delivered": rec.transfers_delivered,
            "transfers_failed": rec.transfers_failed,
            "transfers_cancelled": rec.transfers_cancelled,
            "bytes_cancelled": rec.bytes_cancelled,
            "trainings_cancelled": rec.trainings_cancelled,
            "compute_cancelled_s": rec.compute_cancelled_s,
            "transfer_attempts_failed": rec.transfer_attempts_failed,
            "retransmissions": rec.retransmissions,
            "dropouts": rec.dropouts,
            "updates_lost_in_training": rec.updates_lost_in_training,
            "handovers": rec.handovers,
            "handovers_failed": rec.handovers_failed,
            "uploads_lost": rec.uploads_lost,
            "downloads_lost": rec.downloads_lost,
            "coverage_cuts": rec.coverage_cuts,
            "cost_total": rec.cost_total,
            "cost_by_kind": dict(sorted(rec.cost_by_kind.items())),
            "cost_to_target": at_target.get("cost_total"),
            "compute_time_s_by_tier": dict(sorted(rec.compute_time_s_by_tier.items())),
            "aggregation_time_s_by_tier": dict(sorted(rec.aggregation_time_s_by_tier.items())),
            "transfer_time_s_by_tag": dict(sorted(rec.transfer_time_s_by_tag.items())),
            "failed_transfer_time_s_by_tag": dict(sorted(
                rec.failed_transfer_time_s_by_tag.items())),
            "cancelled_transfer_time_s_by_tag": dict(sorted(
                rec.cancelled_transfer_time_s_by_tag.items())),
            "model_params": self.trainer.num_params,
            "payload_bytes": self.trainer.payload_bytes,
            "flops_per_sample": self.trainer.flops_per_sample,
            "train_flops_per_sample": self.trainer.train_flops_per_sample,
            "clients": len(self.world.clients),
            "edge_servers": len(self.world.edge_servers),
            "host_time_s": self.host_times.total_s(),
            "host_time_s_by_part": self.host_times.as_dict(),
            "diverged_round": self.algorithm.diverged_round,
            "netfl_version": _version(),
            "host_float_kernels": getattr(self.trainer, "float_kernels", None),
            "world_notes": list(self.world.notes),
        } | self.analysis.summary(self.network, self.env.now) | (
            self.energy.summary(self.env.now) if self.energy is not None else {}) | (
            self.fleet.power_summary())
        if scenario.links.closed_form:
            summary["exchanges_in_closed_form"] = self.algorithm.book.closed_form_exchanges
        extras = self.algorithm.summary_extras() | self.world.summary(self.env.now)
        if clash := set(extras) & set(summary):
            raise RuntimeError(f"algorithm or world summary keys {sorted(clash)} clash with ours")
        return summary | extras
