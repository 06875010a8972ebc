"""The IoV world: visits from paths, client slots, the replay of contacts as attach/detach,
road figures, and whole iov runs (fake model) with their summary, visits.csv and plot."""

import copy
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import simpy

from netfl.errors import ScenarioError
from netfl.runner import run_scenario
from netfl.scenario.iov import IovWorld
from netfl.world.base import CLIENT, EDGE, World
from netfl.world.iov import (
    assign_slots,
    iov_summary,
    path_visits,
    space_time_segments,
    visit_rows,
)
from netfl.world.joined import build_iov_world
from netfl.world.mobility import Trip, kmh
from tests.conftest import write_fcd

DATA = Path(__file__).parent / "data"



def trace_world(tmp_path: Path, vehicles: dict, rsus: list, coverage: float, **spec):
    """An iov world on an FCD road with RSUs at ``rsus``, built by build_iov_world."""
    trace = write_fcd(tmp_path / "road.xml", vehicles)
    world_spec = IovWorld.model_validate({
        "kind": "iov", "road": {"kind": "fcd", "path": str(trace)},
        "rsus": {"positions": rsus, "coverage": coverage}, **spec})
    return build_iov_world(world_spec, np.random.default_rng(0))


def replay(world, until: float) -> list[tuple[float, str, str, bool]]:
    """Run the world's replay; every (time, client, rsu, attached) its listeners hear."""
    env = simpy.Environment()
    heard = []
    world.subscribe(lambda c, e, attached: heard.append((env.now, c, e, attached)))
    world.start(env, None)
    env.run(until=until)
    return heard


# ------------------------------------------------------------------------ path visits


@pytest.mark.parametrize("offset", [0.0, 180.0])
def test_path_visits_of_a_pass_last_2_sqrt_r2_minus_d2_over_v(offset):
    v, radius = kmh(110), 500.0
    path = [Trip("v", 0.0, 5000.0 / v, (0.0, offset), (v, 0.0))]
    ((rsu, start, end),) = path_visits(path, np.array([[2500.0, 0.0]]), radius)
    half = math.sqrt(radius ** 2 - offset ** 2)
    assert rsu == 0
    assert start == pytest.approx((2500.0 - half) / v)
    assert end - start == pytest.approx(2 * half / v)
    assert path_visits(path, np.array([[2500.0, offset + 501.0]]), radius) == []


def test_path_visits_merge_across_a_turn_and_hand_over_between_rsus():
    # east along y = 0 to the corner (500, 0), then north: the corner RSU covers the turn
    v = 10.0
    path = [Trip("v", 0.0, 50.0, (0.0, 0.0), (v, 0.0)), Trip("v", 50.0, 100.0, (500.0, 0.0),
                                                              (0.0, v))]
    rsus = np.array([[500.0, 0.0], [500.0, 500.0]])
    visits = path_visits(path, rsus, 300.0)
    # corner RSU from x = 200 (t = 20) across the turn; the bisector y = 250 (t = 75) hands over
    assert [j for j, _, _ in visits] == [0, 1]
    assert visits[0][1:] == pytest.approx((20.0, 75.0))
    assert visits[1][1:] == pytest.approx((75.0, 100.0))


# ------------------------------------------------------------------------ client slots


def test_assign_slots_recycles_the_least_recently_freed_slot():
    presence = [(0.0, 3.0, "a"), (1.0, 4.0, "b"), (2.0, 10.0, "c"), (5.0, 9.0, "d"),
                (6.0, 8.0, "e"), (7.0, 12.0, "f")]
    slots = assign_slots(presence, 3)
    # a, b, c take 0, 1, 2; a frees 0 at 3, b frees 1 at 4: d gets 0, e gets 1; f finds none
    assert slots == {"a": 0, "b": 1, "c": 2, "d": 0, "e": 1, "f": None}
    # a slot freed at the instant another vehicle arrives is reused at once
    assert assign_slots([(0.0, 5.0, "a"), (5.0, 6.0, "b")], 1) == {"a": 0, "b": 0}


