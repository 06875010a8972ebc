"""The run's timeline in the Chrome Trace Event format."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import netfl
from netfl.cli import app
from netfl.results.timeline import HOPS_PID, PIDS, TRANSFERS_PID, chrome_trace, node_tiers


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


def assert_training_never_overlaps(trace: list[dict], slack_us: float = 1e-3) -> None:
    """A node trains one job at a time in the device model: its training slices follow each
    other (``slack_us``: float rounding of the microsecond times)."""
    by_track: dict[tuple, list] = {}
    for e in trace:
        if e["ph"] == "X" and e["name"].startswith("train"):
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    assert by_track
    for spans in by_track.values():
        spans.sort()
        assert all(end <= nxt + slack_us
                   for (_, end), (nxt, _) in zip(spans, spans[1:], strict=False))


def test_a_clients_training_slices_never_overlap(traced_run):
    assert_training_never_overlaps(chrome_trace(traced_run.events)["traceEvents"])


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
    from netfl.results.timeline_files import gantt_rows

    rows, marks, note = gantt_rows(traced_run.events, max_nodes=3)
    # the cloud is not among the 3 busiest, but its row is always kept
    assert len(rows) == 3 and "cloud" in rows
    assert note == "the cloud and the 2 busiest of 8 other nodes"
    assert marks and marks == sorted(marks)
    rows, _, note = gantt_rows(traced_run.events)
    assert len(rows) == 9 and note == ""


def arrows(trace: list[dict]) -> dict[int, int]:
    """Each model arrow as {transfer it leads into: transfer it comes from} (its "s" names
    both), checked to sit where it says: "s" at the end of the source's slice, "f" at the start
    of the target's, each on its transfer's track."""
    slices = {e["args"]["transfer"]: e for e in trace
              if e["ph"] == "X" and e["cat"] == "transfer"}
    starts = {e["id"]: e for e in trace if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    out = {}
    for i, begin in starts.items():
        into, source = slices[begin["args"]["into"]], slices[begin["args"]["from"]]
        assert i == begin["args"]["into"]
        assert (begin["tid"], begin["ts"]) == (source["tid"],
                                               pytest.approx(source["ts"] + source["dur"]))
        assert (ends[i]["tid"], ends[i]["ts"]) == (into["tid"], into["ts"])
        out[begin["args"]["into"]] = begin["args"]["from"]
    return out


def hand_overs(events: pd.DataFrame) -> list[tuple[str, str]]:
    moves = events[(events["kind"] == "hand_over") & events["ok"].astype(bool)]
    return list(zip(moves["src"], moves["dst"], strict=True))


@pytest.mark.parametrize("algorithm", [
    {"kind": "chfl", "rounds": 2, "order": "ring", "edge_rounds": 1},
    {"kind": "fed-chs", "rounds": 4, "interactions": 2},
])
def test_the_flow_arrows_follow_the_model_around(tiny, algorithm):
    """Walking back along the arrows from each edge -> edge transfer (CHFL's ring, Fed-CHS's
    hand-overs) leads, through the clients' exchanges, to the one before it."""
    tiny["world"] = {"kind": "edge", "clients": 12, "edge_servers": 4,
                     "topology": {"kind": "ring"}, "cloud": "none"}
    tiny["algorithm"] = {**algorithm, "batch_size": 16}
    tiny["output"] = {"plots": False, "trace": True}
    events = netfl.run(tiny, write=False).events
    back = arrows(chrome_trace(events)["traceEvents"])
    moves = events[(events["kind"] == "transfer_end") & (events["tag"] == "edge->edge")]
    ids = list(moves.sort_values("time_s")["transfer_id"])
    assert len(ids) >= 3
    assert [tuple(p) for p in moves.sort_values("time_s")[["src", "dst"]].values] == \
        hand_overs(events)
    tags = dict(zip(events["transfer_id"], events["tag"], strict=False))
    for earlier, later in zip(ids, ids[1:], strict=False):
        step, hops = later, 0
        while step in back and step != earlier:
            step, hops = back[step], hops + 1
            assert step == earlier or tags[step] != "edge->edge"  # no hand-over skipped
        assert step == earlier and hops >= 3  # via a client's download and upload
    if algorithm["kind"] == "chfl":
        assert hand_overs(events)[:4] == [("e0", "e1"), ("e1", "e2"), ("e2", "e3"),
                                          ("e3", "e0")]


