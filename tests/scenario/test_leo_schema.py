"""The ``world: {kind: leo}`` schema: defaults, units, the shipped LEO scenarios, and what a leo
world refuses (each refusal naming the field to change)."""

import copy
from datetime import UTC, datetime
from pathlib import Path

import pytest

from netfl.errors import ScenarioError
from netfl.scenario import load_scenario
from netfl.scenario.leo import LeoWorld

SCENARIOS = Path(__file__).parents[2] / "scenarios" / "leo"
WORLD = {"kind": "leo", "constellation": {"kind": "preset", "preset": "walker-40-5"},
         "users": {"points": [[39.9, 116.4]]}}
GATEWAYS = {"positions": [[40.0, 116.0]]}


@pytest.fixture
def leo(tiny) -> dict:
    scenario = copy.deepcopy(tiny)
    scenario.pop("links")
    scenario["world"] = copy.deepcopy(WORLD)
    scenario["algorithm"] = {"kind": "fed-chs", "rounds": 2, "interactions": 2}
    return scenario


def problems(scenario: dict) -> list:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    return caught.value.problems


def problem(scenario: dict) -> str:
    (only,) = problems(scenario)
    return f"{only.path}: {only.message}"


# ------------------------------------------------------------------------ defaults and units


def test_leo_world_defaults():
    world = LeoWorld.model_validate(WORLD)
    assert world.min_elevation_deg == 25.0
    assert world.start == datetime(2026, 1, 1, tzinfo=UTC)
    assert world.horizon == 86400.0 and world.step == 10.0
    assert world.gsl.kind == "fixed" and world.gsl.rate == 50e6
    assert world.isl.kind == "grid" and world.isl.rate == 10e9
    assert world.ground_stations is None and not world.cloud
    assert world.handover_margin == 30.0 and world.delay_update == 10.0
    assert world.rate_update.interval == 1.0 and world.rate_update.distance == 10_000.0
    assert world.cache and world.users.altitude == 0.0
    assert world.constellation.max_satellites is None


def test_leo_units():
    world = LeoWorld.model_validate({
        **WORLD, "constellation": {"kind": "walker", "altitude": "550 km", "inclination_deg": 53,
                                   "planes": 6, "per_plane": 11, "phasing": 2},
        "users": {"region": {"count": 10, "lat_deg": 39.9, "lon_deg": 116.4,
                             "radius_km": 500}, "altitude": "2 km"},
        "start": "2026-03-01T12:00:00+02:00", "horizon": "6 h", "step": "5 s",
        "gsl": {"kind": "link-budget", "downlink": {
            "frequency": "12 GHz", "bandwidth": "20 MHz", "eirp": "40 dBm", "g_over_t": 10},
                "atmosphere": "1.5 dB", "max_rate": "200 Mbps"},
        "isl": {"kind": "grid", "rate": "20 Gbps"},
        "ground_stations": {"positions": [[40.0, 116.0]], "rate": "2 Gbps",
                            "terrestrial_delay": "15 ms", "min_elevation_deg": 20},
        "handover_margin": "1 min", "delay_update": "30 s"})
    assert world.constellation.altitude == 550_000.0
    assert world.users.altitude == 2000.0
    assert world.start == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    assert world.horizon == 21600.0 and world.step == 5.0
    assert world.gsl.downlink.frequency == 12e9 and world.gsl.downlink.bandwidth == 20e6
    assert world.gsl.downlink.eirp == 40.0 and world.gsl.max_rate == 200e6
    assert world.gsl.uplink.frequency == 14.25e9 and world.gsl.atmosphere == 1.5
    assert world.isl.rate == 20e9
    stations = world.ground_stations
    assert stations.rate == 2e9 and stations.terrestrial_delay == pytest.approx(0.015)
    assert stations.min_elevation_deg == 20.0 and world.cloud
    assert world.handover_margin == 60.0 and world.delay_update == 30.0