@pytest.mark.parametrize("seed", range(5))
def test_assign_slots_never_gives_one_slot_to_two_vehicles_present_at_once(seed):
    rng = np.random.default_rng(seed)
    starts = rng.uniform(0, 100, 60)
    presence = [(float(s), float(s + rng.uniform(1, 20)), f"v{i}") for i, s in enumerate(starts)]
    capacity = 8
    slots = assign_slots(presence, capacity)
    assert set(slots) == {name for _, _, name in presence}
    held = [(a, b, slots[name]) for a, b, name in presence if slots[name] is not None]
    assert all(0 <= s < capacity for _, _, s in held)
    for i, (a1, b1, s1) in enumerate(held):
        for a2, b2, s2 in held[i + 1:]:
            if s1 == s2:
                assert b1 <= a2 or b2 <= a1, "one slot, two vehicles at once"
    # a vehicle left without a slot arrived when all were taken
    for a, _, name in presence:
        if slots[name] is None:
            busy = sum(1 for a2, b2, _ in held if a2 <= a < b2)
            assert busy == capacity


# ------------------------------------------------------------------------ the replay


@pytest.mark.parametrize("offset", [0.0, 120.0])
def test_the_world_replays_the_contact_window_of_a_pass(tmp_path, offset):
    v, radius = 20.0, 300.0  # 0 -> 4000 m in 200 s, RSU at x = 1000
    world = trace_world(tmp_path, {"car": [(0, 0, offset), (200, 4000, offset)]},
                        [[1000, 0]], radius)
    half = math.sqrt(radius ** 2 - offset ** 2)
    t_in, t_out = (1000 - half) / v, (1000 + half) / v
    heard = replay(world, 300)
    assert [(c, e, up) for _, c, e, up in heard] == [("c0", "e0", True), ("c0", "e0", False)]
    assert heard[0][0] == pytest.approx(t_in) and heard[1][0] == pytest.approx(t_out)
    assert heard[1][0] - heard[0][0] == pytest.approx(2 * half / v)
    assert world.edge_of("c0") is None and world.present_clients() == []
    assert world.graph.has_edge("c0", "e0")  # the access edge made on first contact stays
    assert world.position("c0", 50.0) == pytest.approx((1000.0, offset))
    assert world.distance_m("c0", "e0", 50.0) == pytest.approx(offset)
    assert world.speed_mps("c0", 50.0) == pytest.approx(v)
    assert world.vehicle_of("c0", 50.0) == "car"
    assert world.position("c0", 250.0) is None and world.distance_m("c0", "e0", 250.0) == math.inf


def test_a_vehicle_in_coverage_at_time_0_is_attached_at_once(tmp_path):
    world = trace_world(tmp_path, {"car": [(0, 900, 0), (30, 1500, 0)]}, [[1000, 0]], 300.0)
    heard = replay(world, 100)
    assert heard == [(0, "c0", "e0", True), (pytest.approx(20.0), "c0", "e0", False)]


def test_hand_over_between_overlapping_rsus_is_a_detach_then_an_attach(tmp_path):
    world = trace_world(tmp_path, {"car": [(0, 0, 0), (200, 4000, 0)]},
                        [[1000, 0], [2000, 0]], 600.0)
    heard = replay(world, 300)
    # in e0's coverage from x = 400 (t = 20); the bisector x = 1500 (t = 75); e1's edge 2600
    assert [(pytest.approx(t), e, up) for t, _, e, up in heard] == [
        (20.0, "e0", True), (75.0, "e0", False), (75.0, "e1", True), (130.0, "e1", False)]
    summary = iov_summary(world, 200.0)
    assert summary["vehicle_handovers"] == 1 and summary["vehicles"] == 1
    assert summary["coverage_visits"] == 2
    assert summary["dwell_s"]["mean"] == pytest.approx(55.0)
    assert summary["load_by_rsu"]["e0"] == {"visits": 1, "vehicle_seconds": 55.0,
                                            "mean_vehicles_in_range": pytest.approx(55 / 200)}
    # a gap in coverage is no hand-over
    gap = trace_world(tmp_path, {"car": [(0, 0, 0), (200, 4000, 0)]}, [[1000, 0], [2000, 0]],
                      300.0)
    assert iov_summary(gap, 200.0)["vehicle_handovers"] == 0


