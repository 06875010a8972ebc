"""The results folder: atomic writes, names that stay inside it, writability found before a
run, what is kept when writing fails, debris of killed runs."""

import errno
import json
import math
import os

import pandas as pd
import pytest

import netfl
from netfl.errors import NetflError, ScenarioError
from netfl.results import store
from netfl.results.store import HOST, is_complete, unique_run_dir, write_run

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


# ---------------------------------------------------------------- careless use


@pytest.mark.parametrize("run_id", ["../../../x", "a/b", "/tmp/x", "..", ".hidden", "",
                                    "a" * 101, "tab\there", "naïve"])
def test_a_run_id_that_is_not_one_plain_folder_name_is_refused(tiny, tmp_path, run_id):
    with pytest.raises(ScenarioError, match="run_id"):
        netfl.run(tiny, out_dir=tmp_path / "out", run_id=run_id)
    assert not any(tmp_path.rglob("summary.json"))


@pytest.mark.parametrize("run_id", ["a.b_c-1", "lr-1e+20_s3-c9170db3"])  # a sweep's ids
def test_a_plain_run_id_is_used_as_given(tiny, tmp_path, run_id):
    assert netfl.run(tiny, out_dir=tmp_path, run_id=run_id).path == tmp_path / "tiny" / run_id


def test_an_output_folder_under_a_file_is_found_before_the_run(tiny, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(netfl.simulation.Simulation, "run",
                        lambda self: pytest.fail("the run started"))
    with pytest.raises(NetflError, match="cannot write results under"):
        netfl.run(tiny, out_dir=tmp_path / "file" / "sub")


def test_an_unwritable_output_folder_is_found_before_the_run(tiny, tmp_path, monkeypatch):
    real = type(tmp_path).write_bytes

    def refuse(path, data):
        if path.name.startswith(".netfl-write-probe"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real(path, data)

    monkeypatch.setattr(type(tmp_path), "write_bytes", refuse)
    monkeypatch.setattr(netfl.simulation.Simulation, "run",
                        lambda self: pytest.fail("the run started"))
    with pytest.raises(NetflError, match="Read-only file system"):
        netfl.run(tiny, out_dir=tmp_path)


def test_a_disk_that_fills_while_writing_keeps_what_was_written(tiny, tmp_path, monkeypatch):
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    with pytest.raises(store.ResultsNotWritten) as info:
        netfl.run(tiny, out_dir=tmp_path, run_id="r")
    message = str(info.value)
    kept = tmp_path / "tiny" / "r.incomplete"
    assert "No space left on device" in message and str(kept) in message
    assert '"final_accuracy"' in message  # the headline survives in the message
    assert (kept / "metrics.csv").is_file() and not (kept / "summary.json").exists()
    assert not store.is_complete(kept) and not (tmp_path / "tiny" / "r").exists()
    assert not [p for p in (tmp_path / "tiny").iterdir() if ".tmp-" in p.name]


def test_the_cli_says_where_the_kept_files_are_without_a_traceback(tiny, tmp_path,
                                                                   monkeypatch):
    from typer.testing import CliRunner

    from netfl.cli import app

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(tiny))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert ".incomplete" in result.output


def test_a_killed_runs_temporary_folder_is_removed_by_the_next_run(tiny, tmp_path):
    parent = tmp_path / "tiny"
    dead = parent / f".old.tmp-{HOST}-999999999"  # above any pid Linux gives
    alive = parent / f".other.tmp-{HOST}-{os.getpid()}"
    elsewhere = parent / ".third.tmp-another-host-999999999"  # a Dask worker's, elsewhere
    for folder in (dead, alive, elsewhere):
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text("half written")
    netfl.run(tiny, out_dir=tmp_path, run_id="new")
    assert not dead.exists() and alive.exists() and elsewhere.exists()


@pytest.mark.parametrize("text", ["", "{\"rounds\": 3", "[1, 2]", "\xff"])
def test_a_summary_that_does_not_read_as_an_object_is_not_complete(tmp_path, text):
    (tmp_path / "summary.json").write_text(text, encoding="latin-1")
    assert not store.is_complete(tmp_path)


def test_an_interrupt_during_the_writability_check_takes_its_folders_back(tmp_path,
                                                                          monkeypatch):
    """A Ctrl-C or kill landing between the check's mkdir and its end left the new folder."""
    def interrupted(path, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(type(tmp_path), "write_bytes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.check_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
