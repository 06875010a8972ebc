"""Exchanges advanced in closed form (``links.closed_form``) against the per-event path: the
same summary, metrics, rounds, participation and links tables to float rounding; the cases
the option leaves to the per-event path; the guard against an algorithm that uses a reserved
client."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from netfl.algorithms.base import Algorithm
from netfl.errors import SimulationError
from netfl.scenario import load_scenario
from netfl.sim.trace import ExchangeBooked, HopEnd, TrainEnd, TransferEnd
from netfl.simulation import Simulation

REL = 1e-9


def scenario(algorithm: str = "hier-fedavg", clients: int = 60, **links) -> dict:
    algo = ({"kind": "hier-fedavg", "rounds": 3, "edge_rounds": 2, "local_steps": 2,
             "lr": 0.05, "batch_size": 8}
            if algorithm == "hier-fedavg" else
            {"kind": algorithm, "rounds": 6, "lr": 0.05, "batch_size": 8})
    if algorithm == "fed-chs":
        algo["interactions"] = 2
    return {"name": "cohort", "seed": 3,
            "world": {"kind": "edge", "clients": clients, "edge_servers": 4,
                      "topology": {"kind": "ring"}},
            "links": {"access": {"rate": "8 Mbps", "rate_up": "3 Mbps", "delay": "7 ms"},
                      **links},
            "devices": {"clients": {"preset": "phone", "stragglers": {"fraction": 0.3,
                                                                      "slowdown": 3}}},
            "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                     "partition": {"kind": "iid"}},
            "model": {"kind": "fake", "params": 150_000},
            "algorithm": algo, "output": {"plots": False}}


def run(spec: dict, closed_form: bool, **overrides) -> Simulation:
    spec = {**spec, "links": {**spec["links"], "closed_form": closed_form}}
    for key, value in overrides.items():
        spec[key] = value
    simulation = Simulation(load_scenario(spec))
    simulation.run()
    return simulation


def close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def assert_same_results(per_event: Simulation, closed: Simulation) -> None:
    a, b = per_event.summary(), closed.summary()
    for key in a.keys() - {"host_time_s", "host_time_s_by_part", "bottlenecks"}:
        assert close(a[key], b[key]), (key, a[key], b[key])
    # equally utilised channels may swap places among the bottlenecks: compare the figures
    figures = ("utilisation", "busy_s", "mean_flows", "peak_flows")
    assert close(sorted([[row[f] for f in figures] for row in a["bottlenecks"]]),
                 sorted([[row[f] for f in figures] for row in b["bottlenecks"]]))
    pd.testing.assert_frame_equal(pd.DataFrame(per_event.recorder.metrics),
                                  pd.DataFrame(closed.recorder.metrics), rtol=REL)
    tables_a, tables_b = per_event.analysis_tables(), closed.analysis_tables()
    assert tables_a.keys() == tables_b.keys()
    for name in tables_a:
        ta, tb = tables_a[name], tables_b[name]
        if name == "links":  # listed in the order of their first flows
            ta = ta.sort_values("channel", ignore_index=True)
            tb = tb.sort_values("channel", ignore_index=True)
        pd.testing.assert_frame_equal(ta, tb, rtol=REL, obj=name)
    assert {c.name for c in per_event.network.fabric.channels_used} == \
        {c.name for c in closed.network.fabric.channels_used}


@pytest.mark.parametrize("algorithm", ["hier-fedavg", "fed-chs", "fedavg"])
def test_closed_form_equals_per_event_path(algorithm):
    spec = scenario(algorithm)
    per_event, closed = run(spec, False), run(spec, True)
    assert_same_results(per_event, closed)
    booked = closed.summary()["exchanges_in_closed_form"]
    # FedAvg's clients reach the cloud over shared core links: never in closed form
    assert booked == 0 if algorithm == "fedavg" else booked > 0
    assert "exchanges_in_closed_form" not in per_event.summary()


@pytest.mark.parametrize("transport", [{"kind": "fluid"},
                                       {"kind": "tcp", "delayed_ack": 1,
                                        "receive_window": "64 KiB"},
                                       {"kind": "tcp", "handshake": False}])
def test_closed_form_equals_per_event_path_on_every_pipelined_transport(transport):
    spec = scenario(transport=transport)
    per_event, closed = run(spec, False), run(spec, True)
    assert closed.summary()["exchanges_in_closed_form"] > 0
    assert_same_results(per_event, closed)


def test_record_by_record_booking_equals_the_bulk_one():
    """With the energy section a subscriber takes each TrainEnd itself: the cohort books
    record by record, to the same results."""
    spec = scenario() | {"energy": {"idle": True, "radios": {"clients": {"tx": "1.6 W",
                                                                       "rx": "1.0 W"}}}}
    spec["devices"] = {"clients": {"preset": "raspberry-pi-4"},
                       "edge": {"preset": "jetson-xavier-nx",
                                "power": {"active": "15 W", "idle": "3 W"}}}
    per_event, closed = run(spec, False), run(spec, True)
    assert closed.summary()["exchanges_in_closed_form"] > 0
    assert not closed.trace.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd, HopEnd)
    assert_same_results(per_event, closed)


def test_the_analysers_take_an_exchange_in_bulk():
    closed = run(scenario(), True)
    assert closed.trace.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd, HopEnd)


@pytest.mark.parametrize("change", [
    {"links": {"access": {"rate": "8 Mbps", "delay": "7 ms", "shared": True}}},
    {"links": {"access": {"rate": "8 Mbps", "delay": "7 ms",
                          "loss": {"kind": "retransmit", "probability": 0.1,
                                   "max_retransmissions": 3}}}},
    {"links": {"access": {"rate": "8 Mbps", "delay": "7 ms", "transport":
                          {"kind": "store-and-forward"}}}},
    {"devices": {"clients": {"preset": "phone", "jitter": 0.2}}},
    {"devices": {"clients": {"preset": "phone", "availability": {
        "kind": "random", "mean_up": "10 min", "mean_down": "1 min"}}}},
    {"output": {"plots": False, "trace": True}},
], ids=["shared-cell", "retransmissions", "store-and-forward", "jitter", "availability",
        "event-table"])
def test_what_the_closed_form_leaves_to_the_per_event_path(change, tmp_path):
    spec = scenario() | change
    if "output" in change:
        spec["output"] = {**change["output"], "dir": str(tmp_path)}
    spec["links"] = {**spec["links"], "closed_form": True}
    simulation = Simulation(load_scenario(spec))
    simulation.run()
    assert simulation.summary()["exchanges_in_closed_form"] == 0


def test_an_exchange_that_would_end_after_the_stop_is_simulated_event_by_event():
    spec = scenario() | {"stop": {"max_sim_time": "3 s"}}
    per_event, closed = run(spec, False), run(spec, True)
    assert closed.summary()["exchanges_in_closed_form"] < 2 * 4 * 3
    assert_same_results(per_event, closed)


class TwoThingsAtOnce(Algorithm):
    """Exchanges with a client while it sends to its server on the side: the closed form
    cannot book that and must refuse."""

    def run(self):
        client = self.world.clients_of(self.world.edge_servers[0])[0]
        server = self.world.edge_of(client)
        self.env.process(self.later(client, server))
        yield from self.exchange(server, [client], 1, 1)

    def later(self, client, server):
        yield self.env.timeout(0.05)
        yield from self.send(client, server, 1000)


class BusyMeanwhile(TwoThingsAtOnce):
    """Occupies the client's device while the exchange holds it."""

    def later(self, client, server):
        yield self.env.timeout(0.05)
        yield from self.occupy(client, 1.0)


@pytest.mark.parametrize("algorithm, says", [(TwoThingsAtOnce, "crosses link"),
                                              (BusyMeanwhile, "holds its device")])
def test_an_algorithm_using_a_reserved_link_or_device_is_refused_by_name(algorithm, says):
    simulation = Simulation(load_scenario(scenario() | {
        "links": {"access": {"rate": "8 Mbps", "delay": "7 ms"}, "closed_form": True}}))
    simulation.algorithm = algorithm(simulation.algorithm.ctx, simulation.algorithm.spec)
    with pytest.raises(SimulationError, match=f"{says}.*links.closed_form: false"):
        simulation.run()
