"""Clients' batteries: the crossing time against battery_step, the policies' drops at their
hand-computed moments, a hop's radio energy, chargers, and a run's battery against its energy
meter (two independent accounts of the same joules)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from netfl.compute.client_battery import ClientBatteries
from netfl.compute.energy import BatterySpec, FixedRadio, battery_step, time_to_charge_s
from netfl.compute.jobs import JobSlots
from netfl.errors import ScenarioError
from netfl.scenario import load_scenario
from netfl.scenario.device_parts import ClientBattery
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import HopEnd, TraceBus
from tests.conftest import TINY
from tests.results.test_energy import run
from tests.results.test_energy import scenario as energy_scenario

# ------------------------------------------------------------------ time_to_charge_s (pure)


def test_time_to_charge_by_hand():
    spec = BatterySpec(10.0, max_depth_of_discharge=0.8, eta_charge=0.9, eta_discharge=0.8)
    # 10 Wh -> 5 Wh at 6 W out, 1 W in: 5 Wh x 0.8 / 5 W = 0.8 h
    assert time_to_charge_s(spec, 10.0, 5.0, 1.0, 6.0) == pytest.approx(0.8 * 3600)
    # 3 Wh -> 9 Wh at 5 W net in: 6 Wh / (5 W x 0.9) = 1.333 h
    assert time_to_charge_s(spec, 3.0, 9.0, 7.0, 2.0) == pytest.approx(6 / 4.5 * 3600)
    assert time_to_charge_s(spec, 5.0, 5.0, 0.0, 1.0) == 0.0
    assert time_to_charge_s(spec, 5.0, 6.0, 1.0, 2.0) == math.inf  # draining, not charging
    assert time_to_charge_s(spec, 5.0, 1.0, 0.0, 2.0) == math.inf  # below the 2 Wh floor
    assert time_to_charge_s(spec, 5.0, 11.0, 9.0, 0.0) == math.inf  # above the capacity


@given(capacity=st.floats(1, 100), start=st.floats(0, 1), target=st.floats(0, 1),
       source=st.floats(0, 50), load=st.floats(0, 50), eta_c=st.floats(0.5, 1),
       eta_d=st.floats(0.5, 1))
def test_battery_step_over_the_crossing_time_lands_on_the_target(capacity, start, target,
                                                                   source, load, eta_c, eta_d):
    spec = BatterySpec(capacity, 1.0, eta_c, eta_d)
    wait = time_to_charge_s(spec, start * capacity, target * capacity, source, load)
    if math.isfinite(wait):
        after = battery_step(spec, start * capacity, source, load, wait).charge_wh
        assert after == pytest.approx(target * capacity, rel=1e-9, abs=1e-9 * capacity)


# -------------------------------------------------------------------- one battery by hand


class Bench:
    """One client ``c0`` on a battery (36 J = 0.01 Wh, 5 W active, 1 W idle), its job slot and
    the policy's verdicts as (time, allowed)."""

    def __init__(self, radio=None, **battery):
        self.env, self.trace = simpy.Environment(), TraceBus()
        self.verdicts: list[tuple[float, bool]] = []
        spec = ClientBattery.model_validate({"capacity": "36 J"} | battery)
        self.batteries = ClientBatteries(
            self.env, spec, ["c0"], {"c0": (5.0, 1.0)}, radio, RandomStreams(1), self.trace,
            lambda node, allowed: self.verdicts.append((self.env.now, allowed)))
        self.slots = JobSlots(self.env)
        self.batteries.start()

    def job(self, at_s: float, duration_s: float):
        def process():
            yield self.env.timeout(at_s)
            yield from self.batteries.run("c0", duration_s, self.slots)
        self.env.process(process())


