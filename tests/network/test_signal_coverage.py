"""On a shared medium a vehicle whose SNR is below the lowest rate is out of coverage, whatever
the coverage radius says (netfl/network/access.py)."""

from __future__ import annotations

import pytest

from netfl.sim.trace import TransferFail
from tests.network.test_access import RoadBench

WEAK = {"kind": "shannon", "path_loss": "tr36942-macro", "shadowing_std": 0,
        "vehicle_tx_power": 10.0, "rsu_tx_power": 10.0}  # 802.11p: 100-200 m; LTE: 300-400 m
MEDIA = [{"kind": "802.11p"}, {"kind": "lte"}]


def _bench(tmp_path, vehicles, medium):
    return RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=3000, radio=WEAK, medium=medium)


@pytest.mark.parametrize("medium", MEDIA, ids=lambda m: m["kind"])
def test_a_parked_vehicle_below_the_lowest_rate_cannot_transfer(tmp_path, medium):
    bench = _bench(tmp_path, {"far": [(0, 1000, 2500), (1000, 1000, 2500)]}, medium)
    done = {}
    bench.send_at(1.0, "c0", "e0", 100_000, done, "up")
    bench.env.run(until=100)
    assert done["up"][0] == pytest.approx(1.0)  # at once, not when the vehicle leaves
    assert [r.reason for r in bench.of(TransferFail)] == ["left-coverage"]


@pytest.mark.parametrize("medium", MEDIA, ids=lambda m: m["kind"])
def test_a_vehicle_driving_out_of_signal_fails_before_the_radius(tmp_path, medium):
    # 20 m/s away from the RSU, from 50 m; the radius (3 km) is reached at 147.5 s
    bench = _bench(tmp_path, {"away": [(0, 1000, 50), (200, 1000, 4050)]}, medium)
    done = {}
    bench.send_at(1.0, "c0", "e0", 1e9, done, "up")
    bench.env.run(until=300)
    when, _ = done["up"]
    assert 1.0 < when < 30.0
    assert [r.reason for r in bench.of(TransferFail)] == ["left-coverage"]
    # the rate is tracked every 5 m: out of signal where it failed, in signal 5 m before
    mobile, distance = bench.network.mobile, 50 + 20 * when
    if medium["kind"] == "802.11p":
        assert min(mobile.radio.rates_bps(distance)) == 0
        assert min(mobile.radio.rates_bps(distance - 5.0)) > 0
    else:
        cell = mobile._cells["e0"]
        coupling = mobile.radio.coupling_db(distance)
        assert min(cell.uplink_sinr_db(coupling, 50), cell.downlink_sinr_db(coupling)) < (
            cell.uplink_sinr_db(mobile.radio.coupling_db(distance - 5.0), 50))


def test_a_vehicle_back_in_signal_transfers_again(tmp_path):
    # out of signal at 2.5 km from 0 to 10 s, then parked at 100 m
    vehicles = {"v": [(0, 1000, 2500), (10, 1000, 2500), (11, 1000, 100), (100, 1000, 100)]}
    bench = _bench(tmp_path, vehicles, {"kind": "802.11p"})
    done = {}
    bench.send_at(1.0, "c0", "e0", 10_000, done, "first")
    bench.send_at(20.0, "c0", "e0", 10_000, done, "second")
    bench.env.run(until=100)
    assert done["first"][0] == pytest.approx(1.0)
    assert done["second"][0] > 20.0 and not isinstance(done["second"][1], Exception)


def test_round_a_corner_of_the_grid_the_rsu_is_out_of_signal(tmp_path):
    # WINNER+ B1: 200 m along the RSU's street in sight; 150 m + 150 m round a corner not
    radio = {"kind": "shannon", "path_loss": "winner-b1-manhattan", "shadowing_std": 0}
    vehicles = {"along": [(0, 1200, 3), (1000, 1200, 3)],
                "corner": [(0, 1150, 150), (1000, 1150, 150)]}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=300, radio=radio,
                      medium={"kind": "802.11p"})
    done = {}
    for client in ("c0", "c1"):
        bench.send_at(1.0, client, "e0", 10_000, done, client)
    bench.env.run(until=100)
    vehicle = {bench.world.vehicle_of(c, 1.0): c for c in ("c0", "c1")}
    assert not isinstance(done[vehicle["along"]][1], Exception)
    assert [r.src for r in bench.of(TransferFail)] == [vehicle["corner"]]
    assert bench.of(TransferFail)[0].reason == "left-coverage"
