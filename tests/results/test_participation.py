"""Who took part in each round (netfl.results.participation): counts that agree with the
scenario where nothing is lost, and losses by cause on the road."""

import copy

from netfl.results.participation import COUNTS
from netfl.scenario import load_scenario
from netfl.simulation import Simulation
from tests.conftest import TINY
from tests.world.test_iov import iov_scenario


def participation(scenario: dict) -> tuple[list[dict], dict]:
    simulation = Simulation(load_scenario(scenario))
    simulation.run()
    return simulation.participation.rows, simulation.summary()["participation"]


def test_where_nothing_is_lost_every_selected_client_delivers():
    scenario = copy.deepcopy(TINY)  # hier-fedavg: 6 clients under 2 edges, 2 edge rounds
    rows, totals = participation(scenario)
    assert {row["server"] for row in rows} == {"e0", "e1"}
    for row in rows:
        assert row["selected"] == row["trained"] == row["delivered"] == 2 * 3
        assert row["lost_download"] == row["lost_upload"] == row["dropped"] == 0
    assert totals["selected"] == 5 * 2 * 2 * 3 and totals["lost_by_cause"] == {}


def test_on_the_road_losses_are_counted_by_cause(tiny):
    rows, totals = participation(iov_scenario(tiny))
    assert rows and all(r["delivered"] <= r["trained"] <= r["selected"] for r in rows)
    lost = totals["lost_download"] + totals["lost_upload"]
    assert lost > 0 and sum(totals["lost_by_cause"].values()) == lost
    assert all(cause.split()[0] in ("download", "upload") for cause in totals["lost_by_cause"])
    assert set(COUNTS) <= set(totals)


def test_first_k_counts_the_clients_it_cancelled():
    scenario = copy.deepcopy(TINY)
    scenario["devices"] = {"clients": {"flops": "1 GFLOPS", "jitter": 0.5}}
    scenario["algorithm"] = {"kind": "hier-first-k", "rounds": 2, "fraction": 0.5}
    rows, totals = participation(scenario)
    assert totals["cancelled"] > 0
    assert all(r["delivered"] >= 2 for r in rows)  # ceil(0.5 x 3) per edge round, 2 rounds
