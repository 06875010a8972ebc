"""Closed-form transfer times against the per-event network: a transfer alone on its path, and
a cohort of identical transfers that start together on a shared cell."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.network.closed_form import path_timing, pipelined_times, slow_start_bits
from tests.conftest import NetBench

TCP = {"kind": "tcp"}


def timing_of(bench, src, dst, tcp: dict | None):
    network = bench.network
    path = network.route(src, dst)
    links = [network.link(u, v) for u, v in zip(path, path[1:], strict=False)]
    capacities = [link.channel(u, v).capacity_bps
                  for link, u, v in zip(links, path, path[1:], strict=False)]
    if tcp is None:
        return path_timing([link.delay_s for link in links], capacities, 0.0), None, 1.0
    segment = (1448 + 54) * 8.0
    timing = path_timing([link.delay_s for link in links], capacities, segment)
    return timing, slow_start_bits(10, 2, segment, math.inf, 64), (1448 + 54) / 1448


def per_event_arrivals(links: dict, sends: list) -> tuple:
    bench = NetBench({"clients": 4, "edge_servers": 1}, links)
    out = {}
    for key, (src, dst, nbytes) in enumerate(sends):
        bench.send_at(0.0, src, dst, nbytes, out, key)
    bench.env.run()
    return bench, out


@pytest.mark.parametrize("transport", ["tcp", "fluid"])
@pytest.mark.parametrize("nbytes", [1, 1000, 14_480, 100_000, 796_840, 5e7])
def test_a_transfer_alone_on_its_path_arrives_when_the_closed_form_says(transport, nbytes):
    links = {"access": {"rate": "20 Mbps", "delay": "5 ms"},
             "core": {"rate": "1 Gbps", "delay": "20 ms"}, "transport": {"kind": transport}}
    bench, out = per_event_arrivals(links, [("c0", "cloud", nbytes)])
    timing, windows, overhead = timing_of(bench, "c0", "cloud",
                                          TCP if transport == "tcp" else None)
    _, _, arrival = pipelined_times(nbytes * 8 * overhead, timing.bottleneck_bps, timing.rtt_s,
                                    timing.latency_s,
                                    2 * timing.one_way_s if transport == "tcp" else 0.0, windows)
    assert float(arrival) == pytest.approx(out[0], rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(rate_mbps=st.floats(0.5, 2000), delay_ms=st.floats(0.1, 300),
       nbytes=st.floats(1, 1e8), cohort=st.integers(1, 4))
def test_a_cohort_on_a_shared_cell_is_one_flow_on_an_nth_of_it(rate_mbps, delay_ms, nbytes,
                                                               cohort):
    links = {"access": {"rate": rate_mbps * 1e6, "delay": delay_ms / 1e3, "shared": True},
             "transport": TCP}
    sends = [("e0", f"c{k}", nbytes) for k in range(cohort)]
    bench, out = per_event_arrivals(links, sends)
    timing, windows, overhead = timing_of(bench, "e0", "c0", TCP)
    _, _, arrival = pipelined_times(nbytes * 8 * overhead, timing.bottleneck_bps / cohort,
                                    timing.rtt_s, timing.latency_s, 2 * timing.one_way_s,
                                    windows)
    for k in range(cohort):
        assert float(arrival) == pytest.approx(out[k], rel=1e-9)


def test_many_transfers_at_once_broadcast_like_one():
    windows = slow_start_bits(10, 2, 12_016.0, math.inf, 64)
    sizes = np.array([1e3, 1e5, 1e7])
    _, _, together = pipelined_times(sizes, 1e7, 0.02, 0.01, 0.02, windows)
    for size, arrival in zip(sizes, together, strict=True):
        assert float(pipelined_times(size, 1e7, 0.02, 0.01, 0.02, windows)[2]) == arrival


def test_windows_too_short_for_a_transfer_are_refused():
    with pytest.raises(ValueError, match="too short"):
        pipelined_times(1e9, 1e9, 0.1, 0.05, 0.1, slow_start_bits(10, 2, 12_016.0, math.inf, 3))
