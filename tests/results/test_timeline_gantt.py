"""timeline.png's rows (netfl/results/timeline_files.py): failed and cancelled transfers as
spans of their own, the cloud's row kept."""

import pandas as pd
import pytest

from netfl.results.timeline_files import gantt_rows


def _events() -> pd.DataFrame:
    rows = [
        {"kind": "transfer_start", "time_s": 0.0, "transfer_id": 1, "src": "c0", "dst": "e0",
         "tag": "client->edge", "nbytes": 10.0, "attempt": 0},
        {"kind": "transfer_fail", "time_s": 4.0, "transfer_id": 1, "src": "c0", "dst": "e0",
         "tag": "client->edge", "nbytes": 10.0, "reason": "left-coverage", "link": "c0-e0",
         "wire_bytes": 5.0, "will_retry": True},
        {"kind": "transfer_start", "time_s": 6.0, "transfer_id": 1, "src": "c0", "dst": "e0",
         "tag": "client->edge", "nbytes": 10.0, "attempt": 1},
        {"kind": "transfer_end", "time_s": 9.0, "transfer_id": 1, "src": "c0", "dst": "e0",
         "tag": "client->edge", "nbytes": 10.0, "path": "c0>e0", "duration_s": 9.0,
         "wire_bytes": 15.0, "retransmissions": 0},
        {"kind": "transfer_start", "time_s": 2.0, "transfer_id": 2, "src": "c1", "dst": "e0",
         "tag": "client->edge", "nbytes": 10.0, "attempt": 0},
        {"kind": "transfer_fail", "time_s": 3.5, "transfer_id": 2, "src": "c1", "dst": "e0",
         "tag": "client->edge", "nbytes": 10.0, "reason": "cancelled", "link": "",
         "wire_bytes": 1.0, "will_retry": False},
        {"kind": "train_end", "time_s": 12.0, "node": "c1", "round": 1, "duration_s": 8.0,
         "ok": True},
        {"kind": "aggregate", "time_s": 13.0, "node": "cloud", "round": 1, "level": "cloud",
         "n_updates": 2, "duration_s": 0.001},
        {"kind": "transfer_end", "time_s": 12.5, "transfer_id": 3, "src": "e0", "dst": "cloud",
         "tag": "edge->cloud", "nbytes": 10.0, "path": "e0>cloud", "duration_s": 0.5,
         "wire_bytes": 10.0, "retransmissions": 0},
    ]
    return pd.DataFrame(rows).sort_values("time_s", kind="stable")


def test_failed_and_cancelled_attempts_are_spans_from_their_attempts_start():
    rows, _, _ = gantt_rows(_events())
    assert sorted(rows["c0"]) == [(0.0, 4.0, "failed"), (0.0, 9.0, "transfer")]
    assert (2.0, pytest.approx(1.5), "cancelled") in rows["c1"]


def test_the_clouds_row_is_kept_however_idle():
    rows, marks, note = gantt_rows(_events(), max_nodes=2)
    assert "cloud" in rows and len(rows) == 2
    assert note == "the cloud and the 1 busiest of 3 other nodes"
    assert marks == [13.0]


def test_failed_and_cancelled_transfer_time_is_counted_apart_from_the_delivered(tiny):
    """A road run loses transfers to departures: the summary counts their time, from each
    transfer's start to its failure, per tag, apart from delivered transfers' time."""
    import netfl
    from tests.world.test_iov import iov_scenario

    scenario = iov_scenario(tiny)
    scenario["output"] = {"plots": False, "trace": True}
    result = netfl.run(scenario, write=False)
    events, summary = result.events, result.summary
    began = events[events["kind"] == "transfer_start"].groupby("transfer_id")["time_s"].min()
    ends = events[(events["kind"] == "transfer_fail") & ~events["will_retry"].astype(bool)]
    assert len(ends) > 0
    for row in ends.itertuples():
        assert row.duration_s == pytest.approx(row.time_s - began[row.transfer_id])
    for key, cancelled in (("failed_transfer_time_s_by_tag", False),
                           ("cancelled_transfer_time_s_by_tag", True)):
        mine = ends[(ends["reason"] == "cancelled") == cancelled]
        expected = mine.groupby("tag")["duration_s"].sum().to_dict()
        assert summary[key] == pytest.approx(expected)
    assert sum(summary["failed_transfer_time_s_by_tag"].values()) > 0


def test_timeline_json_has_a_slice_per_failed_attempt():
    from netfl.results.timeline import TRANSFERS_PID, chrome_trace

    trace = chrome_trace(_events())["traceEvents"]
    lost = sorted((e["name"], e["ts"] / 1e6, e["dur"] / 1e6, e["args"]["will retry"])
                  for e in trace if e.get("cat") in ("failed", "cancelled"))
    assert lost == [("client->edge (cancelled)", 2.0, pytest.approx(1.5), False),
                    ("client->edge (failed)", 0.0, 4.0, True)]
    assert all(e["pid"] == TRANSFERS_PID for e in trace if e.get("cat") == "failed")
    instants = [e for e in trace if e["ph"] == "i"]
    assert len(instants) == 2  # the instants on the senders' tracks stay
