"""FedAvg and hierarchical FedAvg on the fake trainer: bytes, hops, timing and participation."""

import copy
import math

import pandas as pd
import pytest

from netfl import run
from netfl.learn.fake import FakeTrainer
from netfl.sim.trace import TrainStart

PAYLOAD = 4 * 25000  # the tiny scenario's fake model: 25,000 params, float32


@pytest.fixture
def rates(monkeypatch) -> list:
    """The learning rate of every local_train call of the fake trainer, in call order."""
    seen = []
    original = FakeTrainer.local_train

    def recording(self, params, clients, steps, lr, batch_size, **options):
        seen.append(lr)
        return original(self, params, clients, steps, lr, batch_size, **options)

    monkeypatch.setattr(FakeTrainer, "local_train", recording)
    return seen


def test_fedavg_bytes_and_hops(tiny):
    tiny["algorithm"] = {"kind": "fedavg", "rounds": 3}
    s = run(tiny, write=False).summary
    n = tiny["world"]["clients"]
    assert s["bytes_by_tag"] == {"client->cloud": 3 * n * PAYLOAD, "cloud->client": 3 * n * PAYLOAD}
    assert s["bytes_hop_weighted"] == 2 * s["bytes_total"]  # client - edge - cloud
    assert s["rounds"] == 3 and s["stop_reason"] == "rounds"


def test_hier_fedavg_bytes(tiny):
    tiny["algorithm"].update(rounds=2, edge_rounds=3)
    s = run(tiny, write=False).summary
    n, m = tiny["world"]["clients"], tiny["world"]["edge_servers"]
    assert s["bytes_by_tag"] == {
        "edge->client": 2 * 3 * n * PAYLOAD, "client->edge": 2 * 3 * n * PAYLOAD,
        "cloud->edge": 2 * m * PAYLOAD, "edge->cloud": 2 * m * PAYLOAD}
    assert s["bytes_hop_weighted"] == s["bytes_total"]


def test_hier_fedavg_round_time_matches_the_closed_form(tiny):
    tiny["world"] = {"kind": "edge", "clients": 2, "edge_servers": 1}
    tiny["links"] = {"access": {"rate": "10 Mbps", "delay": "5 ms"},
                     "core": {"rate": "100 Mbps", "delay": "20 ms"}, "transport": {"kind": "fluid"}}
    tiny["devices"] = {"clients": {"flops": "1 GFLOPS"}, "edge": {"flops": "1 GFLOPS"},
                       "cloud": {"flops": "10 GFLOPS"}}
    tiny["algorithm"].update(rounds=1, edge_rounds=2, local_steps=2, batch_size=16)
    result = run(tiny, write=False)
    bits = PAYLOAD * 8
    core = bits / 100e6 + 0.020
    access = bits / 10e6 + 0.005
    train = 1e5 * 3 * (2 * 16) / 1e9
    edge_agg = 2 * 25000 * 2 / 1e9
    cloud_agg = 2 * 25000 * 1 / 10e9
    expected = core + 2 * (access + train + access + edge_agg) + core + cloud_agg
    assert result.metrics["sim_time_s"].iloc[-1] == pytest.approx(expected, rel=1e-9)


def test_fedavg_samples_clients_per_round(tiny):
    tiny["algorithm"] = {"kind": "fedavg", "rounds": 4, "clients_per_round": 2}
    result = run(tiny, overrides=["output.trace=true"], write=False)
    starts = result.events[result.events["kind"] == TrainStart.kind]
    assert starts.groupby("round").size().tolist() == [2, 2, 2, 2]
    assert starts["node"].nunique() > 2  # different clients in different rounds


def test_a_client_that_is_always_down_contributes_nothing(tiny, tmp_path):
    trace = tmp_path / "avail.csv"
    trace.write_text("client,down_s,up_s\n0,0,1000000\n")
    tiny["devices"]["clients"]["availability"] = {"kind": "trace", "path": str(trace)}
    tiny["algorithm"].update(rounds=2, edge_rounds=1)
    result = run(tiny, overrides=["output.trace=true"], write=False)
    events = result.events
    assert "c0" not in set(events.loc[events["kind"] == TrainStart.kind, "node"])
    assert result.summary["transfers_failed"] == 2  # the two downloads to c0
    assert result.summary["dropouts"] == 1


