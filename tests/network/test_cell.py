"""One 802.11p medium shared by an RSU and its vehicles (netfl/network/cell.py)."""

from __future__ import annotations

import pytest
import simpy

from netfl.network import dcf
from netfl.network.cell import DcfParameters, Dot11Cell, Framing
from netfl.network.fabric import Fabric

FRAME_BITS = 1500 * 8


def _cell(framing: Framing = Framing()):
    env = simpy.Environment()
    fabric = Fabric(env)
    return env, fabric, Dot11Cell(fabric, "rsu", framing, DcfParameters())


def _upload(env, fabric, channels, nbits, ends, key):
    def run():
        yield fabric.transmit(channels, [], nbits).event
        ends[key] = env.now
    env.process(run())


def _per_frame(rate, stations):
    """Airtime of one data frame with n saturated stations, no TCP acknowledgements."""
    collision = dcf.exchange_s(1500, rate, 2)
    return dcf.exchange_s(1500, rate, 2) + dcf.contention_per_frame_s(stations, collision)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_n_vehicles_share_the_cell_and_finish_together(n):
    env, fabric, cell = _cell()
    ends = {}
    for i in range(n):
        up, _ = cell.link(f"c{i}", "rsu", 6e6, 6e6)
        _upload(env, fabric, up, 100 * FRAME_BITS, ends, i)
    env.run()
    expected = n * 100 * _per_frame(6e6, n)  # every frame of every vehicle in turn
    assert sorted(ends.values()) == pytest.approx([expected] * n, rel=1e-9)
    assert cell.channel.capacity_bps == 0  # idle again


def test_slow_vehicles_drag_fast_ones_down_the_performance_anomaly():
    env, fabric, cell = _cell()
    fast, _ = cell.link("near", "rsu", 27e6, 27e6)
    slow, _ = cell.link("far", "rsu", 3e6, 3e6)
    fabric.transmit(fast, [], 1e9)
    flow_slow = fabric.transmit(slow, [], 1e9)
    env.run(until=1.0)
    flow_fast = next(iter(fast[0].flows))
    assert flow_fast.rate == pytest.approx(flow_slow.rate)  # equal throughput per station
    collision = dcf.exchange_s(1500, 3e6, 2)
    each = FRAME_BITS / (dcf.exchange_s(1500, 27e6, 2) + dcf.exchange_s(1500, 3e6, 2)
                         + 2 * dcf.contention_per_frame_s(2, collision))
    assert flow_fast.rate == pytest.approx(each)
    assert each < 3e6 < 27e6 / 4  # the fast one gets less than the slow one's PHY rate


def test_a_vehicle_below_every_rate_sends_nothing_but_still_contends():
    env, fabric, cell = _cell()
    ok, _ = cell.link("a", "rsu", 6e6, 6e6)
    dead, _ = cell.link("b", "rsu", 0.0, 6e6)
    ends = {}
    _upload(env, fabric, ok, 50 * FRAME_BITS, ends, "a")
    stuck = fabric.transmit(dead, [], 1e6)
    env.run(until=10.0)
    # b still contends for the medium (it has frames queued) but sends none
    assert ends["a"] == pytest.approx(50 * _per_frame(6e6, 2))
    assert stuck.rate == 0 and stuck.event.triggered is False


def test_a_rate_change_mid_flow_reprices_its_frames():
    env, fabric, cell = _cell()
    up, _ = cell.link("a", "rsu", 6e6, 6e6)
    ends = {}
    _upload(env, fabric, up, 200 * FRAME_BITS, ends, "a")
    half = 100 * _per_frame(6e6, 1)
    env.run(until=half)
    cell.set_rates(up[0], 12e6, 12e6)
    env.run()
    assert ends["a"] == pytest.approx(half + 100 * _per_frame(12e6, 1), rel=1e-6)


def test_under_tcp_acknowledgements_take_airtime_and_two_stations_contend():
    framing = Framing(ip_bytes=1500, bits_per_frame=1502 * 8, acks_per_frame=0.5)
    env, fabric, cell = _cell(framing)
    ends = {}
    for i in range(5):
        up, _ = cell.link(f"c{i}", "rsu", 6e6, 6e6)
        _upload(env, fabric, up, 10 * 1502 * 8, ends, i)
    env.run()
    data, ack = dcf.exchange_s(1500, 6e6, 2), dcf.exchange_s(52, 6e6, 2)
    frame = data + 0.5 * ack
    per_frame = frame + 1.5 * dcf.contention_per_frame_s(2, frame)
    assert max(ends.values()) == pytest.approx(50 * per_frame, rel=1e-9)


def test_up_and_down_share_one_half_duplex_medium():
    env, fabric, cell = _cell()
    up, _ = cell.link("a", "rsu", 6e6, 6e6)
    _, down = cell.link("b", "rsu", 6e6, 6e6)
    ends = {}
    _upload(env, fabric, up, 100 * FRAME_BITS, ends, "up")
    _upload(env, fabric, down, 100 * FRAME_BITS, ends, "down")
    env.run()
    assert ends["up"] == pytest.approx(ends["down"]) == pytest.approx(200 * _per_frame(6e6, 2))


def test_a_broadcast_frame_waits_for_its_own_contention_only_even_under_tcp():
    framing = Framing(ip_bytes=1500, bits_per_frame=1502 * 8, acks_per_frame=0.5)
    env, fabric, cell = _cell(framing)
    ends = {}
    _upload(env, fabric, cell.broadcast(6e6), 100 * 1502 * 8, ends, "b")
    env.run()
    frame = dcf.aifs_s(2) + dcf.frame_airtime_s(1536, 6e6)  # no MAC ACK, no TCP ACK
    assert ends["b"] == pytest.approx(100 * (frame + dcf.contention_per_frame_s(1, frame)))
