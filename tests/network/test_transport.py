"""Transports against their closed forms: TCP's set-up, slow start and headers; fluid;
store-and-forward custody; pipelined flows failing on any link of their path."""

import math

import pytest

from netfl.errors import TransferFailed
from netfl.sim.trace import TransferEnd, TransferFail

MB = 1e6
MSS, HEADERS = 1448, 54
SEGMENT_BITS = (MSS + HEADERS) * 8


def wire_bits(nbytes: float) -> float:
    return nbytes * (MSS + HEADERS) / MSS * 8


def one_hop(netbench, rate="8 Mbps", delay="10 ms", **transport):
    return netbench({"clients": 1, "edge_servers": 1},
                    {"access": {"rate": rate, "delay": delay},
                     "transport": {"kind": "tcp", **transport}})


def finish(bench, src="c0", dst="e0", nbytes=MB, start=0.0):
    done = {}
    bench.send_at(start, src, dst, nbytes, done, "x")
    bench.env.run()
    return done["x"]


def test_tcp_pays_the_handshake_one_ramp_round_and_headers(netbench):
    # 8 Mbps, 10 ms: the round trip is 20 ms + one segment (1.502 ms); 10 segments take 15 ms,
    # less than a round trip, so the flow waits once; 18 segments take longer: ramp over.
    rtt = 0.020 + SEGMENT_BITS / 8e6
    first = 10 * SEGMENT_BITS
    expected = 0.020 + rtt + (wire_bits(MB) - first) / 8e6 + 0.010
    assert finish(one_hop(netbench)) == pytest.approx(expected, rel=1e-9)


def test_a_persistent_connection_skips_the_handshake(netbench):
    opened = finish(one_hop(netbench))
    persistent = finish(one_hop(netbench, handshake=False))
    assert opened - persistent == pytest.approx(0.020)


def test_slow_start_doubles_the_window_every_round_trip(netbench):
    # 1 MB over 1 Gbps, 50 ms: 691 segments; windows 10, 20, ..., 320 (630 segments) take one
    # round trip each, the last 61 segments a seventh round; never window-limited by the share.
    bench = one_hop(netbench, rate="1 Gbps", delay="50 ms", delayed_ack=1)
    rtt = 0.100 + SEGMENT_BITS / 1e9
    last = wire_bits(MB) - 630 * SEGMENT_BITS
    expected = 0.100 + 6 * rtt + last / 1e9 + 0.050
    assert finish(bench) == pytest.approx(expected, rel=1e-9)


def test_a_receive_window_caps_the_rate_at_window_over_rtt(netbench):
    bench = one_hop(netbench, rate="1 Gbps", delay="50 ms", receive_window="64 KiB")
    rtt = 0.100 + SEGMENT_BITS / 1e9
    size = 20 * MB
    elapsed = finish(bench, nbytes=size)
    rate = wire_bits(65536) / rtt
    # after the ramp, the window-limited rate holds: within one round trip of size / rate
    assert elapsed == pytest.approx(0.100 + wire_bits(size) / rate + 0.050, abs=2 * rtt)


def test_loss_limited_tcp_follows_mathis(netbench):
    bench = netbench({"clients": 1, "edge_servers": 1},
                     {"access": {"rate": "1 Gbps", "delay": "10 ms",
                                 "loss": {"kind": "retransmit", "probability": 0.01}},
                      "transport": {"kind": "tcp", "loss_limited": True}})
    size = 50 * MB
    elapsed = finish(bench, nbytes=size)
    rtt = 0.020 + SEGMENT_BITS / 1e9
    rate = SEGMENT_BITS / rtt * math.sqrt(1.5) / math.sqrt(0.01)  # ~74 Mbit/s, far below 1 Gbps
    assert elapsed == pytest.approx(wire_bits(size) / rate, rel=0.05)
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert end.retransmissions == 0  # packets are recovered inside the rate, not re-sent


def test_fluid_is_size_over_the_bottleneck_plus_the_delays(netbench):
    bench = netbench({"clients": 1, "edge_servers": 1},
                     {"access": {"rate": "8 Mbps", "delay": "10 ms"},
                      "core": {"rate": "80 Mbps", "delay": "30 ms"},
                      "transport": {"kind": "fluid"}})
    assert finish(bench, dst="cloud") == pytest.approx(1.0 + 0.040)


