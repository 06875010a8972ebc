"""A road under a constellation: RSUs backhauled by LEO satellites (netfl.world.joined)."""

import math

import numpy as np
import pytest
import simpy

from netfl.errors import ScenarioError
from netfl.network.helper import build_network
from netfl.network.radio import SPEED_OF_LIGHT_MPS
from netfl.scenario.iov import IovWorld
from netfl.scenario.joined import RoadSite
from netfl.scenario.sections import Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import HopEnd, TraceBus, TransferEnd
from netfl.world.base import CLIENT, EDGE, RELAY
from netfl.world.joined import JoinedWorld, build_iov_world

ROAD = {"kind": "iov", "road": {"kind": "highway", "length": 9000},
        "rsus": {"spacing": 3000, "coverage": 500},
        "traffic": {"arrivals_per_hour": 1200, "duration": 3600}, "max_clients": 30}
# the road in eastern Montana; the only gateway 1,500 km away, so traffic needs ISLs
FAR_GATEWAY = {"positions": [[33.4, -112.0]], "min_elevation_deg": 25,
               "terrestrial_delay": 0.010}


def backhaul(**changes) -> dict:
    return {"kind": "satellite", "site": {"lat_deg": 47.0, "lon_deg": -105.5},
            "constellation": {"kind": "preset", "preset": "starlink-shell1"},
            "horizon": 1800, "gsl": {"kind": "fixed", "rate": "50 Mbps"},
            "beams": {"kind": "dedicated"}, "isl": {"kind": "grid", "rate": "10 Gbps"},
            "ground_stations": FAR_GATEWAY} | changes


def world(**changes) -> JoinedWorld:
    spec = IovWorld.model_validate(ROAD | {"backhaul": backhaul(**changes)})
    return build_iov_world(spec, np.random.default_rng(0))


class Bench:
    def __init__(self, joined: JoinedWorld):
        self.world, self.env, self.trace = joined, simpy.Environment(), TraceBus()
        self.hops, self.ends = [], []
        self.trace.subscribe(self.hops.append, HopEnd)
        self.trace.subscribe(self.ends.append, TransferEnd)
        links = Links(transport={"kind": "fluid"}, core={"rate": "10 Gbps"},
                      backhaul={"rate": "10 Gbps"})
        self.network = build_network(self.env, joined, links, RandomStreams(0), self.trace)
        joined.start(self.env, None)
        self.network.start()


@pytest.fixture
def joined() -> JoinedWorld:
    return world()  # a run adds terminal edges to its world's graph: one world per run


def test_the_road_is_placed_on_the_earth_along_its_heading():
    east = RoadSite(lat_deg=47.0, lon_deg=-105.5, heading_deg=90)
    lat, lon = east.lat_lon(10_000.0, 0.0)
    assert lat == pytest.approx(47.0)
    assert (lon + 105.5) * math.radians(1) * 6_371_008.8 * math.cos(math.radians(47)) == (
        pytest.approx(10_000.0))
    north = RoadSite(lat_deg=47.0, lon_deg=-105.5, heading_deg=0)
    lat, lon = north.lat_lon(10_000.0, 500.0)  # y is to the left of the heading: west
    assert (lat - 47.0) * math.radians(1) * 6_371_008.8 == pytest.approx(10_000.0)
    assert lon < -105.5


def test_terminal_rsus_lose_their_fibre_and_satellites_relay(joined):
    graph = joined.graph
    rsus = joined.edge_servers
    assert set(joined.terminals) == set(rsus)
    for rsu in rsus:  # no fibre; terminal links come as satellites first serve
        assert not [v for v in graph[rsu] if joined.tier(v) != CLIENT]
    assert all(joined.tier(s) == RELAY for s in joined.satellites)
    Bench(joined).env.run(until=60.0)
    for rsu in rsus:
        classes = {graph.edges[rsu, v]["link_class"] for v in graph[rsu]
                   if joined.tier(v) != CLIENT}
        assert classes == {"terminal"}
    # Fed-CHS's neighbours stay the road's: each RSU's nearest on either side
    assert sorted(joined.edge_graph().edges()) == [("e0", "e1"), ("e1", "e2")]


