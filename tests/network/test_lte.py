"""One LTE cell shared by an RSU and its vehicles (netfl/network/lte.py)."""

from __future__ import annotations

import math

import pytest
import simpy
from pydantic import ValidationError

from netfl.network import lte
from netfl.network.fabric import Fabric
from netfl.network.lte import LteCell, block_rate_bps, cqi_at, grant, itbs_of
from netfl.network.propagation import free_space_path_loss_db
from netfl.scenario.iov import LTE_BANDWIDTHS_HZ, IovWorld
from netfl.sim.trace import TransferFail
from tests.network.test_access import DELAY, RoadBench

TOP_UP_BPS = 36696 / 1e-3  # TBS of MCS 28 on 50 RB every TTI (TS 36.213)


def _cell(**kw):
    env = simpy.Environment()
    fabric = Fabric(env)
    params = dict(blocks=50, vehicle_power_dbm=23.0, rsu_power_dbm=23.0,
                  rsu_noise_figure_db=5.0, vehicle_noise_figure_db=9.0) | kw
    return env, fabric, LteCell(fabric, "rsu", **params)


# ----------------------------------------------------------------------------- pure maths


def test_the_bandwidths_of_the_schema_are_the_carriers_of_the_model():
    assert set(LTE_BANDWIDTHS_HZ) == set(lte.RESOURCE_BLOCKS)


def test_cqi_thresholds_follow_piros_efficiency():
    # CQI 15 (5.5547 bit/s/Hz) needs SINR/Gamma = 2^5.5547 - 1, Gamma = -ln(2.5e-4)/1.5
    gamma_db = 10 * math.log10(-math.log(2.5e-4) / 1.5)
    top = gamma_db + 10 * math.log10(2 ** 5.5547 - 1)
    assert cqi_at(top + 0.01) == 15 and cqi_at(top - 0.01) == 14
    assert cqi_at(-30.0) == 0 and block_rate_bps(-30.0, True) == 0.0
    assert [cqi_at(s) for s in range(-5, 30, 5)] == sorted(cqi_at(s) for s in range(-5, 30, 5))


@pytest.mark.parametrize(("mcs", "uplink", "itbs"), [
    (10, True, 10), (11, True, 10), (20, True, 19), (21, True, 19), (28, True, 26),
    (9, False, 9), (10, False, 9), (16, False, 15), (17, False, 15), (28, False, 26)])
def test_mcs_to_tbs_index_follows_ts_36_213(mcs, uplink, itbs):
    assert itbs_of(mcs, uplink) == itbs


def test_the_top_rate_is_the_tbs_of_mcs_28_on_50_rb():
    assert block_rate_bps(40.0, True) * 50 == pytest.approx(TOP_UP_BPS)


@pytest.mark.parametrize(("active", "expected"), [
    (1, (50, 1.0)), (3, (16, 1.0)), (7, (7, 1.0)), (15, (3, 16 / 15)), (16, (3, 1.0)),
    (30, (3, 16 / 30))])
