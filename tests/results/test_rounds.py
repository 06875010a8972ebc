"""Each round's critical path (netfl.results.rounds): the walk back on hand-made activities, and
on runs of every algorithm family and world, whose rounds' parts add up to their durations."""

import copy
import math

import pytest

import netfl
from netfl.results.rounds import PARTS, Activity, critical_path, transfer_part
from netfl.scenario.kinds import algorithm_kinds, algorithm_spec
from netfl.simulation import Simulation
from tests.conftest import TINY
from tests.world.test_iov import iov_scenario


def by_node(*activities: Activity) -> dict[str, list[Activity]]:
    out: dict[str, list[Activity]] = {}
    for a in sorted(activities, key=lambda a: a.end):
        out.setdefault(a.node, []).append(a)
    return out


def test_the_walk_follows_the_slowest_client_back_to_the_round_start():
    # two clients of edge e; c2 is slower and its upload waits 0.5 s in a queue
    acts = by_node(
        Activity(0.0, 1.0, "c1", "e", "download"), Activity(1.0, 2.0, "c1", None, "compute"),
        Activity(2.0, 3.0, "e", "c1", "upload"),
        Activity(0.0, 1.0, "c2", "e", "download"), Activity(1.0, 3.0, "c2", None, "compute"),
        Activity(3.5, 4.0, "e", "c2", "upload"), Activity(4.0, 4.5, "e", None, "aggregation"))
    last = acts["e"][-1]
    parts, node = critical_path(acts, last, 0.0, 4.5)
    assert node == "e"
    assert parts == pytest.approx({"download": 1.0, "compute": 2.0, "upload": 0.5,
                                   "aggregation": 0.5, "group_operation": 0.0, "handover": 0.0,
                                   "waiting": 0.5})


def test_an_upload_that_starts_an_ulp_before_its_computation_ended_follows_it():
    """A record's start is its end less its duration: it can fall an ulp before the end of
    the computation it followed. The walk still takes the computation (it counted it as
    waiting, and the download before it, in a paper-scale run's first round)."""
    trained = 0.9199322961325965
    acts = by_node(Activity(0.2616746055248619, 0.9055322961325966, "c", "e", "download"),
                   Activity(0.9055322961325966, trained, "c", None, "compute"),
                   Activity(math.nextafter(trained, 0.0), 2.6, "e", "c", "upload"))
    parts, _ = critical_path(acts, acts["e"][-1], 0.2616746055248619, 2.6)
    assert parts["waiting"] == 0.0
    assert parts["compute"] == pytest.approx(0.0144, rel=1e-9)
    assert math.fsum(parts.values()) == pytest.approx(2.6 - 0.2616746055248619, rel=1e-12)


def test_activities_begun_before_the_round_count_only_from_its_start():
    acts = by_node(Activity(8.0, 12.0, "e2", "e1", "handover"),
                   Activity(12.0, 13.0, "e2", None, "aggregation"))
    parts, _ = critical_path(acts, acts["e2"][-1], 10.0, 14.0)
    assert parts["handover"] == 2.0 and parts["aggregation"] == 1.0 and parts["waiting"] == 1.0


def test_transfers_are_parts_by_their_tag_or_their_tiers():
    assert transfer_part("secagg client->edge", "client", "edge") == "group_operation"
    assert transfer_part("cloud->edge", "cloud", "edge") == "download"
    assert transfer_part("client->edge", "client", "edge") == "upload"
    assert transfer_part("edge->edge", "edge", "edge") == "handover"
    assert transfer_part("resumed-part", "edge", "edge") == "upload"


def check_rounds(result) -> list[dict]:
    """The rounds table of ``result`` (rounds.csv's rows): one per round, consecutive, each's
    parts adding up to its duration."""
    rows = result.rounds
    assert [r["round"] for r in rows] == list(range(1, result.summary["rounds"] + 1))
    for before, row in zip([None, *rows], rows, strict=False):
        assert row["start_s"] == (0.0 if before is None else before["end_s"])
        total = math.fsum(row[f"{p}_s"] for p in PARTS)
        assert total == pytest.approx(row["duration_s"], rel=1e-12, abs=1e-12)
        assert all(row[f"{p}_s"] >= 0 for p in PARTS)
    return rows


def run(scenario: dict):
    simulation = Simulation(netfl.load_scenario(scenario))
    simulation.run()
    result = type("Result", (), {})()
    result.summary, result.rounds = simulation.summary(), simulation.rounds.rows
    return result


@pytest.mark.parametrize("kind", [k for k in algorithm_kinds()
                                  if k != "fed-chs" and "edge" in algorithm_spec(k).WORLDS])
def test_every_algorithms_rounds_add_up(kind):
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": kind, "rounds": 3}
    rows = check_rounds(run(scenario))
    assert sum(r["waiting_s"] for r in rows) < sum(r["duration_s"] for r in rows)


def test_fedsats_rounds_add_up_with_satellites_as_clients():
    from tests.algorithms.test_fedsat import satellites

    check_rounds(run(satellites(copy.deepcopy(TINY), rounds=3)))


def test_fed_chs_on_a_ring_hands_the_model_over_between_rounds():
    scenario = copy.deepcopy(TINY)
    scenario["world"] = {"kind": "edge", "clients": 6, "edge_servers": 3,
                         "topology": {"kind": "ring"}}
    scenario["algorithm"] = {"kind": "fed-chs", "rounds": 4, "interactions": 2}
    rows = check_rounds(run(scenario))
    assert rows[0]["handover_s"] == 0  # the first visit starts where the model is
    assert all(r["handover_s"] > 0 for r in rows[1:])


def test_group_fel_counts_its_group_operations():
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": "group-fel", "rounds": 2,
                             "group_operation": {"quadratic_s": 0.5, "peer_bytes": 1000}}
    rows = check_rounds(run(scenario))
    assert all(r["group_operation_s"] > 0 for r in rows)


