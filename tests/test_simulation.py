"""Whole runs: determinism, the results directory, interruption, the Python API."""

import json

import pandas as pd
import pytest

import netfl
from netfl.simulation import Simulation


def real_digits(tiny, **algorithm):
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["devices"]["clients"] = {"preset": "raspberry-pi-4", "jitter": 0.2,
                                  "stragglers": {"fraction": 0.3, "slowdown": 3}}
    tiny["devices"]["clients"]["availability"] = {"kind": "random", "mean_up": "0.3 s",
                                                  "mean_down": "0.05 s"}
    tiny["links"]["access"]["loss"] = {"kind": "retransmit", "probability": 0.1}
    tiny["data"]["partition"] = {"kind": "dirichlet", "alpha": 0.5}
    tiny["algorithm"].update(rounds=4, lr=0.3, **algorithm)
    return tiny


def comparable(summary):
    return {k: v for k, v in summary.items() if not k.startswith("host_time_s")}


@pytest.mark.parametrize("kind", ["hier-fedavg", "fedavg", "group-fel"])
def test_same_seed_same_results_other_seed_differs(tiny, tmp_path, kind):
    scenario = real_digits(tiny, kind=kind)
    a = netfl.run(scenario, out_dir=tmp_path, run_id="a")
    b = netfl.run(scenario, out_dir=tmp_path, run_id="b")
    c = netfl.run(scenario, overrides=["seed=2"], out_dir=tmp_path, run_id="c")
    sa, sb, sc = (json.loads((r.path / "summary.json").read_text()) for r in (a, b, c))
    assert comparable(sa) == comparable(sb)
    assert (a.path / "metrics.csv").read_bytes() == (b.path / "metrics.csv").read_bytes()
    assert comparable(sa) != comparable(sc)
    assert sa["dropouts"] > 0 and sa["retransmissions"] > 0  # the random parts did happen
    assert sa["host_float_kernels"].startswith("native (")  # torch's own choice by default


def test_results_directory(tiny, tmp_path):
    tiny["stop"] = {"target_accuracy": 0.3}
    tiny["output"] = {"plots": True, "trace": True}
    result = netfl.run(tiny, out_dir=tmp_path, run_id="r1")
    assert result.path == tmp_path / "tiny" / "r1"
    assert sorted(p.name for p in result.path.iterdir()) == [
        "accuracy_vs_bytes.png", "accuracy_vs_time.png", "events.parquet", "links.csv",
        "links.parquet", "links.png", "metrics.csv", "metrics.parquet", "participation.csv",
        "participation.parquet", "partition.csv", "partition.png", "rounds.csv",
        "rounds.parquet", "rounds.png", "scenario.yaml", "summary.json"]
    rounds = pd.read_parquet(result.path / "rounds.parquet")
    pd.testing.assert_frame_equal(rounds, pd.read_csv(result.path / "rounds.csv"),
                                  check_dtype=False)
    partition = pd.read_csv(result.path / "partition.csv")
    assert len(partition) == 6 and set(partition["edge_server"]) == {"e0", "e1"}
    labels = [c for c in partition.columns if c.startswith("label_")]
    assert (partition[labels].sum(axis=1) == partition["samples"]).all()
    summary = json.loads((result.path / "summary.json").read_text())
    for key in ("sim_time_s", "rounds", "final_accuracy", "target_accuracy", "time_to_target_s",
                "bytes_total", "bytes_by_tag", "bytes_to_target", "transfers_failed",
                "dropouts", "host_time_s", "seed", "netfl_version"):
        assert key in summary
    assert summary["host_float_kernels"] is None  # the fake model runs no float kernel
    metrics = pd.read_csv(result.path / "metrics.csv")
    assert {"sim_time_s", "round", "accuracy", "loss", "bytes_total"} <= set(metrics.columns)
    events = pd.read_parquet(result.path / "events.parquet")
    assert {"transfer_start", "transfer_end", "train_start", "train_end", "aggregate",
            "evaluation"} <= set(events["kind"])
    reloaded = netfl.load_scenario(result.path / "scenario.yaml")
    assert reloaded.model_dump() == result.scenario.model_dump()


