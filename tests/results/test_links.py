"""Which links and media held a run back (netfl.results.links): links.csv's rows, closed forms
on a hand-built network, a deliberately slow link named first, and a full run's outputs."""

import copy

import pandas as pd
import pytest

import netfl
from netfl.results.links import (
    BOTTLENECK_FIELDS,
    LINK_COLUMNS,
    bottlenecks,
    link_rows,
    utilisation_over_time,
)
from tests.conftest import TINY

WORLD = {"clients": 8, "edge_servers": 4}
LINKS = {"access": {"rate": "10 Mbps", "delay": "0 s"},
         "core": {"rate": "100 Mbps", "delay": "0 s"}}


def _by_channel(rows):
    return {row["channel"]: row for row in rows}


def test_one_upload_busies_its_path_for_its_bits_over_the_bottleneck(netbench):
    bench = netbench({"clients": 2, "edge_servers": 1}, LINKS)
    done = {}
    bench.send_at(0.0, "c0", "cloud", 1e6, done, "a")
    bench.env.run()
    rows = _by_channel(link_rows(bench.network, bench.env.now))
    assert set(rows) == {"c0->e0", "e0->cloud"}  # channels that carried nothing are left out
    access, core = rows["c0->e0"], rows["e0->cloud"]
    assert access["busy_s"] == pytest.approx(8e6 / 10e6)  # B / C at the bottleneck
    assert core["busy_s"] == pytest.approx(0.8)  # the flow holds its whole path at once
    assert access["utilisation"] == pytest.approx(1.0)
    assert core["utilisation"] == pytest.approx(0.1)  # 10 of its 100 Mb/s
    assert access["bytes"] == pytest.approx(1e6) and access["wasted_bytes"] == 0.0
    assert access["mean_flows"] == pytest.approx(1.0) and access["peak_flows"] == 1
    assert access["kind"] == "link" and access["link_class"] == "access"
    assert core["link_class"] == "core" and access["capacity_bps"] == pytest.approx(10e6)


def test_two_uploads_through_one_edge_server_peak_at_two_on_its_core_link(netbench):
    bench = netbench({"clients": 2, "edge_servers": 1}, LINKS)
    done = {}
    bench.send_at(0.0, "c0", "cloud", 1e6, done, "a")
    bench.send_at(0.0, "c1", "cloud", 1e6, done, "b")
    bench.env.run()
    core = _by_channel(link_rows(bench.network, bench.env.now))["e0->cloud"]
    assert core["peak_flows"] == 2 and core["mean_flows"] == pytest.approx(2.0)
    assert core["bytes"] == pytest.approx(2e6)


def test_a_cancelled_transfer_bits_are_wasted_on_its_channels(netbench):
    bench = netbench({"clients": 2, "edge_servers": 1}, LINKS)
    env, network = bench.env, bench.network

    def upload():
        try:
            yield from network.transfer("c0", "cloud", 1e6)
        except netfl.errors.TransferFailed:
            pass

    process = env.process(upload())

    def cancel():
        yield env.timeout(0.4)
        process.interrupt("cancel")

    env.process(cancel())
    env.run()
    access = _by_channel(link_rows(network, env.now))["c0->e0"]
    assert access["wasted_bytes"] == pytest.approx(0.5e6)  # 0.4 s at 10 Mb/s
    assert access["bytes"] == pytest.approx(0.5e6)
    assert access["busy_s"] == pytest.approx(0.4)