def test_client_slots_pass_from_vehicle_to_vehicle(tmp_path):
    # a passes e0 in [35, 65] and leaves the road at 70; b enters at 100 and passes e0 in
    # [135, 165]; c overlaps b and finds no free slot
    vehicles = {"a": [(0, 0, 0), (70, 1400, 0)], "b": [(100, 0, 0), (170, 1400, 0)],
                "c": [(110, 0, 0), (180, 1400, 0)]}
    world = trace_world(tmp_path, vehicles, [[1000, 0]], 300.0, max_clients=1)
    assert world.clients == ["c0"]
    assert [(v.client, v.vehicle) for v in world.visits] == [("c0", "a"), ("c0", "b")]
    assert world.vehicle_of("c0", 50.0) == "a" and world.vehicle_of("c0", 150.0) == "b"
    assert world.position("c0", 85.0) is None  # between the two vehicles: off the road
    heard = replay(world, 300)
    assert [(pytest.approx(t), up) for t, _, _, up in heard] == [
        (35.0, True), (65.0, False), (135.0, True), (165.0, False)]
    summary = iov_summary(world, 300.0)
    assert summary["vehicles"] == 2 and summary["vehicles_without_data"] == 1
    # c first comes into coverage at 145: not counted before
    assert iov_summary(world, 140.0)["vehicles_without_data"] == 0
    # room for everyone: one client per vehicle that ever enters coverage
    roomy = trace_world(tmp_path, vehicles, [[1000, 0]], 300.0, max_clients=50)
    assert roomy.clients == ["c0", "c1", "c2"]
    assert iov_summary(roomy, 300.0)["vehicles_without_data"] == 0


def test_visit_rows_and_space_time_segments_are_clipped_at_now(tmp_path):
    world = trace_world(tmp_path, {"car": [(0, 0, 0), (200, 4000, 0)]},
                        [[1000, 0], [2000, 0]], 600.0)
    rows = visit_rows(world, 100.0)
    assert [(r["rsu"], r["start_s"], r["end_s"]) for r in rows] == [
        ("e0", pytest.approx(20.0), pytest.approx(75.0)),
        ("e1", pytest.approx(75.0), pytest.approx(100.0))]
    assert rows[1]["dwell_s"] == pytest.approx(25.0)
    assert visit_rows(world, 50.0)[0]["end_s"] == 50.0 and len(visit_rows(world, 50.0)) == 1
    ((start, end),) = space_time_segments(world, 100.0)
    assert start == (0.0, 0.0) and end == (100.0, pytest.approx(2000.0))
    assert space_time_segments(world, 100.0, max_vehicles=0) == []


def test_a_road_no_vehicle_covers_is_an_error_naming_the_rsus(tmp_path):
    with pytest.raises(ScenarioError, match="world.rsus") as caught:
        trace_world(tmp_path, {"car": [(0, 0, 0), (10, 100, 0)]}, [[5000, 5000]], 300.0)
    assert caught.value.problems[0].path == "world.rsus"