def test_grants_are_whole_blocks_at_least_the_minimum(active, expected):
    rbs, share = grant(50, active, 3)
    assert rbs == expected[0] and share == pytest.approx(min(expected[1], 1.0))
    assert rbs * min(active, 50 // rbs) <= 50  # never more blocks than the carrier has


# ----------------------------------------------------------------------------- the cell


@pytest.mark.parametrize("n", [1, 3, 7, 30])
def test_n_near_vehicles_share_the_carrier_in_whole_blocks(n):
    env, fabric, cell = _cell()
    near = free_space_path_loss_db(100.0, 1.93e9)
    ups = [cell.link(f"c{i}", "rsu", near, near)[0] for i in range(n)]
    assert ups[0].capacity_bps == pytest.approx(TOP_UP_BPS)  # alone: the whole carrier
    flows = [fabric.transmit((up,), [], 1e9) for up in ups]
    env.run(until=0.5)
    rbs, share = grant(50, n, 3)
    each = TOP_UP_BPS * rbs / 50 * share
    assert all(f.rate == pytest.approx(each) for f in flows)
    assert sum(f.rate for f in flows) <= TOP_UP_BPS * (1 + 1e-12)


def test_a_vehicle_alone_gets_the_carrier_back_when_the_others_finish():
    env, fabric, cell = _cell()
    near = free_space_path_loss_db(100.0, 1.93e9)
    a, b = (cell.link(f"c{i}", "rsu", near, near)[0] for i in range(2))
    short = fabric.transmit((a,), [], TOP_UP_BPS * 25 / 50 * 0.1)  # 0.1 s at 25 RB
    long = fabric.transmit((b,), [], 1e9)
    env.run(until=0.05)
    assert long.rate == pytest.approx(TOP_UP_BPS / 2)
    env.run(until=0.2)
    assert short.event.triggered and long.rate == pytest.approx(TOP_UP_BPS)


def test_a_far_vehicle_gets_its_blocks_at_a_lower_mcs_and_does_not_slow_the_near_one():
    # unlike 802.11 (the performance anomaly), a scheduler shares blocks, not throughput
    env, fabric, cell = _cell()
    near, far = (free_space_path_loss_db(d, 1.93e9) for d in (100.0, 4000.0))
    a, _ = cell.link("near", "rsu", near, near)
    b, _ = cell.link("far", "rsu", far, far)
    fa, fb = fabric.transmit((a,), [], 1e9), fabric.transmit((b,), [], 1e9)
    env.run(until=0.1)
    assert fa.rate == pytest.approx(TOP_UP_BPS / 2)
    sinr = cell.uplink_sinr_db(far, 50)  # the MCS from the whole carrier's SINR
    assert fb.rate == pytest.approx(block_rate_bps(sinr, True) * 25) and fb.rate < fa.rate / 2


def test_power_control_and_the_power_limit_set_the_uplink_sinr():
    _, _, cell = _cell()
    noise = lte.noise_per_block_dbm(5.0)
    assert cell.uplink_sinr_db(80.0, 50) == pytest.approx(-80.0 - noise)  # P0 received
    assert cell.uplink_sinr_db(110.0, 50) == pytest.approx(23.0 - 10 * math.log10(50) - 110.0
                                                           - noise)  # at P_max
    _, _, full = _cell(p0_dbm=None)
    assert full.uplink_sinr_db(80.0, 50) == pytest.approx(23.0 - 10 * math.log10(50) - 80.0
                                                          - noise)


def test_a_moving_vehicle_is_repriced_in_place():
    env, fabric, cell = _cell()
    near, far = (free_space_path_loss_db(d, 1.93e9) for d in (100.0, 6000.0))
    up, down = cell.link("c0", "rsu", near, near)
    flow = fabric.transmit((up,), [], 1e9)
    env.run(until=0.1)
    cell.set_coupling(up, far, down, far)
    env.run(until=0.2)
    assert flow.rate == pytest.approx(block_rate_bps(cell.uplink_sinr_db(far, 50), True) * 50)


def test_a_fixed_radio_shares_its_rate_and_rate_reduction_loss_applies():
    env, fabric, cell = _cell(goodput=0.9)
    ups = [cell.link(f"c{i}", "rsu", 0.0, 0.0, (10e6, 10e6))[0] for i in range(2)]
    flows = [fabric.transmit((up,), [], 1e9) for up in ups]
    env.run(until=0.1)
    assert [f.rate for f in flows] == pytest.approx([10e6 * 25 / 50 * 0.9] * 2)


# ----------------------------------------------------------------------------- in a world


PARKED = {"a": [(0, 1000, 0), (1000, 1000, 0)], "b": [(0, 1100, 0), (1000, 1100, 0)]}


def test_vehicles_of_one_rsu_share_its_lte_carrier(tmp_path):
    done = {}
    bench = RoadBench(tmp_path, PARKED, [[1000, 0]], coverage=600,
                      medium={"kind": "lte"}, radio={"kind": "fixed", "rate": 8e6})
    for client in ("c0", "c1"):
        bench.send_at(1.0, client, "e0", 1e6, done, client)
    bench.env.run(until=100)
    # 25 blocks each: half the fixed rate; the fluid transport adds the link delay
    for client in ("c0", "c1"):
        assert done[client][0] == pytest.approx(1.0 + 8e6 / 4e6 + DELAY)


def test_an_lte_cell_follows_the_link_budget_of_a_shannon_radio(tmp_path):
    done = {}
    radio = {"kind": "shannon", "path_loss": "free-space", "shadowing_std": 0,
             "frequency": 2e9, "vehicle_antenna_gain": 0, "rsu_antenna_gain": 0}
    bench = RoadBench(tmp_path, {"a": [(0, 1000, 0), (1000, 1000, 0)]}, [[1000, 0]],
                      coverage=600, medium={"kind": "lte"}, radio=radio)
    bench.send_at(1.0, "c0", "e0", 1e6, done, "c0")
    bench.env.run(until=100)
    assert done["c0"][0] == pytest.approx(1.0 + 8e6 / TOP_UP_BPS + DELAY)  # near: MCS 28


def test_an_lte_multicast_goes_once_and_a_weak_vehicle_misses_it(tmp_path):
    vehicles = {"near": [(0, 1000, 5), (1000, 1000, 5)],
                "far": [(0, 1000, 590), (1000, 1000, 590)]}
    radio = {"kind": "shannon", "path_loss": "tr36942-macro", "shadowing_std": 0,
             "rsu_tx_power": -20.0}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=600, radio=radio,
                      medium={"kind": "lte", "downlink": "broadcast", "broadcast_rate": 5e6})
    out = {}

    def run():
        yield bench.env.timeout(1.0)
        out["client"] = {bench.world.vehicle_of(c, 1.0): c for c in ("c0", "c1")}
        out["results"] = yield bench.network.broadcast("e0", ["c0", "c1"], 1_472_000)
    bench.env.process(run())
    bench.env.run(until=100)
    results, near, far = out["results"], out["client"]["near"], out["client"]["far"]
    assert results[far] is None
    assert results[near].time_s == pytest.approx(1.0 + 1000 * 12000 / 5e6 + DELAY)
    # on the air once: 1,000 packets of 1,500 bytes, split over the two receivers' records
    fails = [r for r in bench.of(TransferFail) if r.reason == "broadcast-missed"]
    assert [r.dst for r in fails] == [far]
    assert results[near].wire_bytes + fails[0].wire_bytes == pytest.approx(1000 * 1500)


def test_the_lte_medium_rejects_a_bandwidth_lte_does_not_have(tmp_path):
    spec = {"kind": "iov", "road": {"kind": "highway", "length": 5000},
            "rsus": {"spacing": 1000}, "medium": {"kind": "lte"},
            "radio": {"kind": "shannon", "bandwidth": 7e6}}
    with pytest.raises(ValidationError, match="1.4, 3, 5, 10, 15 or 20 MHz"):
        IovWorld.model_validate(spec)
    spec |= {"medium": {"kind": "c-v2x", "p0": -200}, "radio": {"kind": "shannon"}}
    with pytest.raises(ValidationError, match="p0 -200 dBm"):
        IovWorld.model_validate(spec)
