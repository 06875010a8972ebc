"""Same scenario and seed, same result: on every sampling path, with any number of trainer
threads.

Each scenario is a short real-torch run (digits, a small MLP) on the trainer's loop path, whose
worker threads are where a race could hide; it runs twice with several threads and once with
one, and the metrics and summaries must be identical (not close: identical).
"""

from __future__ import annotations

import copy

import pandas as pd
import pytest

import netfl
from netfl.learn import trainer as trainer_module
from tests.conftest import TINY

# the shared tiny scenario with a small real model (loop path: threads train the clients)
BASE = {**copy.deepcopy(TINY), "name": "determinism", "seed": 3,
        "model": {"kind": "mlp", "hidden": [16], "trainer": "loop"}}
BASE.pop("algorithm")

PWP = {"rounds": 2, "lr": 0.1, "local_steps": 4, "master_period": 8, "batch_size": 16}
GROUPS = {"kind": "edge", "clients": 24, "edge_servers": 2}
RING = {"kind": "edge", "clients": 12, "edge_servers": 4, "topology": {"kind": "ring"}}

SCENARIOS = {
    # 4 draws from 3 workers: a worker always trains twice in a cluster round
    "hfl-pwp with replacement": ({"kind": "hfl-pwp", **PWP, "clients_per_round": 4,
                                  "sampling": "with-replacement"}, None),
    "hfl-pwp without replacement": ({"kind": "hfl-pwp", **PWP, "clients_per_round": 2,
                                     "sampling": "without-replacement"}, None),
    "hier-mo with replacement": ({"kind": "hier-mo", **PWP, "clients_per_round": 4,
                                  "sampling": "with-replacement"}, None),
    "mll-sgd ring with replacement": ({"kind": "mll-sgd", **PWP, "clients_per_round": 4,
                                       "sampling": "with-replacement", "hub_graph": "ring"},
                                      RING),
    "group-fel (group sampling)": ({"kind": "group-fel", "rounds": 2, "group_rounds": 2,
                                    "local_steps": 2, "groups_per_round": 3, "batch_size": 16,
                                    "lr": 0.1,
                                    "grouping": {"kind": "cov", "min_group_size": 3,
                                                 "max_cov": 0.3}}, GROUPS),
    "chfl ring": ({"kind": "chfl", "rounds": 2, "lr": 0.1, "order": "ring", "edges_per_round": 3,
                   "clients_per_round": 2}, RING),
    "chfl permutation": ({"kind": "chfl", "rounds": 2, "lr": 0.1, "order": "permutation",
                          "edges_per_round": 3, "clients_per_round": 2}, RING),
    "sfl permutation": ({"kind": "sfl", "rounds": 2, "lr": 0.1, "clients_per_round": 4},
                        None),
    # asynchronous: simultaneous arrivals are taken in the order their events were scheduled
    "fedasync": ({"kind": "fedasync", "rounds": 8, "lr": 0.1, "concurrency": 3}, None),
    "fedbuff": ({"kind": "fedbuff", "rounds": 4, "lr": 0.1, "concurrency": 4,
                 "buffer_size": 2}, None),
    "hier-async, deadline edges carried, buffered cloud": (
        {"kind": "hier-async", "rounds": 3, "lr": 0.1, "concurrency": 2,
         "edge": {"policy": "deadline", "deadline": "0.2 s", "late": "carry"},
         "cloud": {"policy": "buffered", "buffer_size": 2}}, RING),
    "async-hfl": ({"kind": "async-hfl", "rounds": 4, "lr": 0.1, "concurrency": 2,
                   "edge_rounds": 2}, RING),
}

HOST_DEPENDENT = {"host_time_s", "host_time_s_by_part", "netfl_version"}  # may differ


def scenario(algorithm: dict, world: dict | None) -> dict:
    out = copy.deepcopy(BASE)
    out["algorithm"] = copy.deepcopy(algorithm)
    if world is not None:
        out["world"] = copy.deepcopy(world)
    return out


def run_with_cores(monkeypatch, spec: dict, cores: int):
    """Run ``spec`` with the loop trainer on ``cores`` worker threads."""
    monkeypatch.setattr(trainer_module, "available_cores", lambda: cores)
    result = netfl.run(spec, write=False)
    summary = {k: v for k, v in result.summary.items() if k not in HOST_DEPENDENT}
    return result.metrics, summary


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_seed_same_result_on_every_sampling_path_and_thread_count(monkeypatch, name):
    spec = scenario(*SCENARIOS[name])
    first, first_summary = run_with_cores(monkeypatch, spec, 4)
    assert first_summary["local_steps"] > 0 and len(first) >= 2
    for cores in (4, 1):
        metrics, summary = run_with_cores(monkeypatch, spec, cores)
        pd.testing.assert_frame_equal(metrics, first, check_exact=True)
        assert summary == first_summary


THREADS_SCRIPT = """
import json, sys, torch
import netfl
torch.set_num_threads(int(sys.argv[1]))
spec = json.loads(sys.argv[2])
print(netfl.run(spec, write=False).metrics.to_json(double_precision=15))
"""


def test_same_result_whatever_torchs_thread_count_before_the_run():
    """The vectorized (vmap) and fused-gradient paths reduce in float with torch's intra-op
    threads: a run sets its own count (model.threads, default 1), so a process started with 2
    threads (a plain `netfl run` on 2 cores) gives what one with 1 (a sweep worker) gives."""
    import json
    import subprocess
    import sys

    spec = {**copy.deepcopy(TINY),
            "world": {"kind": "edge", "clients": 40, "edge_servers": 4,
                      "topology": {"kind": "ring"}},
            "model": {"kind": "mlp", "hidden": [256, 256]},
            "algorithm": {"kind": "fed-chs", "interactions": 5, "rounds": 6, "batch_size": 32,
                          "lr": 0.1}}
    outputs = [subprocess.run([sys.executable, "-c", THREADS_SCRIPT, str(threads),
                               json.dumps(spec)], capture_output=True, text=True, check=True,
                              timeout=600).stdout.strip().splitlines()[-1]
               for threads in (2, 1)]
    assert outputs[0] == outputs[1]