def test_a_deliberately_slow_core_link_is_the_first_bottleneck(netbench):
    bench = netbench(WORLD, LINKS)
    network, world = bench.network, bench.world
    slow = network.link("e2", "cloud")
    for src, dst in (("e2", "cloud"), ("cloud", "e2")):
        slow.channel(src, dst).set_capacity(10e6)  # ten times slower than the others
    done = {}
    for client in world.clients:
        bench.send_at(0.0, client, "cloud", 1e6, done, client)
        bench.send_at(1.0, "cloud", client, 1e6, done, f"{client} down")
    bench.env.run()
    rows = link_rows(network, bench.env.now)
    top = bottlenecks(rows)
    assert len(top) == 3 and set(top[0]) == set(BOTTLENECK_FIELDS)
    assert top[0]["channel"] in ("e2->cloud", "cloud->e2")
    assert {t["channel"] for t in top[:2]} == {"e2->cloud", "cloud->e2"}
    assert top[0]["utilisation"] >= 1.5 * top[2]["utilisation"]
    assert all(type(t["utilisation"]) is float and type(t["peak_flows"]) is int for t in top)
    heat = utilisation_over_time(network, bench.env.now, rows)
    assert heat.index[0] == top[0]["channel"] and len(heat) == len(rows)
    # the slow link is full while the uploads cross it: its first second's bins at 1
    busy = heat.loc[top[0]["channel"]]
    assert busy.max() == pytest.approx(1.0)


def test_an_lte_carrier_has_a_row_of_its_own_beside_its_vehicles(tmp_path):
    from tests.network.test_access import RoadBench
    from tests.network.test_lte import PARKED

    done = {}
    bench = RoadBench(tmp_path, PARKED, [[1000, 0]], coverage=600,
                      medium={"kind": "lte"}, radio={"kind": "fixed", "rate": 8e6})
    for client in ("c0", "c1"):
        bench.send_at(1.0, client, "e0", 1e6, done, client)
    bench.env.run(until=11)
    rows = _by_channel(link_rows(bench.network, 10.0))
    carrier, vehicle = rows["cell e0 up"], rows["c0->e0"]
    assert carrier["kind"] == "medium" and carrier["link_class"] == "access"
    assert vehicle["kind"] == "link"
    assert carrier["bytes"] == pytest.approx(2e6)  # both vehicles' uploads
    assert carrier["peak_flows"] == 2 and carrier["mean_flows"] == pytest.approx(2.0)
    assert carrier["capacity_bps"] == pytest.approx(8e6)  # two half carriers while busy
    assert carrier["busy_s"] == pytest.approx(2.0)
    assert carrier["utilisation"] == pytest.approx(2e6 * 8 / (8e6 * 10.0))
    # each vehicle filled its half as the carrier filled its whole: all three equally utilised
    assert "cell e0 up" in [row["channel"] for row in bottlenecks(list(rows.values()))]



def test_a_run_writes_links_csv_and_names_its_bottlenecks(tmp_path):
    scenario = copy.deepcopy(TINY)
    result = netfl.run(netfl.load_scenario(scenario), out_dir=tmp_path, run_id="r")
    table = pd.read_csv(result.path / "links.csv")
    assert list(table.columns) == LINK_COLUMNS and len(table) > 0
    assert (table["utilisation"].between(0, 1 + 1e-9)).all()
    assert (table["busy_s"] <= result.summary["sim_time_s"] + 1e-9).all()
    top = result.summary["bottlenecks"]
    assert 0 < len(top) <= 3 and set(top[0]) == set(BOTTLENECK_FIELDS)
    assert top[0]["utilisation"] == pytest.approx(table["utilisation"].max())
    # with a fluid transport and nothing lost, each link's two directions carried what the
    # transfers delivered over it
    ends = table["channel"].str.split("->")
    table["link"] = ["-".join(sorted(pair)) for pair in ends]
    assert table.groupby("link")["bytes"].sum().to_dict() == pytest.approx(
        result.summary["bytes_by_link"])


def test_bottlenecks_are_plain_numbers_even_from_a_numpy_clock():
    import numpy as np

    row = {"channel": "a->b", "utilisation": np.float64(0.5), "busy_s": np.float64(2.0),
           "mean_flows": np.float64(1.5), "peak_flows": 2, "wasted_bytes": np.float64(0.0)}
    (top,) = bottlenecks([row])
    assert all(type(top[f]) is float for f in ("utilisation", "busy_s", "mean_flows",
                                                "wasted_bytes"))
