"""Invariants of whole transfers on random small worlds, under each transport: every transfer
arrives, no sooner than its bottleneck and delays allow, with the wire bytes its transport
puts on every hop, and the same workload gives the same times twice."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import NetBench

MSS, HEADERS = 1448, 54


@st.composite
def workloads(draw):
    clients = draw(st.integers(1, 8))
    servers = draw(st.integers(1, min(3, clients)))
    ends = [f"c{i}" for i in range(clients)] + ["cloud"]
    transfers = []
    for _ in range(draw(st.integers(1, 12))):
        src = draw(st.sampled_from(ends))
        dst = draw(st.sampled_from([e for e in ends if e != src]))
        transfers.append((draw(st.floats(0.0, 2.0)), src, dst, draw(st.floats(1e3, 3e6))))
    return {"clients": clients, "edge_servers": servers}, transfers


def client(node: str) -> bool:
    return node.startswith("c") and node != "cloud"


def run(world, transfers, transport):
    """Each transfer's TransferEnd record (by its index in ``transfers``)."""
    bench = NetBench(world, {"access": {"rate": "10 Mbps", "delay": "5 ms"},
                             "core": {"rate": "100 Mbps", "delay": "20 ms"},
                             "transport": {"kind": transport}})
    ends = {}

    def transfer(k, start, src, dst, nbytes):
        yield bench.env.timeout(start)
        ends[k] = yield bench.network.send(src, dst, nbytes)

    for k, spec in enumerate(transfers):
        bench.env.process(transfer(k, *spec))
    bench.env.run()
    return ends


@settings(max_examples=40, deadline=None)
@given(workloads(), st.sampled_from(["tcp", "fluid", "store-and-forward"]))
def test_transfers_arrive_no_sooner_than_physics_allows_with_their_wire_bytes(
        workload, transport):
    world, transfers = workload
    ends = run(world, transfers, transport)
    assert sorted(ends) == list(range(len(transfers)))  # no outages: every transfer arrives
    overhead = (MSS + HEADERS) / MSS if transport == "tcp" else 1.0
    for k, (start, _src, _dst, nbytes) in enumerate(transfers):
        end = ends[k]
        hops = len(end.path) - 1
        access = [client(u) or client(v) for u, v in zip(end.path, end.path[1:], strict=False)]
        rates = [10e6 if a else 100e6 for a in access]
        delays = [0.005 if a else 0.020 for a in access]
        floor = nbytes * 8 * overhead / min(rates) + sum(delays)
        assert end.time_s >= start + floor * (1 - 1e-9)
        assert math.isclose(end.wire_bytes, nbytes * overhead * hops, rel_tol=1e-9)
    again = run(world, transfers, transport)
    assert {k: r.time_s for k, r in again.items()} == {k: r.time_s for k, r in ends.items()}
