"""The ``world: {kind: iov}`` schema: defaults, units, and what an iov world refuses."""

import copy
from pathlib import Path

import pytest

from netfl.errors import ScenarioError
from netfl.scenario import load_scenario
from netfl.scenario.iov import IovWorld
from netfl.scenario.schema import Scenario
from netfl.scenario.sections import Links

FCD = Path(__file__).parents[1] / "world" / "data" / "fcd_small.xml"
HIGHWAY = {"kind": "iov", "road": {"kind": "highway", "length": "3 km"},
           "rsus": {"spacing": "800 m"}}


@pytest.fixture
def iov(tiny) -> dict:
    scenario = copy.deepcopy(tiny)
    scenario["world"] = copy.deepcopy(HIGHWAY)
    scenario["links"] = {"access": {"delay": "1 ms"}}
    scenario["algorithm"] = {"kind": "fed-chs", "rounds": 2, "interactions": 2}
    return scenario


def problem(scenario: dict) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    return str(caught.value)


# ------------------------------------------------------------------------ defaults and units


def test_iov_world_defaults_follow_the_road():
    highway = IovWorld.model_validate(HIGHWAY)
    assert highway.road.length == 3000.0 and highway.road.lanes == 2
    assert highway.coverage_m() == 500.0
    mean, std, low, high = highway.speed_bounds()
    assert mean == pytest.approx(110 / 3.6) and std == pytest.approx(5.8 / 3.6)
    assert low == pytest.approx((110 - 3 * 5.8) / 3.6) and high == pytest.approx(
        (110 + 3 * 5.8) / 3.6)
    assert highway.radio.kind == "fixed" and highway.radio.rate == 6e6
    assert highway.rate_update.interval == 0.1 and highway.rate_update.distance == 5.0
    assert not highway.resume_uploads.enabled and highway.resume_uploads.within == 30.0
    assert highway.backhaul_delay_per_km == pytest.approx(5e-6) and highway.cloud
    grid = IovWorld.model_validate({"kind": "iov", "road": {"kind": "grid"},
                                    "rsus": {"spacing": 250}})
    assert grid.coverage_m() == 300.0 and grid.speed_bounds()[0] == pytest.approx(38 / 3.6)
    assert (grid.road.blocks_x, grid.road.blocks_y, grid.road.block) == (4, 4, 250.0)
    trace = IovWorld.model_validate({"kind": "iov", "road": {"kind": "fcd", "path": str(FCD)},
                                     "rsus": {"spacing": 250, "coverage": "1 km"}})
    assert trace.coverage_m() == 1000.0


def test_iov_units():
    world = IovWorld.model_validate({
        **HIGHWAY, "road": {"kind": "highway", "length": "10 km"},
        "traffic": {"speed": {"mean": "38 km/h", "std": "1 km/h"}, "duration": "2 h"},
        "radio": {"kind": "shannon", "frequency": "5.9 GHz", "bandwidth": "20 MHz",
                  "max_rate": "27 Mbps"}, "medium": {"kind": "dedicated"},
        "rate_update": {"interval": "50 ms", "distance": "2 m"},
        "backhaul_delay_per_km": "5 us"})
    assert world.road.length == 10_000.0
    assert world.traffic.speed.mean == pytest.approx(38 / 3.6)
    assert world.traffic.duration == 7200.0
    assert world.radio.bandwidth == 20e6 and world.radio.max_rate == 27e6
    assert world.rate_update.interval == pytest.approx(0.05)
    assert world.backhaul_delay_per_km == pytest.approx(5e-6)
    # the speed bounds of an explicit distribution
    assert world.speed_bounds() == pytest.approx(
        (38 / 3.6, 1 / 3.6, 35 / 3.6, 41 / 3.6))


def test_a_valid_iov_scenario_takes_its_access_rate_from_the_radio(iov):
    scenario = load_scenario(iov)
    assert scenario.links.access.rate is None and scenario.links.access.delay == 0.001
    del iov["links"]  # no links section at all: the edge default (unused on iov) is accepted
    assert load_scenario(iov).world.kind == "iov"
    for kind in ("hier-fedavg", "fedavg"):
        iov["algorithm"] = {"kind": kind, "rounds": 1}
        assert load_scenario(iov).algorithm.kind == kind
    for kind in ("dirichlet", "labels"):
        iov["data"]["partition"] = {"kind": kind, "alpha": 0.5} if kind == "dirichlet" else {
            "kind": kind, "per_client": 2}
        assert load_scenario(iov).data.partition.kind == kind