def test_tcp_headers_count_on_the_wire(netbench):
    bench = one_hop(netbench)
    finish(bench)
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert end.nbytes == MB and end.wire_bytes == pytest.approx(wire_bits(MB) / 8)


# ------------------------------------------------------------------- failures and custody


def two_hops(netbench, transport, core_down, **links):
    return netbench({"clients": 1, "edge_servers": 1},
                    {"access": {"rate": "8 Mbps", "delay": "10 ms"},
                     "core": {"rate": "80 Mbps", "delay": "30 ms",
                              "availability": {"kind": "schedule", "down": [core_down]}},
                     "transport": transport, **links})


def test_a_pipelined_flow_fails_when_any_link_of_its_path_goes_down(netbench):
    bench = two_hops(netbench, {"kind": "fluid"}, ["0.5 s", "3 s"])
    bench.network.start()
    outcome = finish(bench, dst="cloud")
    assert isinstance(outcome, TransferFailed) and outcome.reason == "link-down"
    fail = next(r for r in bench.records if isinstance(r, TransferFail))
    assert fail.time_s == pytest.approx(0.5)
    assert fail.wire_bytes == pytest.approx(2 * 0.5 * MB)  # half sent, on both hops


def test_store_and_forward_holds_the_message_until_the_next_hop_is_back(netbench):
    bench = two_hops(netbench, {"kind": "store-and-forward"}, ["0.5 s", "3 s"])
    bench.network.start()
    # at e0 at 1.01 s, the core is down until 3 s: then 0.1 s + 30 ms
    assert finish(bench, dst="cloud") == pytest.approx(3.0 + 0.1 + 0.030)
    assert not [r for r in bench.records if isinstance(r, TransferFail)]


def test_store_and_forward_gives_up_after_the_custody_timeout(netbench):
    bench = two_hops(netbench, {"kind": "store-and-forward", "custody_timeout": "10 s"},
                     ["0.5 s", "100 s"])
    bench.network.start()
    outcome = finish(bench, dst="cloud")
    assert isinstance(outcome, TransferFailed) and outcome.reason == "link-down"
    fail = next(r for r in bench.records if isinstance(r, TransferFail))
    assert fail.time_s == pytest.approx(1.01 + 10.0)


def test_store_and_forward_resends_a_cut_hop_from_the_node_that_holds_it(netbench):
    # the core goes down mid-hop (1.05 s, 0.04 s into its 0.1 s) and back at 2 s
    bench = two_hops(netbench, {"kind": "store-and-forward"}, ["1.05 s", "2 s"])
    bench.network.start()
    assert finish(bench, dst="cloud") == pytest.approx(2.0 + 0.1 + 0.030)
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert end.wire_bytes == pytest.approx(MB + 0.4 * MB + MB)  # the cut part counts


def cut_tcp_transfer(netbench, rate: str, delay: str, down: list[str]):
    """A 1 MB tcp transfer over one link that is down during ``down``: the TransferFail."""
    bench = netbench({"clients": 1, "edge_servers": 1},
                     {"access": {"rate": rate, "delay": delay,
                                 "availability": {"kind": "schedule", "down": [down]}},
                      "transport": {"kind": "tcp"}})
    bench.network.start()
    outcome = finish(bench)
    assert isinstance(outcome, TransferFailed) and outcome.reason == "link-down"
    return next(r for r in bench.records if isinstance(r, TransferFail))


def test_a_tcp_handshake_cut_by_an_outage_fails_the_attempt(netbench):
    # the link is down from 0.05 s to 0.1 s, within the handshake (0 to 0.2 s): the attempt
    # fails when the handshake would have completed, having sent nothing
    fail = cut_tcp_transfer(netbench, "8 Mbps", "100 ms", ["0.05 s", "0.1 s"])
    assert fail.time_s == pytest.approx(0.2) and fail.wire_bytes == 0


def test_slow_start_windows_follow_the_acknowledgements():
    from itertools import islice

    from netfl.network.transport import slow_start_windows

    # every segment acknowledged: the window doubles
    assert list(islice(slow_start_windows(10, 1), 5)) == [10, 20, 40, 80, 160]
    # every second one (the first at once, an odd one left for the next round): ns-3's trace
    assert list(islice(slow_start_windows(10, 2), 6)) == [10, 18, 36, 72, 144, 288]
    assert list(islice(slow_start_windows(9, 2), 4)) == [9, 18, 36, 72]


