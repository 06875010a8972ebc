"""benchmarks/bench_floors.py measures a run beside its floors: on the quickstart (digits, an
MLP), every floor is positive and finite, the logged work is the run's, and the ratio is the
host time over the floors' sum."""

from __future__ import annotations

import math

import pytest

from tests.conftest import benchmark_module


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("bench_floors") as module:
        yield module


def test_the_quickstart_beside_its_floors(bench):
    path = bench.ROOT / "scenarios" / "quickstart.yaml"
    row = dict(zip(bench.COLUMNS, bench.measure("quickstart.yaml", path, ["algorithm.rounds=3"],
                                                per_event_s=1e-6, peak_flops=1e11),
                   strict=True))
    for column in ("training floor s", "training FLOP bound s", "evaluation floor s",
                   "event floor s", "floor s", "host / floor"):
        assert 0 < row[column] < math.inf, column
    assert row["events"] > 0 and row["event floor s"] == pytest.approx(row["events"] * 1e-6)
    assert row["floor s"] == pytest.approx(row["training floor s"] + row["evaluation floor s"]
                                           + row["compression floor s"] + row["event floor s"])
    assert row["host / floor"] == pytest.approx(row["host s"] / row["floor s"])


def test_the_work_log_counts_each_local_step_by_its_batch(bench):
    from netfl import load_scenario
    from netfl.simulation import Simulation

    simulation = Simulation(load_scenario(bench.ROOT / "scenarios" / "quickstart.yaml",
                                          ["algorithm.rounds=2"]))
    log = bench.WorkLog()
    log.attach(simulation.trainer, simulation.algorithm.compressor)
    simulation.run()
    steps = sum(count for (kind, _), count in log.passes.items() if kind == "step")
    assert steps == simulation.summary()["local_steps"]
    assert sum(log.evaluations.values()) >= 1