def test_a_drop_during_training_voids_the_update(tiny, tmp_path):
    trace = tmp_path / "avail.csv"
    # c0 drops for 1 ms while it trains in round 1 (download ends at ~0.05 s, training is ~2 s)
    tiny["devices"]["clients"]["flops"] = "1 MFLOPS"
    trace.write_text("client,down_s,up_s\n0,0.5,0.501\n")
    tiny["devices"]["clients"]["availability"] = {"kind": "trace", "path": str(trace)}
    tiny["algorithm"].update(rounds=1, edge_rounds=1, local_steps=1)
    s = run(tiny, write=False).summary
    assert s["updates_lost_in_training"] == 1
    n = tiny["world"]["clients"]
    assert s["bytes_by_tag"]["client->edge"] == (n - 1) * PAYLOAD


def test_stop_at_target(tiny):
    tiny["algorithm"]["rounds"] = 500
    tiny["stop"] = {"target_accuracy": 0.5}
    s = run(tiny, write=False).summary
    assert s["stop_reason"] == "target_accuracy" and s["final_accuracy"] >= 0.5
    assert s["rounds"] == s["rounds_to_target"] < 500
    assert s["bytes_to_target"] == s["bytes_total"]


def test_keep_going_after_the_target(tiny):
    tiny["algorithm"]["rounds"] = 30
    tiny["stop"] = {"target_accuracy": 0.5, "at_target": False}
    s = run(tiny, write=False).summary
    assert s["rounds"] == 30 and s["rounds_to_target"] < 30
    assert s["bytes_to_target"] < s["bytes_total"]


def test_stop_at_max_sim_time(tiny):
    tiny["algorithm"]["rounds"] = 10_000
    tiny["stop"] = {"max_sim_time": "3 s"}
    result = run(tiny, write=False)
    assert result.summary["stop_reason"] == "max_sim_time"
    assert result.summary["sim_time_s"] == 3.0
    assert result.metrics["sim_time_s"].max() <= 3.0


def test_eval_every(tiny):
    tiny["algorithm"].update(rounds=7, eval_every=3)
    assert run(tiny, write=False).metrics["round"].tolist() == [0, 3, 6, 7]


def _all_down_until(tmp_path, tiny, until_s):
    trace = tmp_path / "avail.csv"
    rows = "".join(f"{i},0,{until_s}\n" for i in range(tiny["world"]["clients"]))
    trace.write_text("client,down_s,up_s\n" + rows)
    tiny["devices"]["clients"]["availability"] = {"kind": "trace", "path": str(trace)}


@pytest.mark.parametrize("kind", ["fedavg", "hier-fedavg"])
def test_rounds_without_clients_wait_instead_of_passing_in_no_time(tmp_path, tiny, kind):
    _all_down_until(tmp_path, tiny, 10)
    tiny["algorithm"] = {"kind": kind, "rounds": 20, "idle_wait": "2 s", "local_steps": 1}
    s = run(tiny, write=False).summary
    assert s["rounds"] == 20
    assert s["sim_time_s"] > 10
    assert s["final_accuracy"] > 0.2  # rounds after the clients came back did train
    assert s["rounds_without_updates"] >= 5


def test_an_edge_whose_clients_all_failed_sits_the_cloud_round_out(tmp_path, tiny):
    trace = tmp_path / "avail.csv"  # e0 serves c0..c2: all down for the whole run
    trace.write_text("client,down_s,up_s\n0,0,1e6\n1,0,1e6\n2,0,1e6\n")
    tiny["devices"]["clients"]["availability"] = {"kind": "trace", "path": str(trace)}
    tiny["algorithm"].update(rounds=2, edge_rounds=1)
    result = run(tiny, overrides=["output.trace=true"], write=False)
    events = result.events
    cloud_aggs = events[(events["kind"] == "aggregate") & (events["level"] == "cloud")]
    assert cloud_aggs["n_updates"].tolist() == [1, 1]
    assert result.summary["bytes_by_tag"]["edge->cloud"] == 2 * PAYLOAD  # only e1 uploads


def _hier(tiny, rounds, **algorithm):
    tiny["world"] = {"kind": "edge", "clients": 12, "edge_servers": 4}
    tiny["algorithm"].update(rounds=rounds, **algorithm)
    return run(tiny, overrides=["output.trace=true"], write=False)