@pytest.mark.parametrize("kind", ["hier-fedavg", "fed-chs"])
def test_rounds_add_up_on_the_road(tiny, kind):
    scenario = iov_scenario(tiny)
    scenario["algorithm"] = {"kind": kind, "rounds": 3}
    check_rounds(run(scenario))


def test_rounds_csv_and_the_summary_statistics(tmp_path):
    scenario = copy.deepcopy(TINY)
    result = netfl.run(netfl.load_scenario(scenario), out_dir=tmp_path, run_id="r")
    import pandas as pd

    table = pd.read_csv(result.path / "rounds.csv")
    assert len(table) == result.summary["rounds"]
    stats = result.summary["round_critical_path"]
    assert stats["duration_s"]["max"] == pytest.approx(table["duration_s"].max())
    assert set(stats) == {"duration_s", *(f"{p}_s" for p in PARTS)}


@pytest.mark.parametrize("kind", ["hier-fedavg", "fed-chs"])
def test_rounds_add_up_under_a_constellation(kind):
    from pathlib import Path

    scenario = netfl.load_scenario(
        Path(__file__).resolve().parents[2] / "scenarios" / "leo" / "short.yaml",
        [f"algorithm={{kind: {kind}, rounds: 3}}", "model={kind: fake}",
         "data={dataset: synthetic, partition: {kind: dirichlet, alpha: 0.6}}"])
    simulation = Simulation(scenario)
    simulation.run()
    result = type("Result", (), {})()
    result.summary, result.rounds = simulation.summary(), simulation.rounds.rows
    rows = check_rounds(result)
    assert all(r["upload_s"] > 0 for r in rows)  # the users' uplinks are on every path


# ----------------------------------------------------------- a path split by its hops


def test_a_store_and_forward_path_splits_at_each_hops_last_bit():
    from netfl.results.rounds import Hop, hop_spans

    # each hop's first bit waits for the one before's last: nothing moves
    hops = [Hop(0.0, 2.0, 1.0, "radio"), Hop(2.0, 2.5, 1.0, "terminal"),
            Hop(2.5, 2.6, 0.1, "feeder")]
    assert hop_spans(0.0, hops) == [("radio", 0.0, 2.0), ("terminal", 2.0, 2.5),
                                    ("feeder", 2.5, 2.6)]


def test_a_pipelined_paths_passage_goes_to_its_bottleneck():
    from netfl.results.rounds import Hop, hop_spans

    # 8 s of data through a path whose second hop is the bottleneck; delays 0.1, 0.2, 0.3 s:
    # last bits out at 8.1, 8.3, 8.6; first bits in at 0, 0.1, 0.3
    hops = [Hop(0.0, 8.1, 0.2, "radio"), Hop(0.1, 8.3, 1.0, "terminal"),
            Hop(0.3, 8.6, 0.5, "feeder")]
    spans = hop_spans(0.0, hops)
    lengths = {segment: b - a for segment, a, b in spans}
    assert lengths == pytest.approx({"radio": 0.1, "terminal": 8.2, "feeder": 0.3})
    assert all(spans[i][2] == pytest.approx(spans[i + 1][1]) for i in range(2))
    assert spans[-1][2] == 8.6  # they add up to the transfer's time


def test_on_a_road_under_a_constellation_a_rounds_transfers_split_by_hop():
    from netfl.results.rounds import SEGMENT_COLUMNS
    from tests.world.test_joined import backhaul

    scenario = iov_scenario(TINY)
    scenario["algorithm"] = {"kind": "hier-fedavg", "rounds": 3, "edge_rounds": 1,
                             "local_steps": 2, "batch_size": 16}
    scenario["world"]["backhaul"] = backhaul(horizon=3600)
    sim = Simulation(netfl.load_scenario(scenario))
    sim.run()
    rounds = sim.analysis.rounds_table()
    assert list(rounds.columns[-len(SEGMENT_COLUMNS):]) == SEGMENT_COLUMNS
    transfers = rounds[["download_s", "upload_s", "handover_s"]].sum(axis=1)
    segments = rounds[SEGMENT_COLUMNS].sum(axis=1)
    assert (segments <= transfers + 1e-6).all() and (segments >= 0.99 * transfers - 1e-6).all()
    assert (rounds["terminal_s"] > 0).all() and (rounds["feeder_s"] > 0).all()
    assert (rounds["isl_s"] > 0).any()  # the only gateway is 1,500 km away


def test_rounds_png_draws_the_hops_where_a_round_has_them(tmp_path, monkeypatch):
    import matplotlib.figure
    import pandas as pd

    from netfl.results.round_plots import plot_rounds
    from netfl.results.rounds import ROUND_COLUMNS, SEGMENT_COLUMNS

    row = dict.fromkeys(ROUND_COLUMNS + SEGMENT_COLUMNS, 0.0) | {
        "round": 1, "ended_at": "cloud", "duration_s": 3.0, "download_s": 1.0, "upload_s": 2.0,
        "radio_s": 2.5, "terminal_s": 0.5}
    rounds = pd.DataFrame([row, row | {"round": 2}])
    panels, original = [], matplotlib.figure.Figure.subplots

    def counting(self, *args, **kwargs):
        axes = original(self, *args, **kwargs)
        panels.append(len(axes))
        return axes

    monkeypatch.setattr(matplotlib.figure.Figure, "subplots", counting)
    assert plot_rounds(rounds, tmp_path / "with.png", "t") == tmp_path / "with.png"
    plot_rounds(rounds[ROUND_COLUMNS], tmp_path / "without.png", "t")
    assert panels == [3, 2]  # a panel of the hops only where the rounds have them
