"""FedAsync and FedBuff as their algorithm boxes say: versions, staleness, the mixing rule, the
buffered step; on every world."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import netfl
from netfl.sim.trace import ModelMixed
from netfl.simulation import Simulation


def run_traced(tiny, algorithm: dict, **stop):
    tiny["algorithm"] = {"local_steps": 2, "batch_size": 16, "lr": 0.1, **algorithm}
    if stop:
        tiny["stop"] = stop
    scenario = netfl.load_scenario(tiny)
    sim = Simulation(scenario)
    sim.twin = Simulation(scenario)  # fresh random streams: a client's first training again
    mixed, versions = [], {}
    sim.trace.subscribe(mixed.append, ModelMixed)
    end_round = sim.algorithm.end_round

    def keep(version, params):
        versions[version] = params.copy()
        return end_round(version, params)

    sim.algorithm.end_round = keep
    sim.run()
    return sim, mixed, versions


def test_fedasync_mixes_every_arrival_at_alpha_times_its_staleness_weight(tiny):
    sim, mixed, versions = run_traced(tiny, {"kind": "fedasync", "rounds": 12, "concurrency": 3,
                                             "alpha": 0.5, "staleness": {"kind": "hinge",
                                                                         "a": 2, "b": 1}})
    assert sim.stop_reason == "rounds" and [r.version for r in mixed] == list(range(1, 13))
    for record in mixed:  # s takes FedAsync's t - tau: one more than the versions moved
        s = record.staleness + 1
        assert record.weight == pytest.approx(0.5 * (1.0 if s <= 1 else 1 / (2 * (s - 1) + 1)))
        assert 0 <= record.staleness < record.version
    assert any(r.staleness > 0 for r in mixed)  # three at once: some arrive stale
    assert sim.summary()["updates_dropped_stale"] == 0


def test_a_single_fedasync_worker_at_alpha_one_hands_on_its_model(tiny):
    """With one worker an update is at most one version stale (the next client downloads while
    the server still mixes the last one in), and alpha = 1 makes each version the arriving
    model."""
    sim, mixed, versions = run_traced(tiny, {"kind": "fedasync", "rounds": 3, "concurrency": 1,
                                             "alpha": 1.0, "staleness": {"kind": "constant"}})
    assert mixed[0].staleness == 0 and {r.staleness for r in mixed} <= {0, 1}
    assert [r.weight for r in mixed] == [1.0] * 3
    client = sim.world.clients.index(mixed[0].source)
    twin = sim.twin.trainer
    expected = twin.local_train(twin.init_params(), [client], 2, 0.1, 16)[0]
    np.testing.assert_allclose(versions[1], expected)


def test_fedbuff_steps_by_the_mean_of_k_staleness_weighted_deltas(tiny):
    sim, mixed, versions = run_traced(tiny, {"kind": "fedbuff", "rounds": 4, "concurrency": 3,
                                             "buffer_size": 3, "server_lr": 1.0})
    first = [r for r in mixed if r.version == 1]
    assert len(first) == 3 and all(r.staleness == 0 and r.weight == 1.0 for r in first)
    twin = sim.twin.trainer
    start = twin.init_params()
    rows = [sim.world.clients.index(r.source) for r in first]  # three distinct first trainings
    assert len(set(rows)) == 3
    trained = [twin.local_train(start, [i], 2, 0.1, 16)[0] for i in rows]
    np.testing.assert_allclose(versions[1], start + sum(t - start for t in trained) / 3)
    later = [r for r in mixed if r.version > 1]
    assert all(r.weight == pytest.approx(1 / np.sqrt(1 + r.staleness)) for r in later)
    assert any(r.staleness > 0 for r in later)


def test_fedasync_weights_a_fresh_update_as_its_algorithm_1_does(tiny):
    """FedAsync's updater applies s(t - tau), 1 for a worker that got the latest model: netfl
    once applied s(0) (a 0.5-polynomial rate 1.4x the paper's). An offset in the staleness
    section overrides the rule's own."""
    sim, mixed, _ = run_traced(tiny, {"kind": "fedasync", "rounds": 4, "concurrency": 1,
                                      "alpha": 0.8})
    fresh = [r for r in mixed if r.staleness == 0]
    assert fresh and all(r.weight == pytest.approx(0.8 / np.sqrt(2)) for r in fresh)
    sim, mixed, _ = run_traced(tiny, {"kind": "fedasync", "rounds": 4, "concurrency": 1,
                                      "alpha": 0.8, "staleness": {"kind": "polynomial",
                                                                  "offset": 0}})
    assert all(r.weight == pytest.approx(0.8 / np.sqrt(1 + r.staleness)) for r in mixed)


def test_a_stale_update_beyond_the_bound_is_dropped_and_counted(tiny):
    sim, mixed, _ = run_traced(tiny, {"kind": "fedasync", "rounds": 10, "concurrency": 4,
                                      "max_staleness": 0})
    assert all(r.staleness == 0 for r in mixed)
    assert sim.summary()["updates_dropped_stale"] > 0


@pytest.mark.parametrize("kind", ["fedasync", "fedbuff"])
def test_the_same_seed_gives_the_same_run(tiny, kind):
    tiny["algorithm"] = {"kind": kind, "rounds": 6, "concurrency": 3, "local_steps": 2}
    one, two = netfl.run(tiny, write=False), netfl.run(tiny, write=False)
    drop = ("host_time_s", "host_time_s_by_part")
    assert {k: v for k, v in one.summary.items() if k not in drop} == {
        k: v for k, v in two.summary.items() if k not in drop}
    assert one.metrics.equals(two.metrics)


def test_updates_csv_and_staleness_percentiles_are_written_for_asynchronous_runs_only(
        tiny, tmp_path):
    tiny["output"] = {"dir": str(tmp_path), "plots": False}
    tiny["algorithm"] = {"kind": "fedbuff", "rounds": 6, "concurrency": 4, "buffer_size": 2,
                         "local_steps": 2}
    result = netfl.run(tiny)
    updates = pd.read_csv(result.path / "updates.csv")
    s = result.summary
    assert len(updates) == s["updates_mixed"] == 12 and set(updates["tier"]) == {"cloud"}
    assert (updates["staleness"] == updates["version"] - 1 - updates["base_version"]).all()
    assert s["staleness_max"] == updates["staleness"].max()
    assert s["staleness_p50"] == pytest.approx(np.percentile(updates["staleness"], 50))
    assert s["staleness_by_tier"]["cloud"]["updates"] == 12
    # per tier as scalars too: the sweep index keeps those (it drops a dict of dicts)
    assert s["staleness_max_cloud"] == s["staleness_by_tier"]["cloud"]["max"]
    from netfl.sweep.runner import flatten_summary
    assert "staleness_p90_cloud" in flatten_summary(s)
    tiny["algorithm"] = {"kind": "fedavg", "rounds": 2}
    synchronous = netfl.run(tiny)
    assert not (synchronous.path / "updates.csv").exists()
    assert "staleness_p50" not in synchronous.summary


def test_analyze_reports_versions_and_staleness_not_rounds_for_an_asynchronous_run(
        tiny, tmp_path):
    """`netfl analyze` once printed FedBuff's versions, microseconds apart, as 'rounds' with
    p50 = p90 = 0.48 s; an asynchronous run gets its staleness and its sources instead."""
    from typer.testing import CliRunner

    from netfl.cli import app

    tiny["output"] = {"dir": str(tmp_path), "plots": False}
    tiny["algorithm"] = {"kind": "fedasync", "rounds": 8, "concurrency": 3, "local_steps": 2}
    result = netfl.run(tiny)
    shown = CliRunner().invoke(app, ["analyze", str(result.path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "'rounds' are model versions; 8 updates went in" in shown.output
    assert "most frequent sources" in shown.output and "slowest rounds" not in shown.output
    # what the versions waited for: a row per part of an update's life, median and p90
    lines = shown.output.splitlines()
    assert any("cloud (8 versions)" in line for line in lines)
    for part in ("age", "download", "work", "held", "upload", "waited"):
        assert any(line.strip("│ ").startswith(part) for line in lines), part


def test_participation_counts_the_clients_drawn_as_selected(tiny, tmp_path):
    """FedAsync's participation.csv once said 'selected 0, trained 13,069'."""
    tiny["output"] = {"dir": str(tmp_path), "plots": False}
    tiny["algorithm"] = {"kind": "fedasync", "rounds": 10, "concurrency": 3, "local_steps": 2}
    result = netfl.run(tiny)
    totals = pd.read_csv(result.path / "participation.csv")[["selected", "trained",
                                                             "delivered"]].sum()
    # every draw is counted; those still training at the stop were drawn but not done
    assert totals["selected"] >= totals["trained"] >= totals["delivered"] >= 10
    assert totals["selected"] - totals["trained"] <= 3


@pytest.mark.parametrize("algorithm,lived", [
    ({"kind": "fedbuff", "rounds": 5, "concurrency": 4, "buffer_size": 2}, {"cloud"}),
    ({"kind": "fedbuff", "rounds": 5, "concurrency": 4, "buffer_size": 4}, {"cloud"}),
    ({"kind": "hier-async", "rounds": 4, "edge": "async", "cloud": "async"}, {"cloud", "edge"}),
    # sync edges take their clients' models from an exchange, not a mailbox: no life there
    ({"kind": "hier-async", "rounds": 4, "cloud": {"policy": "buffered", "buffer_size": 2}},
     {"cloud"})])
def test_each_updates_life_adds_up_to_its_age_and_a_version_waited_for_its_last(
        tiny, tmp_path, algorithm, lived):
    """FedAsync's round table once blamed a download and an upload for what was a timer; an
    asynchronous run's critical path is the life of the update each step waited for. A life
    was once kept per source, and a source's next download overwrote one still waiting in a
    buffer (5 of 24 FedBuff rows empty)."""
    from netfl.results.updates import version_paths

    tiny["world"] = {"kind": "edge", "clients": 6, "edge_servers": 2}
    tiny["output"] = {"dir": str(tmp_path), "plots": False}
    tiny["algorithm"] = {"local_steps": 2, **algorithm}
    updates = pd.read_csv(netfl.run(tiny).path / "updates.csv")
    updates = updates[updates["tier"].isin(lived)]
    assert len(updates) and updates["started_s"].notna().all()
    parts = updates[["download_s", "work_s", "held_s", "upload_s", "waited_s"]]
    assert (parts >= -1e-9).all().all()
    np.testing.assert_allclose(parts.sum(axis=1), updates["time_s"] - updates["started_s"],
                               rtol=1e-9, atol=1e-9)
    assert (updates["download_s"] > 0).all() and (updates["upload_s"] > 0).all()
    # each update its own life: never two rows of one source with the same start
    assert not updates.duplicated(["source", "started_s"]).any()
    paths = version_paths(updates)
    assert len(paths) == updates.groupby(["node", "version"]).ngroups
    if algorithm["kind"] == "fedbuff":  # a buffer waited for its first arrival
        assert (updates.groupby("version")["waited_s"].max() > 0).all()
