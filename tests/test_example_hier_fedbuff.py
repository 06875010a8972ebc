"""The third example algorithm of docs/extending.md (examples/netfl-example: FedBuff at the
cloud over synchronous edge servers), written only with the documented primitives, on the three
worlds; an asynchronous plug-in once needed simpy.Store, its own counters and its own
watchdog."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import netfl

ROOT = Path(__file__).resolve().parents[1]
FAST = ["model={kind: fake}", "data={dataset: synthetic, partition: {kind: dirichlet, "
        "alpha: 0.6}}"]


@pytest.mark.parametrize("base", ["quickstart.yaml", "iov/short.yaml", "leo/short.yaml"])
def test_hier_fedbuff_runs_on_every_world(base, tmp_path):
    scenario = netfl.load_scenario(ROOT / "scenarios" / base, [
        "algorithm={kind: hier-fedbuff, rounds: 4, buffer_size: 2}", *FAST,
        f"output.dir={tmp_path}", "output.plots=false"])
    result = netfl.run(scenario)
    s = result.summary
    assert s["algorithm"] == "hier-fedbuff" and s["rounds"] == 4
    assert s["bytes_by_tag"]["edge->cloud"] > 0 and s["updates_mixed"] == 8
    updates = pd.read_csv(result.path / "updates.csv")  # one row per edge update taken
    assert len(updates) == 8 and set(updates["tier"]) == {"cloud"}
    assert (updates["staleness"] >= 0).all() and (updates["version"] <= 4).all()


def test_with_every_link_to_the_cloud_down_it_stops_as_stalled_not_never():
    """The plug-in ran for ever with the core link down; the watchdog ends it."""
    scenario = netfl.load_scenario(ROOT / "scenarios" / "quickstart.yaml", [
        "algorithm={kind: hier-fedbuff, rounds: 40}", *FAST,
        "links.core.availability={kind: random, mean_up: 1 s, mean_down: 1000 d}",
        "stop.stall_after=10 min"])
    s = netfl.run(scenario, write=False).summary
    assert s["stop_reason"] == "stalled" and s["rounds"] < 40
