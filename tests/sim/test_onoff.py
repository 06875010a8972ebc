import numpy as np
import pytest
import simpy

from netfl.sim.onoff import check_intervals, random_onoff, scheduled_onoff


def test_schedule_toggles_at_the_given_times():
    env, log = simpy.Environment(), []
    env.process(scheduled_onoff(env, [(5, 7), (1, 2)], lambda up: log.append((env.now, up))))
    env.run()
    assert log == [(1, False), (2, True), (5, False), (7, True)]


def test_random_onoff_spends_the_expected_share_of_time_up():
    env, state, up_time = simpy.Environment(), {"up": True, "since": 0.0}, [0.0]

    def set_state(up):
        if not up:
            up_time[0] += env.now - state["since"]
        state.update(up=up, since=env.now)

    env.process(random_onoff(env, np.random.default_rng(0), 9.0, 1.0, set_state))
    env.run(until=100_000)
    assert up_time[0] / 100_000 == pytest.approx(0.9, abs=0.01)


@pytest.mark.parametrize("bad", [[(2, 1)], [(-1, 1)], [(0, 5), (4, 6)]])
def test_bad_intervals(bad):
    with pytest.raises(ValueError):
        check_intervals(bad)
