"""The second example algorithm of docs/extending.md (examples/netfl-example: hierarchical
FedAvg whose edges aggregate the first K uploads of each edge round, the rest cancelled) on
the three worlds, written only with the documented primitives."""

from __future__ import annotations

from pathlib import Path

import pytest

import netfl

ROOT = Path(__file__).resolve().parents[1]
FAST = ["model={kind: fake}", "data={dataset: synthetic, partition: {kind: dirichlet, "
        "alpha: 0.6}}"]


def summary(base: str, algorithm: str) -> dict:
    scenario = netfl.load_scenario(ROOT / "scenarios" / base, [f"algorithm={algorithm}", *FAST])
    return netfl.run(scenario, write=False).summary


@pytest.mark.parametrize("base", ["quickstart.yaml", "iov/short.yaml", "leo/short.yaml"])
def test_first_k_runs_on_every_world_and_cancels_the_slow_clients(base):
    s = summary(base, "{kind: hier-first-k, rounds: 3, fraction: 0.5}")
    assert s["algorithm"] == "hier-first-k" and s["rounds"] == 3
    assert s["bytes_by_tag"]["edge->cloud"] > 0
    # the clients after the first half were stopped where they were, and counted as such
    assert s["transfers_cancelled"] + s["trainings_cancelled"] > 0
    assert 0 < s["bytes_cancelled"] <= s["wire_bytes_total"]


def test_first_k_of_all_clients_is_hierarchical_fedavg():
    first_k = summary("quickstart.yaml", "{kind: hier-first-k, rounds: 3, fraction: 1.0}")
    fedavg = summary("quickstart.yaml", "{kind: hier-fedavg, rounds: 3}")
    for key in ("sim_time_s", "final_accuracy", "bytes_total", "wire_bytes_total"):
        assert first_k[key] == fedavg[key], key
    assert first_k["transfers_cancelled"] == first_k["trainings_cancelled"] == 0
