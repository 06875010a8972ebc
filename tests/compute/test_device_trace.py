"""Device traces: reading and checking, drawing devices by seed, availability as outages,
runs on a trace, the sample maker and FedScale's converter."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pandas as pd
import pytest

from netfl.compute.device_trace import (
    assign_devices,
    outages_from_availability,
    read_device_trace,
)
from netfl.compute.trace_convert import convert_fedscale, load_data_pickle, sample_trace
from netfl.errors import ScenarioError
from netfl.runner import run_scenario
from netfl.scenario import load_scenario
from tests.conftest import TINY


def write(folder, devices: str, availability: str | None = None):
    (folder / "devices.csv").write_text(devices)
    if availability is not None:
        (folder / "availability.csv").write_text(availability)
        return folder / "devices.csv", folder / "availability.csv"
    return folder / "devices.csv", None


def test_a_trace_is_read_and_checked(tmp_path):
    trace = read_device_trace(*write(tmp_path, "device,flops,active_w\na,1e9,3\nb,2e9,\n",
                                     "device,start_s,end_s\na,10,20\na,0,5\n"))
    assert list(trace.devices["device"]) == ["a", "b"]
    assert math.isnan(trace.devices["active_w"][1]) and math.isnan(trace.devices["idle_w"][0])
    assert trace.available == {"a": [(0.0, 5.0), (10.0, 20.0)]}
    bad = [("device,speed\na,1\n", None, "no column flops"),
           ("device,flops\na,-1\n", None, "row 2: flops = '-1'"),
           ("device,flops\na,1e9\na,2e9\n", None, "'a' appears twice"),
           ("device,flops\na,1e9\n", "device,start_s,end_s\nz,0,1\n", "'z' is not in"),
           ("device,flops\na,1e9\n", "device,start_s,end_s\na,0,5\na,3,8\n", "overlaps")]
    for devices, availability, message in bad:
        with pytest.raises(ScenarioError, match=message):
            read_device_trace(*write(tmp_path, devices, availability))


def test_devices_are_drawn_by_seed_without_replacement_where_there_are_enough():
    rng = np.random.default_rng
    first = assign_devices(10, 40, rng(1))
    assert len(set(first)) == 10 and np.array_equal(first, assign_devices(10, 40, rng(1)))
    many = assign_devices(100, 7, rng(1))
    assert set(many) <= set(range(7)) and len(many) == 100
    assert len(set(assign_devices(10, 40, rng(1), with_replacement=True))) <= 10


def test_availability_becomes_outages():
    assert outages_from_availability([(10.0, 20.0), (30.0, 40.0)]) == [
        (0.0, 10.0), (20.0, 30.0), (40.0, math.inf)]
    assert outages_from_availability([(0.0, 5.0)]) == [(5.0, math.inf)]


def tiny_on_trace(folder, devices: str, availability: str | None = None) -> dict:
    write(folder, devices, availability)
    data = copy.deepcopy(TINY)
    data["devices"] = {"clients": {"flops": "1 GFLOPS", "trace": {
        "path": str(folder / "devices.csv"),
        **({"availability": str(folder / "availability.csv")} if availability else {})}}}
    data["output"] = {"plots": False, "trace": True}
    return data


def test_a_run_charges_each_client_its_traced_devices_speed(tmp_path):
    # six devices, six clients: each a different one, 1 to 6 GFLOP/s
    devices = "device,flops\n" + "".join(f"d{i},{i + 1}e9\n" for i in range(6))
    result = run_scenario(load_scenario(tiny_on_trace(tmp_path, devices)), out_dir=tmp_path)
    table = pd.read_csv(result.path / "partition.csv")
    speed = {f"d{i}": (i + 1) * 1e9 for i in range(6)}
    events = result.events
    starts = events[events["kind"] == "train_start"]
    flops_per_sample = 3 * TINY["model"]["flops_per_sample"]
    for client, device in zip(table["client"], table["device"], strict=True):
        mine = starts[starts["node"] == client]
        expected = mine["samples"] * flops_per_sample / speed[device]
        assert mine["duration_s"].to_numpy() == pytest.approx(expected.to_numpy())
    assert sorted(table["device"]) == [f"d{i}" for i in range(6)]
    again = run_scenario(load_scenario(tiny_on_trace(tmp_path, devices)), out_dir=tmp_path)
    assert list(pd.read_csv(again.path / "partition.csv")["device"]) == list(table["device"])


def test_traced_availability_takes_clients_down(tmp_path):
    devices = "device,flops\n" + "".join(f"d{i},1e9\n" for i in range(6))
    availability = "device,start_s,end_s\nd0,0,0.05\n"  # d0 leaves early, for good
    result = run_scenario(load_scenario(tiny_on_trace(tmp_path, devices, availability)),
                          out_dir=tmp_path)
    events = result.events
    drops = events[(events["kind"] == "dropout")]
    table = pd.read_csv(result.path / "partition.csv")
    client = table.loc[table["device"] == "d0", "client"].item()
    assert list(drops["node"]) == [client] and not drops["up"].any()
    assert drops["time_s"].item() == pytest.approx(0.05)
    assert result.summary["dropouts"] == 1


def test_a_trace_and_another_availability_are_refused(tmp_path):
    data = tiny_on_trace(tmp_path, "device,flops\na,1e9\n", "device,start_s,end_s\na,0,1\n")
    data["devices"]["clients"]["availability"] = {"kind": "random", "mean_up": "1 h",
                                                  "mean_down": "1 min"}
    with pytest.raises(ScenarioError, match="availability comes from trace.availability"):
        load_scenario(data)


def test_the_sample_trace_is_deterministic_and_valid(tmp_path):
    devices, availability = sample_trace(30, seed=4, horizon_s=3600)
    again = sample_trace(30, seed=4, horizon_s=3600)
    pd.testing.assert_frame_equal(devices, again[0])
    pd.testing.assert_frame_equal(availability, again[1])
    devices.to_csv(tmp_path / "devices.csv", index=False)
    availability.to_csv(tmp_path / "availability.csv", index=False)
    trace = read_device_trace(tmp_path / "devices.csv", tmp_path / "availability.csv")
    assert len(trace.devices) == 30 and (trace.devices["flops"] > 0).all()
    assert all(0 <= a < b <= 3600 for spans in trace.available.values() for a, b in spans)


def test_fedscale_traces_convert(tmp_path):
    capacity = {1: {"computation": 50.0, "communication": 1000.0},
                2: {"computation": 100.0, "communication": 500.0},
                3: {"computation": 0.0, "communication": 1.0}}  # unusable: left out
    behaviour = {1: {"active": [0, 100], "inactive": [40, 150], "finish_time": 200,
                     "duration": 200, "model": "x"},
                 2: {"active": [10], "inactive": [20], "finish_time": 50, "duration": 50,
                     "model": "y"}}
    devices, availability = convert_fedscale(capacity, behaviour, 3e6, horizon_s=100)
    # 3e6 FLOPs per sample at 3 x 50 ms: 2e7 FLOP/s; at 3 x 100 ms: 1e7
    assert list(devices["flops"]) == pytest.approx([2e7, 1e7])
    spans = availability.groupby("device").apply(
        lambda g: list(zip(g["start_s"], g["end_s"], strict=True)), include_groups=False)
    assert spans["fedscale-1"] == [(0.0, 40.0)]
    assert spans["fedscale-2"] == [(10.0, 20.0), (60.0, 70.0)]  # repeats every 50 s


def test_pickles_that_are_not_plain_data_are_refused(tmp_path):
    (tmp_path / "ok").write_bytes(pickle.dumps({1: {"computation": 1.0}}))
    assert load_data_pickle(tmp_path / "ok") == {1: {"computation": 1.0}}
    (tmp_path / "evil").write_bytes(pickle.dumps(pd.Timestamp(0)))
    with pytest.raises(pickle.UnpicklingError, match="not plain data"):
        load_data_pickle(tmp_path / "evil")


def test_the_trace_commands_write_a_valid_trace(tmp_path):
    from typer.testing import CliRunner

    from netfl.cli import app

    runner = CliRunner()
    sample = runner.invoke(app, ["trace", "sample", "--out", str(tmp_path / "s"), "--devices",
                                 "12", "--seed", "3"])
    assert sample.exit_code == 0, sample.output
    assert read_device_trace(tmp_path / "s" / "devices.csv",
                             tmp_path / "s" / "availability.csv").devices.shape[0] == 12
    (tmp_path / "cap").write_bytes(pickle.dumps({7: {"computation": 40.0,
                                                     "communication": 800.0}}))
    (tmp_path / "beh").write_bytes(pickle.dumps({7: {"active": [5], "inactive": [50],
                                                     "finish_time": 100}}))
    converted = runner.invoke(app, ["trace", "fedscale", "--capacity", str(tmp_path / "cap"),
                                    "--behaviour", str(tmp_path / "beh"), "--reference-flops",
                                    "1.2e6", "--out", str(tmp_path / "f")])
    assert converted.exit_code == 0, converted.output
    devices = pd.read_csv(tmp_path / "f" / "devices.csv")
    assert devices["flops"].item() == pytest.approx(1.2e6 / 0.12)
    (tmp_path / "evil").write_bytes(pickle.dumps(pd.Timestamp(0)))
    refused = runner.invoke(app, ["trace", "fedscale", "--capacity", str(tmp_path / "evil"),
                                  "--reference-flops", "1e6", "--out", str(tmp_path / "x")])
    assert refused.exit_code == 2 and "not plain data" in refused.output
    assert not (tmp_path / "x").exists()