def test_with_delayed_acks_the_same_megabyte_needs_the_same_seven_rounds(netbench):
    bench = one_hop(netbench, rate="1 Gbps", delay="50 ms")  # delayed_ack 2: 10, 18, ..., 288
    rtt = 0.100 + SEGMENT_BITS / 1e9
    last = wire_bits(MB) - 568 * SEGMENT_BITS
    assert finish(bench) == pytest.approx(0.100 + 6 * rtt + last / 1e9 + 0.050, rel=1e-9)


def test_a_link_going_down_during_slow_start_fails_the_transfer_at_once(netbench):
    # 1 MB over 1 Gbps, 50 ms: the ramp runs from 0.1 s to about 0.7 s; the link fails at 0.35 s
    fail = cut_tcp_transfer(netbench, "1 Gbps", "50 ms", ["0.35 s", "0.5 s"])
    assert fail.time_s == pytest.approx(0.35)
    # rounds of 10, 18 segments, then 36 segments' worth of the third round's 0.05 s of 0.1
    rtt = 0.100 + SEGMENT_BITS / 1e9
    sent = (10 + 18) * SEGMENT_BITS + 36 * SEGMENT_BITS * (0.35 - 0.100 - 2 * rtt) / rtt
    assert fail.wire_bytes == pytest.approx(sent / 8, rel=1e-6)


def ring_of_two(netbench, **backhaul):
    """Clients c0, c1 under e0, e1 on fluid 8 Mbps access links; e0 - e1 a 1 Gbps link that is
    down from 0.5 s to 3 s."""
    bench = netbench({"clients": 2, "edge_servers": 2, "topology": {"kind": "ring"},
                      "cloud": "none"},
                     {"access": {"rate": "8 Mbps", "delay": "10 ms"},
                      "backhaul": {"rate": "1 Gbps", "delay": "2 ms", **backhaul,
                                   "availability": {"kind": "schedule",
                                                    "down": [["0.5 s", "3 s"]]}},
                      "transport": {"kind": "fluid"}})
    bench.network.start()
    return bench


def test_a_link_class_can_carry_its_own_transport(netbench):
    # the ring stores and forwards: e0 holds the message until its link is back; the last
    # piece starts when e1 has it all
    bench = ring_of_two(netbench, transport={"kind": "store-and-forward"})
    when = finish(bench, src="c0", dst="c1")
    assert when == pytest.approx(3.0 + (MB * 8 / 1e9 + 0.002) + (1.0 + 0.010))
    end = next(r for r in bench.records if isinstance(r, TransferEnd))
    assert end.path == ("c0", "e0", "e1", "c1") and end.wire_bytes == pytest.approx(3 * MB)
    # one transport for all: the ring's outage cuts the pipelined transfer
    assert isinstance(finish(ring_of_two(netbench), src="c0", dst="c1"), TransferFailed)


def test_a_tcp_transfer_wakes_its_process_once_for_all_its_round_trips(netbench):
    """The set-up and the slow-start rounds run on timer callbacks: the transfer's generator
    (and every generator it is nested in) yields once, where a loop over the rounds yielded
    once per round trip (eight here: the set-up, six rounds, the last bit), with the same end
    time."""
    bench = one_hop(netbench, rate="1 Gbps", delay="50 ms", delayed_ack=1)
    yields, end = [], {}

    def counted(gen):
        value = None
        while True:
            try:
                event = gen.send(value)
            except StopIteration as stop:
                return stop.value
            yields.append(bench.env.now)
            value = yield event

    def proc():
        yield from counted(bench.network.transfer("c0", "e0", MB))
        end["t"] = bench.env.now

    bench.env.process(proc())
    bench.env.run()
    rtt = 0.100 + SEGMENT_BITS / 1e9
    assert end["t"] == pytest.approx(0.100 + 6 * rtt + (wire_bits(MB) - 630 * SEGMENT_BITS) / 1e9
                                     + 0.050, rel=1e-9)
    assert yields == [0.0]