def test_threshold_drops_at_the_crossing_and_comes_back_on_the_charger():
    # 36 J from full; a 10 s job at 5 W reaches 50% (18 J spent) at 3.6 s
    bench = Bench(policy={"kind": "threshold", "min_charge": 0.5, "resume_charge": 0.6},
                  charging={"kind": "trace", "path": _plug_file(20.0, 100.0), "power": "3 W"},
                  eta_charge=1.0)
    bench.job(0.0, 10.0)
    bench.env.run(until=100.0)
    assert bench.verdicts[0] == (pytest.approx(3.6), False)
    # the job goes on (the fleet voids it): the battery is empty at 7.2 s, the rest unmet;
    # plugged at 20 s: 3 W in, 1 W idle out: +2 W; 60% (21.6 J) from 0 J at 10.8 s -> 30.8 s
    assert bench.verdicts[1] == (pytest.approx(30.8), True)
    state = bench.batteries.states["c0"]
    assert state.unmet_wh * 3600 == pytest.approx(5.0 * 2.8 + 1.0 * 10.0)  # 7.2-10 s, 10-20 s
    assert bench.batteries.charge_wh("c0") * 3600 == pytest.approx(36.0)  # full at 38 s, kept


def _plug_file(start: float, end: float, client: int = 0) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(f"client,plug_s,unplug_s\n{client},{start},{end}\n")
    return f.name


def test_charging_policy_follows_the_charger():
    bench = Bench(policy={"kind": "charging"},
                  charging={"kind": "trace", "path": _plug_file(5.0, 12.0), "power": "2 W"})
    bench.env.run(until=30.0)
    assert bench.verdicts == [(0.0, False), (5.0, True), (12.0, False)]
    table = bench.batteries.table()[0]
    assert table["plugged_s"] == pytest.approx(7.0)
    assert table["policy_down_s"] == pytest.approx(23.0)
    # 1 W idle: 31 J at 5 s; plugged, (2 - 1) W x 0.9 stored: full at 10.56 s and kept full
    # until 12 s; then 18 s at 1 W: 18 J
    assert table["final_charge"] == pytest.approx(0.5)


def test_a_hops_radio_energy_is_drawn_at_its_end_and_can_cross_the_threshold():
    bench = Bench(radio=FixedRadio(2.0, 1.0), policy={"kind": "threshold", "min_charge": 0.5})
    bench.trace.emit(_hop("c0", "e0", 9.0))
    state = bench.batteries.states["c0"]
    assert state.radio_wh * 3600 == pytest.approx(18.0)  # 2 W x 9 s of airtime
    assert bench.verdicts == [(0.0, False)]  # 36 - 18 = 18 J: at 50%
    bench.trace.emit(_hop("e0", "c0", 4.0))
    assert state.radio_wh * 3600 == pytest.approx(22.0)  # + 1 W x 4 s received


def _hop(u: str, v: str, airtime_s: float) -> HopEnd:
    return HopEnd(time_s=airtime_s, transfer_id=1, tag="update", u=u, v=v, link=f"{u}-{v}",
                  start_s=0.0, wire_bytes=1, rate_share=1.0)


def test_ignore_never_changes_availability():
    bench = Bench(policy={"kind": "ignore"})
    bench.job(0.0, 20.0)
    bench.env.run(until=50.0)
    assert bench.verdicts == []
    assert bench.batteries.summary()["client_battery"]["unmet_wh"] * 3600 == pytest.approx(
        5.0 * 20 + 1.0 * 30 - 36.0)


# ----------------------------------------------------------------------------- whole runs


def scenario(battery: dict | None, energy: dict | None = None) -> dict:
    """test_energy's scenario (2 W active and 0.5 W idle clients), on batteries."""
    data = energy_scenario(energy)
    if battery is not None:
        data["devices"]["clients"]["battery"] = battery
    return data


def test_a_battery_under_ignore_changes_no_result(tmp_path):
    plain = run(scenario(None), tmp_path / "a")
    tracked = run(scenario({"capacity": "1 Wh", "initial": [0.2, 0.9]}), tmp_path / "b")
    same = {k: v for k, v in plain.summary.items() if not k.startswith("host_time")}
    other = {k: v for k, v in tracked.summary.items()
             if not k.startswith("host_time") and k != "client_battery"}
    assert same == other
    pd.testing.assert_frame_equal(plain.metrics, tracked.metrics)
    assert (tracked.path / "battery.csv").is_file()


