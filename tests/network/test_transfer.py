"""Transfers over the network: closed forms, store-and-forward, outages, retries, loss, tags."""

import pytest

from netfl.errors import TransferFailed
from netfl.results.recorder import Recorder
from netfl.sim.trace import TransferEnd, TransferFail

MB = 1e6
ACCESS = {"rate": "8 Mbps", "delay": "10 ms"}   # 1 MB takes 1 s to serialize
CORE = {"rate": "80 Mbps", "delay": "30 ms"}    # 1 MB takes 0.1 s


def one_client(netbench, **links):
    return netbench({"clients": 1, "edge_servers": 1},
                    {"access": ACCESS, "core": CORE, **links})


def test_one_flow_takes_size_over_capacity_plus_delay(netbench):
    bench = one_client(netbench)
    done = {}
    bench.send_at(0, "c0", "e0", MB, done, "x")
    bench.env.run()
    assert done["x"] == pytest.approx(1.0 + 0.010)


def test_n_flows_on_one_link_finish_at_n_size_over_capacity_plus_delay(netbench):
    bench = netbench({"clients": 3, "edge_servers": 1},
                     {"access": {**ACCESS, "shared": True}, "core": CORE})
    done = {}
    for i in range(3):
        bench.send_at(0, f"c{i}", "e0", MB, done, i)
    bench.env.run()
    assert all(t == pytest.approx(3 * 1.0 + 0.010) for t in done.values())


def test_separate_access_links_do_not_share(netbench):
    bench = netbench({"clients": 3, "edge_servers": 1}, {"access": ACCESS, "core": CORE})
    done = {}
    for i in range(3):
        bench.send_at(0, f"c{i}", "e0", MB, done, i)
    bench.env.run()
    assert all(t == pytest.approx(1.010) for t in done.values())


def test_late_joiner_on_a_shared_cell(netbench):
    bench = netbench({"clients": 2, "edge_servers": 1},
                     {"access": {**ACCESS, "shared": True}, "core": CORE})
    done = {}
    bench.send_at(0, "c0", "e0", MB, done, "a")
    bench.send_at(0.4, "c1", "e0", MB, done, "b")
    bench.env.run()
    assert done["a"] == pytest.approx(2 - 0.4 + 0.010)
    assert done["b"] == pytest.approx(2 + 0.010)


def test_multi_hop_is_pipelined_at_the_bottleneck(netbench):
    bench = one_client(netbench)
    done = {}
    bench.send_at(0, "c0", "cloud", MB, done, "up")
    bench.env.run()
    assert done["up"] == pytest.approx(1.0 + 0.010 + 0.030)  # one serialization, both delays
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert end.path == ("c0", "e0", "cloud") and end.tag == "client->cloud"
    assert end.wire_bytes == pytest.approx(2 * MB)  # each hop carries it


def test_multi_hop_store_and_forward_pays_each_hop(netbench):
    bench = one_client(netbench, transport={"kind": "store-and-forward"})
    done = {}
    bench.send_at(0, "c0", "cloud", MB, done, "up")
    bench.env.run()
    assert done["up"] == pytest.approx((1.0 + 0.010) + (0.1 + 0.030))
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert end.path == ("c0", "e0", "cloud") and end.tag == "client->cloud"


def test_uplink_and_downlink_rates_differ(netbench):
    bench = one_client(netbench, access={**ACCESS, "rate_down": "16 Mbps"})
    done = {}
    bench.send_at(0, "e0", "c0", MB, done, "down")
    bench.send_at(0, "c0", "e0", MB, done, "up")
    bench.env.run()
    assert done["down"] == pytest.approx(0.5 + 0.010)
    assert done["up"] == pytest.approx(1.0 + 0.010)


def test_routes_take_the_lowest_delay_path(netbench):
    # ring of 3 edges, cloud attached to e0 only: e1 reaches the cloud via e0.
    bench = netbench({"clients": 3, "edge_servers": 3, "topology": {"kind": "ring"},
                      "cloud": [0]})
    assert bench.network.route("c1", "cloud") == ["c1", "e1", "e0", "cloud"]


def test_link_down_mid_transfer_fails_it(netbench):
    bench = one_client(netbench, access={**ACCESS, "availability": {
        "kind": "schedule", "down": [["0.5 s", "3 s"]]}})
    bench.network.start()
    done = {}
    bench.send_at(0, "c0", "e0", MB, done, "x")
    bench.env.run(until=10)
    assert isinstance(done["x"], TransferFailed)
    assert done["x"].reason == "link-down"
    fail = next(r for r in bench.records if isinstance(r, TransferFail))
    assert fail.time_s == pytest.approx(0.5) and fail.wire_bytes == pytest.approx(0.5 * MB)


def test_link_down_during_propagation_fails_it(netbench):
    bench = one_client(netbench, access={"rate": "8 Mbps", "delay": "1 s", "availability": {
        "kind": "schedule", "down": [["1.5 s", "1.6 s"]]}})
    bench.network.start()
    done = {}
    bench.send_at(0, "c0", "e0", MB, done, "x")
    bench.env.run(until=10)
    assert isinstance(done["x"], TransferFailed)


