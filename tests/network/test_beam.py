"""Beams' load: a factor per ground cell (cells differ in subscribers), drawn per cell."""

import math

import numpy as np
import pytest
import simpy

from netfl.network.beam import BeamPlan, lognormal_cell_load
from netfl.network.fabric import Fabric
from netfl.sim.clock import RandomStreams


def test_a_cells_factor_is_its_own_whatever_the_order_cells_are_asked():
    draw = lognormal_cell_load(RandomStreams(3), 1.0)
    cells = [(i, j) for i in range(-20, 20) for j in range(-5, 5)]
    first = {cell: draw(cell) for cell in cells}
    again = lognormal_cell_load(RandomStreams(3), 1.0)
    assert all(again(cell) == first[cell] for cell in reversed(cells))
    logs = np.log(list(first.values()))
    assert abs(np.median(logs)) < 0.2 and 0.8 < logs.std() < 1.2  # median 1, sigma 1
    other = lognormal_cell_load(RandomStreams(4), 1.0)
    assert other((0, 0)) != first[(0, 0)]  # another run seed, other cells


def test_a_beam_takes_its_first_cells_factor_on_its_background():
    env = simpy.Environment()
    factors = {(0, 0): 2.5, (5, 5): 0.5}
    plan = BeamPlan(Fabric(env), 25e3, 16, background=4, cell_load=factors.__getitem__)
    for cell, factor in factors.items():
        up, down = plan.pools("e0", cell)
        channel = up.member(f"u{cell}", 30e6)
        assert up.background == pytest.approx(4 * factor)
        assert channel.capacity_bps == pytest.approx(30e6 / (1 + 4 * factor))
    hourly = BeamPlan(Fabric(env), 25e3, 16, by_hour=[2.0] * 24, utc_hours=lambda: 1.0,
                      cell_load=factors.__getitem__)
    up, _ = hourly.pools("e0", (0, 0))
    assert up.background == pytest.approx(5.0)
    assert math.isclose(hourly.advance(), 1.0)
    assert up.background == pytest.approx(5.0)  # the hour's load times the cell's factor