def test_a_valid_leo_scenario(leo):
    scenario = load_scenario(leo)
    assert scenario.world.kind == "leo"
    for algorithm in ({"kind": "hier-fedavg", "rounds": 2}, {"kind": "fedavg", "rounds": 2}):
        leo["algorithm"] = algorithm
        leo["world"]["ground_stations"] = GATEWAYS
        assert load_scenario(leo).algorithm.kind == algorithm["kind"]
    # fed-chs relays through the ground without ISLs
    leo["algorithm"] = {"kind": "fed-chs", "rounds": 2, "interactions": 2}
    leo["world"]["isl"] = {"kind": "none"}
    assert load_scenario(leo).world.isl.kind == "none"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_shipped_leo_scenarios_load(path):
    scenario = load_scenario(path)
    assert scenario.world.kind == "leo"
    if scenario.world.constellation.kind == "tle":
        assert scenario.world.constellation.path.exists()


# ------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("kind", ["group-fel", "hier-mo", "mll-sgd", "wrwgd"])
def test_group_and_static_cluster_algorithms_are_refused(leo, kind):
    leo["algorithm"] = {"kind": kind}
    leo["world"]["ground_stations"] = GATEWAYS
    message = problem(leo)
    assert f"algorithm '{kind}' does not run on a leo world" in message
    assert "fedavg, hier-fedavg, fed-chs, chfl, cfl, sfl, hfl-pwp" in message


@pytest.mark.parametrize("kind", ["fedavg", "hier-fedavg"])
def test_cloud_algorithms_need_ground_stations(leo, kind):
    leo["algorithm"] = {"kind": kind, "rounds": 2}
    message = problem(leo)
    assert f"{kind} aggregates at the cloud" in message and "world.ground_stations" in message


def test_fed_chs_without_isls_needs_ground_stations(leo):
    leo["world"]["isl"] = {"kind": "none"}
    message = problem(leo)
    assert "world.isl" in message and "world.ground_stations" in message


@pytest.mark.parametrize("name, where", [("access", "world.gsl"),
                                         ("backhaul", "world.isl"),
                                         ("core", "world.ground_stations")])
def test_link_rates_come_from_the_world(leo, name, where):
    leo["links"] = {name: {"rate": "1 Gbps"}}
    message = problem(leo)
    assert f"links.{name}.rate" in message and where in message and "remove it" in message


def test_backhaul_availability_on_leo_does_not_demand_a_forbidden_rate(leo):
    leo["links"] = {"backhaul": {"availability": {"kind": "schedule",
                                                  "down": [["100 s", "200 s"]]}}}
    try:
        load_scenario(leo)
    except ScenarioError as exc:
        assert "rate is required" not in str(exc)


def test_start_needs_a_time_zone(leo):
    leo["world"]["start"] = "2026-01-01T00:00:00"
    (only,) = problems(leo)
    assert only.path == "world" and "start needs a time zone" in only.message
    leo["world"]["start"] = "2026-01-01T00:00:00Z"
    assert load_scenario(leo).world.start == datetime(2026, 1, 1, tzinfo=UTC)


REGION = {"count": 3, "lat_deg": 0, "lon_deg": 0, "radius_km": 10}


@pytest.mark.parametrize("users, got", [
    ({"points": [[0, 0]], "region": REGION}, "points, region"),
    ({"points": [[0, 0]], "regions": [REGION]}, "points, regions"),
    ({"region": REGION, "regions": [REGION]}, "region, regions"),
    ({}, "none"),
])
def test_users_take_exactly_one_of_points_region_regions(leo, users, got):
    leo["world"]["users"] = users
    (only,) = problems(leo)
    assert only.path == "world.users"
    assert f"give exactly one of points, region, regions (got {got})" in only.message


@pytest.mark.parametrize("users", [{"points": []}, {"regions": []}])
def test_users_must_not_be_empty(leo, users):
    leo["world"]["users"] = users
    assert problem(leo) == "world.users: the user list must not be empty"


