"""``netfl analyze RUN_DIR``: the slowest rounds, the parts' spread, participation and
rounds.png, from a run's files; a traced run analysed again from its events alone gives the
same rounds; a run whose records do not allow it says so."""

import copy

import pandas as pd
import pytest
from typer.testing import CliRunner

import netfl
from netfl.cli import app
from netfl.results.analyze import analyze_run, tier_from_name
from tests.conftest import TINY


@pytest.fixture
def traced_run(tmp_path):
    scenario = copy.deepcopy(TINY)
    scenario["output"] = {"plots": True, "trace": True}
    return netfl.run(netfl.load_scenario(scenario), out_dir=tmp_path, run_id="r")


def test_analyze_prints_the_slowest_rounds_and_draws_them(traced_run):
    assert (traced_run.path / "rounds.png").stat().st_size > 0  # the run draws it too
    (traced_run.path / "rounds.png").unlink()
    result = CliRunner().invoke(app, ["analyze", str(traced_run.path), "--slowest", "3"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "the 3 slowest rounds" in result.output and "p90" in result.output
    assert "participation: selected 60" in result.output
    assert (traced_run.path / "rounds.png").stat().st_size > 0


def test_a_traced_run_is_analysed_again_from_its_events_alone(traced_run):
    written = pd.read_csv(traced_run.path / "rounds.csv")
    (traced_run.path / "rounds.csv").unlink()
    analysis = analyze_run(traced_run.path)
    assert "analysed again from events.parquet" in analysis.notes
    pd.testing.assert_frame_equal(analysis.rounds, written, check_dtype=False)


def test_events_without_round_records_say_what_cannot_be_given(traced_run):
    events = pd.read_parquet(traced_run.path / "events.parquet")
    events[events["kind"] != "round_end"].to_parquet(traced_run.path / "events.parquet")
    (traced_run.path / "rounds.csv").unlink()
    analysis = analyze_run(traced_run.path)
    assert analysis.rounds is None
    assert any("no round_end records" in note for note in analysis.notes)


def test_a_folder_without_a_run_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["analyze", str(tmp_path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "no summary.json" in result.output


def test_tiers_from_names():
    assert [tier_from_name(n) for n in ("c12", "e3", "cloud", "gs0")] == [
        "client", "edge", "cloud", "cloud"]
