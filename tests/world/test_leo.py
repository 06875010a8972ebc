"""The LEO world: +Grid ISLs and planes of TLE sets, users attached to every satellite in view,
visibility queries (remaining window, longest first, next rise), link delays from the geometry,
feeder links that follow the gateways, access delays and link-budget rates at the slant range,
and whole leo runs (fake model) with windows.csv, the contact chart and the summary."""

import copy
import math
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import simpy

from netfl.errors import ScenarioError, TransferFailed
from netfl.network.helper import build_network
from netfl.network.radio import (
    SPEED_OF_LIGHT_MPS,
    AccessRadio,
    free_space_path_loss_db,
    link_budget_rate_bps,
)
from netfl.runner import run_scenario
from netfl.scenario.leo import LeoWorld
from netfl.scenario.sections import Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import LinkState, TraceBus
from netfl.world import OrbitWorld
from netfl.world import leo as leo_module
from netfl.world.base import CLOUD_NAME
from netfl.world.contact_plan import contact_windows as plan_windows
from netfl.world.eclipses import world_eclipses
from netfl.world.leo import (
    build_leo_world,
    grid_isl_pairs,
    infer_planes,
    leo_summary,
    merged_intervals,
)
from netfl.world.orbits import (
    PRESETS,
    SPEED_OF_LIGHT_KM_S,
    WalkerShell,
    elevation_deg,
    parse_tle,
    positions_ecef,
    site_ecef,
    site_up,
    tle_text,
    walker_satrecs,
)

TLE_FILE = (Path(__file__).parents[2] / "scenarios" / "leo" / "tle"
            / "walker-600km-60deg-12x10.tle")
START = datetime(2026, 1, 1, tzinfo=UTC)
USERS = [[39.9, 116.4], [31.2, 121.5], [45.8, 126.6]]
GATEWAYS = [[40.0, 116.0], [22.3, 114.2]]
HORIZON = 2 * 3600.0


def world_spec(**changes) -> LeoWorld:
    spec = {"kind": "leo", "constellation": {"kind": "preset", "preset": "walker-40-5"},
            "users": {"points": USERS}, "min_elevation_deg": 10, "horizon": HORIZON,
            "cache": False, "ground_stations": {"positions": GATEWAYS}}
    spec.update(changes)
    return LeoWorld.model_validate({k: v for k, v in spec.items() if v is not None})


@pytest.fixture
def world() -> OrbitWorld:
    return build_leo_world(world_spec(), np.random.default_rng(0))


def at_times(env, times, probe) -> list:
    seen = []

    def proc():
        for t in times:
            yield env.timeout(t - env.now)
            seen.append(probe())
    env.process(proc())
    return seen


# ------------------------------------------------------------------------ ISLs and planes


