"""Energy terms and battery arithmetic against closed forms and hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.compute.energy import (
    BatterySpec,
    LteUePower,
    activity_energy_j,
    battery_step,
    battery_trajectory,
    draw_at_once,
    idle_energy_j,
    radio_energy_j,
)


def test_activity_idle_and_radio_energy_closed_forms():
    assert activity_energy_j(6.4, 10.0) == pytest.approx(64.0)  # a Pi 4 at 6.4 W for 10 s
    assert idle_energy_j(2.7, 100.0, 40.0) == pytest.approx(162.0)
    assert radio_energy_j(0.5, 1.6, 1.0) == (pytest.approx(0.8), pytest.approx(0.5))
    with pytest.raises(ValueError):
        activity_energy_j(-1.0, 1.0)
    with pytest.raises(ValueError, match="exceeds the span"):
        idle_energy_j(1.0, 10.0, 11.0)


def test_lte_throughput_model_by_hand():
    # 438.39 mW/Mbps up, 51.97 mW/Mbps down, 1288.04 mW base (Huang et al. 2012)
    model = LteUePower(0.43839, 0.05197, 1.28804)
    assert model.power_w(2.0, 0.0) == pytest.approx(0.87678 + 1.28804)
    # 1 MB up in 2 s: 4 Mbit/s for 2 s
    assert model.transfer_energy_j(1e6, 2.0, uplink=True) == pytest.approx(
        (0.43839 * 4 + 1.28804) * 2)
    assert model.transfer_energy_j(1e6, 2.0, uplink=False) == pytest.approx(
        (0.05197 * 4 + 1.28804) * 2)
    assert model.transfer_energy_j(1e6, 0.0, uplink=True) == 0.0


def test_battery_step_by_hand():
    spec = BatterySpec(100.0, max_depth_of_discharge=0.3, eta_charge=0.9, eta_discharge=0.95)
    assert spec.floor_wh == pytest.approx(70.0)
    # 60 W in, 20 W out for 30 min: +20 Wh net, 18 Wh stored
    step = battery_step(spec, 80.0, 60.0, 20.0, 1800.0)
    assert step.charge_wh == pytest.approx(98.0) and step.shed_wh == 0 and step.unmet_wh == 0
    # full: 10 Wh net offered, 9 storable, 2 room: 2 stored, 7 / 0.9 Wh of source shed
    step = battery_step(spec, 98.0, 30.0, 10.0, 1800.0)
    assert step.charge_wh == pytest.approx(100.0) and step.shed_wh == pytest.approx(7 / 0.9)
    # eclipse: 40 W out for 35 min = 23.33 Wh at the load, 24.56 Wh from the cells
    step = battery_step(spec, 100.0, 0.0, 40.0, 2100.0)
    assert step.charge_wh == pytest.approx(100.0 - 40 * 2100 / 3600 / 0.95)
    # at the floor the rest is unmet, counted at the load
    step = battery_step(spec, 72.0, 0.0, 40.0, 2100.0)
    assert step.charge_wh == pytest.approx(70.0)
    assert step.unmet_wh == pytest.approx(40 * 2100 / 3600 - 2.0 * 0.95)


@pytest.mark.parametrize("field", ["capacity_wh", "max_depth_of_discharge", "eta_charge"])
def test_bad_battery_specs_are_errors(field):
    values = {"capacity_wh": 10.0, field: 0.0 if field != "capacity_wh" else -1.0}
    with pytest.raises(ValueError, match=field):
        BatterySpec(**values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 200), st.floats(0, 200)), min_size=1, max_size=50),
       st.floats(0.5, 1.0), st.floats(0.5, 1.0), st.floats(0.05, 1.0))
def test_energy_is_conserved_and_the_charge_stays_in_bounds(steps, eta_in, eta_out, dod):
    spec = BatterySpec(50.0, dod, eta_in, eta_out)
    charge, dt = 50.0, 60.0
    for source, load in steps:
        before = charge
        step = battery_step(spec, charge, source, load, dt)
        charge = step.charge_wh
        assert spec.floor_wh - 1e-9 <= charge <= spec.capacity_wh + 1e-9
        net = (source - load) * dt / 3600
        if net >= 0:  # stored + shed (both at the source) = net in
            assert (charge - before) / eta_in + step.shed_wh == pytest.approx(net, abs=1e-9)
        else:  # given at the load + unmet = net out
            assert (before - charge) * eta_out + step.unmet_wh == pytest.approx(-net, abs=1e-9)
    trajectory = battery_trajectory(spec, 50.0, np.array([s for s, _ in steps]),
                                    np.array([c for _, c in steps]), dt)
    assert trajectory[-1] == pytest.approx(charge)


def test_draw_at_once_by_hand():
    spec = BatterySpec(10.0, max_depth_of_discharge=0.5, eta_discharge=0.8)
    assert draw_at_once(spec, 9.0, 2.0) == pytest.approx((6.5, 0.0))  # 2 / 0.8 leaves
    # 4 Wh above the 5 Wh floor give 3.2 Wh; 0.8 Wh of the 4 asked for is unmet
    assert draw_at_once(spec, 9.0, 4.0) == pytest.approx((5.0, 0.8))
    assert draw_at_once(spec, 9.0, 0.1)[1] == 0.0  # exactly: no rounding dust as "unmet"
    with pytest.raises(ValueError):
        draw_at_once(spec, 9.0, -1.0)
