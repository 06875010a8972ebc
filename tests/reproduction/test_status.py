"""netfl reproduce --status: runs done, their host time, and the estimate of the rest."""

from __future__ import annotations

import statistics

import pandas as pd
import pytest

from netfl.reproduction.execute import arm_runs, run_plans
from netfl.reproduction.plan import load_plans
from netfl.reproduction.status import estimate_left_s, reproduction_status
from netfl.sweep import LocalExecutor
from tests.reproduction.test_document import write_plan


def test_estimate_takes_the_nearest_level_with_done_runs():
    levels = [{"a/p": [10.0, 30.0]}, {"a": [10.0, 30.0], "b": []}, {"s": [10.0, 30.0, 50.0]},
              {"sec": [10.0, 30.0, 50.0]}]
    # a/p's own median (20 s) for its 2 runs; b has none of its own: the study's (30 s) x 3
    assert estimate_left_s(levels, {("a/p", "a", "s", "sec"): 2,
                                    ("b/q", "b", "s", "sec"): 3}) == pytest.approx(130.0)
    assert estimate_left_s(levels, {("a/p", "a", "s", "sec"): 0}) == 0.0
    assert estimate_left_s([{}, {}, {}, {}], {("x", "x", "x", "x"): 1}) is None


def test_status_counts_runs_and_estimates_the_missing_ones(tmp_path):
    plans_dir = write_plan(tmp_path / "plans")
    [plan] = load_plans(plans_dir)
    out = tmp_path / "out"
    assert reproduction_status([plan], out)[0].left_s is None  # nothing ran: no basis
    run_plans([plan], out, lambda: LocalExecutor(1))
    [status] = reproduction_status([plan], out)
    assert (status.section, status.study, status.planned, status.done) == ("tiny", "speed",
                                                                           12, 12)
    assert status.host_done_s > 0 and status.left_s == 0.0
    # two of Flat's runs lost: each costed at the median of Flat's four that are left
    flat = next(r for r in arm_runs(plan, out) if r.arm.label == "Flat")
    index = flat.folder / "index.parquet"
    table = pd.read_parquet(index)
    table.loc[[0, 1], "status"] = "failed"
    table.to_parquet(index)
    (flat.folder / "index.csv").unlink()
    [status] = reproduction_status([plan], out)
    kept = table.loc[table["status"] == "done", "host_time_s"].astype(float)
    assert status.done == 10
    assert status.left_s == pytest.approx(2 * statistics.median(kept))


def test_the_status_command_prints_the_table_and_runs_nothing(tmp_path):
    from typer.testing import CliRunner

    from netfl.cli import app

    plans_dir = write_plan(tmp_path / "plans")
    out = tmp_path / "out"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [
        "reproduce", "--status", "--plans", str(plans_dir), "--out", str(out), "--workers", "2"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # rich wraps lines
    assert "0 of 12" in text and "on 2 worker(s)" in text
    assert not out.exists()  # nothing ran, nothing written


def test_rebuilding_one_section_keeps_every_papers_verdicts(tmp_path):
    """``netfl reproduce SECTION --tables-only`` rebuilds the whole page: the verdict table
    keeps the findings of the sections not named."""
    from typer.testing import CliRunner

    from netfl.cli import app

    plans_dir = write_plan(tmp_path / "plans")
    other = (plans_dir / "tiny.yaml").read_text().replace("section: tiny", "section: other")
    (plans_dir / "other.yaml").write_text(other.replace("claim: Hier reaches",
                                                        "claim: Other Hier reaches"))
    doc = tmp_path / "page.md"
    doc.write_text("# Page\n")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [
        "reproduce", "tiny", "--tables-only", "--plans", str(plans_dir), "--out",
        str(tmp_path / "out"), "--doc", str(doc)])
    assert result.exit_code == 0, result.output
    verdicts = doc.read_text().split("<!-- reproduction:verdicts -->")[1]
    assert "| Other Hier reaches the target sooner" in verdicts  # the section not named
    assert "| Hier reaches the target sooner" in verdicts


def test_a_run_two_studies_share_counts_once_and_is_not_estimated_again(tmp_path):
    # before: the copy's host time counted in both studies (Group-FEL's Table 1 cell that is
    # the baselines' run: 3.4 h in the status against 2.9 h in the page's table), and a study
    # whose runs another had done showed them as left, estimated at their full host time
    import json
    import shutil

    from netfl.reproduction.execute import HOST_TIMES
    from tests.reproduction.test_document import write_twin_plan

    plans = load_plans(write_twin_plan(tmp_path / "plans"))
    out = tmp_path / "out"
    run_plans(plans, out, lambda: LocalExecutor(1))
    statuses = {s.study: s for s in reproduction_status(plans, out)}
    times = json.loads((out / HOST_TIMES).read_text())["sections"]["tiny"]["studies"]
    assert statuses["twin"].host_done_s == pytest.approx(times["twin"])
    assert statuses["speed"].host_done_s == pytest.approx(times["speed"])  # Flat's alone
    assert statuses["speed"].done == 12

    hier = next(r for r in arm_runs(plans[0], out) if (r.study.id, r.arm.label)
                == ("speed", "Hier"))
    shutil.rmtree(hier.folder)  # not copied yet: done all the same, nothing left to run
    statuses = {s.study: s for s in reproduction_status(plans, out)}
    assert (statuses["speed"].planned, statuses["speed"].done) == (12, 12)
    assert statuses["speed"].left_s == 0.0