def test_the_edge_world_still_requires_an_access_rate(tiny):
    # the default links carry one
    del tiny["links"]
    assert load_scenario(tiny).links.access.rate == 20e6
    # an explicit access block without a rate does not
    tiny["links"] = {"access": {"delay": "5 ms"}}
    assert "links.access.rate is required" in problem(tiny)


def test_an_iov_scenario_leaves_the_defaults_of_later_scenarios_alone(iov, tiny):
    del iov["links"]
    load_scenario(iov)
    edge = copy.deepcopy(tiny)
    del edge["links"]
    assert load_scenario(edge).links.access.rate == 20e6
    assert Links().access.rate == 20e6


def test_a_links_object_passed_in_python_is_not_changed_by_an_iov_scenario(iov):
    # Regression: the iov checks set access.rate = None on the caller's object.
    links = Links()
    raw = copy.deepcopy(iov)
    raw["links"] = links
    Scenario.model_validate(raw)
    # the caller's object (revalidated or not) keeps its edge default
    assert links.access.rate == 20e6


# ------------------------------------------------------------------------ what iov refuses


@pytest.mark.parametrize("algorithm", [
    {"kind": "group-fel", "rounds": 1}, {"kind": "hier-mo"}, {"kind": "mll-sgd"},
    {"kind": "wrwgd"}, {"kind": "group-fedavg"}])
def test_iov_refuses_algorithms_with_fixed_clusters(iov, algorithm):
    iov["algorithm"] = algorithm
    message = problem(iov)
    assert f"algorithm '{algorithm['kind']}' does not run on an iov world" in message
    assert "fed-chs" in message


@pytest.mark.parametrize("kind", ["hier-fedavg", "fedavg"])
def test_cloud_algorithms_need_the_cloud(iov, kind):
    iov["algorithm"] = {"kind": kind, "rounds": 1}
    iov["world"]["cloud"] = False
    assert "set world.cloud to true" in problem(iov)
    iov["algorithm"] = {"kind": "fed-chs"}
    assert load_scenario(iov).world.cloud is False  # Fed-CHS needs no cloud


@pytest.mark.parametrize("partition", [
    {"kind": "edge-labels", "per_edge": 4, "per_client": 2},
    {"kind": "edge-iid-dirichlet", "alpha": 0.5},
    {"kind": "per-edge", "edges": [{"kind": "iid"}]}])
def test_iov_refuses_partitions_by_edge_server(iov, partition):
    iov["data"]["partition"] = partition
    message = problem(iov)
    assert f"data.partition.kind '{partition['kind']}'" in message
    assert "iid, dirichlet, labels, natural" in message


@pytest.mark.parametrize(("access", "named"), [
    ({"rate": "10 Mbps"}, "links.access.rate"),
    ({"rate_up": "10 Mbps"}, "rate_up"),
    ({"rate_down": "10 Mbps"}, "rate_down"),
    ({"shared": True}, "links.access.shared"),
    ({"availability": {"kind": "schedule", "down": [["1 s", "2 s"]]}},
     "links.access.availability"),
])
def test_iov_refuses_access_settings_the_road_decides(iov, access, named):
    iov["links"] = {"access": access}
    assert named in problem(iov)


def test_iov_refuses_a_cost_budget(iov):
    iov["stop"] = {"max_cost": "1 h"}
    assert "stop.max_cost" in problem(iov)


def test_an_fcd_road_refuses_traffic(iov):
    iov["world"]["road"] = {"kind": "fcd", "path": str(FCD)}
    assert load_scenario(iov).world.road.kind == "fcd"
    iov["world"]["traffic"] = {"arrivals_per_hour": 100}
    message = problem(iov)
    assert "traffic applies to built-in roads" in message and "world" in message