@pytest.mark.parametrize("shell", ["walker-40-5", "telesat", "kuiper", "starlink-shell1"])
def test_grid_isls_give_every_satellite_four_neighbours_on_a_full_shell(shell):
    shell = PRESETS[shell]
    slots = [(k // shell.per_plane, k % shell.per_plane) for k in range(shell.total)]
    pairs = grid_isl_pairs(slots)
    assert len(pairs) == 2 * shell.total == len(set(pairs))
    assert all(a < b for a, b in pairs) and pairs == sorted(pairs)
    degree = Counter(k for pair in pairs for k in pair)
    assert set(degree.values()) == {4} and len(degree) == shell.total
    index = {slot: k for k, slot in enumerate(slots)}
    P, S = shell.planes, shell.per_plane
    for p, s in [(0, 0), (P - 1, S - 1), (P // 2, 1)]:
        k = index[p, s]
        expected = {index[p, (s + 1) % S], index[p, (s - 1) % S], index[(p + 1) % P, s],
                    index[(p - 1) % P, s]}
        assert {b if a == k else a for a, b in pairs if k in (a, b)} == expected


def test_grid_isls_of_a_subset_link_the_satellites_adjacent_in_the_shell():
    # planes 0 and 1, slots 2..4 of a 5 x 8 shell (as _kept leaves them)
    slots = [(p, s) for p in (0, 1) for s in (2, 3, 4)]
    pairs = set(grid_isl_pairs(slots))
    index = {slot: k for k, slot in enumerate(slots)}
    in_plane = {(index[p, s], index[p, s + 1]) for p in (0, 1) for s in (2, 3)}
    assert in_plane <= pairs  # (p, 2)-(p, 3) and (p, 3)-(p, 4)
    assert (index[0, 2], index[0, 4]) not in pairs  # 90 deg apart in the plane


def test_grid_isls_of_tiny_shells_have_no_self_or_double_links():
    assert grid_isl_pairs([(0, 0)]) == []
    assert grid_isl_pairs([(0, 0), (0, 1)]) == [(0, 1)]
    two_by_two = grid_isl_pairs([(p, s) for p in range(2) for s in range(2)])
    assert two_by_two == [(0, 1), (0, 2), (1, 3), (2, 3)]


@pytest.mark.parametrize("shell", [PRESETS["walker-40-5"], WalkerShell(600.0, 60.0, 12, 10, 1),
                                   PRESETS["telesat"]], ids=["40-5-1", "120-12-1", "telesat"])
def test_infer_planes_recovers_planes_and_slots_from_a_tle_export(shell):
    sats = walker_satrecs(shell, START)
    parsed = [rec for _, rec in parse_tle(tle_text([str(k) for k in range(shell.total)], sats))]
    truth = [(k // shell.per_plane, k % shell.per_plane) for k in range(shell.total)]
    assert infer_planes(parsed) == truth
    # the order of the file does not matter
    order = np.random.default_rng(1).permutation(shell.total)
    assert infer_planes([parsed[k] for k in order]) == [truth[k] for k in order]
    # and the +Grid built on the inferred slots has degree 4
    degree = Counter(k for pair in grid_isl_pairs(infer_planes(parsed)) for k in pair)
    assert set(degree.values()) == {4}


def test_infer_planes_with_a_large_phasing_numbers_slots_from_the_lowest_latitude_argument():
    # F = 5 of 120/12: plane p is ahead by 15 p deg, more than a slot (36 deg) from p = 3 on;
    # planes come back exactly, slots as a rotation of the shell's (from the lowest argument
    # of latitude), which keeps the +Grid a grid
    shell = WalkerShell(600.0, 60.0, 12, 10, 5)
    sats = walker_satrecs(shell, START)
    slots = infer_planes([rec for _, rec in parse_tle(tle_text([str(k) for k in range(120)],
                                                                sats))])
    assert [p for p, _ in slots] == [k // 10 for k in range(120)]
    for p in range(12):
        inferred = [s for q, s in slots[10 * p:10 * p + 10]]
        shift = (15 * p) // 36  # whole slots the plane's phase has passed
        assert inferred == [(s + shift) % 10 for s in range(10)]
    degree = Counter(k for pair in grid_isl_pairs(slots) for k in pair)
    assert set(degree.values()) == {4}


def test_the_scenarios_tle_file_is_a_12_by_10_shell():
    pairs = parse_tle(TLE_FILE.read_text(), source=str(TLE_FILE))
    assert len(pairs) == 120 and pairs[0][0] == "NETFL-W600-P00S00"
    slots = infer_planes([rec for _, rec in pairs])
    assert Counter(p for p, _ in slots) == {p: 10 for p in range(12)}
    for (name, _), (p, s) in zip(pairs, slots, strict=True):
        assert name == f"NETFL-W600-P{p:02d}S{s:02d}"
    # as its README says: the 3LE export of the 120/12/1 shell at 600 km, 60 deg
    names = [name for name, _ in pairs]
    assert TLE_FILE.read_text() == tle_text(
        names, walker_satrecs(WalkerShell(600.0, 60.0, 12, 10, 1), START))


def test_infer_planes_joins_a_plane_across_zero_raan():
    from sgp4.api import WGS72, Satrec

    def sat(raan, anomaly):
        rec = Satrec()
        rec.sgp4init(WGS72, "i", 1, 27000.0, 0.0, 0.0, 0.0, 0.0, 0.0, math.radians(53.0),
                     math.radians(anomaly), 0.0665, math.radians(raan))
        return rec

    slots = infer_planes([sat(359.8, 0.0), sat(0.2, 120.0), sat(180.0, 0.0), sat(359.9, 240.0)])
    assert len({p for p, _ in slots}) == 2
    assert slots[0][0] == slots[1][0] == slots[3][0] != slots[2][0]


# ------------------------------------------------------------------------ the world


def test_the_worlds_satellites_eclipses_along_their_orbits(world):
    sats = world.edge_servers[:5]
    eclipses = world_eclipses(world, sats, 6000.0)
    for sat in sats:
        dark = sum(b - a for a, b in eclipses[sat])
        # 500 km at 80 degrees: at most 38% of a 94.6-minute orbit in shadow, none above beta*
        assert 0.0 <= dark / 6000.0 < 0.40
        assert all(0.0 <= a < b <= 6000.0 for a, b in eclipses[sat])
    assert any(eclipses[s] for s in sats)


def test_the_world_graph(world):
    assert world.clients == ["c0", "c1", "c2"] and len(world.edge_servers) == 40
    assert world.cloud == CLOUD_NAME and not world.exclusive and world.orbital and world.mobile
    backhaul = [(u, v, d) for u, v, d in world.graph.edges(data=True)
                if d["link_class"] == "backhaul"]
    core = [(u, v, d) for u, v, d in world.graph.edges(data=True) if d["link_class"] == "core"]
    # +Grid has 80 links, but 8 satellites a plane at 500 km are 45 deg apart: every in-plane
    # chord passes 23 km below the surface, so only the 40 cross-plane links are there
    assert len(backhaul) == 40 and all(d["rate_bps"] == 10e9 for *_, d in backhaul)
    assert all(world.sat_names[int(u[1:])][:2] != world.sat_names[int(v[1:])][:2]
               for u, v, _ in backhaul)
    assert any("40 of 40 in-plane ISLs never clear the Earth" in n for n in world.notes)
    assert len(core) == 40 and all(d["rate_bps"] == 1e9 for *_, d in core)
    # delays at time 0 from the geometry
    u, v, d = backhaul[0]
    assert d["delay_s"] == pytest.approx(world.link_delays_s([(u, v)], 0.0)[0])
    assert 0.001 < d["delay_s"] < 0.05
    assert world.sat_names[:3] == ["p0s0", "p0s1", "p0s2"]
    assert world.orbital_speed_mps == pytest.approx(
        math.sqrt(398600.8 / (6378.135 + 500.0)) * 1000.0, rel=1e-3)


def test_no_ground_stations_no_cloud_and_no_isl():
    bare = build_leo_world(world_spec(ground_stations=None, isl={"kind": "none"}),
                           np.random.default_rng(0))
    assert bare.cloud is None and CLOUD_NAME not in bare.graph
    assert not [e for e in bare.graph.edges(data="link_class") if e[2] != "access"]


def test_the_worlds_windows_are_the_contact_plan(world):
    plan = plan_windows(PRESETS["walker-40-5"], [(*u, 0.0) for u in USERS],
                        world_spec().start, HORIZON, 10.0, cache_dir=False)
    assert len(world.windows) == len(plan) > 20
    assert list(world.windows.columns) == ["sat", "site", "rise_s", "set_s"]
    names = [world.sat_names[k] for k in world.windows["sat"]]
    assert names == list(plan["satellite"])
    assert np.allclose(world.windows["rise_s"], plan["rise_s"])


def test_users_are_attached_to_every_satellite_in_view():
    world = build_leo_world(world_spec(association={"policy": "earliest-risen"}),
                            np.random.default_rng(0))
    windows = world.windows
    times = np.arange(5.0, HORIZON, 37.0)
    env = simpy.Environment()
    heard = []
    world.subscribe(lambda c, e, up: heard.append((env.now, c, e, up)))
    seen = at_times(env, times, lambda: {c: world.edges_of(c) for c in world.clients})
    primary = at_times(env, times, lambda: dict(world.client_edge))
    world.start(env, None)
    env.run(until=HORIZON + 1)
    several = 0
    for t, edges, first in zip(times, seen, primary, strict=True):
        for k, client in enumerate(world.clients):
            now = windows[(windows["site"] == k) & (windows["rise_s"] <= t)
                          & (windows["set_s"] > t)].sort_values("rise_s")
            expected = [world.edge_servers[s] for s in now["sat"]]
            assert sorted(edges[client]) == sorted(expected)
            # the primary is the first attached: the earliest rise still in view
            assert first[client] == (expected[0] if expected else None)
            several += len(expected) > 1
    assert several > 0  # some user saw two satellites at once
    assert len([h for h in heard if h[3]]) == len(windows)
    assert len([h for h in heard if not h[3]]) == int((windows["set_s"] <= HORIZON).sum())


def _primaries(world, times):
    """Each sample time's {client: (primary, its window left, its elevation, in view)}."""
    env = simpy.Environment()

    def probe():
        out = {}
        for client in world.clients:
            primary = world.edge_of(client)
            view = world.edges_of(client)
            out[client] = (primary, view, {s: world.window_left_s(client, s, env.now)
                                           for s in view},
                           {s: world.elevation_deg(client, s, env.now) for s in view})
        return out
    seen = at_times(env, times, probe)
    world.start(env, None)
    env.run(until=times[-1] + 1)
    return seen


TIMES = np.arange(5.0, HORIZON, 41.0)


@pytest.mark.parametrize("policy", ["longest-remaining", "highest-elevation"])
def test_without_hysteresis_the_primary_is_the_best_in_view_by_the_policy(policy):
    world = build_leo_world(world_spec(association={
        "policy": policy, "hysteresis_s": 0, "hysteresis_deg": 0}), np.random.default_rng(0))
    several = 0
    for sample in _primaries(world, TIMES):
        for primary, view, left, elevation in sample.values():
            if not view:
                assert primary is None
                continue
            score = left if policy == "longest-remaining" else elevation
            assert score[primary] == max(score.values())
            several += len(view) > 1
    assert several > 0


def test_the_default_primary_has_more_of_its_window_left_than_the_earliest_risen():
    # the issue: the earliest-risen satellite is the one about to set
    left = {}
    for policy in ("earliest-risen", "longest-remaining"):
        world = build_leo_world(world_spec(association={"policy": policy}),
                                np.random.default_rng(0))
        left[policy] = [info[2][info[0]] for sample in _primaries(world, TIMES)
                        for info in sample.values() if len(info[1]) > 1]
    assert np.mean(left["longest-remaining"]) > 1.5 * np.mean(left["earliest-risen"])
    assert LeoWorld.model_validate(world_spec().model_dump()).association.policy == (
        "longest-remaining")


def test_hysteresis_keeps_the_primary_until_it_sets():
    world = build_leo_world(world_spec(association={"policy": "highest-elevation",
                                                    "hysteresis_deg": 90}),
                            np.random.default_rng(0))
    samples = _primaries(world, np.arange(5.0, HORIZON, 7.0))
    changes = 0
    for before, after in zip(samples, samples[1:], strict=False):
        for client, (primary, view, _, _) in after.items():
            old = before[client][0]
            if old is not None and primary != old:
                assert old not in view  # it changed only because the old one set
                changes += 1
    assert changes > 0


@pytest.mark.parametrize("policy", ["longest-remaining", "highest-elevation"])
def test_a_reconfiguration_schedule_moves_users_only_at_its_boundaries(policy):
    # Starlink's global schedule: every 15 s, 12 s past each minute (the start is on a minute)
    world = build_leo_world(world_spec(association={
        "policy": policy, "hysteresis_s": 0, "hysteresis_deg": 0,
        "reconfiguration": {"period": "15 s", "phase": "12 s"}}), np.random.default_rng(0))
    times = np.arange(0.5, HORIZON, 1.0)
    samples = _primaries(world, times)
    boundaries = {12.0 + 15.0 * k for k in range(int(HORIZON / 15) + 2)}
    changes = 0
    for t, before, after in zip(times[1:], samples, samples[1:], strict=False):
        crossed = any(t - 1.0 < b <= t for b in boundaries)
        for client, (primary, view, _left, _) in after.items():
            old = before[client][0]
            if old is None or primary == old:
                continue
            changes += 1
            # a move between boundaries only where the old satellite set
            assert crossed or old not in view, (t, client)
    assert changes > 0
    assert world.last_boundary_s(12.0) == 12.0 and world.last_boundary_s(11.9) == -3.0
    assert world.last_boundary_s(26.99) == 12.0 and world.last_boundary_s(27.0) == 27.0


def test_at_a_boundary_the_satellite_stays_in_view_for_the_interval():
    world = build_leo_world(world_spec(association={
        "reconfiguration": {"period": "15 s", "phase": "12 s"}}), np.random.default_rng(0))
    boundary_times = np.arange(12.0, HORIZON, 15.0 * 7)  # sampled just at boundaries
    for sample in _primaries(world, boundary_times):
        for primary, _view, left, _ in sample.values():
            if primary is not None and max(left.values()) >= 15.0:
                assert left[primary] >= 15.0


def test_reconfiguration_needs_a_scored_policy():
    with pytest.raises(ValueError, match="longest-remaining or highest-elevation"):
        world_spec(association={"policy": "earliest-risen", "reconfiguration": {}})


def test_primary_clients_of_splits_users_seeing_several_satellites(world):
    c0, c1 = world.clients[:2]
    e0, e1 = world.edge_servers[:2]
    world.attach(c0, e0)
    world.attach(c0, e1)
    world.attach(c1, e1)
    world.attach(c1, e0)
    assert world.edges_of(c0) == [e0, e1] and world.edge_of(c1) == e1
    assert world.clients_of(e0) == [c0, c1] and world.clients_of(e1) == [c0, c1]
    assert world.primary_clients_of(e0) == [c0] and world.primary_clients_of(e1) == [c1]
    world.detach(c0, e0)  # c0 falls back to e1
    assert world.primary_clients_of(e1) == [c0, c1] and world.primary_clients_of(e0) == []
    assert world.clients_of(e0) == [c1]


def union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def test_remaining_visible_and_next_rise_follow_the_coverage(world):
    windows = world.windows
    cover = {s: union([(r.rise_s, r.set_s) for r in windows[windows["sat"] == k].itertuples()])
             for k, s in enumerate(world.edge_servers)}
    for s in world.edge_servers:
        assert np.allclose(np.ravel(world.coverage(s)), np.ravel(cover[s]))
    gaps = 0
    for t in np.arange(0.0, HORIZON + 600.0, 23.0):
        remaining = {}
        for s, spans in cover.items():
            inside = [b - t for a, b in spans if a <= t < b]
            remaining[s] = inside[0] if inside else 0.0
            assert world.remaining_s(s, t) == pytest.approx(remaining[s])
        visible = world.visible_satellites(t)
        assert set(visible) == {s for s, r in remaining.items() if r > 0}
        assert [remaining[s] for s in visible] == sorted(
            (remaining[s] for s in visible), reverse=True)
        rises = [a for spans in cover.values() for a, _ in spans if a > t]
        assert world.next_rise_s(t) == (min(rises) if rises else None)
        gaps += not visible
    assert gaps > 0
    # at a rise the window is [rise, set): visible at the rise, not at the set
    s = world.edge_servers[int(windows.iloc[-1]["sat"])]
    a, b = world.coverage(s)[-1]
    assert world.remaining_s(s, a) == pytest.approx(b - a) and world.remaining_s(s, b) == 0.0
    assert world.next_rise_s(a) != a


def test_ties_in_remaining_go_to_the_lower_index(world, monkeypatch):
    monkeypatch.setattr(world, "remaining_s", lambda s, t: {"e3": 5.0, "e1": 5.0, "e7": 9.0}.get(
        s, 0.0))
    assert world.visible_satellites(0.0) == ["e7", "e1", "e3"]


def test_link_delays_follow_the_geometry(world):
    t = 1234.5
    pos = positions_ecef(walker_satrecs(PRESETS["walker-40-5"], world.spec.start), world.spec.start,
                         np.array([t]))[:, 0]
    gateways = site_ecef(np.array(GATEWAYS)[:, 0], np.array(GATEWAYS)[:, 1], 0.0)
    pairs = [("e0", "e1"), ("e0", "e8"), ("e5", CLOUD_NAME), (CLOUD_NAME, "e17")]
    delays = world.link_delays_s(pairs, t)
    assert delays[0] == pytest.approx(np.linalg.norm(pos[0] - pos[1]) / SPEED_OF_LIGHT_KM_S)
    assert delays[1] == pytest.approx(np.linalg.norm(pos[0] - pos[8]) / SPEED_OF_LIGHT_KM_S)
    for delay, k in zip(delays[2:], (5, 17), strict=True):
        slant = np.linalg.norm(pos[k] - gateways, axis=1).min()
        assert delay == pytest.approx(slant / SPEED_OF_LIGHT_KM_S + 0.010)
    # in-plane neighbours of a 8-satellite plane: chord of 45 deg at 6878 km
    chord = 2 * 6878.135 * math.sin(math.radians(22.5))
    assert delays[0] == pytest.approx(chord / SPEED_OF_LIGHT_KM_S, rel=0.01)
    assert world.distance_m("c0", "e3", t) == pytest.approx(
        np.linalg.norm(pos[3] - site_ecef(*USERS[0], 0.0)) * 1000.0)


def test_leo_summary_and_window_rows_by_hand(world):
    windows = world.windows
    now = float(windows["rise_s"].iloc[len(windows) // 2] + 60.0)
    begun = windows[windows["rise_s"] <= now]
    summary = leo_summary(world, now)
    lengths = np.minimum(begun["set_s"], now) - begun["rise_s"]
    covered = []
    for k in range(3):
        spans = union([(r.rise_s, min(r.set_s, now)) for r in
                       begun[begun["site"] == k].itertuples()])
        covered.append(sum(b - a for a, b in spans))
    assert summary == {
        "satellites": 40, "windows_per_user": round(len(begun) / 3, 3),
        "window_s_mean": round(float(lengths.mean()), 3),
        "user_coverage": round(float(np.mean(covered)) / now, 4),
        "satellites_seen": begun["sat"].nunique(), "satellite_handovers": 0}
    assert 0 < summary["user_coverage"] < 1
    rows = world.window_rows(now)
    assert list(rows.columns) == ["user", "satellite", "name", "rise_s", "set_s"]
    assert len(rows) == len(begun) and (rows["set_s"] <= now).all()
    assert (rows["set_s"] == np.minimum(begun["set_s"], now).to_numpy()).all()
    first = rows.iloc[0]
    assert first["user"] == f"c{int(begun.iloc[0]['site'])}"
    assert first["name"] == world.sat_names[int(first["satellite"][1:])]
    assert np.allclose(np.ravel(merged_intervals(begun, "site", 3)[0]), np.ravel(union(
        [(r.rise_s, r.set_s) for r in begun[begun["site"] == 0].itertuples()])))
    assert leo_summary(world, 0.0)["user_coverage"] is None


def test_max_satellites_keeps_the_longest_in_view():
    full = build_leo_world(world_spec(), np.random.default_rng(0))
    seen = (full.windows["set_s"] - full.windows["rise_s"]).groupby(full.windows["sat"]).sum()
    best = sorted(seen.sort_values(ascending=False, kind="stable").index[:6])
    subset = build_leo_world(world_spec(constellation={
        "kind": "preset", "preset": "walker-40-5", "max_satellites": 6}), np.random.default_rng(0))
    assert subset.edge_servers == [f"e{k}" for k in range(6)]
    assert subset.sat_names == [full.sat_names[k] for k in best]
    assert sorted(subset.windows["sat"].unique()) == list(range(6))
    kept = full.windows[full.windows["sat"].isin(best)]
    assert len(subset.windows) == len(kept)
    assert np.allclose(subset.windows["rise_s"], kept["rise_s"])


def test_users_from_regions_and_altitude():
    spec = world_spec(users={"regions": [
        {"count": 4, "lat_deg": 39.9, "lon_deg": 116.4, "radius_km": 300},
        {"count": 3, "lat_deg": -33.9, "lon_deg": 151.2, "radius_km": 100}], "altitude": "1 km"})
    sites = leo_module.user_sites(spec.users, np.random.default_rng(0))
    assert sites.shape == (7, 3) and (sites[:, 2] == 1000.0).all()
    assert (np.abs(sites[:4, 0] - 39.9) < 3).all() and (sites[4:, 0] < -32).all()
    built = build_leo_world(spec, np.random.default_rng(0))
    assert len(built.clients) == 7 and built.sites == pytest.approx(sites)


def test_a_world_nobody_sees_is_refused():
    spec = world_spec(constellation={"kind": "walker", "altitude": "550 km",
                                     "inclination_deg": 0, "planes": 2, "per_plane": 4},
                      users={"points": [[85.0, 0.0]]}, ground_stations=None)
    with pytest.raises(ScenarioError, match="no satellite rises above 10") as caught:
        build_leo_world(spec, np.random.default_rng(0))
    assert caught.value.problems[0].path == "world.users"


def test_a_broken_tle_file_is_a_scenario_error_on_its_path(tmp_path):
    bad = tmp_path / "bad.tle"
    bad.write_text("0 ONLY A NAME\n")
    spec = world_spec(constellation={"kind": "tle", "path": str(bad)})
    with pytest.raises(ScenarioError, match="bad.tle:1: a name line") as caught:
        build_leo_world(spec, np.random.default_rng(0))
    problem = caught.value.problems[0]
    assert problem.path == "world.constellation.path"
    # the message carries the file and line; no "= None" placeholder for a value
    assert " = None" not in problem.format() and not problem.has_value


def test_a_tle_constellation_gets_inferred_planes_and_a_full_grid():
    built = build_leo_world(world_spec(constellation={"kind": "tle", "path": str(TLE_FILE)},
                                       horizon=1800.0), np.random.default_rng(0))
    assert len(built.edge_servers) == 120 and built.sat_names[0] == "NETFL-W600-P00S00"
    isl = [e for e in built.graph.edges(data="link_class") if e[2] == "backhaul"]
    degree = Counter(n for u, v, _ in isl for n in (u, v))
    assert len(isl) == 240 and set(degree.values()) == {4}


# ------------------------------------------------------------------------ the network


class LeoBench:
    """A leo world, its network and every trace record."""

    def __init__(self, **spec):
        spec.setdefault("beams", {"kind": "dedicated"})  # closed forms: a carrier per user
        self.world = build_leo_world(world_spec(**spec), np.random.default_rng(0))
        self.env = simpy.Environment()
        self.trace = TraceBus()
        self.records = []
        self.trace.subscribe(self.records.append)
        # fluid: the closed forms below are serialization plus the slant range over c
        self.network = build_network(self.env, self.world, Links(transport={"kind": "fluid"}),
                                     RandomStreams(0), self.trace)
        self.world.start(self.env, None)
        self.network.start()

    def window(self, index: int = 0, longer_than: float = 200.0):
        """(client, satellite, rise, set) of the index-th window longer than ``longer_than``
        that opens after the start."""
        w = self.world.windows
        w = w[(w["rise_s"] > 0) & (w["set_s"] - w["rise_s"] > longer_than)].iloc[index]
        return (self.world.clients[int(w["site"])], self.world.edge_servers[int(w["sat"])],
                float(w["rise_s"]), float(w["set_s"]))

    def send_at(self, start_s: float, src: str, dst: str, nbytes: float, out: dict, key):
        def proc():
            yield self.env.timeout(start_s - self.env.now)
            began = self.env.now
            try:
                yield self.network.send(src, dst, nbytes)
                out[key] = (began, self.env.now)
            except TransferFailed as exc:
                out[key] = (began, exc)
        return self.env.process(proc())


# the earlier budget: Shannon, the same both ways
OLD_DIRECTION = {"frequency": "12 GHz", "bandwidth": "20 MHz", "eirp": "40 dBm", "g_over_t": 10}
OLD_BUDGET = {"kind": "link-budget", "rates": "shannon", "uplink": OLD_DIRECTION,
              "downlink": OLD_DIRECTION}


def test_link_budget_rate_by_hand():
    # 1000 km at 12 GHz: FSPL = 20 log10(4 pi d f / c) = 174.03 dB; EIRP 40 dBm = 10 dBW;
    # C/N0 = 10 - 174.03 + 10 + 228.6 = 74.57 dBHz; SNR = 74.57 - 73.01 = 1.56 dB over 20 MHz
    d, f, b = 1.0e6, 12e9, 20e6
    fspl = 20 * math.log10(4 * math.pi * d * f / SPEED_OF_LIGHT_MPS)
    assert fspl == pytest.approx(174.03, abs=0.01)
    assert free_space_path_loss_db(d, f) == pytest.approx(fspl, abs=0.01)
    snr_db = (40 - 30) - fspl + 10 + 228.6 - 10 * math.log10(b)
    expected = b * math.log2(1 + 10 ** (snr_db / 10))
    assert expected == pytest.approx(25.6e6, rel=0.01)
    assert link_budget_rate_bps(d, f, b, 40.0, 10.0) == pytest.approx(expected, rel=1e-3)
    assert link_budget_rate_bps(d, f, b, 40.0, 10.0, max_rate_bps=1e6) == 1e6
    # twice as far, 6 dB less; more EIRP, more rate
    assert link_budget_rate_bps(2 * d, f, b, 40.0, 10.0) < expected
    assert link_budget_rate_bps(d, f, b, 46.0, 10.0) > expected
    radio = AccessRadio(world_spec(gsl={**OLD_BUDGET, "max_rate": "100 Mbps"}).gsl)
    assert radio.varies and radio.rates_bps(d) == (pytest.approx(expected, rel=1e-3),) * 2
    fixed = AccessRadio(world_spec().gsl)
    assert not fixed.varies and fixed.rates_bps(d) == (50e6, 50e6)


def test_the_access_link_delay_is_the_slant_range_over_c_at_a_transfer():
    bench = LeoBench(gsl=OLD_BUDGET)
    client, sat, rise, set_ = bench.window()
    probes, done = [], {}
    for t in (rise + 1.0, (rise + set_) / 2, set_ - 20.0):
        bench.send_at(t, client, sat, 1000, done, t)
        probes.append(t)
    bench.env.run(until=set_ + 1)
    world = bench.world
    for t in probes:
        began, ended = done[t]
        slant_m = world.distance_m(client, sat, began)
        rate = link_budget_rate_bps(slant_m, 12e9, 20e6, 40.0, 10.0)
        # 8000 bits at the rate for that range, then the propagation delay
        assert ended - began == pytest.approx(8000 / rate + slant_m / SPEED_OF_LIGHT_MPS,
                                              rel=1e-3)
        assert 500e3 <= slant_m <= 2500e3
    # the delay shrinks towards the middle of the pass and grows again
    slants = [world.distance_m(client, sat, done[t][0]) for t in probes]
    assert slants[1] < slants[0] and slants[1] < slants[2]


def test_the_access_link_delay_follows_the_slant_range_with_a_fixed_gsl():
    bench = LeoBench(gsl={"kind": "fixed", "rate": "50 Mbps"})
    client, sat, rise, set_ = bench.window()
    done = {}
    mid = (rise + set_) / 2
    bench.send_at(mid, client, sat, 1000, done, "mid")
    bench.env.run(until=set_ + 1)
    began, ended = done["mid"]
    slant_m = bench.world.distance_m(client, sat, began)
    assert ended - began == pytest.approx(8000 / 50e6 + slant_m / SPEED_OF_LIGHT_MPS, rel=1e-3)


def test_a_transfer_cut_when_the_satellite_sets():
    bench = LeoBench(gsl={"kind": "fixed", "rate": "1 Mbps"})
    client, sat, rise, set_ = bench.window()
    done = {}
    bench.send_at(set_ - 2.0, client, sat, 1e6, done, "late")  # 8 s of data, 2 s left
    after = at_times(bench.env, [set_ + 5.0], lambda: bench.network.link(client, sat).up)
    bench.env.run(until=set_ + 10)
    assert isinstance(done["late"][1], TransferFailed)
    assert done["late"][1].reason == "left-coverage"
    cuts = [r for r in bench.records if isinstance(r, LinkState) and not r.up
            and r.link in (f"{client}-{sat}", f"{sat}-{client}")]
    assert [r.time_s for r in cuts] == [pytest.approx(set_)]
    assert after == [False]


def test_feeder_links_are_up_only_while_a_gateway_sees_the_satellite():
    bench = LeoBench()
    world, network = bench.world, bench.network
    times = np.arange(3.0, HORIZON, 30.0)
    states = at_times(bench.env, times, lambda: [network.link(s, CLOUD_NAME).up
                                                 for s in world.edge_servers])
    bench.env.run(until=HORIZON)
    gs = plan_windows(PRESETS["walker-40-5"], [(*g, 0.0) for g in GATEWAYS], world.spec.start,
                      HORIZON, 25.0, cache_dir=False)
    # independently: the elevation of every satellite from every gateway at every probe
    pos = positions_ecef(walker_satrecs(PRESETS["walker-40-5"], world.spec.start),
                         world.spec.start, times)  # (S, T, 3)
    g = np.array(GATEWAYS)
    el = elevation_deg(pos[:, :, None, :], site_ecef(g[:, 0], g[:, 1], 0.0)[None, None],
                       site_up(g[:, 0], g[:, 1])[None, None])
    seen = (el >= 25.0).any(axis=2)  # (S, T)
    ups = downs = 0
    edges = {name: np.concatenate([rows["rise_s"], rows["set_s"]])
             for name, rows in gs.groupby("satellite")}
    for j, (t, up) in enumerate(zip(times, states, strict=True)):
        for k in range(len(world.edge_servers)):
            near = edges.get(world.sat_names[k], np.array([np.inf]))
            if np.abs(near - t).min() < 1.0:
                continue
            expected = bool(seen[k, j])
            assert up[k] == expected, (t, world.sat_names[k])
            ups += expected
            downs += not expected
    assert ups > 5 and downs > 100
    # each change of state was traced, at the gateway windows' edges
    changes = [r for r in bench.records if isinstance(r, LinkState) and "cloud" in r.link]
    assert changes and all(r.time_s == 0.0 or np.isclose(
        np.concatenate([gs["rise_s"], gs["set_s"]]), r.time_s).any() for r in changes)


def test_isl_and_feeder_delays_are_refreshed_every_delay_update():
    bench = LeoBench(delay_update="20 s")
    world, network = bench.world, bench.network
    pairs = [("e0", "e8"), ("e2", "e33"), ("e3", CLOUD_NAME)]
    times = [0.5, 20.5, 39.5, 200.5]
    delays = at_times(bench.env, times, lambda: [network.link(u, v).delay_s for u, v in pairs])
    bench.env.run(until=300)
    for t, got in zip(times, delays, strict=True):
        refreshed = 20.0 * math.floor(t / 20.0)
        assert got == pytest.approx(list(world.link_delays_s(pairs, refreshed)), rel=1e-9)
    assert delays[0] != delays[1]


# ------------------------------------------------------------------------ whole runs


def leo_scenario(tiny: dict, seed: int = 1, **world) -> dict:
    scenario = copy.deepcopy(tiny)
    scenario["name"] = "leo-tiny"
    scenario["seed"] = seed
    scenario.pop("links")
    scenario["world"] = {
        "kind": "leo", "constellation": {"kind": "preset", "preset": "starlink-shell1",
                                         "max_satellites": 30},
        "users": {"region": {"count": 4, "lat_deg": 39.9, "lon_deg": 116.4, "radius_km": 300}},
        "min_elevation_deg": 25, "horizon": "20 min", "cache": False,
        "gsl": {"kind": "link-budget"},
        "ground_stations": {"positions": [[40.0, 116.0]]}, **world}
    scenario["devices"] = {"clients": {"flops": "200 kFLOPS"}}
    scenario["algorithm"] = {"kind": "fed-chs", "rounds": 10000, "interactions": 2,
                             "batch_size": 16, "eval_every": 100}
    scenario["stop"] = {"max_sim_time": "20 min"}
    return scenario


LEO_KEYS = ("handovers", "handovers_failed", "model_idle_s", "windows_per_user",
            "user_coverage", "satellites", "satellites_seen", "window_s_mean")


def without_host_time(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if not k.startswith("host_time_s")}


def test_a_leo_run_writes_windows_and_the_contact_chart(tiny, tmp_path):
    scenario = leo_scenario(tiny)
    scenario["output"] = {"plots": True}
    result = run_scenario(scenario, write=True, out_dir=tmp_path, run_id="run")
    summary = result.summary
    for key in LEO_KEYS:
        assert key in summary, key
    assert summary["satellites"] == 30 == summary["edge_servers"] and summary["clients"] == 4
    assert summary["handovers"] >= 1 and summary["rounds"] > 10
    assert summary["sim_time_s"] == pytest.approx(1200.0)
    assert 0 < summary["user_coverage"] <= 1 and summary["model_idle_s"] >= 0
    assert (result.path / "contact_chart.png").stat().st_size > 0
    windows = pd.read_csv(result.path / "windows.csv")
    assert list(windows.columns) == ["user", "satellite", "name", "rise_s", "set_s"]
    assert len(windows) == pytest.approx(summary["windows_per_user"] * 4, abs=0.01)
    assert windows["user"].isin([f"c{k}" for k in range(4)]).all()
    assert windows["name"].str.match(r"^p\d+s\d+$").all()
    assert (windows["set_s"] <= summary["sim_time_s"] + 1e-9).all()
    assert windows["satellite"].nunique() == summary["satellites_seen"]
    partition = pd.read_csv(result.path / "partition.csv", keep_default_na=False)
    assert (partition["edge_server"] == "").all()


def test_leo_runs_are_reproducible_and_depend_on_the_seed(tiny):
    first = run_scenario(leo_scenario(tiny), write=False).summary
    second = run_scenario(leo_scenario(tiny), write=False).summary
    assert without_host_time(first) == without_host_time(second)
    other = run_scenario(leo_scenario(tiny, seed=2), write=False).summary
    assert without_host_time(other) != without_host_time(first)


def hier_fedavg_scenario(tiny: dict, users: list) -> dict:
    scenario = leo_scenario(tiny, constellation={"kind": "preset", "preset": "walker-40-5"},
                            min_elevation_deg=10, users={"points": users}, ground_stations={
                                "positions": [users[0]], "min_elevation_deg": 10})
    scenario["algorithm"] = {"kind": "hier-fedavg", "rounds": 6, "local_steps": 1,
                             "edge_rounds": 1, "batch_size": 16}
    scenario["output"] = {"trace": True, "plots": False}
    return scenario


def under_two_satellites() -> list:
    """Ground points under satellites p0s0 and p1s0 of walker-40-5 at the start (and one
    between them): users that see one or two satellites from time 0."""
    pos = positions_ecef(walker_satrecs(PRESETS["walker-40-5"], START)[:9:8], START,
                         np.array([0.0]))[:, 0]
    points = [[math.degrees(math.atan2(z, math.hypot(x, y))), math.degrees(math.atan2(y, x))]
              for x, y, z in pos]
    return points + [[(points[0][0] + points[1][0]) / 2, (points[0][1] + points[1][1]) / 2]]


def test_hierarchical_fedavg_on_leo_trains_each_user_once_per_round(tiny):
    users = under_two_satellites()
    result = run_scenario(hier_fedavg_scenario(tiny, users), write=False)
    events = result.events
    trains = events[events["kind"] == "train_start"]
    assert len(trains) > 0 and result.summary["rounds"] == 6
    per_round = trains.groupby("round")["node"]
    assert (per_round.nunique() == per_round.size()).all()  # nobody in two clusters
    cloud = events[(events["kind"] == "aggregate") & (events["level"] == "cloud")]
    assert len(cloud) > 0 and "model_idle_s" not in result.summary


def test_hierarchical_fedavg_rounds_with_nobody_in_view_take_time(tiny):
    # the users see their first satellite only 76 s after the start
    users = [[45.0, 116.4], [45.5, 116.9]]
    scenario = hier_fedavg_scenario(tiny, users)
    first_rise = plan_windows("walker-40-5", users, START, 3600.0, 10.0, cache_dir=False)[
        "rise_s"].min()
    assert first_rise > 60
    result = run_scenario(scenario, write=False)
    assert result.summary["sim_time_s"] > 0


@pytest.mark.parametrize("beams", ["shared", "dedicated"])
def test_users_under_one_beam_share_its_carrier(beams):
    # three users within a kilometre of each other: one beam cell
    near = [[40.0, 116.0], [40.003, 116.003], [40.006, 116.0]]
    spec = {"kind": beams} if beams == "dedicated" else {"kind": beams, "background_users": 0}
    bench = LeoBench(users={"points": near}, gsl={"kind": "fixed", "rate": "8 Mbps"},
                     beams=spec)
    client, sat, rise, set_ = bench.window()
    others = [c for c in bench.world.clients if c != client]
    start = rise + 1.0
    done = {}
    for c in [client, *others]:
        bench.send_at(start, c, sat, 1e6, done, c)
    bench.env.run(until=set_)
    took = [done[c][1] - done[c][0] for c in [client, *others]]
    assert len(took) == 3  # co-located users see the same satellite
    alone = 8e6 / 8e6  # 1 MB at 8 Mbit/s
    if beams == "shared":
        assert max(took) == pytest.approx(len(took) * alone, rel=0.01)  # one carrier, in turn
    else:
        assert max(took) == pytest.approx(alone, rel=0.01)


def test_a_beams_background_users_take_their_shares():
    # 9 other subscribers always active (the default with a link budget): a lone user gets a
    # tenth of the beam
    assert LeoWorld.model_validate(world_spec().model_dump()).beams.background("fixed") == 0
    assert LeoWorld.model_validate(world_spec().model_dump()).beams.background(
        "link-budget") == 9
    bench = LeoBench(gsl={"kind": "fixed", "rate": "10 Mbps"},
                     beams={"kind": "shared", "background_users": 9})
    client, sat, rise, _ = bench.window()
    done = {}
    bench.send_at(rise + 1.0, client, sat, 1e6, done, "x")
    bench.env.run(until=rise + 100)
    began, ended = done["x"]
    slant = bench.world.distance_m(client, sat, began)
    assert ended - began == pytest.approx(8e6 / 1e6 + slant / SPEED_OF_LIGHT_MPS, rel=1e-3)


def test_a_load_that_varies_with_the_hour_follows_the_beams_local_time():
    from netfl.network.beam import local_hour

    assert local_hour(0.0, 0.0) == 0 and local_hour(23.5, 15.0) == 0
    assert local_hour(12.0, 116.4) == 19 and local_hour(1.0, -120.0) == 17

    def bench(profile):
        return LeoBench(gsl={"kind": "fixed", "rate": "10 Mbps"},
                        beams={"kind": "shared", "background_by_hour": profile},
                        start="2026-01-01T12:25:00Z")

    first = bench([1.0] * 24)
    client, sat, rise, _ = first.window()
    lon = float(first.world.site(client)[1])
    hour = local_hour(12 + 25 / 60 + (rise + 1.0) / 3600, lon)  # the transfer's local hour
    for busy, users in ((hour, 4.0), ((hour + 1) % 24, 1.0)):
        profile = [1.0] * 24
        profile[busy] = 4.0  # 4 background users in one local hour, 1 in the others
        run = bench(profile)
        done = {}
        run.send_at(rise + 1.0, client, sat, 1e6, done, "x")
        run.env.run(until=rise + 100)
        began, ended = done["x"]
        slant = run.world.distance_m(client, sat, began)
        assert local_hour(12 + 25 / 60 + ended / 3600, lon) == hour  # no turn meanwhile
        assert ended - began == pytest.approx(8e6 / (10e6 / (1 + users))
                                              + slant / SPEED_OF_LIGHT_MPS, rel=1e-3)


def test_a_beams_background_changes_as_its_local_hour_turns():
    from netfl.network.beam import BeamPlan

    now = [10.25]  # UTC hours
    profile = [float(h) for h in range(24)]  # h background users in local hour h
    bench = LeoBench()
    plan = BeamPlan(bench.network.fabric, 25e3, 16, 0, profile, lambda: now[0])
    up, _ = plan.pools("e0", plan.cell(0.0, 30.0))  # UTC + 2 h: local 12:15
    channel = up.member("c0->e0", 26e6)
    assert channel.capacity_bps == pytest.approx(26e6 / (1 + 12))
    assert plan.advance() == pytest.approx(0.75)  # until 13:00 local
    now[0] = 11.0
    plan.advance()
    assert channel.capacity_bps == pytest.approx(26e6 / (1 + 13))


def test_cells_that_differ_in_subscribers_scale_a_beams_background():
    from netfl.network.beam import BeamPlan, lognormal_cell_load

    took = {}
    for spread in (0.0, 1.0):
        bench = LeoBench(gsl={"kind": "fixed", "rate": "10 Mbps"},
                         beams={"kind": "shared", "background_users": 4,
                                "background_spread": spread})
        client, sat, rise, _ = bench.window()
        done = {}
        bench.send_at(rise + 1.0, client, sat, 1e6, done, "x")
        bench.env.run(until=rise + 200)
        began, ended = done["x"]
        took[spread] = ended - began - bench.world.distance_m(client, sat, began) / (
            SPEED_OF_LIGHT_MPS)
    cell = BeamPlan(None, 25e3, 16).cell(*bench.world.site(client))
    factor = lognormal_cell_load(RandomStreams(0), 1.0)(cell)  # the bench's run seed
    assert took[0.0] == pytest.approx(8e6 / (10e6 / 5), rel=1e-3)
    assert took[1.0] == pytest.approx(8e6 / (10e6 / (1 + 4 * factor)), rel=1e-3)


def test_rain_over_the_users_slows_their_uploads():
    # the uplink budget (14.25 GHz) loses MODCODs in a 50 mm/h storm up to 4 km
    took = {}
    for label, weather in (("clear", None), ("storm", {"rain": {"rate": 50.0,
                                                                 "height": "4 km"}})):
        gsl = {"kind": "link-budget"} | ({"weather": weather} if weather else {})
        bench = LeoBench(gsl=gsl)
        client, sat, rise, _ = bench.window()
        done = {}
        bench.send_at(rise + 30.0, client, sat, 2e6, done, "x")
        bench.env.run(until=rise + 200)
        took[label] = done["x"][1] - done["x"][0]
    assert took["storm"] > 1.2 * took["clear"]


def test_background_by_hour_needs_a_whole_day():
    with pytest.raises(ValueError, match="24 values"):
        world_spec(beams={"kind": "shared", "background_by_hour": [1.0] * 23})
    with pytest.raises(ValueError, match="not both"):
        world_spec(beams={"kind": "shared", "background_by_hour": [1.0] * 24,
                          "background_users": 3})


def test_association_elevations_agree_with_skyfield(world):
    sf = pytest.importorskip("skyfield.api")
    from datetime import timedelta

    from netfl.world.orbits import tle_text

    ts = sf.load.timescale(builtin=True)
    lines = tle_text(world.edge_servers, world._satrecs).splitlines()
    checked = 0
    for row in world.windows.head(12).itertuples():
        client, sat = world.clients[int(row.site)], world.edge_servers[int(row.sat)]
        t_s = (row.rise_s + row.set_s) / 2
        k = int(row.sat)
        satellite = sf.EarthSatellite(lines[3 * k + 1], lines[3 * k + 2], sat, ts)
        lat, lon = world.site(client)
        user = sf.wgs84.latlon(lat, lon)
        when = ts.from_datetime(world.spec.start + timedelta(seconds=float(t_s)))
        theirs = (satellite - user).at(when).altaz()[0].degrees
        assert world.elevation_deg(client, sat, t_s) == pytest.approx(theirs, abs=0.1)
        checked += 1
    assert checked == 12


@pytest.mark.parametrize("policy", ["longest-remaining", "earliest-risen"])
def test_a_users_serving_satellite_is_told_when_it_is_seen_to_change(policy):
    # what the timeline's "served by" slices are made of: one call per change,
    # the same satellite edge_of answers, never a repeat
    world = build_leo_world(world_spec(association={"policy": policy}),
                            np.random.default_rng(0))
    told: list[tuple[float, str, str]] = []
    env = simpy.Environment()
    world.subscribe_serving(lambda client, sat: told.append((env.now, client, sat)))
    seen = at_times(env, TIMES, lambda: {c: world.edge_of(c) for c in world.clients})
    world.start(env, None)
    env.run(until=TIMES[-1] + 1)
    last: dict[str, str] = {}
    for t, sample in zip(TIMES, seen, strict=True):
        for client, sat in sample.items():
            news = [s for when, c, s in told if when == t and c == client]
            if sat is not None and sat != last.get(client):
                assert news == [sat]
                last[client] = sat
            else:
                assert news == []
    assert len(told) > len(world.clients)  # users were handed over between satellites


def test_satellite_handovers_count_each_users_change_of_serving_satellite():
    """summary.json's satellite_handovers: every Serving record after a user's first one
    (a traced run records them all)."""
    root = Path(__file__).resolve().parents[2]
    result = run_scenario(root / "scenarios" / "leo" / "short.yaml", write=False, overrides=[
        "model={kind: fake}", "stop={max_sim_time: 600 s}", "output.trace=true",
        "data={dataset: synthetic, partition: {kind: dirichlet, alpha: 0.6}}"])
    serving = result.events[result.events["kind"] == "serving"]
    changes = result.summary["satellite_handovers"]
    assert changes > 0 and changes == sum(n - 1 for n in serving["client"].value_counts())


def test_a_power_budget_defers_on_board_jobs_and_leaves_other_runs_alone(tiny, tmp_path):
    plain = leo_scenario(tiny)
    powered = copy.deepcopy(plain)
    # a satellite whose battery is already below the charge on-board jobs need, at night
    powered["world"]["start"] = "2026-01-01T14:00:00Z"
    plain["world"]["start"] = "2026-01-01T14:00:00Z"
    powered["world"]["power"] = {"array": "80 W", "bus": "40 W",
                                 "battery": {"capacity": "100 Wh", "initial": 0.75},
                                 "policy": {"kind": "defer", "min_charge": 0.85}}
    powered["devices"]["edge"] = {"preset": "jetson-xavier-nx"}
    plain["devices"]["edge"] = {"preset": "jetson-xavier-nx"}
    base = run_scenario(plain, write=False)
    deferred = run_scenario(powered, write=True, out_dir=tmp_path, run_id="run")
    power = deferred.summary["satellite_power"]
    assert power["deferrals"] > 0 and power["deferred_s"] > 0 and power["policy"] == "defer"
    assert 0 < power["eclipse_fraction"]["mean"] < 1
    assert power["lowest_charge"] >= 0.7 - 1e-9  # the floor: 1 - 0.3
    assert deferred.summary["rounds"] < base.summary["rounds"]  # waiting for charge
    table = pd.read_csv(deferred.path / "satellite_power.csv")
    assert table["deferrals"].sum() == power["deferrals"]
    assert "satellite_power" not in base.summary
    ignored = copy.deepcopy(powered)
    ignored["world"]["power"]["policy"]["kind"] = "ignore"
    same = run_scenario(ignored, write=False)
    assert same.summary["satellite_power"]["deferrals"] == 0
    # ignoring power runs as if there were none
    assert {k: v for k, v in without_host_time(same.summary).items()
            if k != "satellite_power"} == without_host_time(base.summary)


def test_satellites_batteries_pay_their_radios_as_the_energy_meter_counts_them(tiny, tmp_path):
    scenario = leo_scenario(tiny)
    scenario["world"]["power"] = {"array": "80 W", "bus": "40 W", "policy": {"kind": "ignore"},
                                  "battery": {"capacity": "100 Wh"}}
    scenario["devices"]["edge"] = {"preset": "jetson-xavier-nx"}
    scenario["devices"]["clients"]["power"] = {"active": "5 W"}
    scenario["energy"] = {"radios": {"edge": {"tx": "13 W", "rx": "1.2 W"}}}
    scenario["output"] = {"plots": False}
    result = run_scenario(scenario, write=True, out_dir=tmp_path, run_id="run")
    sats = pd.read_csv(result.path / "satellite_power.csv")
    energy = pd.read_csv(result.path / "energy.csv")
    edge = energy[energy["tier"] == "edge"]
    radio_j = (edge["radio_tx_j"] + edge["radio_rx_j"]).sum()
    assert radio_j > 0
    assert sats["radio_wh"].sum() * 3600 == pytest.approx(radio_j)


def test_a_power_budget_needs_the_on_board_computers_power(tiny):
    scenario = leo_scenario(tiny)
    scenario["world"]["power"] = {"array": "80 W", "bus": "40 W",
                                  "battery": {"capacity": "100 Wh"}}
    scenario["devices"]["edge"] = {"preset": "edge-server-cpu"}
    with pytest.raises(ScenarioError, match="devices.edge.power"):
        run_scenario(scenario, write=False)
