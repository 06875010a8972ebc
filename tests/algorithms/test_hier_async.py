"""Hierarchical FL with a policy per tier (hier-async): sync at both tiers is hierarchical FedAvg
to the float; deadline, buffered and async tiers as their rules say."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from pydantic import ValidationError

import netfl
from netfl.sim.trace import ModelMixed, Selected, TrainEnd
from netfl.simulation import Simulation

ASYNC_KEYS = {"algorithm", "host_time_s", "host_time_s_by_part", "updates_mixed",
              "staleness_p50", "staleness_p90", "staleness_max", "staleness_by_tier",
              "updates_dropped_stale_edge", "updates_dropped_stale_cloud",
              "updates_dropped_late_edge", "updates_dropped_late_cloud"}


def asynchronous_key(key: str) -> bool:
    """A summary key only asynchronous aggregation writes (or host-dependent)."""
    return key in ASYNC_KEYS or key.startswith("staleness_")


def stragglers(tiny, **algorithm):
    """tiny with 4 clients per edge, jittery devices (rounds end at scattered times) and
    ``algorithm`` over hier-async."""
    tiny["world"] = {"kind": "edge", "clients": 8, "edge_servers": 2}
    tiny["devices"] = {"clients": {"flops": "0.05 GFLOPS", "jitter": 0.8}}
    tiny["algorithm"] = {"kind": "hier-async", "rounds": 6, "local_steps": 2,
                         "batch_size": 16, "lr": 0.1, **algorithm}
    return tiny


def cancelled_trainings(sim) -> list:
    return [r for r in sim.trained if r.cancelled]


def traced(scenario: dict):
    sim = Simulation(netfl.load_scenario(scenario))
    mixed, selected = [], []
    sim.trace.subscribe(mixed.append, ModelMixed)
    sim.trace.subscribe(selected.append, Selected)
    sim.trained = []
    sim.trace.subscribe(sim.trained.append, TrainEnd)
    sim.run()
    return sim, mixed, selected


@pytest.mark.parametrize("sampling", [{}, {"edges_per_round": 1, "clients_per_round": 2}])
def test_sync_at_both_tiers_is_hierarchical_fedavg_to_the_float(tiny, tmp_path, sampling):
    stragglers(tiny, edge_rounds=2, **sampling)
    tiny["output"] = {"dir": str(tmp_path / "async"), "plots": False}
    mine = netfl.run(tiny)
    tiny["algorithm"]["kind"] = "hier-fedavg"
    tiny["output"]["dir"] = str(tmp_path / "fedavg")
    theirs = netfl.run(tiny)
    assert mine.metrics.equals(theirs.metrics)
    assert {k: v for k, v in mine.summary.items() if not asynchronous_key(k)} == {
        k: v for k, v in theirs.summary.items() if not asynchronous_key(k)}
    for table in ("participation.csv", "links.csv"):
        assert pd.read_csv(mine.path / table).equals(pd.read_csv(theirs.path / table))
    assert mine.summary["staleness_max"] == 0


def test_an_edge_deadline_takes_what_arrived_in_time_and_cancels_the_rest(tiny):
    deadline = 0.4
    sim, mixed, selected = traced(stragglers(tiny, edge={"policy": "deadline",
                                                         "deadline": f"{deadline} s"}))
    edge = [r for r in mixed if r.node != sim.world.cloud]
    assert edge and all(r.staleness == 0 for r in edge)
    for r in edge:  # each edge step is taken within its round's deadline (plus its aggregation)
        start = max(s.time_s for s in selected if s.server == r.node and s.time_s <= r.time_s)
        assert r.time_s - start <= deadline + 0.01
    s = sim.summary()
    assert s["trainings_cancelled"] + s["transfers_cancelled"] > 0


def test_carried_updates_go_into_a_later_step_with_their_staleness_and_none_is_cancelled(tiny):
    sim, mixed, _ = traced(stragglers(tiny, edge={"policy": "deadline", "deadline": "0.4 s",
                                                  "late": "carry",
                                                  "staleness": {"kind": "constant"}}))
    edge = [r for r in mixed if r.node != sim.world.cloud]
    stale = [r for r in edge if r.staleness > 0]
    assert stale, "no update arrived after its deadline"
    # nobody is cancelled at a deadline: only those still training when the run stops
    assert all(t.time_s == sim.env.now for t in cancelled_trainings(sim))


@pytest.mark.parametrize("late", ["drop", "carry"])
def test_an_async_edge_mixes_each_arrival_at_alpha_times_its_staleness_weight(tiny, late):
    sim, mixed, _ = traced(stragglers(tiny, edge_rounds=3, concurrency=3, edge={
        "policy": "async", "alpha": 0.9, "late": late}))
    edge = [r for r in mixed if r.node != sim.world.cloud]
    assert edge
    for r in edge:  # FedAsync's s(t - tau): one more than the versions moved
        assert r.weight == pytest.approx(0.9 / math.sqrt(2 + r.staleness))
    cancelled = sim.summary()["trainings_cancelled"] + sim.summary()["transfers_cancelled"]
    if late == "drop":  # the clients under way when an edge sends up (Async-HFL's gateways)
        assert cancelled > 0


def test_carried_updates_wait_in_the_mailbox_without_piling_up(tiny):
    """With fewer versions per cycle (E = 1) than clients training (C = 4), an edge once kept
    starting clients while carried updates waited, and its backlog grew without bound
    (staleness 73 on the quickstart). Now the clients started and not yet taken never exceed
    C: a worker waits while carried updates wait."""
    e, c = 1, 4
    tiny = stragglers(tiny, rounds=12, edge_rounds=e, concurrency=c,
                      edge={"policy": "async", "late": "carry"})
    tiny["devices"]["clients"]["jitter"] = 0.0  # no dropped or failed client: all are taken
    sim, mixed, selected = traced(tiny)
    for edge in sim.world.edge_servers:
        taken = [r.time_s for r in mixed if r.node == edge]
        started = [s.time_s for s in selected if s.server == edge]
        assert len(taken) > 2 * c
        for i, time_s in enumerate(taken):  # (a mix is recorded after its aggregation)
            assert sum(t < time_s for t in started) - (i + 1) <= c


def test_a_buffered_cloud_steps_every_k_edge_updates(tiny):
    sim, mixed, _ = traced(stragglers(tiny, cloud={"policy": "buffered", "buffer_size": 2}))
    cloud = [r for r in mixed if r.node == sim.world.cloud]
    by_version = pd.Series([r.version for r in cloud]).value_counts()
    assert (by_version == 2).all() and len(by_version) == 6
    assert all(r.weight == pytest.approx(1 / math.sqrt(1 + r.staleness)) for r in cloud)


def test_an_async_cloud_mixes_each_edge_update(tiny):
    sim, mixed, _ = traced(stragglers(tiny, cloud={"policy": "async", "alpha": 0.5,
                                                   "staleness": {"kind": "constant"}}))
    cloud = [r for r in mixed if r.node == sim.world.cloud]
    assert [r.version for r in cloud] == list(range(1, 7))
    assert {r.weight for r in cloud} == {0.5}
    assert any(r.staleness > 0 for r in cloud)  # two edges: one arrives after the other's mix


def test_a_cloud_deadline_cuts_off_the_edges_still_at_work(tiny):
    tiny = stragglers(tiny, cloud={"policy": "deadline", "deadline": "0.05 s"})
    tiny["stop"] = {"max_sim_time": "5 s"}
    sim, mixed, _ = traced(tiny)
    s = sim.summary()
    assert s["rounds"] == 0 and s["stop_reason"] == "max_sim_time"
    assert s["transfers_cancelled"] > 0 and not [r for r in mixed if r.node == sim.world.cloud]


POLICIES = [("sync", "async"), ("async", "buffered"), ("buffered", "sync"),
            ({"policy": "deadline", "deadline": "0.4 s", "late": "carry"},
             {"policy": "deadline", "deadline": "1 s", "late": "carry"})]


@pytest.mark.parametrize("edge,cloud", POLICIES)
def test_the_same_seed_gives_the_same_run(tiny, edge, cloud):
    stragglers(tiny, concurrency=2, edge=edge, cloud=cloud)
    one, two = netfl.run(tiny, write=False), netfl.run(tiny, write=False)
    drop = ("host_time_s", "host_time_s_by_part")
    assert {k: v for k, v in one.summary.items() if k not in drop} == {
        k: v for k, v in two.summary.items() if k not in drop}
    assert one.metrics.equals(two.metrics)


def test_a_policy_may_be_named_alone_and_late_belongs_to_the_edge(tiny):
    stragglers(tiny, edge="async", cloud="buffered")
    spec = netfl.load_scenario(tiny).algorithm
    assert spec.edge.policy == "async" and spec.edge.late == "drop"
    tiny["algorithm"]["cloud"] = {"policy": "async", "late": "carry"}
    with pytest.raises((ValidationError, netfl.ScenarioError), match="cloud.late"):
        netfl.load_scenario(tiny)


def test_async_hfl_is_both_tiers_async_at_its_authors_settings(tiny):
    stragglers(tiny, rounds=4, concurrency=2)
    tiny["algorithm"]["kind"] = "async-hfl"
    spec = netfl.load_scenario(tiny).algorithm
    assert (spec.edge.policy, spec.edge.alpha, spec.edge.late) == ("async", 0.9, "drop")
    assert (spec.cloud.policy, spec.cloud.alpha, spec.edge_rounds, spec.rho) == (
        "async", 0.9, 20, 0.1)
    tiny["algorithm"]["edge"] = "sync"
    with pytest.raises((ValidationError, netfl.ScenarioError), match="edge"):
        netfl.load_scenario(tiny)
    del tiny["algorithm"]["edge"]
    tiny["algorithm"]["edge_rounds"] = 3
    sim, mixed, _ = traced(tiny)
    assert sim.stop_reason == "rounds"
    edge = [r for r in mixed if r.node != sim.world.cloud]
    # the authors' code's staleness: round - download round, 1 for a fresh update
    assert all(r.weight == pytest.approx(0.9 / math.sqrt(2 + r.staleness)) for r in mixed)
    # a gateway run: it takes the cloud's model (a version: 1, 5, 9, ...), then three device
    # updates (2-4, 6-8, ...), then its model goes up
    assert edge and all(r.version % 4 != 1 for r in edge)


@pytest.mark.parametrize("edge", ["async", {"policy": "buffered", "buffer_size": 2}])
def test_an_edge_with_no_client_sits_the_round_out_instead_of_hanging(tiny, tmp_path, edge):
    """A sync cloud over async or buffered edges once waited forever on an edge nobody was
    assigned to (0 versions in 200 simulated seconds, then max_sim_time)."""
    assignment = tmp_path / "assignment.csv"
    assignment.write_text("client,edge_server\n0,0\n1,0\n2,1\n3,1\n")  # e2: nobody
    tiny["world"] = {"kind": "edge", "clients": 4, "edge_servers": 3,
                     "assignment": {"kind": "file", "path": str(assignment)}}
    tiny["algorithm"] = {"kind": "hier-async", "rounds": 3, "local_steps": 2,
                         "edge_rounds": 2, "edge": edge, "cloud": "sync"}
    tiny["stop"] = {"max_sim_time": "200 s"}
    sim, mixed, _ = traced(tiny)
    assert sim.stop_reason == "rounds" and sim.env.now < 20


def test_a_dropping_edge_takes_nothing_across_the_cloud_model_it_adopts(tiny):
    """late: drop once left the uploads that landed during an edge's last mix in its mailbox,
    and the next cycle mixed them (trained from the previous cloud model) into the new one."""
    tiny = stragglers(tiny, rounds=6, edge_rounds=3, concurrency=4,
                      edge={"policy": "async", "late": "drop"})
    tiny["devices"] = {"clients": {"flops": "0.05 GFLOPS", "jitter": 0.0},
                       "edge": {"flops": "0.001 GFLOPS"}}  # slow mixes: arrivals queue up
    sim, mixed, _ = traced(tiny)
    for es in sim.world.edge_servers:
        rows = [r for r in mixed if r.node == es]
        adopted = [r.version for r in rows]  # a cycle: adopt (v), then mixes v+1..v+3
        for r in rows:
            cycle_start = r.version - 1 - (r.version - 1) % 4 + 1  # the version adopted
            assert r.base_version >= cycle_start, (r, adopted)
    assert sim.summary()["updates_dropped_late_edge"] > 0


def test_with_an_async_cloud_an_edge_restarts_from_the_model_its_update_went_into(tiny):
    """Async-HFL's gateways download the cloud's model after it mixed their report; netfl's
    once downloaded it before, one version behind (staleness 1 every time with one edge)."""
    tiny["world"] = {"kind": "edge", "clients": 3, "edge_servers": 1}
    tiny["algorithm"] = {"kind": "async-hfl", "rounds": 5, "local_steps": 2,
                         "edge_rounds": 2, "concurrency": 2}
    sim, mixed, _ = traced(tiny)
    cloud = [r for r in mixed if r.node == sim.world.cloud]
    assert [r.base_version for r in cloud] == [0, 1, 2, 3, 4]
    assert all(r.staleness == 0 for r in cloud)
