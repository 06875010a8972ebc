"""Satellites' eclipses along SGP4 orbits against the circular orbit's closed form."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import numpy as np

from netfl.world.eclipses import (
    beta_angles_deg,
    eclipse_intervals,
    shadow_fraction,
    sunlight_grid,
)
from netfl.world.orbits import PRESETS, WalkerShell, walker_satrecs
from netfl.world.sun import critical_beta_deg, eclipse_fraction_circular

START = datetime(2026, 3, 20, tzinfo=UTC)  # near the equinox: betas spread over the shell


def test_each_satellites_eclipse_matches_its_beta_angles_closed_form():
    shell = PRESETS["starlink-shell1"]
    sats = walker_satrecs(shell, START)[::22]  # one satellite per plane: 72 planes of betas
    period = 2 * math.pi / (sats[0].no_kozai / 60.0)
    seconds = np.arange(0.0, period * 3, 2.0)  # three orbits at 2 s
    light = sunlight_grid(sats, START, seconds, model="cylindrical")
    measured = shadow_fraction(light, seconds)
    beta = beta_angles_deg(sats, START, seconds).mean(axis=1)
    expected = np.array([eclipse_fraction_circular(shell.altitude_km, b) for b in beta])
    errors = measured - expected
    print(f"{len(sats)} planes, beta {beta.min():.1f} to {beta.max():.1f} deg; eclipse "
          f"fraction {measured.min():.3f} to {measured.max():.3f}; worst error "
          f"{np.abs(errors).max():.4f}")
    # SGP4's J2 makes the orbits slightly non-circular and the altitude move by a few km
    assert np.abs(errors).max() < 0.006
    assert np.all(measured[np.abs(beta) > critical_beta_deg(shell.altitude_km) + 1] == 0)


def test_intervals_are_the_dark_stretches_with_interpolated_edges():
    seconds = np.array([0.0, 10, 20, 30, 40, 50])
    light = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    assert eclipse_intervals(light, seconds) == [(15.0, 35.0)]
    assert eclipse_intervals(np.array([0.0, 0, 1, 1, 0, 0]), seconds) == [(0.0, 15.0),
                                                                         (35.0, 50.0)]
    assert eclipse_intervals(np.ones(6), seconds) == []


def test_a_starlink_shell_for_a_day_is_cheap():
    sats = walker_satrecs(PRESETS["starlink-shell1"], START)
    seconds = np.arange(0.0, 86400.0, 60.0)
    began = time.perf_counter()
    light = sunlight_grid(sats, START, seconds)
    elapsed = time.perf_counter() - began
    print(f"{len(sats)} satellites x {len(seconds)} times: {elapsed:.1f} s")
    assert light.shape == (1584, 1440) and 0.25 < (1 - light).mean() < 0.40


def test_the_orbit_plane_barely_turns_in_one_orbit():
    shell = WalkerShell(550.0, 90.0, 1, 1, 0)
    sats = walker_satrecs(shell, START)
    seconds = np.arange(0.0, 5800.0, 1.0)
    betas = beta_angles_deg(sats, START, seconds)
    assert betas.shape == (1, len(seconds))
    assert np.ptp(betas) < 0.5  # the plane barely turns in one orbit