def test_hier_fedavg_samples_s_edges_and_p_clients_per_edge_round(tiny):
    result = _hier(tiny, 6, edge_rounds=3, edges_per_round=2, clients_per_round=2)
    events = result.events
    starts = events[events["kind"] == TrainStart.kind]
    assert starts.groupby("round").size().tolist() == [2 * 3 * 2] * 6  # S x R x P
    edge_aggs = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert edge_aggs.groupby("round")["node"].nunique().tolist() == [2] * 6
    assert (edge_aggs["n_updates"] == 2).all()
    assert result.summary["bytes_by_tag"]["cloud->edge"] == 6 * 2 * PAYLOAD
    assert edge_aggs["node"].nunique() > 2  # different edges in different rounds
    assert starts["node"].nunique() > 8  # and different clients


def test_hier_fedavg_edges_are_sampled_uniformly_without_replacement(tiny):
    tiny["world"] = {"kind": "edge", "clients": 8, "edge_servers": 4}
    tiny["algorithm"].update(rounds=600, edge_rounds=1, local_steps=1, edges_per_round=2)
    events = run(tiny, overrides=["output.trace=true"], write=False).events
    ups = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert (ups.groupby("round")["node"].nunique() == 2).all()
    counts = ups["node"].value_counts()
    assert len(counts) == 4 and counts.min() > 0.85 * 300 and counts.max() < 1.15 * 300


def test_hier_fedavg_partial_participation_is_deterministic(tiny):
    def nodes(scenario):
        events = _hier(copy.deepcopy(scenario), 4, edges_per_round=2,
                       clients_per_round=1).events
        return events.loc[events["kind"] == TrainStart.kind, ["time_s", "node"]]
    pd.testing.assert_frame_equal(nodes(tiny), nodes(tiny))


@pytest.mark.parametrize("kind", ["hier-fedavg", "hier-local-qsgd"])
def test_hier_fedavg_follows_the_schedule_over_the_edge_rounds(tiny, rates, kind):
    seen = rates
    tiny["world"] = {"kind": "edge", "clients": 2, "edge_servers": 1}
    tiny["algorithm"] = {"kind": kind, "rounds": 2, "edge_rounds": 4, "local_steps": 1,
                         "schedule": {"kind": "inv-sqrt"}}
    run(tiny, write=False)
    per_cloud_round = [1 / (4 * math.sqrt(k + 1)) for k in range(4)]  # 1/(K sqrt(k+1)), K = 4
    assert seen == pytest.approx(per_cloud_round * 2)  # k restarts every cloud round


def test_hier_fedavg_keeps_lr_without_a_schedule(tiny, monkeypatch):
    seen = []
    original = FakeTrainer.local_train
    monkeypatch.setattr(FakeTrainer, "local_train",
                        lambda self, p, c, s, lr, b, **o: seen.append(lr) or original(
                            self, p, c, s, lr, b, **o))
    tiny["algorithm"].update(rounds=2, edge_rounds=3, lr=0.07)
    run(tiny, write=False)
    assert seen == [0.07] * (2 * 3 * 2)  # rounds x edge rounds x edges


def test_the_paper_hier_local_qsgd_scenario_takes_the_papers_schedule_and_t():
    from netfl import load_scenario
    spec = load_scenario("scenarios/fedchs/paper-hier-local-qsgd.yaml").algorithm
    assert (spec.rounds, spec.edge_rounds, spec.local_steps) == (4000, 20, 5)  # T, K, B.1
    assert spec.schedule.kind == "inv-sqrt" and spec.schedule.scale == 1.0


@pytest.mark.parametrize("kind", ["fedavg", "fedavg-qsgd"])
def test_fedavg_walks_the_schedule_one_communication_per_round(tiny, rates, kind):
    seen = rates
    tiny["algorithm"] = {"kind": kind, "rounds": 7, "local_steps": 1,
                         "schedule": {"kind": "inv-sqrt"}, "schedule_period": 3}
    run(tiny, write=False)
    # k = (t - 1) mod K, K = 3: rounds 1..7 -> k = 0 1 2 0 1 2 0
    assert seen == pytest.approx([1 / (3 * math.sqrt(k % 3 + 1)) for k in range(7)])


def test_the_fed_chs_papers_fedavg_scenarios_take_its_schedule():
    from netfl import load_scenario
    for name in ("paper-fedavg", "paper-fedavg-qsgd"):
        spec = load_scenario(f"scenarios/fedchs/{name}.yaml").algorithm
        assert (spec.rounds, spec.local_steps, spec.schedule_period) == (4000, 1, 20), name
        assert spec.schedule.kind == "inv-sqrt", name
