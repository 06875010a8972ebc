"""timeline.json for every algorithm family and world: the repository's short
scenarios with the fake model, checked for what holds in any run's timeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import netfl
from netfl.results.timeline import carries_model, chrome_trace
from tests.results.test_timeline import arrows, assert_training_never_overlaps

ROOT = Path(__file__).resolve().parents[2]
FAST = {"model": {"kind": "fake", "params": 5000},
        "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                 "partition": {"kind": "dirichlet", "alpha": 0.6}}}
SCENARIOS = {  # file: the algorithm's fields that keep the run short
    "quickstart.yaml": {"rounds": 2},
    "chfl/short-hier-fedavg.yaml": {"rounds": 2},
    "chfl/short-chfl.yaml": {"rounds": 2},
    "chfl/short-sfl.yaml": {"rounds": 2},
    "fedchs/short-fed-chs.yaml": {"rounds": 3},
    "fedchs/short-wrwgd.yaml": {"rounds": 3},
    "hfl_pwp/short-hfl-pwp.yaml": {"rounds": 2},
    "group_fel/short-group-fel.yaml": {"rounds": 2},
    "iov/short.yaml": {"rounds": 2},
    "leo/short.yaml": {"rounds": 2},
}


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def run(request):
    scenario = yaml.safe_load((ROOT / "scenarios" / request.param).read_text())
    scenario["algorithm"].update(SCENARIOS[request.param])
    scenario = {**scenario, **FAST, "output": {"plots": False, "trace": True}}
    events = netfl.run(scenario, write=False).events
    return events, chrome_trace(events)["traceEvents"]


def test_the_trace_is_json_with_finite_forward_slices(run):
    _, trace = run
    json.dumps(trace, allow_nan=False)
    for e in trace:
        if e["ph"] == "X":
            assert 0 <= e["dur"] < float("inf") and e["ts"] >= 0


def test_every_transfer_training_and_aggregation_has_its_slice(run):
    events, trace = run
    kinds = events["kind"].value_counts()
    slices = [e for e in trace if e["ph"] == "X"]
    assert sum(e["cat"] == "transfer" for e in slices) == kinds.get("transfer_end", 0) > 0
    assert sum(e["cat"] == "compute" for e in slices) == (
        kinds.get("train_end", 0) + kinds.get("aggregate", 0))


def test_a_nodes_training_slices_never_overlap(run):
    assert_training_never_overlaps(run[1])


def test_each_arrow_comes_from_the_last_model_its_sender_received(run):
    events, trace = run
    ends = events[events["kind"] == "transfer_end"].set_index("transfer_id")
    back = arrows(trace)
    assert back
    for into, source in back.items():
        target, came = ends.loc[into], ends.loc[source]
        left = target["time_s"] - target["duration_s"]
        assert carries_model(came["tag"]) and carries_model(target["tag"])
        assert came["dst"] == target["src"] and came["time_s"] <= left + 1e-9
        later = ends[(ends["dst"] == target["src"]) & (ends["time_s"] > came["time_s"])
                     & (ends["time_s"] <= left) & ends["tag"].map(carries_model)]
        assert later.empty  # none delivered into the sender in between


def test_each_wait_spans_its_aggregations_updates(run):
    # Group-FEL aggregates several groups at one edge server at once: a wait counts the
    # aggregation's own number of updates, never everything since the node last sent a model
    events, trace = run
    aggregations = events[events["kind"] == "aggregate"]
    counts = set(aggregations["n_updates"].astype(int)) if len(aggregations) else set()
    ends = {e["id"]: e["ts"] for e in trace if e["ph"] == "e" and e["cat"] == "wait"}
    for e in trace:
        if e["ph"] == "b" and e["cat"] == "wait":
            assert e["args"]["updates"] in counts and e["args"]["updates"] >= 2
            assert e["ts"] < ends[e["id"]]



def cell_stays(trace: list[dict]) -> dict[str, list[tuple[float, float, str]]]:
    """Each user's stays in cells from the trace: (begin, end, cell), by the user's track."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace
             if e["ph"] == "M" and e["name"] == "thread_name"}
    ends = {e["id"]: e["ts"] for e in trace if e.get("cat") == "cell" and e["ph"] == "e"}
    stays: dict[str, list[tuple[float, float, str]]] = {}
    for e in trace:
        if e.get("cat") == "cell" and e["ph"] == "b":
            stays.setdefault(names[(e["pid"], e["tid"])], []).append(
                (e["ts"], ends.pop(e["id"]), e["args"]["cell"]))
    assert not ends  # every stay that ended had begun
    return stays


def test_a_mobile_users_stays_in_cells_are_slices_on_its_track(run):
    events, trace = run
    records = events[events["kind"] == "association"]
    stays = cell_stays(trace)
    attached = records["attached"].astype(bool).sum() if len(records) else 0
    assert sum(map(len, stays.values())) == attached  # static worlds: none
    for client, spans in stays.items():
        assert client in set(records["client"])
        assert all(begin <= end for begin, end, _ in spans)


def test_a_vehicles_cell_hand_overs_follow_one_another():
    # IoV is exclusive: a vehicle leaves one RSU's cell before it joins the next, so its stays
    # never overlap, and some vehicle on the highway does hand over within the run (a client
    # may also come back to a cell: out of coverage between RSUs, or a recycled vehicle id)
    scenario = yaml.safe_load((ROOT / "scenarios" / "iov" / "short.yaml").read_text())
    scenario["algorithm"].update(SCENARIOS["iov/short.yaml"])
    scenario = {**scenario, **FAST, "output": {"plots": False, "trace": True}}
    stays = cell_stays(chrome_trace(netfl.run(scenario, write=False).events)["traceEvents"])
    handed_over = 0
    for spans in stays.values():
        spans.sort()
        for (_, end, cell), (begin, _, following) in zip(spans, spans[1:], strict=False):
            assert end <= begin
            handed_over += cell != following
    assert handed_over > 0


def test_the_cost_counter_sums_the_booked_eq5_costs(run, request):
    events, trace = run
    counters = [e["args"]["client-seconds"] for e in trace if e.get("name") == "cost (eq. 5)"]
    booked = float(events["cost_s"].sum()) if "cost_s" in events else 0.0
    if request.node.callspec.params["run"].startswith("group_fel/"):
        assert booked > 0
    if booked:
        assert counters[-1] == pytest.approx(booked) and counters == sorted(counters)
    else:
        assert not counters