def test_arrows_lead_from_client_uploads_up_to_the_cloud_and_back_down(traced_run):
    events = traced_run.events
    back = arrows(chrome_trace(events)["traceEvents"])
    ends = events[events["kind"] == "transfer_end"].set_index("transfer_id")
    up = ends[ends["tag"] == "edge->cloud"]
    assert len(up)
    for transfer, row in up.iterrows():
        source = ends.loc[back[transfer]]
        assert source["tag"] == "client->edge" and source["dst"] == row["src"]
        assert source["time_s"] <= row["time_s"] - row["duration_s"]
    for transfer, row in ends[ends["tag"] == "cloud->edge"].iterrows():
        if row["time_s"] - row["duration_s"] > 0:  # after the first round
            assert ends.loc[back[transfer], "tag"] == "edge->cloud"


def test_transfer_slices_last_the_closed_form_time(traced_run):
    # tiny: fluid transport, a client's own 10 Mbps, 5 ms access link; the edge's 100 Mbps core
    # link carries at most 3 clients' 10 Mbps at once, so nothing holds a client's transfer back
    trace = chrome_trace(traced_run.events)["traceEvents"]
    checked = 0
    for e in trace:
        if e["ph"] == "X" and e["cat"] == "transfer" and e["name"] in ("edge->client",
                                                                          "client->edge"):
            assert e["dur"] / 1e6 == pytest.approx(e["args"]["bytes"] * 8 / 10e6 + 0.005)
            checked += 1
    assert checked >= 12


def test_each_hop_is_a_slice_on_its_links_track_with_bytes_and_rate_share(traced_run):
    events = traced_run.events
    trace = chrome_trace(events)["traceEvents"]
    hops = [e for e in trace if e["ph"] == "X" and e["cat"] == "hop"]
    ends = events[events["kind"] == "transfer_end"]
    assert len(hops) == sum(str(p).count(">") for p in ends["path"]) > 0
    names = {e["tid"]: e["args"]["name"] for e in trace
             if e["ph"] == "M" and e["pid"] == HOPS_PID and e["name"] == "thread_name"}
    begun = {row.transfer_id: row.time_s - row.duration_s for row in ends.itertuples()}
    for hop in hops:
        assert hop["pid"] == HOPS_PID and " -> " in names[hop["tid"]]
        if hop["name"] == "client->edge":  # alone on the client's own 10 Mbps, 5 ms link
            assert hop["ts"] / 1e6 == pytest.approx(begun[hop["args"]["transfer"]])
            assert hop["dur"] / 1e6 == pytest.approx(
                hop["args"]["wire bytes"] * 8 / 10e6 + 0.005)
            assert hop["args"]["rate share"] == pytest.approx(1.0)
    only_e0 = chrome_trace(events, nodes=["e0"])["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in only_e0
              if e["ph"] == "M" and e["pid"] == HOPS_PID and e["name"] == "thread_name"}
    kept = [e for e in only_e0 if e.get("cat") == "hop"]
    assert 0 < len(kept) < len(hops) and all("e0" in tracks[e["tid"]] for e in kept)


def test_each_byte_column_means_one_thing_in_every_record(traced_run):
    """``nbytes`` is the payload, ``wire_bytes`` the bytes on the wire: a hop record has no
    payload column filled, and its hops' wire bytes add up to its transfer's."""
    events = traced_run.events
    hops, ends = events[events["kind"] == "hop_end"], events[events["kind"] == "transfer_end"]
    assert len(hops) and hops["nbytes"].isna().all() and (hops["wire_bytes"] > 0).all()
    assert (ends["nbytes"] > 0).all() and (ends["wire_bytes"] >= ends["nbytes"]).all()
    by_transfer = hops.groupby("transfer_id")["wire_bytes"].sum()
    assert by_transfer.loc[ends["transfer_id"]].to_numpy() == pytest.approx(
        ends["wire_bytes"].to_numpy())
    # an event table from before hop records had wire_bytes (theirs was in nbytes) still reads
    old = events.copy()
    is_hop = old["kind"] == "hop_end"
    old.loc[is_hop, "nbytes"] = old.loc[is_hop, "wire_bytes"]
    old = old.drop(columns="wire_bytes")
    assert chrome_trace(old) == chrome_trace(events)