def test_an_update_crosses_the_terminal_isls_and_a_gateway_and_its_hop_delays_add_up(joined):
    bench = Bench(joined)
    env, net, world_ = bench.env, bench.network, bench.world
    env.run(until=600.0)
    client = next(c for c in world_.clients if world_.edge_of(c) is not None)
    rsu = world_.edge_of(client)
    serving = world_.serving[rsu]
    path = net.route(client, world_.cloud)
    assert path[:3] == [client, rsu, serving] and path[-1] == world_.cloud
    sats = path[2:-1]
    assert len(sats) >= 2 and all(world_.tier(s) == RELAY for s in sats)  # ISLs were needed
    # every hop's delay from the geometry at this instant
    now = env.now
    delays = world_.link_delays_s(list(zip(path[1:-1], path[2:], strict=True)), now)
    assert delays[0] == pytest.approx(world_.terminal_distance_m(rsu, serving, now)
                                      / SPEED_OF_LIGHT_MPS)
    slant = world_.sky.link_delays_s([(world_.sky.edge_servers[int(sats[-1][1:])],
                                       world_.sky.cloud)], now)[0]
    assert delays[-1] == pytest.approx(slant) and slant > 0.010  # + the terrestrial 10 ms
    # a vehicle's tiny update: past its radio hop, each hop ends its delay after the one before
    net.clear_routes()
    for u, v, d in zip(path[1:-1], path[2:], delays, strict=True):
        net.link(u, v).delay_s = float(d)
    env.run(until=net.send(client, world_.cloud, 1.0))
    end = bench.ends[-1]
    hops = [h for h in bench.hops if h.transfer_id == end.transfer_id]
    assert [h.u for h in hops] == path[:-1] and hops[-1].v == world_.cloud
    gaps = np.diff([h.time_s for h in hops])
    assert gaps == pytest.approx(delays, rel=1e-6, abs=1e-6)
    assert end.duration_s == pytest.approx(hops[0].time_s - hops[0].start_s + sum(delays),
                                           rel=1e-6, abs=1e-6)


def test_a_terminal_link_is_up_only_to_its_serving_satellite(joined):
    bench = Bench(joined)
    bench.env.run(until=900.0)
    for rsu in joined.terminals:
        up = [v for v in joined.graph[rsu] if joined.tier(v) == RELAY
              and bench.network.link(rsu, v).up]
        assert up == [joined.serving[rsu]]
    assert joined.terminal_changes > 0  # 15 minutes: every terminal was handed over


def test_rsu_indices_past_the_last_are_named():
    with pytest.raises(ScenarioError, match=r"RSU indices \[7\] are past the last of the 3"):
        world(rsus=[0, 7])


def test_satellites_that_reach_nothing_are_refused():
    with pytest.raises(ValueError, match="reaches nothing"):
        IovWorld.model_validate(ROAD | {"backhaul": backhaul(isl={"kind": "none"},
                                                              ground_stations=None)})


def test_fibre_rsus_keep_their_fibre():
    mixed = world(rsus=[1])
    graph = mixed.graph
    assert graph.edges["e0", "cloud"]["link_class"] == "core"
    assert not graph.has_edge("e1", "cloud") and not graph.has_edge("e0", "e1")
    assert mixed.tier("e1") == EDGE and mixed.terminals == ["e1"]


def test_a_joined_run_is_the_same_from_a_fresh_cache_a_warm_one_and_none(tiny, tmp_path,
                                                                          monkeypatch):
    from netfl.runner import run_scenario
    from tests.world.test_iov import iov_scenario, without_host_time

    monkeypatch.setenv("NETFL_CACHE_DIR", str(tmp_path / "cache"))
    scenario = iov_scenario(tiny)
    scenario["algorithm"] = {"kind": "hier-fedavg", "rounds": 2, "edge_rounds": 1,
                             "local_steps": 2, "batch_size": 16}
    scenario["world"]["backhaul"] = backhaul(horizon=1800)
    summaries = []
    for cache in (True, True, False):  # computed and written, read back, not cached
        scenario["world"]["backhaul"]["cache"] = cache
        summaries.append(without_host_time(run_scenario(scenario, write=False).summary))
    assert summaries[0]["satellite_backhaul"]["terminals"] == 4  # every RSU of the 3 km road
    assert summaries[0] == summaries[1] == summaries[2]
