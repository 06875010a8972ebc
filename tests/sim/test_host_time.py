"""Where host time goes: netfl/sim/host_time.py and summary.json's host_time_s_by_part."""

from __future__ import annotations

import time

import pytest

from netfl.runner import run_scenario
from netfl.sim.host_time import HostTimes


class _Trainer:
    def local_train(self):
        time.sleep(0.02)
        return self.gradients()  # nested: counted once

    def gradients(self):
        time.sleep(0.01)

    def evaluate(self):
        time.sleep(0.01)


class _Compressor:
    def compress(self, vector):
        time.sleep(0.01)
        return vector


def test_only_the_outermost_timed_call_counts():
    times, trainer = HostTimes(), _Trainer()
    times.time_methods(trainer, ("local_train", "gradients"), "training_s")
    times.time_methods(trainer, ("evaluate", "absent"), "evaluation_s")
    compressor = _Compressor()
    times.time_methods(compressor, ("compress",), "compression_s")
    trainer.local_train()
    trainer.evaluate()
    assert compressor.compress(3) == 3
    assert times.parts["training_s"] == pytest.approx(0.03, abs=0.015)
    assert times.parts["evaluation_s"] == pytest.approx(0.01, abs=0.01)
    assert times.parts["compression_s"] == pytest.approx(0.01, abs=0.01)
    times.close_run(0.1)
    assert times.parts["event_loop_s"] == pytest.approx(
        0.1 - times.parts["training_s"] - times.parts["evaluation_s"]
        - times.parts["compression_s"])


def test_the_summary_splits_the_host_time_into_parts(tmp_path):
    spec = {"name": "t", "seed": 1, "world": {"kind": "edge", "clients": 6, "edge_servers": 2},
            "data": {"dataset": "synthetic"}, "model": {"kind": "fake"},
            "algorithm": {"kind": "hier-fedavg", "rounds": 3, "edge_rounds": 1},
            "output": {"plots": False}}
    result = run_scenario(spec, out_dir=tmp_path)
    parts = result.summary["host_time_s_by_part"]
    assert set(parts) == {"setup_s", "data_s", "training_s", "evaluation_s", "compression_s",
                          "event_loop_s", "writing_s"}
    assert all(v >= 0 for v in parts.values()) and parts["setup_s"] > 0
    assert parts["writing_s"] > 0  # filled in just before summary.json was written
    # host_time_s is the sum of every part: set-up and writing are not left out
    assert sum(parts.values()) == pytest.approx(result.summary["host_time_s"], abs=1e-9)
    import json

    written = json.loads((result.path / "summary.json").read_text())
    assert written["host_time_s_by_part"] == parts
    assert written["host_time_s"] == result.summary["host_time_s"]


def test_the_total_is_the_sum_of_the_parts_without_writing(tmp_path):
    """A run that writes nothing still counts its summary as writing, and adds up."""
    spec = {"name": "t", "seed": 1, "world": {"kind": "edge", "clients": 4, "edge_servers": 2},
            "data": {"dataset": "synthetic"}, "model": {"kind": "fake"},
            "algorithm": {"kind": "fedavg", "rounds": 2}}
    summary = run_scenario(spec, write=False).summary
    parts = summary["host_time_s_by_part"]
    assert parts["data_s"] > 0 and parts["writing_s"] > 0
    assert sum(parts.values()) == pytest.approx(summary["host_time_s"], abs=1e-9)
    assert HostTimes().total_s() == 0.0


def test_a_cgroup_limit_caps_the_memory_a_run_may_plan_on(tmp_path):
    """Containers and batch jobs limit memory below the host's: the checks made before a run
    allocates must see the limit."""
    from netfl.sim.cores import _cgroup_headroom_bytes

    assert _cgroup_headroom_bytes(str(tmp_path)) is None  # no cgroup files: no limit
    (tmp_path / "memory.max").write_text("max\n")
    assert _cgroup_headroom_bytes(str(tmp_path)) is None
    (tmp_path / "memory.max").write_text("4000000000\n")
    (tmp_path / "memory.current").write_text("1500000000\n")
    assert _cgroup_headroom_bytes(str(tmp_path)) == 2_500_000_000