def test_a_leo_users_serving_satellites_are_slices_within_its_stays():
    events = pd.DataFrame([
        {"kind": "association", "time_s": 0.0, "client": "c0", "cell": "s1", "attached": True},
        {"kind": "serving", "time_s": 0.5, "client": "c0", "cell": "s1"},
        {"kind": "association", "time_s": 1.0, "client": "c0", "cell": "s2", "attached": True},
        {"kind": "association", "time_s": 2.0, "client": "c0", "cell": "s1",
         "attached": False},  # s1 sets while it serves: its service ends with it
        {"kind": "serving", "time_s": 3.0, "client": "c0", "cell": "s2"},
        {"kind": "evaluation", "time_s": 5.0, "round": 1, "accuracy": 0.5, "loss": 1.0},
    ])
    trace = chrome_trace(events)["traceEvents"]
    ends = {e["id"]: e["ts"] / 1e6 for e in trace if e["ph"] == "e"}
    spans = sorted((e["cat"], e["name"], e["ts"] / 1e6, ends[e["id"]])
                   for e in trace if e["ph"] == "b")
    assert spans == [("cell", "attached to s1", 0.0, 2.0), ("cell", "attached to s2", 1.0, 5.0),
                     ("serving", "served by s1", 0.5, 2.0), ("serving", "served by s2", 3.0, 5.0)]
    assert node_tiers(events)["c0"] == "client"


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


def test_an_aggregation_that_waited_for_stragglers_shows_the_wait_and_who(tiny):
    # device jitter: a round's uploads arrive at different times; the edge server holds the
    # first and waits for the last, whose sender the slice names
    tiny["devices"] = {"clients": {"flops": "1 GFLOPS", "jitter": 0.5}}
    tiny["output"] = {"plots": False, "trace": True}
    tiny["algorithm"]["rounds"] = 2
    events = netfl.run(tiny, write=False).events
    trace = chrome_trace(events)["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace
             if e["ph"] == "M" and e["name"] == "thread_name"}
    ends = {e["id"]: e["ts"] for e in trace if e["ph"] == "e" and e["cat"] == "wait"}
    waits = [{**e, "dur": ends[e["id"]] - e["ts"]} for e in trace  # async: they may overlap
             if e["ph"] == "b" and e["cat"] == "wait"
             and e["pid"] == PIDS["edge"]]  # (the cloud waits for edge models too)
    ups = events[(events["kind"] == "transfer_end") & (events["tag"] == "client->edge")]
    aggregations = events[(events["kind"] == "aggregate") & (events["level"] == "edge")]
    assert len(waits) == len(aggregations) > 0
    for wait in waits:
        node, end = names[(wait["pid"], wait["tid"])], (wait["ts"] + wait["dur"]) / 1e6
        starts = aggregations[aggregations["node"] == node]
        begin = min(b for b in starts["time_s"] - starts["duration_s"] if b >= end - 1e-9)
        mine = ups[(ups["dst"] == node) & (ups["time_s"] <= begin + 1e-9)
                   & (ups["time_s"] >= wait["ts"] / 1e6 - 1e-9)]
        assert mine["time_s"].min() == pytest.approx(wait["ts"] / 1e6)
        assert mine["time_s"].max() == pytest.approx(end)
        last = mine.loc[mine["time_s"].idxmax(), "src"]
        assert wait["args"]["last"] == last and wait["dur"] > 0
        assert wait["args"]["updates"] == len(mine) == 3


def _waits(result) -> list[dict]:
    trace = chrome_trace(result.events)["traceEvents"]
    return [e for e in trace if e.get("cat") == "wait" and e["ph"] == "b"]


@pytest.mark.parametrize("edge,cloud,expect", [
    ("async", "async", "none"),           # every step a mix of one update: nothing waited for
    ("async", {"policy": "buffered", "buffer_size": 2}, "cloud"),  # a buffer of 2 waits
    ("sync", "sync", "both")])            # hierarchical FedAvg: both tiers wait
def test_waits_are_drawn_only_where_an_aggregator_waited(tiny, tmp_path, edge, cloud, expect):
    """FedAsync's timeline once drew 899 waits that never happened: a mix charges two
    vectors' aggregation, which the timeline read as two updates awaited."""
    tiny["output"] = {"plots": False, "trace": True}
    tiny["devices"] = {"clients": {"flops": "1 GFLOPS", "jitter": 0.5}}
    tiny["algorithm"] = {"kind": "hier-async", "rounds": 4, "local_steps": 2,
                         "edge": edge, "cloud": cloud}
    result = netfl.run(tiny, out_dir=tmp_path, run_id="r")
    assert {e["pid"] for e in _waits(result)} == {"none": set(), "cloud": {PIDS["cloud"]},
                     "both": {PIDS["cloud"], PIDS["edge"]}}[expect]
