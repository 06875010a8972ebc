"""The LEO world with satellites as clients: the fields each role needs, ground stations as
edge servers on terrestrial links, satellites attached exactly inside their contact windows,
the contact queries a scheduler plans with, a link budget's directions as they are in space,
and whole runs (fake model) with contacts.csv, the chart and the summary."""

import copy

import numpy as np
import pytest
import simpy

from netfl.errors import ScenarioError
from netfl.network.helper import build_network
from netfl.network.radio import AccessRadio
from netfl.runner import run_scenario
from netfl.scenario import load_scenario
from netfl.scenario.leo import LeoWorld
from netfl.scenario.sections import Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import TraceBus
from netfl.world.base import CLOUD_NAME
from netfl.world.contact_plan import contact_windows
from netfl.world.leo import build_leo_world, constellation
from netfl.world.leo_clients import SatelliteClientWorld

STATIONS = [[78.2, 15.4], [64.8, -147.7], [-25.9, 27.7]]
SHELL = {"kind": "walker", "altitude": "500 km", "inclination_deg": 97.4, "planes": 3,
         "per_plane": 4, "phasing": 1}


def world_spec(**changes) -> LeoWorld:
    fields = {"kind": "leo", "clients": "satellites", "constellation": SHELL,
              "horizon": "6 h", "cache": False,
              "ground_stations": {"positions": STATIONS, "min_elevation_deg": 10,
                                  "rate": "1 Gbps", "terrestrial_delay": "15 ms"}}
    return LeoWorld.model_validate(fields | changes)


@pytest.fixture(scope="module")
def world() -> SatelliteClientWorld:
    return build_leo_world(world_spec(), np.random.default_rng(0))


@pytest.mark.parametrize("change, message", [
    ({"users": {"points": [[0.0, 0.0]]}}, "remove users"),
    ({"ground_stations": None}, "give ground_stations"),
    ({"isl": {"kind": "grid"}}, "isl must be {kind: none}"),
    ({"beams": {"kind": "shared"}}, "beams must be {kind: dedicated}"),
    ({"min_elevation_deg": 20}, "ground_stations.min_elevation_deg"),
    ({"handover_margin": "10 s"}, "Fed-CHS"),
    ({"power": {"array": "100 W", "bus": "20 W", "battery": {"capacity": "100 Wh"}}},
     "power systems"),
])
def test_satellites_as_clients_refuse_what_only_users_have(change, message):
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        world_spec(**change)


def test_users_are_still_required_where_users_are_the_clients():
    with pytest.raises(ValueError, match="users is required"):
        LeoWorld.model_validate({"kind": "leo", "constellation": SHELL})


def test_the_graph_has_stations_on_terrestrial_links_to_the_cloud(world):
    assert world.clients == [f"c{k}" for k in range(len(world.clients))]
    assert world.edge_servers == ["e0", "e1", "e2"]
    assert world.cloud == CLOUD_NAME and not world.orbital and world.mobile
    for station in world.edge_servers:
        data = world.graph.edges[station, CLOUD_NAME]
        assert data["link_class"] == "core" and data["rate_bps"] == 1e9
        assert data["delay_s"] == pytest.approx(0.015)
    assert not any(world.tier(u) == "edge" and world.tier(v) == "edge"
                   for u, v in world.graph.edges)


def test_the_windows_are_the_contact_plan_of_satellites_over_stations(world):
    spec = world_spec()
    names, satrecs, _ = constellation(spec)
    plan = contact_windows(list(zip(range(len(satrecs)), satrecs, strict=True)),
                           [(a, b, 0.0) for a, b in STATIONS], spec.start, spec.horizon, 10.0,
                           cache_dir=False)
    # every satellite of a 97.4 deg shell passes over Svalbard within 6 h: none is left out
    assert sorted(plan["satellite"].unique()) == list(range(len(world.clients)))
    assert len(plan) == len(world.windows)
    assert np.allclose(sorted(plan["rise_s"]), sorted(world.windows["rise_s"]))


def _attached(world, times):
    env = simpy.Environment()
    world.start(env, None)
    seen = {}

    def probe():
        for t in times:
            yield env.timeout(t - env.now)
            seen[t] = {c: world.edges_of(c) for c in world.clients}

    env.process(probe())
    env.run(until=max(times) + 1)
    return seen


def test_a_satellite_is_attached_exactly_inside_its_windows():
    world = build_leo_world(world_spec(), np.random.default_rng(0))
    rows = world.windows.iloc[:8]
    times = sorted({float(t) for r in rows.itertuples()
                    for t in ((r.rise_s + r.set_s) / 2, r.set_s + 1.0)})
    seen = _attached(world, times)
    for r in rows.itertuples():
        sat, station = world.clients[r.sat], world.edge_servers[r.station]
        assert station in seen[(r.rise_s + r.set_s) / 2][sat]
        later = world._pair_windows[(r.sat, r.station)]
        if not any(a <= r.set_s + 1.0 < b for a, b in later):
            assert station not in seen[r.set_s + 1.0][sat]


