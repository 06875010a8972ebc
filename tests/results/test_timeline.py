"""The run's timeline in the Chrome Trace Event format (issue 21, first part)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import netfl
from netfl.cli import app
from netfl.results.timeline import TRANSFERS_PID, chrome_trace, node_tiers


@pytest.fixture
def traced_run(tiny, tmp_path):
    tiny["output"] = {"plots": False, "trace": True}
    tiny["algorithm"]["rounds"] = 2
    return netfl.run(tiny, out_dir=tmp_path, run_id="r")


def test_every_transfer_training_and_aggregation_is_a_slice_of_its_duration(traced_run):
    events = traced_run.events
    trace = chrome_trace(events)["traceEvents"]
    slices = [e for e in trace if e["ph"] == "X"]
    transfers = events[events["kind"] == "transfer_end"]
    sent = {e["args"]["transfer"]: e for e in slices if e["cat"] == "transfer"}
    assert len(sent) == len(transfers)
    for row in transfers.itertuples():
        slice_ = sent[row.transfer_id]
        assert slice_["dur"] == pytest.approx(row.duration_s * 1e6)
        assert slice_["ts"] + slice_["dur"] == pytest.approx(row.time_s * 1e6)
        assert slice_["pid"] == TRANSFERS_PID
    compute = [e for e in slices if e["cat"] == "compute"]
    assert len(compute) == (events["kind"] == "train_end").sum() + (
        events["kind"] == "aggregate").sum()


def test_a_clients_training_slices_never_overlap(traced_run):
    """A client trains one job at a time in the device model: its slices follow each other."""
    trace = chrome_trace(traced_run.events)["traceEvents"]
    by_track: dict[tuple, list] = {}
    for e in trace:
        if e["ph"] == "X" and e["name"].startswith("train"):
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    assert by_track
    for spans in by_track.values():
        spans.sort()
        assert all(end <= nxt + 1e-6
                   for (_, end), (nxt, _) in zip(spans, spans[1:], strict=False))


def test_flow_arrows_pair_up_and_follow_time(traced_run):
    trace = chrome_trace(traced_run.events)["traceEvents"]
    starts = {e["id"]: e for e in trace if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    assert all(starts[i]["ts"] <= ends[i]["ts"] for i in starts)


def test_tracks_are_named_by_tier_and_node(traced_run):
    events = traced_run.events
    tiers = node_tiers(events)
    assert tiers["cloud"] == "cloud" and tiers["e0"] == "edge" and tiers["c0"] == "client"
    names = {e["args"]["name"] for e in chrome_trace(events)["traceEvents"] if e["ph"] == "M"}
    assert {"clients", "edge servers", "cloud", "transfers", "c0", "e0", "e0 -> cloud"} <= names


def test_windows_and_node_filters_keep_the_file_small(traced_run):
    events = traced_run.events
    whole = chrome_trace(events)["traceEvents"]
    window = chrome_trace(events, 0.0, 0.05)["traceEvents"]
    one = chrome_trace(events, nodes=["c0"])["traceEvents"]
    assert 0 < len(window) < len(whole) and 0 < len(one) < len(whole)
    assert all(e["ts"] <= 0.05e6 for e in window if e["ph"] == "X")
    assert all("c0" in e["args"].get("path", "c0") for e in one if e["ph"] == "X")


def test_the_cli_writes_timeline_json(traced_run, tmp_path):
    result = CliRunner().invoke(app, ["timeline", str(traced_run.path)])
    assert result.exit_code == 0, result.output
    trace = json.loads((traced_run.path / "timeline.json").read_text())
    assert trace["otherData"]["clock"] == "simulated time"
    missing = CliRunner().invoke(app, ["timeline", str(tmp_path)])
    assert missing.exit_code == 2 and "output.trace=true" in missing.output


def test_a_diverged_runs_nan_loss_is_left_out_of_the_counters():
    events = pd.DataFrame([{"kind": "evaluation", "time_s": 1.0, "round": 1,
                            "accuracy": 0.1, "loss": float("nan")}])
    counters = [e for e in chrome_trace(events)["traceEvents"] if e["ph"] == "C"]
    assert [e["name"] for e in counters] == ["accuracy"]


def test_output_timeline_writes_both_files_without_the_event_table(tiny, tmp_path):
    tiny["output"] = {"plots": False, "timeline": True}
    result = netfl.run(tiny, out_dir=tmp_path, run_id="r")
    files = {p.name for p in result.path.iterdir()}
    assert {"timeline.json", "timeline.png"} <= files and "events.parquet" not in files
    trace = json.loads((result.path / "timeline.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])


def test_the_gantt_chart_samples_the_busiest_nodes_and_says_so(traced_run):
    from netfl.results.timeline import gantt_rows

    rows, marks, note = gantt_rows(traced_run.events, max_nodes=3)
    assert len(rows) == 3 and note == "the 3 busiest of 9 nodes"
    assert marks and marks == sorted(marks)
    rows, _, note = gantt_rows(traced_run.events)
    assert len(rows) == 9 and note == ""


def model_flows(events: pd.DataFrame) -> list[tuple[str, str]]:
    """The edge -> edge transfers' tracks in the trace, in the order their arrows start."""
    trace = chrome_trace(events)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in trace
             if e["ph"] == "M" and e["pid"] == TRANSFERS_PID and "tid" in e}
    starts = sorted((e["ts"], e["id"], names[e["tid"]]) for e in trace
                    if e["ph"] == "s" and e["name"] == "edge->edge")
    return [tuple(name.split(" -> ")) for _, _, name in starts]


