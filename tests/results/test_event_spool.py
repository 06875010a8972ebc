"""A traced run's events spooled to disk as it goes: the same table as in memory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

import netfl
from netfl.results import event_spool
from netfl.results.event_spool import EventSpool, event_schema
from netfl.sim.trace import Evaluation, HopEnd, TransferEnd

ROOT = Path(__file__).resolve().parents[2]


def test_the_spooled_table_is_the_one_memory_would_hold(tiny, tmp_path, monkeypatch):
    # chunks of 7 rows: the table crosses many row groups; IoV adds associations, failures
    # and hand-overs to the kinds of rows
    monkeypatch.setattr(EventSpool.__init__, "__defaults__", (7,))
    scenario = yaml.safe_load((ROOT / "scenarios" / "iov" / "short.yaml").read_text())
    scenario["algorithm"]["rounds"] = 2
    scenario.update({"model": {"kind": "fake", "params": 5000},
                     "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                              "partition": {"kind": "iid"}},
                     "output": {"plots": False, "trace": True}})
    in_memory = netfl.run(scenario, write=False).events
    written = netfl.run(scenario, out_dir=tmp_path, run_id="r")
    assert len(in_memory) > 100 and {"association", "hop_end"} <= set(in_memory["kind"])
    pd.testing.assert_frame_equal(written.events, in_memory)
    in_memory.to_parquet(tmp_path / "memory.parquet", index=False)  # as it was written before
    pd.testing.assert_frame_equal(pd.read_parquet(written.path / "events.parquet"),
                                  pd.read_parquet(tmp_path / "memory.parquet"))
    leftovers = [p.name for p in written.path.parent.iterdir() if p.name != "r"]
    assert leftovers == []  # the spool went with the run


def test_the_spool_lives_in_the_output_folder_and_goes_when_a_run_fails(tiny, tmp_path,
                                                                         monkeypatch):
    seen = []
    original = EventSpool.__init__

    def spy(self, directory, chunk_rows=20_000):
        seen.append(Path(directory))
        original(self, directory, chunk_rows)

    def fail(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(EventSpool, "__init__", spy)
    monkeypatch.setattr("netfl.simulation.Simulation.run", fail)
    tiny["output"] = {"plots": False, "trace": True}
    with pytest.raises(RuntimeError, match="boom"):
        netfl.run(tiny, out_dir=tmp_path, run_id="r")
    assert seen and seen[0].parent.parent == tmp_path  # <out>/<scenario name>/.events-...
    assert not tmp_path.exists() or not any(tmp_path.rglob("*"))


def test_each_field_name_has_one_type_in_every_record():
    schema = event_schema()
    assert schema.field("time_s").type == "double" and schema.field("transfer_id").type == "int64"
    assert {"rate_share", "start_s", "attached"} <= set(schema.names)


def test_a_chunk_at_a_time_keeps_only_a_chunk(tmp_path):
    spool = EventSpool(tmp_path / "s", chunk_rows=3)
    for k in range(10):
        spool.add(Evaluation(time_s=float(k), round=k, accuracy=0.5, loss=1.0))
        assert len(spool._rows) < 3
    spool.add(HopEnd(time_s=11.0, transfer_id=1, tag="t", u="a", v="b", link="a-b",
                     start_s=10.0, wire_bytes=8.0, rate_share=1.0))
    table = spool.table()
    assert list(table.columns) == ["kind", "time_s", "round", "accuracy", "loss",
                                   "transfer_id", "tag", "u", "v", "link", "start_s",
                                   "wire_bytes", "rate_share"]
    assert len(table) == 11 and table["round"].isna().sum() == 1
    assert {TransferEnd, HopEnd, Evaluation} <= set(event_spool._record_types())
