"""Roads of the IoV world: grid paths stay on streets, FCD paths, RSU lattices, the backhaul."""

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from netfl.world.mobility import FcdRecord, read_fcd
from netfl.world.roads import (
    backhaul_edges,
    bounding_box,
    fcd_paths,
    grid_entries,
    grid_paths,
    lattice_positions,
)

DATA = Path(__file__).parent / "data"
SPEED = (10.0, 1.0, 8.0, 12.0)  # mean, std, low, high in m/s


def on_lattice(value: float, block: float) -> bool:
    return abs(value / block - round(value / block)) < 1e-9


# ---------------------------------------------------------------------------- grid entries


@pytest.mark.parametrize(("bx", "by"), [(1, 1), (4, 4), (3, 2)])
def test_grid_entries_are_every_boundary_street_end_heading_inwards(bx, by):
    entries = grid_entries(bx, by)
    assert len(entries) == 2 * (bx + 1) + 2 * (by + 1)
    assert len(set(entries)) == len(entries)
    for (i, j), (dx, dy) in entries:
        assert abs(dx) + abs(dy) == 1
        assert 0 <= i <= bx and 0 <= j <= by
        assert i in (0, bx) or j in (0, by)  # on the boundary
        assert 0 <= i + dx <= bx and 0 <= j + dy <= by  # the first block is inside
    # fixed order: bottom, top, left, right
    assert entries[0] == ((0, 0), (0, 1)) and entries[-1] == ((bx, by), (-1, 0))


# ---------------------------------------------------------------------------- grid paths


def some_grid_paths(bx=4, by=3, block=250.0, turns=(0.5, 0.25, 0.25), seed=3, start=-100.0,
                    end=600.0):
    return grid_paths(bx, by, block, 1 / 60, start, end, SPEED, turns,
                      np.random.default_rng(seed))


def test_grid_paths_stay_on_streets_inside_the_grid():
    bx, by, block = 4, 3, 250.0
    paths = some_grid_paths(bx, by, block)
    assert len(paths) > 50
    for path in paths:
        speed = math.hypot(*path[0].velocity)
        assert SPEED[2] <= speed <= SPEED[3]
        for k, trip in enumerate(path):
            vx, vy = trip.velocity
            assert (vx == 0.0) != (vy == 0.0), "every segment is axis-aligned and moves"
            assert math.hypot(vx, vy) == pytest.approx(speed)  # one speed per vehicle
            for x, y in (trip.start, trip.position(trip.end_s)):
                # every segment end is an intersection: both coordinates on the street lattice
                assert on_lattice(x, block) and on_lattice(y, block)
                assert -1e-6 <= x <= bx * block + 1e-6 and -1e-6 <= y <= by * block + 1e-6
            if k:  # segments follow one another in time and space, and turn
                before = path[k - 1]
                assert trip.start_s == pytest.approx(before.end_s)
                assert trip.start == pytest.approx(before.position(before.end_s))
                assert trip.velocity != before.velocity, "straight runs are merged"
        # it enters on the boundary and leaves on it
        x0, y0 = path[0].start
        assert x0 in (0.0, bx * block) or y0 in (0.0, by * block)
        x1, y1 = path[-1].position(path[-1].end_s)
        assert (abs(x1) < 1e-6 or abs(x1 - bx * block) < 1e-6 or abs(y1) < 1e-6
                or abs(y1 - by * block) < 1e-6)
    starts = [p[0].start_s for p in paths]
    assert starts == sorted(starts) and -100.0 <= starts[0] and starts[-1] < 600.0


def test_grid_paths_going_straight_cross_the_grid_in_one_segment():
    bx, by, block = 4, 2, 200.0
    paths = some_grid_paths(bx, by, block, turns=(1.0, 0.0, 0.0))
    for path in paths:
        assert len(path) == 1
        trip = path[0]
        crossing = (bx if trip.velocity[1] == 0 else by) * block
        speed = math.hypot(*trip.velocity)
        assert trip.end_s - trip.start_s == pytest.approx(crossing / speed)


def test_grid_paths_arrivals_per_entry_and_reproducibility():
    bx, by = 3, 3
    rate, duration = 0.05, 2000.0
    paths = grid_paths(bx, by, 100.0, rate, 0.0, duration, SPEED, (0.6, 0.2, 0.2),
                       np.random.default_rng(11))
    expected = rate * duration * len(grid_entries(bx, by))
    assert len(paths) == pytest.approx(expected, rel=0.1)
    again = grid_paths(bx, by, 100.0, rate, 0.0, duration, SPEED, (0.6, 0.2, 0.2),
                       np.random.default_rng(11))
    assert again == paths
    # turn probabilities need not sum to 1: they are renormalized
    scaled = grid_paths(bx, by, 100.0, rate, 0.0, duration, SPEED, (6.0, 2.0, 2.0),
                        np.random.default_rng(11))
    assert scaled == paths


def test_a_turn_mix_with_no_way_out_is_refused():
    # left (or right) alone circles one block for ever; the schema refuses it (it was accepted,
    # and each such vehicle drove 10,000 blocks)
    from netfl.scenario.iov import TurnProbabilities

    for mix in ({"straight": 0, "left": 1, "right": 0}, {"straight": 0, "left": 0, "right": 2}):
        with pytest.raises(ValueError, match="circle one block"):
            TurnProbabilities(**mix)
    TurnProbabilities(straight=0, left=1, right=1)  # both turns: vehicles still get out
    paths = grid_paths(2, 2, 100.0, 1 / 20, 0.0, 200.0, SPEED, (0.0, 1.0, 1.0),
                       np.random.default_rng(0))
    assert paths and all(len(p) < 200 for p in paths)


# ---------------------------------------------------------------------------- FCD paths