def hand_overs(events: pd.DataFrame) -> list[tuple[str, str]]:
    moves = events[(events["kind"] == "hand_over") & events["ok"].astype(bool)]
    return list(zip(moves["src"], moves["dst"], strict=True))


@pytest.mark.parametrize("algorithm", [
    {"kind": "chfl", "rounds": 2, "order": "ring", "edge_rounds": 1},
    {"kind": "fed-chs", "rounds": 4, "interactions": 2},
])
def test_the_flow_arrows_follow_the_model_around(tiny, algorithm):
    """CHFL's arrows go around its ring, Fed-CHS's follow its hand-over trace (issue 21)."""
    tiny["world"] = {"kind": "edge", "clients": 12, "edge_servers": 4,
                     "topology": {"kind": "ring"}, "cloud": "none"}
    tiny["algorithm"] = {**algorithm, "batch_size": 16}
    tiny["output"] = {"plots": False, "trace": True}
    events = netfl.run(tiny, write=False).events
    moves = hand_overs(events)
    assert len(moves) >= 3 and model_flows(events) == moves
    if algorithm["kind"] == "chfl":
        assert moves[:4] == [("e0", "e1"), ("e1", "e2"), ("e2", "e3"), ("e3", "e0")]


def test_dropouts_and_link_outages_are_slices_from_down_to_up():
    events = pd.DataFrame([
        {"kind": "dropout", "time_s": 1.0, "node": "c0", "up": False},
        {"kind": "link_state", "time_s": 1.5, "link": "e0-cloud", "up": False},
        {"kind": "dropout", "time_s": 3.0, "node": "c0", "up": True},
        {"kind": "link_state", "time_s": 4.0, "link": "e0-cloud", "up": True},
        {"kind": "dropout", "time_s": 5.0, "node": "c1", "up": False},  # still down at the end
        {"kind": "evaluation", "time_s": 6.0, "round": 1, "accuracy": 0.5, "loss": 1.0},
    ])
    slices = [(e["name"], e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6)
              for e in chrome_trace(events)["traceEvents"] if e["ph"] == "X"]
    assert sorted(slices) == [("down", 1.5, 4.0), ("unavailable", 1.0, 3.0),
                              ("unavailable", 5.0, 6.0)]