def test_an_interrupted_run_writes_nothing(tiny, tmp_path, monkeypatch):
    def interrupt(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Simulation, "run", interrupt)
    with pytest.raises(KeyboardInterrupt):
        netfl.run(tiny, out_dir=tmp_path)
    assert not (tmp_path / "tiny").exists() or not any((tmp_path / "tiny").iterdir())


def test_api_accepts_a_path_with_overrides(tmp_path):
    result = netfl.run("scenarios/quickstart.yaml", overrides=["algorithm.rounds=1",
                                                                "model.hidden=[8]"], write=False)
    assert result.summary["rounds"] == 1 and result.path is None
    assert isinstance(result, netfl.RunResult)


def test_the_model_must_fit_in_client_memory(tiny):
    tiny["model"]["params"] = 10**9
    tiny["devices"]["clients"] = {"flops": "1 GFLOPS", "memory": "1 GB"}
    with pytest.raises(netfl.ScenarioError, match="devices.clients.memory"):
        netfl.run(tiny, write=False)


def test_results_do_not_depend_on_the_process_hash_seed(tiny, tmp_path):
    """Iteration over sets of node names would differ between processes; make sure none leaks."""
    import subprocess
    import sys

    scenario = real_digits(tiny, kind="fedavg")
    scenario["world"].update(edge_servers=3, topology={"kind": "random", "extra_edges": 1},
                             cloud=[0])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    code = ("import json, sys, netfl; r = netfl.run(json.load(open(sys.argv[1])), write=False); "
            "s = r.summary; s.pop('host_time_s'); s.pop('host_time_s_by_part'); "
            "print(json.dumps(s, sort_keys=True))")
    outputs = [subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                              text=True, check=True, env={"PYTHONHASHSEED": seed,
                                                          "PATH": "/usr/bin:/bin"}).stdout
               for seed in ("1", "2")]
    assert outputs[0] == outputs[1]


def test_overrides_apply_to_a_loaded_scenario_as_to_its_file():
    scenario = netfl.load_scenario("scenarios/quickstart.yaml")
    result = netfl.run(scenario, overrides=["algorithm.kind=fedavg", "algorithm.rounds=1",
                                            "model.hidden=[8]"], write=False)
    assert result.summary["algorithm"] == "fedavg" and result.summary["rounds"] == 1


def test_link_names_agree_between_the_network_and_the_summary(tiny):
    simulation = Simulation(netfl.load_scenario(tiny))
    simulation.run()
    names = {link.name for link in simulation.network.links()}
    assert set(simulation.summary()["bytes_by_link"]) <= names
    assert "cloud-e0" in names


def test_a_run_raises_the_collector_thresholds_and_restores_them(tiny):
    """A run's in-flight objects outlive the young generation by the thousand: with the
    default thresholds the collector took 45% of a 10,000-client run."""
    import gc

    from netfl.simulation import RUN_GC_THRESHOLDS

    before = gc.get_threshold()
    simulation = Simulation(netfl.load_scenario(tiny))
    seen = []

    def probe():
        seen.append(gc.get_threshold())
        yield simulation.env.timeout(0)

    simulation.env.process(probe())
    simulation.run()
    assert seen == [RUN_GC_THRESHOLDS]
    assert gc.get_threshold() == before


def diverging(tiny, **stop):
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    tiny["algorithm"].update(lr=1e30, rounds=6, eval_every=100)
    tiny["stop"] = stop
    return tiny


def test_a_model_that_stops_being_finite_stops_the_run_as_diverged(tiny):
    """A diverged model must not write a blank loss and chance accuracy with exit 0: it is
    caught on the first non-finite model, whatever eval_every says."""
    result = netfl.run(diverging(tiny), write=False)
    assert result.summary["stop_reason"] == "diverged"
    assert result.summary["diverged_round"] == result.summary["rounds"] == 1
    assert result.metrics["loss"].isna().iloc[-1]