def test_contact_queries_follow_the_merged_windows(world):
    sat = world.clients[0]
    spans = world.coverage(sat)
    a, b = spans[0]
    assert world.in_contact(sat, (a + b) / 2) and not world.in_contact(sat, b + 1e-6)
    assert world.contact_left_s(sat, a) == pytest.approx(b - a)
    assert world.next_contact_s(sat, (a + b) / 2) == (a + b) / 2
    if len(spans) > 1:
        assert world.next_contact_s(sat, b + 1.0) == spans[1][0]
    assert world.next_contact_s(sat, world.spec.horizon + 1.0) is None


def test_the_contact_table_lists_who_meets_a_station_in_each_slot(world):
    slot = 900.0
    table = world.contact_table(0.0, slot, 24)
    for i, present in enumerate(table):
        a, b = i * slot, (i + 1) * slot
        by_hand = [c for c in world.clients
                   if any(s < b and e > a for s, e in world.coverage(c))]
        assert present == by_hand
    assert sum(map(len, table)) > 0


def test_the_distance_and_elevation_are_the_satellites_over_the_station(world):
    sat, station, t = world.clients[0], world.edge_servers[0], 0.0
    rise, set_ = world._pair_windows[(0, 0)][0]
    mid = (rise + set_) / 2
    d = world.distance_m(sat, station, mid)
    assert 500e3 < d < 2500e3  # above the station, within a 10 deg mask of a 500 km orbit
    assert world.elevation_deg(sat, station, mid) > 10.0
    assert world.elevation_deg(sat, station, rise) == pytest.approx(10.0, abs=0.2)
    del t


def test_a_link_budgets_directions_are_as_in_space():
    budget = {"kind": "link-budget",
              "uplink": {"frequency": "2.2 GHz", "bandwidth": "2 MHz", "eirp": 50.0,
                         "g_over_t": -10.0},
              "downlink": {"frequency": "8.2 GHz", "bandwidth": "100 MHz", "eirp": 50.0,
                           "g_over_t": 30.0}}
    world = build_leo_world(world_spec(gsl=budget), np.random.default_rng(0))
    radio = AccessRadio(world.access_radio_spec, orbit_radius_m=world.orbit_radius_m)
    direct = AccessRadio(world_spec(gsl=budget).gsl, orbit_radius_m=world.orbit_radius_m)
    up, down = radio.rates_bps(1000e3)
    ground_up, space_down = direct.rates_bps(1000e3)
    # a satellite's upload (client -> station) is the X-band downlink; its download the S-band
    assert (up, down) == (space_down, ground_up) and up > 10 * down


def test_the_network_gives_each_contact_its_own_carrier(world):
    env = simpy.Environment()
    streams = RandomStreams(1)
    fresh = build_leo_world(world_spec(), np.random.default_rng(0))
    network = build_network(env, fresh, Links(), streams, TraceBus())
    fresh.start(env, streams)
    env.run(until=3600.0)
    access = [link for link in network.links() if link.link_class == "access"]
    assert access and all(ch.medium is None for link in access
                          for ch in link.channels(link.u, link.v))


def satellite_scenario(tiny: dict, kind: str = "fedavg", **algorithm) -> dict:
    scenario = copy.deepcopy(tiny)
    scenario["name"] = "eo-tiny"
    scenario.pop("links")
    scenario["world"] = {"kind": "leo", "clients": "satellites", "constellation": SHELL,
                         "horizon": "6 h", "cache": False, "gsl": {"kind": "fixed",
                                                                     "rate": "100 Mbps"},
                         "ground_stations": {"positions": STATIONS, "min_elevation_deg": 10}}
    scenario["data"]["partition"] = {"kind": "iid"}
    scenario["algorithm"] = {"kind": kind, "rounds": 30, "local_steps": 2,
                             "batch_size": 16} | algorithm
    scenario["stop"] = {"max_sim_time": "6 h"}
    return scenario


def test_a_run_with_satellites_as_clients_writes_contacts_and_the_chart(tiny, tmp_path):
    scenario = satellite_scenario(tiny, clients_per_round=3)
    scenario["output"] = {"plots": True}
    result = run_scenario(scenario, write=True, out_dir=tmp_path, run_id="run")
    folder = result.path
    contacts = (folder / "contacts.csv").read_text().splitlines()
    assert contacts[0] == "satellite,name,ground_station,rise_s,set_s" and len(contacts) > 1
    assert (folder / "contact_chart.png").is_file()
    summary = result.summary
    assert summary["satellites"] == 12 and summary["ground_stations"] == 3
    assert 0 < summary["satellite_coverage"] < 1 and summary["contact_s_mean"] > 0
    assert summary["rounds"] == 30


def test_algorithms_that_need_users_or_isls_are_refused(tiny):
    scenario = satellite_scenario(tiny, kind="chfl")
    with pytest.raises(ScenarioError, match="does not run with clients: satellites"):
        load_scenario(scenario)