@pytest.mark.parametrize("change, path", [
    ({"min_elevation_deg": 90}, "world.min_elevation_deg"),
    ({"min_elevation_deg": -1}, "world.min_elevation_deg"),
    ({"users": {"points": [[91, 0]]}}, "world.users.points.0.0"),
    ({"users": {"points": [[0, 181]]}}, "world.users.points.0.1"),
    ({"users": {"region": {**REGION, "radius_km": 0}}}, "world.users.region.radius_km"),
    ({"users": {"region": {**REGION, "count": 0}}}, "world.users.region.count"),
    ({"horizon": "0 s"}, "world.horizon"),
    ({"ground_stations": {"positions": [[0, 0]], "min_elevation_deg": 95}},
     "world.ground_stations.min_elevation_deg"),
    ({"constellation": {"kind": "preset", "preset": "starlink"}},
     "world.constellation.preset"),
    ({"constellation": {"kind": "preset", "preset": "kuiper", "max_satellites": 0}},
     "world.constellation.max_satellites"),
    ({"constellation": {"kind": "walker", "altitude": "550 km", "inclination_deg": 181,
                        "planes": 4, "per_plane": 4}},
     "world.constellation.inclination_deg"),
    ({"gsl": {"kind": "laser"}}, "world.gsl.kind"),
])
def test_out_of_range_fields_are_named(leo, change, path):
    leo["world"].update(change)
    assert [p.path for p in problems(leo)] == [path]


def test_phasing_must_be_below_the_planes(leo):
    leo["world"]["constellation"] = {"kind": "walker", "altitude": "550 km",
                                     "inclination_deg": 53, "planes": 4, "per_plane": 5,
                                     "phasing": 4}
    assert problem(leo) == "world.constellation: phasing F (4) must be below planes (4)"


def test_ground_stations_need_a_position(leo):
    leo["world"]["ground_stations"] = {"positions": []}
    assert "at least one ground station" in problem(leo)


def test_a_missing_tle_file_is_named(leo, tmp_path):
    leo["world"]["constellation"] = {"kind": "tle", "path": str(tmp_path / "none.tle")}
    (only,) = problems(leo)
    assert only.path == "world.constellation.path" and "file not found" in only.message


@pytest.mark.parametrize("section, message", [
    ({"data": {"dataset": "digits", "partition": {"kind": "edge-labels", "per_edge": 2,
                                                  "per_client": 1}}},
     "data.partition.kind 'edge-labels'"),
    ({"links": {"access": {"shared": True}}}, "links.access.shared"),
    ({"links": {"access": {"availability": {"kind": "random", "mean_up": "10 s",
                                            "mean_down": "1 s"}}}},
     "links.access.availability must be always"),
    ({"stop": {"max_cost": 10}}, "stop.max_cost"),
])
def test_what_mobile_worlds_refuse_is_refused_on_leo(leo, section, message):
    leo.update(section)
    assert message in problem(leo)


def test_a_link_budget_in_the_old_one_way_form_is_an_unknown_key_with_the_new_names(leo):
    leo["world"]["gsl"] = {"kind": "link-budget", "eirp": "40 dBm"}
    text = problem(leo)
    assert "world.gsl.link-budget.eirp" in text or "world.gsl.eirp" in text
    assert "unknown key" in text
    leo["world"]["gsl"] = {"kind": "link-budget", "uplink": {"frequency": "14 GHz"}}
    assert "required field is missing" in " ".join(
        f"{p.path}: {p.message}" for p in problems(leo))
    leo["world"]["gsl"] = {"kind": "link-budget", "rates": "dvb-s3"}
    assert "dvb-s2" in problem(leo)


def test_a_contact_plan_of_absurd_length_is_refused():
    """A horizon of 1e12 s would propagate every satellite a hundred billion times."""
    import yaml

    from netfl.scenario import load_scenario

    scenario = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "leo"
                               / "short.yaml").read_text())
    scenario["world"]["horizon"] = 1e12
    with pytest.raises(ScenarioError, match="1e\\+11 steps"):
        load_scenario(scenario)
