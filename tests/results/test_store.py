import json
import math

import pandas as pd
import pytest

from netfl.results.store import is_complete, unique_run_dir, write_run

METRICS = pd.DataFrame({"sim_time_s": [0.0, 1.0], "accuracy": [0.1, 0.5]})


def test_writes_every_file_and_marks_completion(tmp_path):
    final = write_run(tmp_path, "run", {"a": 1, "nan": math.nan}, METRICS, "name: x\n",
                      events=pd.DataFrame({"kind": ["x"], "up": [True]}))
    assert is_complete(final)
    assert sorted(p.name for p in final.iterdir()) == [
        "events.parquet", "metrics.csv", "metrics.parquet", "scenario.yaml", "summary.json"]
    assert json.loads((final / "summary.json").read_text()) == {"a": 1, "nan": None}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_crash_while_writing_leaves_nothing_that_looks_complete(tmp_path):
    def broken_plot(directory):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_run(tmp_path, "run", {}, METRICS, "", plot=broken_plot)
    assert list(tmp_path.iterdir()) == []


def test_unique_run_dir(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r-2").mkdir()
    assert unique_run_dir(tmp_path, "r") == tmp_path / "r-3"


def test_a_name_taken_at_the_last_moment_moves_on_to_the_next(tmp_path):
    def rival_takes_the_name(directory):
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "summary.json").write_text("{}")

    final = write_run(tmp_path, "run", {"mine": True}, METRICS, "", plot=rival_takes_the_name)
    assert final == tmp_path / "run-2"
    assert json.loads((final / "summary.json").read_text()) == {"mine": True}
