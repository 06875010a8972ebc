"""Satellites' batteries along a sunlight row: charge and deferral against hand computations."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
import simpy

from netfl.compute.satellite_power import SatellitePowerSystem
from netfl.scenario.leo import SatellitePower
from netfl.world.orbits import PRESETS, walker_satrecs

START = datetime(2026, 1, 1, tzinfo=UTC)


def system(light: np.ndarray, initial: float = 0.5, policy: str = "defer"):
    env = simpy.Environment()
    spec = SatellitePower.model_validate({
        "array": "80 W", "bus": "40 W", "step": "60 s",
        "battery": {"capacity": "100 Wh", "max_depth_of_discharge": 0.5, "eta_charge": 0.9,
                    "eta_discharge": 1.0, "initial": initial},
        "policy": {"kind": policy, "min_charge": 0.8}})
    sats = walker_satrecs(PRESETS["walker-40-5"], START)[:1]
    power = SatellitePowerSystem(env, spec, ["e0"], sats, START, 3600 * 3, job_w=15.0)
    power.states["e0"].light = light
    return env, power


def test_charge_in_sunlight_and_in_shadow_by_hand():
    steps = 3 * 60 + 1
    env, power = system(np.ones(steps))
    # 80 W in, 40 W out for an hour: 40 Wh x 0.9 stored
    assert power.charge_wh("e0", 3600.0) == pytest.approx(50.0 + 36.0)
    env, power = system(np.zeros(steps), initial=0.9)
    # 40 W for 30 min from 90 Wh: 70 Wh; then the floor (50 Wh) stops the fall, the rest unmet
    assert power.charge_wh("e0", 1800.0) == pytest.approx(70.0)
    assert power.charge_wh("e0", 3 * 3600.0) == pytest.approx(50.0)
    assert power.states["e0"].unmet_wh == pytest.approx(40.0 * 3 - 40.0)


def test_defer_waits_for_the_charge_the_policy_asks_for():
    env, power = system(np.ones(3 * 60 + 1))
    # from 50 Wh to 80 Wh at 36 Wh an hour: 50 min; the wait ends at the step that crosses it
    wait = power.wait_for_charge_s("e0")
    assert 50 * 60 <= wait <= 50 * 60 + 60
    env, dark = system(np.zeros(3 * 60 + 1))
    assert dark.wait_for_charge_s("e0") == pytest.approx(3 * 3600.0)  # never, within the grid


def test_a_deferred_job_runs_once_charged_and_draws_its_power():
    env, power = system(np.ones(3 * 60 + 1))

    class Slots:
        def run(self, duration):
            yield env.timeout(duration)

    done = []

    def job():
        yield from power.run("e0", 600.0, Slots())
        done.append(env.now)

    env.process(job())
    env.run()
    state = power.states["e0"]
    assert state.deferrals == 1 and 3000 <= state.deferred_s <= 3060
    assert done[0] == pytest.approx(state.deferred_s + 600.0)
    # during the job 80 - 40 - 15 = 25 W net: 10 min store 25 x 0.9 / 6 Wh
    before = 50.0 + 36.0 * state.deferred_s / 3600.0
    assert state.charge_wh == pytest.approx(before + 25.0 * 0.9 / 6.0, abs=1e-6)


def test_a_hops_radio_energy_comes_out_of_the_battery_at_once():
    env, power = system(np.zeros(3 * 60 + 1), initial=0.9)
    env.run(until=1800.0)
    power.draw_radio("e0", 7200.0)  # 2 Wh at 30 min: 90 - 20 (bus) - 2
    state = power.states["e0"]
    assert state.charge_wh == pytest.approx(68.0) and state.radio_wh == pytest.approx(2.0)
    power.draw_radio("e0", 3600.0 * 30)  # 30 Wh, and only 18 above the 50 Wh floor
    assert state.charge_wh == pytest.approx(50.0)
    assert state.unmet_wh == pytest.approx(12.0)