def test_fcd_paths_of_the_small_trace():
    paths = fcd_paths(read_fcd(DATA / "fcd_small.xml"))
    assert sorted(paths) == ["veh0", "veh1"]
    veh0 = paths["veh0"]  # 10 m/s then 10.5 m/s: two segments
    assert [(t.start_s, t.end_s, t.start, t.velocity) for t in veh0] == [
        (0.0, 1.0, (0.0, 0.0), (10.0, 0.0)), (1.0, 2.0, (10.0, 0.0), (10.5, 0.0))]
    (veh1,) = paths["veh1"]
    assert (veh1.start_s, veh1.end_s, veh1.start) == (1.0, 2.0, (500.0, 3.2))
    assert veh1.velocity == pytest.approx((-30.5, 0.0))
    assert all(t.vehicle == name for name, path in paths.items() for t in path)
    assert bounding_box(paths.values()) == (0.0, 0.0, 500.0, 3.2)


def test_fcd_paths_start_and_max_vehicles():
    shifted = fcd_paths(read_fcd(DATA / "fcd_small.xml"), start_s=1.0)
    assert [(t.start_s, t.end_s, t.start) for t in shifted["veh0"]] == [(0.0, 1.0, (10.0, 0.0))]
    assert [(t.start_s, t.end_s) for t in shifted["veh1"]] == [(0.0, 1.0)]
    # only the first vehicle to appear is kept
    assert list(fcd_paths(read_fcd(DATA / "fcd_small.xml"), max_vehicles=1)) == ["veh0"]
    # from t = 1.5 on every vehicle is seen at one instant only: no paths
    assert fcd_paths(read_fcd(DATA / "fcd_small.xml"), start_s=1.5) == {}


def test_fcd_paths_merge_constant_velocity_and_skip_repeated_instants():
    records = [FcdRecord(t, "a", 2.0 * t, 5.0, 2.0) for t in (0.0, 1.0, 2.0, 3.0)]
    records.insert(2, FcdRecord(1.0, "a", 2.0, 5.0, 2.0))  # the same instant twice
    records.append(FcdRecord(3.0, "once", 0.0, 0.0, 0.0))
    records.append(FcdRecord(5.0, "a", 6.0, 5.0, 0.0))  # stops: a new segment of zero velocity
    paths = fcd_paths(records)
    assert list(paths) == ["a"]
    assert [(t.start_s, t.end_s, t.start, t.velocity) for t in paths["a"]] == [
        (0.0, 3.0, (0.0, 5.0), (2.0, 0.0)), (3.0, 5.0, (6.0, 5.0), (0.0, 0.0))]


def test_bounding_box_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="no vehicle moves"):
        bounding_box([])


# ---------------------------------------------------------------------------- RSU lattices


def test_lattice_positions_row_by_row_from_the_bottom():
    positions = lattice_positions((0.0, 0.0, 1000.0, 500.0), 250.0, 0.0)
    assert len(positions) == 5 * 3
    assert positions[:6] == [(0.0, 0.0), (250.0, 0.0), (500.0, 0.0), (750.0, 0.0),
                             (1000.0, 0.0), (0.0, 250.0)]
    assert positions[-1] == (1000.0, 500.0)
    offset = lattice_positions((100.0, 50.0, 1000.0, 500.0), 400.0, 200.0)
    assert offset == [(300.0, 250.0), (700.0, 250.0)]
    # a box thinner than the offset keeps one row on its edge
    assert lattice_positions((0.0, 0.0, 2000.0, 3.2), 800.0, 400.0) == [
        (400.0, 0.0), (1200.0, 0.0), (2000.0, 0.0)]


# ---------------------------------------------------------------------------- backhaul


def test_backhaul_on_a_line_joins_consecutive_rsus():
    positions = [(x, 0.0) for x in (400.0, 1200.0, 2000.0, 2800.0)]
    assert backhaul_edges(positions) == [(0, 1, 800.0), (1, 2, 800.0), (2, 3, 800.0)]
    shuffled = [positions[k] for k in (2, 0, 3, 1)]  # order of the list does not matter
    # x = 2000, 400, 2800, 1200: neighbours along the road are 1-3, 3-0, 0-2
    assert [(u, v) for u, v, _ in backhaul_edges(shuffled)] == [(0, 2), (0, 3), (1, 3)]


def test_backhaul_on_a_square_lattice_joins_four_neighbours():
    positions = lattice_positions((0.0, 0.0, 500.0, 500.0), 250.0, 0.0)  # 3 x 3
    edges = backhaul_edges(positions)
    assert len(edges) == 12
    for u, v, length in edges:
        assert u < v and length == pytest.approx(250.0)
        assert math.dist(positions[u], positions[v]) == pytest.approx(250.0)
    assert edges == sorted(edges)


@pytest.mark.parametrize("seed", range(5))
def test_backhaul_is_always_connected(seed):
    rng = np.random.default_rng(seed)
    # a random cloud of RSUs and a short line far from it
    points = [tuple(p) for p in rng.uniform(0, 1000, (12, 2))]
    points += [(5000.0 + 10 * k, 0.0) for k in range(3)]
    edges = backhaul_edges(points)
    graph = nx.Graph()
    graph.add_nodes_from(range(len(points)))
    graph.add_edges_from((u, v) for u, v, _ in edges)
    assert nx.is_connected(graph)
    assert all(u < v for u, v, _ in edges)
    assert all(length == pytest.approx(math.dist(points[u], points[v]))
               for u, v, length in edges)


def test_backhaul_of_one_and_two_rsus():
    assert backhaul_edges([(0.0, 0.0)]) == []
    assert backhaul_edges([(0.0, 0.0), (3.0, 4.0)]) == [(0, 1, 5.0)]