def test_rsu_placement_is_spacing_or_positions(iov):
    iov["world"]["rsus"] = {"spacing": "1 km", "positions": [[0, 0]]}
    assert "give exactly one of spacing or positions" in problem(iov)
    iov["world"]["rsus"] = {"coverage": "1 km"}
    assert "give exactly one of spacing or positions" in problem(iov)
    iov["world"]["rsus"] = {"positions": []}
    assert "positions must list at least one RSU" in problem(iov)
    iov["world"]["rsus"] = {"positions": [[0, 0], [100, 0]], "coverage": "200 m"}
    assert load_scenario(iov).world.rsus.positions == [(0.0, 0.0), (100.0, 0.0)]


def test_speed_turn_and_road_values_are_checked(iov):
    iov["world"]["traffic"] = {"speed": {"mean": "100 km/h", "min": "110 km/h"}}
    assert "need min <= mean <= max" in problem(iov)
    iov["world"]["traffic"] = {"speed": {"mean": "100 km/h", "std": "-1 km/h"}}
    assert "world.traffic.speed.std" in problem(iov)
    iov["world"]["traffic"] = {}
    iov["world"]["road"] = {"kind": "grid", "turns": {"straight": 0, "left": 0, "right": 0}}
    assert "at least one of straight, left, right must be positive" in problem(iov)
    iov["world"]["road"] = {"kind": "highway", "directions": 3}
    assert "world.road.directions" in problem(iov)
    iov["world"]["road"] = {"kind": "fcd", "path": "no/such/trace.xml"}
    assert "world.road.path" in problem(iov)
    iov["world"]["road"] = {"kind": "ring"}
    assert "world.road.kind" in problem(iov)
    iov["world"]["road"] = {"kind": "highway"}
    iov["world"]["radio"] = {"kind": "shannon", "path_loss": "winner"}
    assert "world.radio.path_loss" in problem(iov)


def test_the_80211p_medium_is_the_default_and_refuses_what_it_cannot_send():
    world = IovWorld.model_validate(HIGHWAY)
    assert world.medium.kind == "802.11p" and world.medium.downlink == "unicast"
    assert world.in_flight_at_handover == "continue"
    with pytest.raises(ValueError, match=r"radio.rate 8 Mbps is not an 802.11p rate \(10 MHz: "
                                         r"3, 4.5, 6, 9, 12, 18, 24, 27 Mbps\)"):
        IovWorld.model_validate({**HIGHWAY, "radio": {"kind": "fixed", "rate": "8 Mbps"}})
    # the same rate on channels of its own is fine
    IovWorld.model_validate({**HIGHWAY, "radio": {"kind": "fixed", "rate": "8 Mbps"},
                             "medium": {"kind": "dedicated"}})
    with pytest.raises(ValueError, match="802.11p uses 10 MHz channels; radio.bandwidth is 20"):
        IovWorld.model_validate({**HIGHWAY, "radio": {"kind": "shannon",
                                                      "bandwidth": "20 MHz"}})
    with pytest.raises(ValueError, match=r"cw_min must be 2\^k - 1"):
        IovWorld.model_validate({**HIGHWAY, "medium": {"kind": "802.11p", "cw_min": 16}})
    with pytest.raises(ValueError, match="broadcast_rate 5 Mbps is not an 802.11p rate"):
        IovWorld.model_validate({**HIGHWAY, "medium": {"kind": "802.11p",
                                                       "broadcast_rate": "5 Mbps"}})


def test_a_scenario_with_the_old_path_loss_name_is_told_what_to_use(iov, tmp_path):
    scenario = copy.deepcopy(iov)
    scenario["world"]["radio"] = {"kind": "shannon", "path_loss": "tr36885-v2i"}
    with pytest.raises(ScenarioError, match="use winner-b1-los"):
        load_scenario(scenario)


def test_traffic_that_would_draw_billions_of_vehicles_is_refused():
    """duration 1e12 s at 1,200 vehicles/h asked numpy for 2.6 TB (found by tests/fuzz)."""
    from netfl.scenario.iov import Traffic

    with pytest.raises(ValueError, match="3.33e\\+11 vehicles per road entry"):
        Traffic(arrivals_per_hour=1200, duration=1e12)
    Traffic(arrivals_per_hour=1200, duration=3600 * 24 * 300)  # 300 days: fine
