"""Clients per cell over time (netfl.results.occupancy): closed forms on hand-made intervals,
and road and orbital runs whose occupancy adds up to the world's visits and windows."""

import pandas as pd
import pytest

from netfl.results.occupancy import (
    INTERVAL_COLUMNS,
    OCCUPANCY_COLUMNS,
    bin_edges,
    occupancy,
    occupancy_matrix,
    occupancy_summary,
    occupancy_table,
    world_intervals,
)
from netfl.scenario import load_scenario
from netfl.simulation import Simulation
from netfl.world.iov import visit_rows
from tests.conftest import TINY
from tests.world.test_iov import iov_scenario
from tests.world.test_leo import leo_scenario


def _intervals(rows):
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)


def test_a_cells_mean_and_peak_per_bin_follow_its_visits():
    # two clients in e0: [0, 3) and [1, 2); one in e1 for an instant at the end
    table = occupancy_table(_intervals([("a", "rsu", "e0", 0.0, 3.0),
                                        ("b", "rsu", "e0", 1.0, 2.0),
                                        ("a", "rsu", "e1", 3.0, 4.0)]), 4.0)
    assert list(table.columns) == OCCUPANCY_COLUMNS
    e0 = table[table["cell"] == "e0"]
    assert e0["start_s"].iloc[0] == 0.0 and e0["end_s"].iloc[-1] == 4.0
    lengths = e0["end_s"] - e0["start_s"]
    assert (e0["mean"] * lengths).sum() == pytest.approx(4.0)  # 3 + 1 client-seconds
    inside = e0[(e0["start_s"] >= 1.0) & (e0["end_s"] <= 2.0)]
    assert (inside["mean"] == 2.0).all() and (inside["peak"] == 2).all()
    after = e0[e0["start_s"] >= 3.0]
    assert (after["mean"] == 0.0).all() and (after["peak"] == 0).all()
    summary = occupancy_summary(table)["rsu"]
    assert summary["cells"] == 2 and summary["peak"] == 2
    assert summary["by_cell"]["e0"] == {"mean": pytest.approx(1.0), "peak": 2}
    assert summary["by_cell"]["e1"] == {"mean": pytest.approx(0.25), "peak": 1}


def test_a_peak_inside_a_bin_is_seen_and_a_hand_over_at_one_instant_is_no_peak():
    edges = bin_edges(1000.0)
    width = edges[1] - edges[0]
    table = occupancy_table(_intervals([
        ("a", "rsu", "e0", 0.0, 1000.0),
        ("b", "rsu", "e0", 0.25 * width, 0.5 * width),  # briefly two, inside bin 0
        ("c", "rsu", "e0", 2 * width, 3 * width),
        ("d", "rsu", "e0", 3 * width, 4 * width)]), 1000.0)  # c hands its place to d
    assert len(edges) - 1 <= 64 and table["end_s"].iloc[-1] == 1000.0
    assert list(table["peak"].iloc[:5]) == [2, 1, 2, 2, 1]
    assert table["mean"].iloc[0] == pytest.approx(1.25)


def test_an_edge_world_has_no_cells():
    sim = Simulation(load_scenario(TINY))
    sim.run()
    assert occupancy(sim.world, sim.network, sim.env.now).empty
    assert "occupancy" not in sim.analysis_tables()
    assert sim.summary()["occupancy"] == {}


def _run(scenario):
    sim = Simulation(load_scenario(scenario))
    sim.run()
    return sim


def _client_seconds(table):
    return (table["mean"] * (table["end_s"] - table["start_s"])).groupby(table["level"]).sum()


def test_vehicles_per_rsu_add_up_to_the_visits(tmp_path):
    sim = _run(iov_scenario(TINY))
    now = sim.env.now
    table = sim.analysis_tables()["occupancy"]
    visits = pd.DataFrame(visit_rows(sim.world, now))
    assert set(table["level"]) == {"rsu"} and set(table["cell"]) == set(visits["rsu"])
    assert _client_seconds(table)["rsu"] == pytest.approx(visits["dwell_s"].sum())
    assert (table["peak"] >= table["mean"] - 1e-9).all()
    summary = sim.summary()["occupancy"]["rsu"]
    assert summary["cells"] == visits["rsu"].nunique()
    assert summary["peak"] == table["peak"].max() >= 1
    matrix = occupancy_matrix(table)
    assert list(matrix.index) == sorted(visits["rsu"].unique(), key=lambda n: int(n[1:]))
    sim.plot_links(tmp_path)
    assert (tmp_path / "occupancy.png").stat().st_size > 0
    assert (tmp_path / "links.png").stat().st_size > 0


def test_users_per_satellite_and_per_beam_add_up_to_the_windows():
    sim = _run(leo_scenario(TINY, beams={"kind": "shared", "background_users": 0}))
    now = sim.env.now
    intervals = world_intervals(sim.world, sim.network, now)
    windows = sim.world.window_rows(now)
    seconds = (windows["set_s"] - windows["rise_s"]).sum()
    table = occupancy(sim.world, sim.network, now)
    totals = _client_seconds(table)
    assert totals["satellite"] == pytest.approx(seconds)
    beams = intervals[intervals["level"] == "beam"]
    assert beams["cell"].str.fullmatch(r"e\d+ beam \d+").all()
    assert totals["beam"] == pytest.approx((beams["end_s"] - beams["start_s"]).sum())
    # a window has the beam of its access link (made on first contact)
    assert 0 < len(beams) <= len(windows)
    summary = sim.summary()["occupancy"]
    assert set(summary) == {"satellite", "beam"}
    assert summary["satellite"]["peak"] <= len(sim.world.clients)
    assert occupancy_matrix(table).index.str.contains("beam").all()