def test_the_batteries_give_what_the_energy_meter_counts(tmp_path):
    """Without a charger and above the floor, what each battery lost (x eta_discharge) is that
    client's idle, compute and radio joules in energy.csv."""
    radios = {"clients": {"tx": "1.5 W", "rx": "0.7 W"}}
    result = run(scenario({"capacity": "1 Wh", "eta_discharge": 0.8},
                          {"idle": True, "radios": radios}), tmp_path)
    energy = pd.read_csv(result.path / "energy.csv").set_index("node")
    battery = pd.read_csv(result.path / "battery.csv").set_index("client")
    lost_j = (battery["initial_charge"] - battery["final_charge"]) * 3600 * 0.8
    assert lost_j.to_numpy() == pytest.approx(energy.loc[battery.index, "total_j"].to_numpy())
    assert (battery["radio_wh"] * 3600).to_numpy() == pytest.approx(
        energy.loc[battery.index, ["radio_tx_j", "radio_rx_j"]].sum(axis=1).to_numpy())
    assert lost_j.min() > 0


def test_low_clients_sit_out_and_the_run_says_so(tmp_path):
    # every client starts at 31% of a 10 J battery: at 0.5 W idle it crosses 30% at 0.2 s
    result = run(scenario({"capacity": "10 J", "initial": 0.31,
                           "policy": {"kind": "threshold", "min_charge": 0.3}}), tmp_path)
    info = result.summary["client_battery"]
    assert result.summary["sim_time_s"] > 0.2
    assert info["policy_drops"] == TINY["world"]["clients"]
    assert info["policy_down_s"] > 0
    assert result.summary["dropouts"] >= info["policy_drops"]


@pytest.mark.parametrize(("battery", "message"), [
    ({"capacity": "1 Wh", "policy": {"kind": "charging"}}, "needs charging"),
    ({"capacity": "1 Wh", "max_depth_of_discharge": 0.5,
      "policy": {"kind": "threshold", "min_charge": 0.4}}, "above the battery's floor"),
    ({"capacity": "1 Wh", "policy": {"kind": "threshold", "min_charge": 0.4,
                                     "resume_charge": 0.3}}, "must be above min_charge"),
    ({"capacity": "1 Wh", "policy": {"kind": "ignore", "min_charge": 0.4}}, "threshold policy"),
    ({"capacity": "1 Wh", "initial": [0.8, 0.2]}, "low <= high"),
])
def test_bad_batteries_are_named(battery, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(scenario(battery))


def test_a_battery_needs_the_devices_power(tmp_path):
    data = scenario({"capacity": "1 Wh"})
    del data["devices"]["clients"]["power"]
    with pytest.raises(ScenarioError, match="devices.clients.power"):
        run(data, tmp_path)


def test_a_bad_charging_file_names_its_row(tmp_path):
    path = tmp_path / "plug.csv"
    path.write_text("client,plug_s,unplug_s\n0,10,5\n")
    data = scenario({"capacity": "1 Wh", "charging": {"kind": "trace", "path": str(path),
                                                      "power": "5 W"}})
    with pytest.raises(ScenarioError, match="client 0"):
        run(data, tmp_path / "out")


def test_random_chargers_start_in_their_steady_state():
    env, n = simpy.Environment(), 400
    spec = ClientBattery.model_validate({"capacity": "10 Wh", "charging": {
        "kind": "random", "mean_plugged": "1 h", "mean_unplugged": "3 h", "power": "5 W"}})
    clients = [f"c{i}" for i in range(n)]
    batteries = ClientBatteries(env, spec, clients, {c: (2.0, 0.5) for c in clients}, None,
                                RandomStreams(3), TraceBus(), lambda node, allowed: None)
    batteries.start()
    plugged_at_start = sum(s.plugged for s in batteries.states.values()) / n
    env.run(until=8 * 3600.0)
    share = batteries.summary()["client_battery"]["plugged_fraction_mean"]
    # a quarter of the time plugged, from the first instant (binomial sd 0.022 at the start)
    assert plugged_at_start == pytest.approx(0.25, abs=0.07)
    assert share == pytest.approx(0.25, abs=0.05)
