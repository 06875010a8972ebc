"""The ns-3 cross-validation harness (benchmarks/validate_ns3.py), netfl side only: it runs
against the committed ns-3 reference, so ns-3 need not be installed. CI checks netfl's default
(tcp) transport against it: a median error of at most 3%, and the 10% goal on every case but the
three whose ns-3 time is set by queue drops and retransmission time-outs (not modelled:
docs/models/network.md), which stay within 20%."""

from __future__ import annotations

import math
import statistics

import pytest

from tests.conftest import benchmark_module


@pytest.fixture(scope="module")
def harness():
    with benchmark_module("validate_ns3") as module:
        yield module


def test_the_suite_has_30_cases_of_every_kind_the_issue_asks(harness):
    cases = harness.cases()
    assert len([c for c in cases if c.comparable]) >= 30
    groups = {c.group for c in cases}
    assert {"chain", "size", "bottleneck", "parking-lot", "unequal-rtt", "staggered",
            "fl-round", "isl"} <= groups
    sizes = [f.nbytes for c in cases for f in c.flows]
    assert min(sizes) <= 10e3 and max(sizes) >= 100e6


def test_the_reference_covers_every_case_as_it_is_defined_now(harness):
    reference = harness.load_reference()
    assert reference["regenerate"] == "python benchmarks/validate_ns3.py --regenerate"
    for case in harness.cases():
        ns3 = reference["cases"][case.name]
        assert ns3["fingerprint"] == case.fingerprint(), case.name
        assert len(ns3["ends"]) == len(case.flows)
        assert all(0 <= s < e for s, e in zip(ns3["starts"], ns3["ends"], strict=True))


def test_one_hop_matches_its_closed_form(harness):
    case = next(c for c in harness.cases() if c.name == "chain1-low")  # 1 MB, 10 Mbps, 1 ms
    # TCP: the handshake (2 ms), 1 MB in segments of 1448 B + 54 B of headers, the delay (the
    # window of 10 segments is above the path's bandwidth-delay product from the start)
    wire = 1e6 * (1448 + 54) / 1448 * 8
    assert max(harness.run_netfl(case)["ends"]) == pytest.approx(0.002 + wire / 10e6 + 0.001)


def test_flows_that_wait_start_when_their_flow_ends(harness):
    case = next(c for c in harness.cases() if c.name == "fl-round-2")
    result = harness.run_netfl(case)
    for i, flow in enumerate(case.flows):
        if flow.after is not None:
            assert result["starts"][i] == pytest.approx(result["ends"][flow.after])


def test_the_harness_prints_rows_and_the_summary_line(harness, capsys):
    rows = harness.main(["--reference", "--cases", "chain4-low,share-10,isl-1MB,fl-round-10"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(rows) == 4
    for row in rows:
        assert row["ns3_s"] > 0 and row["netfl_s"] > 0 and math.isfinite(row["error"])
        assert -1 < row["error"] < 20 and row["mean_flow_error"] >= 0
    assert out[-1].startswith("netfl_vs_ns3: median ") and out[-1].endswith("%")
    print("\n".join(out))  # the numbers, for whoever runs pytest -s


# ns-3's queue (FqCoDel) drops packets when 30-200 flows leave slow start together;
# some flows then wait out a retransmission time-out (ns-3's minimum: 1 s). netfl has no buffers.
LOSS_DOMINATED = {"share-30", "share-100", "fl-round-100"}


def test_tcp_meets_the_goal_against_the_committed_reference(harness, capsys):
    rows = harness.main(["--reference"])
    comparable = [r for r in rows if r["comparable"] and not r["radio"]]
    assert len(comparable) >= 30
    assert statistics.median(abs(r["error"]) for r in comparable) <= harness.GOAL_MEDIAN
    outside = {r["name"] for r in harness.outside_goal(rows) if not r["radio"]}
    assert outside <= LOSS_DOMINATED, outside - LOSS_DOMINATED  # any other miss is a regression
    assert all(abs(r["error"]) <= 0.20 for r in comparable)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("netfl_vs_ns3: median ")
    assert out[-2].startswith("goal (median <= 3%, worst <= 10%): outside it: ")


def test_the_old_store_and_forward_model_fails_the_goal(harness):
    # the check above can fail: the earlier model is still there to prove it
    rows = harness.main(["--reference", "--transport", "store-and-forward"])
    assert len(harness.outside_goal(rows)) > 10


# In ns-3's 30-vehicle cell a flow or two of 30 stall in TCP retransmission time-outs (1 s
# minimum, doubling): the last flow ends at 46-96 s over four ns-3 runs while the other 28 end by
# about 45 s. netfl (no time-outs) must match the runs without such a tail.
TIMEOUT_TAILS = {"cell-30x800KB", "cell-30x800KB-run2"}


def test_the_80211p_cell_meets_the_radio_goal_against_the_committed_reference(harness, capsys):
    rows = [r for r in harness.main(["--reference", "--cases", "cell-"]) if r["radio"]]
    assert len(rows) >= 15
    assert statistics.median(abs(r["error"]) for r in rows) <= harness.RADIO_GOAL_MEDIAN
    outside = {r["name"] for r in harness.outside_goal(rows)}
    assert outside <= TIMEOUT_TAILS, outside - TIMEOUT_TAILS
    thirty = [r for r in rows if r["name"].startswith("cell-30x")]
    assert abs(min(r["ns3_s"] for r in thirty) / thirty[0]["netfl_s"] - 1) <= 0.10
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("netfl_vs_ns3 radio cells: median ")


def test_a_dedicated_channel_per_vehicle_fails_the_radio_goal(harness):
    # the earlier model (every vehicle at the full PHY rate): the check above can fail
    case = next(c for c in harness.cases() if c.name == "cell-15x800KB")
    plain = harness.Case(**{**case.__dict__, "medium": "p2p"})
    ns3 = harness.load_reference()["cases"][case.name]
    row = harness.compare(case, ns3, harness.run_netfl(plain))
    assert row["error"] < -0.9


def test_the_lte_cell_meets_the_radio_goal_against_the_committed_reference(harness, capsys):
    rows = harness.main(["--reference", "--cases", "lte-"])
    assert len(rows) >= 15 and all(r["medium"] == "lte" for r in rows)
    assert statistics.median(abs(r["error"]) for r in rows) <= harness.RADIO_GOAL_MEDIAN
    assert harness.outside_goal(rows) == []
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("netfl_vs_ns3 radio cells: median ")


def test_lte_vehicles_each_alone_on_the_carrier_fail_the_radio_goal(harness):
    # every UE at its rate alone on all 50 blocks (no scheduler): the check above can fail
    from netfl.network.lte import block_rate_bps

    case = next(c for c in harness.cases() if c.name == "lte-15x800KB")
    alone = block_rate_bps(40.0, True) * 50
    links = tuple(harness.replace(link, rate_bps=alone) if link.rate_bps == 0 else link
                  for link in case.links)
    plain = harness.replace(case, medium="p2p", links=links)
    row = harness.compare(case, harness.load_reference()["cases"][case.name],
                          harness.run_netfl(plain))
    assert row["error"] < -0.8