def test_retry_succeeds_after_the_link_comes_back(netbench):
    bench = one_client(netbench, access={**ACCESS, "availability": {
        "kind": "schedule", "down": [["0.5 s", "3 s"]]}},
        retry={"attempts": 3, "backoff": "1 s", "backoff_factor": 2})
    bench.network.start()
    done = {}
    bench.send_at(0, "c0", "e0", MB, done, "x")
    bench.env.run(until=20)
    # fails at 0.5; retry at 1.5 finds no route (link down) and fails at once; the next back-off
    # is 2 s, so the third attempt starts at 3.5 and takes 1.01 s.
    assert done["x"] == pytest.approx(3.5 + 1.010)
    fails = [r for r in bench.records if isinstance(r, TransferFail)]
    assert [f.reason for f in fails] == ["link-down", "no-route"]
    assert all(f.will_retry for f in fails)


def test_no_route_fails_immediately_without_retries(netbench):
    bench = one_client(netbench)
    bench.network.set_node_state("c0", False)
    done = {}
    bench.send_at(0, "e0", "c0", MB, done, "x")
    bench.env.run()
    assert isinstance(done["x"], TransferFailed) and done["x"].reason == "no-route"


def test_rate_reduction_loss_scales_the_rate(netbench):
    bench = one_client(netbench, access={**ACCESS, "loss": {"kind": "rate-reduction",
                                                             "probability": 0.5}})
    done = {}
    bench.send_at(0, "c0", "e0", MB, done, "x")
    bench.env.run()
    assert done["x"] == pytest.approx(2.0 + 0.010)


def test_retransmit_loss_repeats_hops_at_the_stated_rate(netbench):
    p, n = 0.3, 400
    bench = one_client(netbench, access={"rate": "1 Gbps", "delay": "1 ms", "loss": {
        "kind": "retransmit", "probability": p, "max_retransmissions": 100}})
    done = {}
    for i in range(n):
        bench.send_at(i * 1.0, "c0", "e0", 1000, done, i)
    bench.env.run()
    ends = [r for r in bench.records if isinstance(r, TransferEnd)]
    mean = sum(r.retransmissions for r in ends) / n
    assert mean == pytest.approx(p / (1 - p), rel=0.2)  # geometric: E = p / (1 - p)
    assert all(r.wire_bytes == pytest.approx(1000 * (1 + r.retransmissions)) for r in ends)


def test_retransmit_loss_gives_up_after_the_limit(netbench):
    # p = 0.9, at most 2 re-sends: a hop fails after 3 losses in a row, with probability 0.729.
    bench = one_client(netbench, access={**ACCESS, "loss": {
        "kind": "retransmit", "probability": 0.9, "max_retransmissions": 2}})
    done = {}
    for i in range(400):
        bench.send_at(i * 1.0, "c0", "e0", 1000, done, i)
    bench.env.run()
    failed = [x for x in done.values() if isinstance(x, TransferFailed)]
    assert all(f.reason == "loss" for f in failed)
    assert len(failed) / len(done) == pytest.approx(0.729, abs=0.07)
    ends = [r for r in bench.records if isinstance(r, TransferEnd)]
    assert max(r.retransmissions for r in ends) == 2


def test_bytes_per_tag_add_up(netbench):
    bench = netbench({"clients": 2, "edge_servers": 2, "topology": {"kind": "ring"},
                      "cloud": [0]})
    recorder = Recorder(bench.trace, bench.world.tier)
    plan = [("c0", "e0", 100), ("e0", "c0", 200), ("e0", "e1", 300), ("e1", "cloud", 400),
            ("cloud", "e1", 500), ("c1", "cloud", 600)]
    for i, (src, dst, size) in enumerate(plan):
        bench.send_at(0, src, dst, size, {}, i)
    bench.env.run()
    assert dict(recorder.bytes_by_tag) == {
        "client->edge": 100, "edge->client": 200, "edge->edge": 300, "edge->cloud": 400,
        "cloud->edge": 500, "client->cloud": 600}
    assert recorder.bytes_total == sum(s for *_, s in plan)
    # hops: 1, 1, 1, 2 (e1-e0-cloud), 2, 3 (c1-e1-e0-cloud)
    assert recorder.bytes_hop_weighted == 100 + 200 + 300 + 2 * 400 + 2 * 500 + 3 * 600
    assert sum(recorder.bytes_by_link.values()) == recorder.bytes_hop_weighted
    assert recorder.bytes_by_link["e0-e1"] == 300 + 400 + 500 + 600


def test_the_transfer_process_returns_its_end_record(netbench):
    bench = one_client(netbench)
    process = bench.network.send("c0", "cloud", MB)
    bench.env.run()
    assert isinstance(process.value, TransferEnd)
    assert process.value.hops == 2 and process.value.path == ("c0", "e0", "cloud")


def test_routes_to_and_from_a_hub_come_from_one_tree(netbench, monkeypatch):
    """Every edge server routed to the cloud by its own search cost O(M^2): a random topology
    of 20,000 edge servers never finished a round. The paths are the searches'."""
    import networkx as nx

    bench = netbench({"clients": 40, "edge_servers": 40,
                      "topology": {"kind": "random", "max_degree": 3, "extra_edges": 5}})
    network, edges = bench.network, bench.world.edge_servers
    searched = [nx.shortest_path(network._up_graph, e, "cloud", weight=network._route_weight)
                for e in edges]
    calls = []
    real = nx.shortest_path
    monkeypatch.setattr(nx, "shortest_path", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert [network.route(e, "cloud") for e in edges] == searched
    assert [network.route("cloud", e) for e in edges] == [p[::-1] for p in searched]
    assert calls == []