def test_a_scenario_may_tolerate_divergence(tiny):
    result = netfl.run(diverging(tiny, tolerate_divergence=True), write=False)
    assert result.summary["stop_reason"] == "rounds" and result.summary["rounds"] == 6
    assert result.summary["diverged_round"] == 1
    assert list(result.metrics["round"]) == [0, 6]  # the rows it would have had anyway


def test_the_cli_exits_1_on_divergence_and_keeps_the_results(tiny, tmp_path):
    from typer.testing import CliRunner

    from netfl.cli import app

    path = tmp_path / "s.json"
    path.write_text(json.dumps(diverging(tiny)))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "diverged" in result.output
    [summary] = (tmp_path / "out").rglob("summary.json")
    assert json.loads(summary.read_text())["stop_reason"] == "diverged"


def test_more_clients_than_memory_holds_is_named_before_building(tiny, monkeypatch):
    """world.clients: 1000000000 ran out of memory inside the world's construction."""
    import netfl.simulation

    monkeypatch.setattr(netfl.simulation, "available_memory_bytes", lambda: 10**9)
    tiny["world"]["clients"] = 100_000
    monkeypatch.setattr(netfl.simulation, "build_world",
                        lambda *a: pytest.fail("the world was built"))
    with pytest.raises(netfl.ScenarioError, match=r"world.clients = 100000: 100,000 clients "
                       r"need about 1.6 GB"):
        netfl.run(tiny, write=False)


def test_a_model_larger_than_memory_is_named_before_allocating(tiny, monkeypatch):
    """A hidden layer of 1e9 units asked torch for 256 GB and failed deep inside it."""
    import netfl.sim.cores

    monkeypatch.setattr(netfl.sim.cores, "available_memory_bytes", lambda: 10**9)
    tiny["model"] = {"kind": "mlp", "hidden": [10**9]}
    with pytest.raises(netfl.ScenarioError, match=r"model.hidden = \[1000000000\]: a model of "
                       r"75,000,000,010 parameters"):
        netfl.run(tiny, write=False)


def test_the_partition_table_is_linear_in_clients(tiny, monkeypatch):
    """It read world.client_edge (a new dict of every client) once per client: 13 s of a
    20 s run at 10,000 clients, about 20 minutes at 100,000."""
    from netfl.world.base import World

    simulation = Simulation(netfl.load_scenario(tiny), with_model=False)
    monkeypatch.setattr(World, "client_edge", property(
        lambda self: pytest.fail("client_edge builds a dict of every client")))
    table = simulation.partition_table()
    assert list(table["edge_server"]) == [simulation.world.edge_of(c)
                                          for c in simulation.world.clients]


def test_a_run_whose_rounds_never_end_stops_as_stalled(tiny):
    """A run that makes no progress for stop.stall_after of simulated time stops with
    stop_reason 'stalled' instead of running forever (an asynchronous plug-in once ran for ever
    with the core link down)."""
    import netfl
    from netfl.algorithms.fedavg import FedAvg

    class Waits(FedAvg):
        def run(self):
            w = self.trainer.init_params()
            self.evaluate(w, 0)
            while True:  # a loop waiting for updates that never come
                yield self.env.timeout(60.0)

    tiny["stop"] = {"stall_after": "2 h"}
    scenario = netfl.load_scenario(tiny, ["algorithm.kind=fedavg"])
    from netfl.simulation import Simulation

    sim = Simulation(scenario)
    sim.algorithm.__class__ = Waits
    sim.run()
    assert sim.stop_reason == "stalled" and sim.env.now == pytest.approx(7200.0)
    # the default (1 day) leaves an ordinary run alone
    assert netfl.run(tiny, write=False).summary["stop_reason"] == "rounds"
