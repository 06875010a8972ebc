"""bench_scale's raw SimPy floor (benchmarks/bench_scale.py): it must run the same rounds as the
hierarchical FedAvg it is the floor of, or its ratio and slope say nothing."""

from __future__ import annotations

import json

import pytest

from tests.conftest import benchmark_module


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("bench_scale") as module:
        yield module


def test_the_floor_runs_the_scenarios_rounds_and_restores_the_collector(bench, capsys):
    import gc

    thresholds = gc.get_threshold()
    bench.raw_simpy_floor(300, 3)
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["rounds"] == bench.scenario(300, "hier-fedavg", 3)["algorithm"]["rounds"]
    assert figures["total_s"] >= figures["build_s"] >= 0
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_the_floor_matches_the_scenarios_world(bench):
    spec = bench.scenario(300, "hier-fedavg", 3)
    assert spec["algorithm"]["edge_rounds"] == 2  # raw_simpy_floor's inner loop
    assert spec["world"]["edge_servers"] == max(300 // 100, 2)
    assert spec["model"]["params"] * 4 * 8 == bench.PAYLOAD_BITS
    assert spec["links"]["access"]["rate"] == f"{bench.ACCESS_BPS / 1e6:g} Mbps"


def test_the_paths_are_compared_key_by_key(bench):
    same = {"sim_time_s": 10.0, "bytes_total": 5.0}
    assert bench.relative_difference(same, dict(same)) == (0.0, "")
    worst, where = bench.relative_difference(same, {"sim_time_s": 10.0 + 1e-8,
                                                    "bytes_total": 5.0})
    assert where == "sim_time_s" and worst == pytest.approx(1e-9, rel=1e-3)
    assert bench.relative_difference(same, {"sim_time_s": 10.0})[0] == float("inf")
    assert bench.scenario(1000, "fed-chs", 1, closed_form=True)["links"]["closed_form"]
