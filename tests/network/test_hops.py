"""HopEnd records: each hop of each transfer, for the timeline."""

import pytest

import netfl.network.transport as transport
from netfl.sim.trace import HopEnd, TransferEnd
from tests.conftest import NetBench

WORLD = {"clients": 2, "edge_servers": 1}
LINKS = {"access": {"rate": "10 Mbps", "delay": "5 ms"},
         "core": {"rate": "100 Mbps", "delay": "20 ms"}}
SIZE = 125_000  # bytes: 0.1 s at 10 Mbps, 0.01 s at 100 Mbps


def hops_of(bench: NetBench) -> list[HopEnd]:
    return sorted((r for r in bench.records if isinstance(r, HopEnd)), key=lambda r: r.start_s)


def test_a_pipelined_flow_holds_every_hop_at_once_each_a_delay_later():
    bench = NetBench(WORLD, LINKS)
    out = {}
    bench.send_at(1.0, "c0", "cloud", SIZE, out, "up")
    bench.env.run()
    first, second = hops_of(bench)
    assert (first.u, first.v, second.u, second.v) == ("c0", "e0", "e0", "cloud")
    # the flow sends from 1.0 to 1.1 at the access link's 10 Mbps; each hop sees it its
    # predecessors' delays later and holds it until its last bit has crossed its own delay
    assert first.start_s == pytest.approx(1.0) and first.time_s == pytest.approx(1.105)
    assert second.start_s == pytest.approx(1.005) and second.time_s == pytest.approx(1.125)
    assert out["up"] == pytest.approx(second.time_s)
    assert first.rate_share == pytest.approx(1.0) and second.rate_share == pytest.approx(0.1)
    assert first.wire_bytes == second.wire_bytes == SIZE
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert first.transfer_id == second.transfer_id == end.transfer_id
    assert first.tag == end.tag == "client->cloud"


def test_store_and_forward_hops_follow_one_another():
    bench = NetBench(WORLD, {**LINKS, "transport": {"kind": "store-and-forward"}})
    out = {}
    bench.send_at(0.0, "c0", "cloud", SIZE, out, "up")
    bench.env.run()
    first, second = hops_of(bench)
    assert (first.start_s, first.time_s) == pytest.approx((0.0, 0.105))
    assert (second.start_s, second.time_s) == pytest.approx((0.105, 0.135))
    assert first.rate_share == pytest.approx(1.0) and second.rate_share == pytest.approx(1.0)


def test_two_flows_sharing_a_link_each_show_their_share():
    bench = NetBench(WORLD, {"access": {"rate": "10 Mbps", "delay": "5 ms", "shared": True},
                             "core": LINKS["core"]})
    out = {}
    bench.send_at(0.0, "c0", "e0", SIZE, out, "a")
    bench.send_at(0.0, "c1", "e0", SIZE, out, "b")
    bench.env.run()
    shares = [h.rate_share for h in hops_of(bench)]
    assert shares == pytest.approx([0.5, 0.5])  # one cell: 5 Mbps each for 0.2 s


def test_no_hop_records_are_made_when_no_one_listens(monkeypatch):
    def refuse(**_):
        raise AssertionError("a HopEnd record was built that nobody wanted")

    monkeypatch.setattr(transport, "HopEnd", refuse)
    bench = NetBench(WORLD, LINKS)
    bench.trace = type(bench.trace)()  # a bus with no subscriber of HopEnd
    bench.network.trace = bench.trace
    ends = []
    bench.trace.subscribe(ends.append, TransferEnd)
    out = {}
    bench.send_at(0.0, "c0", "cloud", SIZE, out, "up")
    bench.env.run()
    assert out["up"] == pytest.approx(0.125) and len(ends) == 1
