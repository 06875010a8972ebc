"""Inter-satellite links that clear the Earth (netfl/world/isl.py) and +Grid's phased
wrap-around."""

from __future__ import annotations

import math
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from netfl.world.isl import grid_isl_pairs, isl_windows, segment_clearance_km
from netfl.world.orbits import MEAN_EARTH_RADIUS_KM, PRESETS, positions_ecef, walker_satrecs

sys.path.insert(0, str(Path(__file__).parent))
from test_leo import LeoBench, at_times  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_segment_clearance_of_two_satellites_is_r_cos_half_the_angle_less_the_earth():
    r = MEAN_EARTH_RADIUS_KM + 500.0
    for angle_deg in (10.0, 45.0, 72.0, 120.0):
        half = math.radians(angle_deg) / 2
        a = np.array([r, 0.0, 0.0])
        b = np.array([r * math.cos(2 * half), r * math.sin(2 * half), 0.0])
        assert segment_clearance_km(a, b) == pytest.approx(r * math.cos(half)
                                                           - MEAN_EARTH_RADIUS_KM)
    # the closest point is an end when the segment points away from the Earth
    assert segment_clearance_km(np.array([7000.0, 0, 0]), np.array([8000.0, 0, 0])) == (
        pytest.approx(7000.0 - MEAN_EARTH_RADIUS_KM))


def _shell_pairs(name: str):
    shell = PRESETS[name]
    sats = walker_satrecs(shell, START)
    slots = [(k // shell.per_plane, k % shell.per_plane) for k in range(len(sats))]
    phases = [math.degrees(s.argpo + s.mo) % 360 for s in sats]
    return shell, sats, slots, grid_isl_pairs(slots, None, phases)


def test_walker_40_5_in_plane_links_never_clear_and_starlinks_always_do():
    _, sats, slots, pairs = _shell_pairs("walker-40-5")
    spans = isl_windows(sats, pairs, START, 7200.0, 10.0, 80.0)
    in_plane = [w for (u, v), w in zip(pairs, spans, strict=True) if slots[u][0] == slots[v][0]]
    assert len(in_plane) == 40 and all(w == [] for w in in_plane)  # 23 km below the surface
    _, sats, slots, pairs = _shell_pairs("starlink-shell1")
    spans = isl_windows(sats, pairs, START, 7200.0, 30.0, 80.0)
    assert all(w is None for w in spans)  # Starlink's shell clears the Earth everywhere


def test_the_wrap_around_joins_the_phased_neighbour():
    shell, sats, slots, pairs = _shell_pairs("starlink-shell1")  # 72 x 22, phasing 1
    last = shell.planes - 1
    wrap = {(slots[u], slots[v]) if slots[u][0] == 0 else (slots[v], slots[u])
            for u, v in pairs if {slots[u][0], slots[v][0]} == {0, last}}
    assert wrap == {((0, (s + 1) % 22), (last, s)) for s in range(22)}
    # and that neighbour is as close as the other cross-plane neighbours, not 3x farther
    pos = positions_ecef(sats, START, np.array([0.0]))[:, 0]
    index = {slot: k for k, slot in enumerate(slots)}
    wrap_km = [np.linalg.norm(pos[index[a]] - pos[index[b]]) for a, b in wrap]
    other_km = [np.linalg.norm(pos[index[(0, s)]] - pos[index[(1, s)]]) for s in range(22)]
    assert max(wrap_km) < 1.2 * max(other_km)
    # without phases, the old rule: same slot (1,580 km and more apart)
    same = grid_isl_pairs(slots)
    assert any({slots[u], slots[v]} == {(0, 0), (last, 0)} for u, v in same)


def test_a_cross_plane_link_is_up_exactly_while_its_chord_clears():
    bench = LeoBench()
    world, network = bench.world, bench.network
    (u, v), spans = next(iter(world.isl_spans.items()))
    assert spans and spans[0][1] - spans[0][0] < world.spec.horizon
    times = np.arange(1.0, 7000.0, 13.0)
    seen = at_times(bench.env, times, lambda: network.link(u, v).up)
    bench.env.run(until=7001)
    index = {name: k for k, name in enumerate(world.edge_servers)}
    pos = positions_ecef(world._satrecs, world.spec.start, times)
    clear = segment_clearance_km(pos[index[u]], pos[index[v]]) >= 80.0
    near_edge = np.array([min(abs(t - e) for span in spans for e in span) < 15.0
                          for t in times])
    assert (np.array(seen) == clear)[~near_edge].all()
    assert clear.any() and (~clear).any()


def test_a_kept_subset_that_splits_the_mesh_is_named_with_its_groups():
    bench = LeoBench(constellation={"kind": "preset", "preset": "walker-40-5",
                                    "max_satellites": 8})
    notes = [n for n in bench.world.notes if "split" in n]
    assert len(notes) == 1 and "8 satellites into" in notes[0]


def test_the_idealized_mesh_keeps_every_grid_link_by_name():
    bench = LeoBench(isl={"kind": "grid", "earth_blocks": False})
    backhaul = [link for link in bench.network.links() if link.link_class == "backhaul"]
    assert len(backhaul) == 80 and not bench.world.isl_spans and not bench.world.notes