def test_a_corrupt_trace_is_an_error_naming_the_road_path(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_text('<fcd-export><timestep time="0"><vehicle id="a" x="1"')
    spec = IovWorld.model_validate({"kind": "iov", "road": {"kind": "fcd", "path": str(broken)},
                                    "rsus": {"spacing": 100}})
    with pytest.raises(ScenarioError) as caught:
        build_iov_world(spec, np.random.default_rng(0))
    assert caught.value.problems[0].path == "world.road.path"


# ------------------------------------------------------------------------ built-in roads


def test_highway_world_rsus_backhaul_and_steady_state():
    spec = IovWorld.model_validate({
        "kind": "iov", "road": {"kind": "highway", "length": "4 km"},
        "rsus": {"spacing": "1 km"}, "traffic": {"arrivals_per_hour": 600, "duration": "10 min"},
        "max_clients": 500})
    world = build_iov_world(spec, np.random.default_rng(5))
    assert world.rsu_xy == {"e0": (500.0, 0.0), "e1": (1500.0, 0.0), "e2": (2500.0, 0.0),
                            "e3": (3500.0, 0.0)}
    assert world.coverage_m == 500.0  # the highway default
    backhaul = [(u, v, d) for u, v, d in world.graph.edges(data=True)
                if d["link_class"] == "backhaul"]
    assert sorted((u, v) for u, v, _ in backhaul) == [("e0", "e1"), ("e1", "e2"), ("e2", "e3")]
    assert all(d["delay_s"] == pytest.approx(5e-6) for _, _, d in backhaul)  # 1 km of fibre
    assert all(world.graph.has_edge(e, "cloud") for e in world.edge_servers)
    assert all(world.tier(c) == CLIENT for c in world.clients)
    # traffic starts before time 0, so vehicles are in coverage at time 0
    assert any(v.start_s == 0.0 for v in world.visits)
    assert all(v.end_s > v.start_s >= 0.0 for v in world.visits)
    assert [v.start_s for v in world.visits] == sorted(v.start_s for v in world.visits)
    # every visit is a time the vehicle is within coverage of its RSU (and nearest to it)
    for visit in world.visits[:50]:
        mid = (visit.start_s + visit.end_s) / 2
        here = world.position(visit.client, mid)
        assert world.vehicle_of(visit.client, mid) == visit.vehicle
        assert math.dist(here, world.rsu_xy[visit.rsu]) <= 500.0 + 1e-6
        assert all(math.dist(here, world.rsu_xy[visit.rsu]) <= math.dist(here, xy) + 1e-6
                   for xy in world.rsu_xy.values())
    again = build_iov_world(spec, np.random.default_rng(5))
    assert again.visits == world.visits


def test_grid_world_puts_rsus_at_intersections_and_vehicles_on_streets():
    spec = IovWorld.model_validate({
        "kind": "iov", "road": {"kind": "grid", "blocks_x": 2, "blocks_y": 2, "block": 200},
        "rsus": {"spacing": 200}, "traffic": {"arrivals_per_hour": 120, "duration": "5 min"},
        "cloud": False})
    world = build_iov_world(spec, np.random.default_rng(2))
    assert world.coverage_m == 300.0 and world.cloud is None
    assert sorted(world.rsu_xy.values()) == sorted(
        (float(x), float(y)) for x in (0, 200, 400) for y in (0, 200, 400))
    assert nx.is_connected(world.edge_graph())
    assert world.edge_graph().number_of_edges() == 12
    for track in world.tracks().values():
        for _, trip in track:
            assert (trip.velocity[0] == 0) != (trip.velocity[1] == 0)
            x, y = trip.start
            assert x % 200 == pytest.approx(0) and y % 200 == pytest.approx(0)


def test_trace_world_lattice_over_the_bounding_box():
    spec = IovWorld.model_validate({
        "kind": "iov", "road": {"kind": "fcd", "path": str(DATA / "fcd_small.xml")},
        "rsus": {"spacing": 200}})
    world = build_iov_world(spec, np.random.default_rng(0))
    # box (0, 0, 500, 3.2); first RSU half a spacing in; one row (the box is thin)
    assert list(world.rsu_xy.values()) == [(100.0, 0.0), (300.0, 0.0), (500.0, 0.0)]
    assert {v.vehicle for v in world.visits} == {"veh0", "veh1"}


# ------------------------------------------------------------------------ World base class


def test_world_attach_detach_and_listeners():
    graph = nx.Graph()
    graph.add_nodes_from(["c0", "c1"], tier=CLIENT)
    graph.add_nodes_from(["e0", "e1"], tier=EDGE)
    world = World(graph, ["c0", "c1"], ["e0", "e1"], None, {})
    heard = []
    world.subscribe(lambda c, e, up: heard.append((c, e, up)))
    assert world.present_clients() == [] and world.edge_of("c0") is None
    world.attach("c1", "e0")
    world.attach("c0", "e0")
    assert world.present_clients() == ["c0", "c1"]  # client order
    assert world.clients_of("e0") == ["c1", "c0"]  # attach order
    assert graph.edges["c0", "e0"]["link_class"] == "access"
    world.attach("c0", "e0")  # already there: nothing
    world.attach("c0", "e1")  # moving: leave, then join
    world.detach("c1")
    world.detach("c1")  # not attached: nothing
    assert heard == [("c1", "e0", True), ("c0", "e0", True), ("c0", "e0", False),
                     ("c0", "e1", True), ("c1", "e0", False)]
    assert world.present_clients() == ["c0"] and world.clients_of("e0") == []


# ------------------------------------------------------------------------ whole runs


def iov_scenario(tiny: dict, seed: int = 1, **world) -> dict:
    scenario = copy.deepcopy(tiny)
    scenario["seed"] = seed
    scenario["world"] = {
        "kind": "iov", "road": {"kind": "highway", "length": "3 km"},
        "rsus": {"spacing": "800 m", "coverage": "500 m"},
        "traffic": {"arrivals_per_hour": 600, "duration": "10 min"}, "max_clients": 12,
        "radio": {"kind": "fixed", "rate": "3 Mbps"}, **world}
    scenario["links"] = {"access": {"delay": "1 ms"}, "backhaul": {"rate": "1 Gbps"},
                         "core": {"rate": "100 Mbps", "delay": "20 ms"}}
    # a 1 MB model over a shared 3 Mbps 802.11p cell and slow on-board units: a run of about
    # a minute of simulated time in which uploads and downloads race departures
    scenario["model"]["params"] = 250_000
    scenario["devices"] = {"clients": {"flops": "20 MFLOPS"}}
    scenario["algorithm"] = {"kind": "fed-chs", "rounds": 4, "interactions": 2,
                             "batch_size": 16}
    return scenario


IOV_KEYS = ("uploads_lost", "downloads_lost", "coverage_cuts", "handovers", "vehicle_handovers",
            "vehicles", "vehicles_without_data", "coverage_visits", "dwell_s", "load_by_rsu")


def without_host_time(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if not k.startswith("host_time_s")}


def test_iov_runs_are_reproducible_and_depend_on_the_seed(tiny):
    world = {"radio": {"kind": "shannon", "max_rate": "4 Mbps"},  # shadowing: random streams
             "resume_uploads": {"enabled": True, "within": "20 s"}}
    first = run_scenario(iov_scenario(tiny, **world), write=False).summary
    second = run_scenario(iov_scenario(tiny, **world), write=False).summary
    assert without_host_time(first) == without_host_time(second)
    assert first["coverage_cuts"] > 0 and first["vehicle_handovers"] > 0
    other = run_scenario(iov_scenario(tiny, seed=2, **world), write=False).summary
    assert without_host_time(other) != without_host_time(first)
    assert other["load_by_rsu"] != first["load_by_rsu"]  # a different road, not only data


def test_rsus_broadcasting_the_model_put_it_on_the_air_once_per_cell(tiny):
    broadcast = {"medium": {"kind": "802.11p", "downlink": "broadcast"}}
    summary = run_scenario(iov_scenario(tiny, **broadcast), write=False).summary
    assert summary["rounds"] == 4
    # downloads delivered to every listener of a cell count once on the air
    assert summary["wire_bytes_total"] < 0.9 * summary["bytes_total"]
    unicast = run_scenario(iov_scenario(tiny), write=False).summary
    assert unicast["wire_bytes_total"] > unicast["bytes_total"]  # TCP/IP headers on top


def test_iov_summary_agrees_with_visits_csv_and_the_plot_is_written(tiny, tmp_path):
    scenario = iov_scenario(tiny)
    scenario["output"] = {"plots": True}
    result = run_scenario(scenario, write=True, out_dir=tmp_path, run_id="run")
    summary = result.summary
    for key in IOV_KEYS:
        assert key in summary, key
    assert summary["edge_servers"] == 4 and summary["clients"] <= 12
    assert summary["rounds"] == 4 and summary["handovers"] >= 1  # Fed-CHS moves the model
    assert (result.path / "space_time.png").stat().st_size > 0
    visits = pd.read_csv(result.path / "visits.csv")
    assert list(visits.columns) == ["client", "vehicle", "rsu", "start_s", "end_s", "dwell_s"]
    assert len(visits) == summary["coverage_visits"]
    assert visits.groupby(["client", "vehicle"]).ngroups == summary["vehicles"]
    assert (visits["end_s"] <= summary["sim_time_s"] + 1e-9).all()
    handovers = 0
    for _, rows in visits.sort_values("start_s").groupby(["client", "vehicle"]):
        rows = rows.to_dict("records")
        handovers += sum(1 for a, b in zip(rows, rows[1:], strict=False)
                         if a["rsu"] != b["rsu"] and abs(a["end_s"] - b["start_s"]) < 1e-9)
    assert handovers == summary["vehicle_handovers"]
    load = summary["load_by_rsu"]
    assert sorted(load) == ["e0", "e1", "e2", "e3"]
    assert sum(r["visits"] for r in load.values()) == len(visits)
    assert sum(r["vehicle_seconds"] for r in load.values()) == pytest.approx(
        visits["dwell_s"].sum(), abs=0.01)
    for rsu, rows in visits.groupby("rsu"):
        assert load[rsu]["visits"] == len(rows)
    # no resumption, no retries: every cut attempt is a transfer lost for good
    assert summary["uploads_lost"] > 0 and summary["downloads_lost"] > 0
    assert (summary["uploads_lost"] + summary["downloads_lost"] == summary["coverage_cuts"]
            == summary["transfers_failed"])
    assert summary["vehicle_handovers"] > 0
    written = pd.read_json(result.path / "summary.json", typ="series")
    assert written["vehicle_handovers"] == summary["vehicle_handovers"]


def test_a_spacing_that_places_absurdly_many_rsus_is_named():
    """rsus.spacing of 1e-9 m asked numpy for 36 TiB of positions (found by tests/fuzz)."""
    import yaml

    scenario = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "scenarios" / "iov" / "short.yaml").read_text())
    scenario["world"]["rsus"]["spacing"] = 1e-9
    scenario["model"] = {"kind": "fake"}
    scenario["data"] = {"dataset": "synthetic"}
    with pytest.raises(ScenarioError, match=r"world.rsus.spacing = 1e-09: places about "
                       r"5e\+12 RSUs"):
        run_scenario(scenario, write=False)


def test_a_road_too_short_for_its_first_rsu_is_named():
    """A 1 m highway with RSUs every 800 m placed none and failed in numpy (found by tests/fuzz)."""
    import yaml

    scenario = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "scenarios" / "iov" / "short.yaml").read_text())
    scenario["world"]["road"]["length"] = 1
    scenario["model"] = {"kind": "fake"}
    scenario["data"] = {"dataset": "synthetic"}
    with pytest.raises(ScenarioError, match=r"world.rsus.spacing = 800.0: places no RSU on a "
                       r"road of 1 m"):
        run_scenario(scenario, write=False)
