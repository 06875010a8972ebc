"""A run's energy: each term against its closed form from the run's own times and events; a
run without an energy section unchanged."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from netfl.errors import ScenarioError
from netfl.runner import run_scenario
from netfl.scenario import load_scenario
from tests.conftest import TINY


def scenario(energy: dict | None = None, **devices) -> dict:
    data = copy.deepcopy(TINY)
    data["stop"] = {"target_accuracy": 0.3}
    data["output"] = {"plots": False, "trace": True}
    data["devices"] = {"clients": {"flops": "1 GFLOPS", "power": {"active": "2 W",
                                                                    "idle": "500 mW"}},
                       "edge": {"flops": "10 GFLOPS", "power": {"active": "10 W"}},
                       "cloud": {"preset": "server-gpu"}} | devices
    if energy is not None:
        data["energy"] = energy
    return data


def run(data: dict, tmp_path):
    return run_scenario(load_scenario(data), out_dir=tmp_path)


def test_without_an_energy_section_nothing_changes(tmp_path):
    plain = run(scenario(), tmp_path / "a")
    counted = run(scenario({"radios": {"clients": {"tx": "1 W", "rx": "0.5 W"}}}),
                  tmp_path / "b")
    assert not any(k.startswith("energy") for k in plain.summary)
    assert "energy_j" not in plain.metrics
    same = {k: v for k, v in plain.summary.items() if not k.startswith("host_time")}
    other = {k: v for k, v in counted.summary.items()
             if not k.startswith(("host_time", "energy"))}
    assert same == other
    pd.testing.assert_frame_equal(plain.metrics, counted.metrics.drop(columns="energy_j"))


def test_compute_and_aggregation_energy_is_power_times_time(tmp_path):
    result = run(scenario({}), tmp_path)
    s = result.summary
    compute = 2.0 * s["compute_time_s_by_tier"]["client"]
    aggregation = sum(power * s["aggregation_time_s_by_tier"].get(tier, 0.0)
                      for tier, power in (("edge", 10.0), ("cloud", 300.0)))
    assert s["energy_j_by_activity"]["compute"] == pytest.approx(compute)
    assert s["energy_j_by_activity"]["aggregation"] == pytest.approx(aggregation)
    assert s["energy_j_total"] == pytest.approx(compute + aggregation)
    assert "idle" not in s["energy_j_by_activity"]
    assert s["energy_j_by_tier"]["client"] == pytest.approx(compute)


def test_radio_energy_is_power_times_airtime_of_access_hops(tmp_path):
    result = run(scenario({"radios": {"clients": {"tx": "1 W", "rx": "0.5 W"},
                                      "edge": {"tx": "4 W", "rx": "3 W"}}}), tmp_path)
    events = result.events
    hops = events[events["kind"] == "hop_end"]
    clients = {f"c{i}" for i in range(TINY["world"]["clients"])}
    access = hops[hops["u"].isin(clients) | hops["v"].isin(clients)]
    airtime = access["time_s"] - access["start_s"]
    up = airtime[access["u"].isin(clients)].sum()
    down = airtime[access["v"].isin(clients)].sum()
    by = result.summary["energy_j_by_activity"]
    assert by["radio_tx"] == pytest.approx(1.0 * up + 4.0 * down)
    assert by["radio_rx"] == pytest.approx(0.5 * down + 3.0 * up)
    assert up > 0 and down > 0


def test_lte_radio_energy_follows_the_throughput_model(tmp_path):
    """Huang et al.'s model per access hop of a client: alpha x its bits (Mbit) + beta x its
    airtime, alpha_up where the client sends, alpha_down where it receives."""
    lte = {"kind": "lte-throughput", "alpha_up_mw_per_mbps": 400.0,
           "alpha_down_mw_per_mbps": 50.0, "beta": "1.2 W"}
    result = run(scenario({"radios": {"clients": lte}}), tmp_path)
    hops = result.events[result.events["kind"] == "hop_end"]
    clients = {f"c{i}" for i in range(TINY["world"]["clients"])}
    up, down = hops[hops["u"].isin(clients)], hops[hops["v"].isin(clients)]

    def joules(hops, alpha_w_per_mbps):
        return (alpha_w_per_mbps * hops["wire_bytes"] * 8 / 1e6
                + 1.2 * (hops["time_s"] - hops["start_s"])).sum()

    by = result.summary["energy_j_by_activity"]
    assert by["radio_tx"] == pytest.approx(joules(up, 0.4))
    assert by["radio_rx"] == pytest.approx(joules(down, 0.05))
    assert len(up) and len(down)


def test_idle_energy_and_the_snapshots(tmp_path):
    data = scenario({"idle": True})
    data["output"]["plots"] = True
    result = run(data, tmp_path)
    s = result.summary
    table = pd.read_csv(result.path / "energy.csv")
    clients = table[table["tier"] == "client"]
    busy = clients["compute_j"] / 2.0
    assert clients["idle_j"].to_numpy() == pytest.approx(
        (0.5 * (s["sim_time_s"] - busy)).to_numpy())
    edge = table[table["tier"] == "edge"]
    assert (edge["idle_j"] == 0).all()  # no idle figure given: none charged
    assert s["energy_j_total"] == pytest.approx(table["total_j"].sum())
    energy = result.metrics["energy_j"]
    assert energy.is_monotonic_increasing and energy.iloc[-1] <= s["energy_j_total"] + 1e-9
    assert 0 < s["energy_to_target_j"] <= s["energy_j_total"] + 1e-9
    rounds = pd.read_csv(result.path / "rounds.csv")
    assert rounds["energy_j"].sum() <= s["energy_j_total"] + 1e-9
    assert (result.path / "accuracy_vs_energy.png").is_file()


def test_a_device_without_a_power_figure_is_named(tmp_path):
    data = scenario({}, edge={"preset": "edge-server-cpu"})
    with pytest.raises(ScenarioError, match="devices.edge.power"):
        run(data, tmp_path)
