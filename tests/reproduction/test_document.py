"""A tiny reproduction end to end (fake model): run its plan, resume it, rebuild a document
whose prose survives, with the table, the rounds' critical paths, figures and verdicts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import yaml

from netfl.reproduction.document import (
    block_body,
    host_time_block,
    kept_sections,
    rebuild,
    replace_block,
)
from netfl.reproduction.execute import HOST_TIMES, run_plans
from netfl.reproduction.plan import load_plans
from netfl.sweep import LocalExecutor
from tests.conftest import TINY

PLAN = """section: tiny
title: A tiny paper
studies:
  - id: speed
    title: "Table 9: time to the target"
    seeds: 3
    points:
      - {label: fast, set: [links.access.rate=100 Mbps]}
    grid: {algorithm.local_steps: [2, 4]}
    arms:
      - {label: Hier, scenario: scenarios/hier.yaml}
      - {label: Flat, scenario: scenarios/flat.yaml, note: runs unlike the others}
    quick:
      seeds: 2
      grid: {algorithm.local_steps: [2]}
      arms: {Hier: scenarios/hier.yaml}
    metrics: [time_to_target_s, bytes_to_target, final_accuracy]
    paper: {metric: time_to_target_s, values: {Hier: {"fast, 2": 1.5}, Flat: {"fast, 2": "-"}}}
    figures: [time, bits, {kind: crossover, x: algorithm.local_steps, log_x: false}]
findings:
  - id: sooner
    headline: Hier sooner than Flat
    claim: Hier reaches the target sooner than Flat
    study: speed
    rule: {kind: less, metric: time_to_target_s, arm: Hier, than: Flat}
"""


def write_plan(folder: Path) -> Path:
    (folder / "scenarios").mkdir(parents=True)
    for name, kind in (("scenarios/hier.yaml", "hier-fedavg"), ("scenarios/flat.yaml", "fedavg")):
        scenario = copy.deepcopy(TINY)
        scenario["algorithm"] = {**scenario["algorithm"], "kind": kind, "rounds": 8}
        scenario["stop"] = {"target_accuracy": 0.3}
        scenario["output"] = {"plots": False}
        (folder / name).write_text(yaml.safe_dump(scenario))
    (folder / "tiny.yaml").write_text(PLAN)
    return folder


def test_replace_block_keeps_the_prose_around_it():
    text = ("# Doc\n\nprose before\n\n<!-- reproduction:x -->\nold\n"
            "<!-- /reproduction:x -->\n\nafter\n")
    new = replace_block(text, "x", "new table")
    assert new == text.replace("old", "new table")
    assert replace_block(new, "y", "more").endswith(
        "after\n\n<!-- reproduction:y -->\nmore\n<!-- /reproduction:y -->\n")


def test_a_plan_runs_resumes_and_rebuilds_its_document(tmp_path):
    plans_dir = write_plan(tmp_path / "plans")
    plans = load_plans(plans_dir)
    out = tmp_path / "out"
    results = run_plans(plans, out, lambda: LocalExecutor(1))
    assert [len(r.rows) for _run, r in results] == [6, 6]
    assert all(not r.failed for _run, r in results)
    again = run_plans(plans, out, lambda: LocalExecutor(1))
    assert [r.reused for _run, r in again] == [6, 6]  # resumed: nothing ran twice

    doc = tmp_path / "docs" / "reproduction.md"
    doc.parent.mkdir()
    doc.write_text("# Reproduction\n\nHand-written prose.\n\n<!-- reproduction:tiny -->\n"
                   "<!-- /reproduction:tiny -->\n\nClosing words.\n")
    verdicts = rebuild(plans, out, doc, doc.parent / "img" / "reproduction")
    text = doc.read_text()
    assert "Hand-written prose." in text and "Closing words." in text
    assert "| arm | setting | algorithm.local_steps | runs | time to target |" in text
    assert "| Hier | fast | 2 | 3 |" in text and "| Flat | fast | 4 | 3 |" in text
    assert "a cell of one run" not in text  # said only where a row has one run
    assert "paper: time to target" in text and "| 1.5" in text
    assert "Why the rounds took as long as they did" in text
    assert "\n*Flat*: runs unlike the others\n" in text  # an arm's note, under its table
    assert "nan" not in text.lower().replace("nano", "")
    [(finding, verdict)] = verdicts
    assert finding.id == "sooner" and verdict.verdict == "reproduced"
    assert f"| {finding.claim} | **reproduced** |" in text
    # a claim about time says why: each arm's rounds and their critical path's largest parts
    assert ("Why: medians over the runs of all 2 settings: Hier: " in verdict.explained
            and "; Flat: " in verdict.why)
    assert "rounds of" in verdict.why and "upload" in verdict.why
    assert "Why" not in verdict.reason  # the summary table shows the measurement alone
    assert f"| **reproduced** | {verdict.reason} |" in text
    figures = sorted(p.name for p in (doc.parent / "img" / "reproduction").glob("*.png"))
    assert figures == ["tiny-speed-bits-fast-2.png", "tiny-speed-bits-fast-4.png",
                       "tiny-speed-crossover-time-to-target-s.png",
                       "tiny-speed-time-fast-2.png", "tiny-speed-time-fast-4.png"]
    assert "](img/reproduction/tiny-speed-time-fast-2.png)" in text
    times = json.loads((out / HOST_TIMES).read_text())
    assert times["sections"]["tiny"]["total_s"] > 0
    assert "<!-- reproduction:host-times -->" in text

    # the front table: the headline finding, its verdict and its first figure, in the
    # document and in the README's block alike
    summary = block_body(text, "summary")
    assert summary.splitlines()[0] == "| paper | finding | verdict per reading | one figure |"
    assert summary.splitlines()[2].startswith("| A tiny paper | Hier sooner than Flat | "
                                              "**reproduced** | Flat/Hier = ")
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- reproduction:summary -->\n<!-- /reproduction:summary -->\n")
    rebuild(plans, out, doc, doc.parent / "img" / "reproduction", readme=readme)
    assert block_body(readme.read_text(), "summary") == summary

    # rebuilding again changes nothing
    rebuild(plans, out, doc, doc.parent / "img" / "reproduction")
    assert doc.read_text() == text

    # from a folder without its runs (results lost, or the section rendered elsewhere) the
    # section keeps its block and its rows of the verdict and host-time tables
    empty = tmp_path / "elsewhere"
    assert kept_sections(plans, empty, doc) == plans
    assert rebuild(plans, empty, doc, doc.parent / "img" / "reproduction") == []
    again = doc.read_text()
    assert block_body(again, "tiny") == block_body(text, "tiny")
    assert f"| {finding.claim} | **reproduced** |" in again
    [row] = [line for line in again.splitlines() if line.startswith("| tiny |")]
    assert row in text and "kept as rendered from results not in this folder" in again
    shown = row.split("|")[2].strip()
    assert f"| all | {shown} |" in again  # the kept section's time counts in the total
    assert "see its section (kept as rendered)" in block_body(again, "summary")


def test_quick_mode_runs_its_subset_into_its_own_folder(tmp_path):
    plans_dir = write_plan(tmp_path / "plans")
    plans = load_plans(plans_dir)
    results = run_plans(plans, tmp_path / "quick", lambda: LocalExecutor(1), quick=True)
    assert [(run.arm.label, len(r.rows)) for run, r in results] == [("Hier", 2)]
    [(finding, verdict)] = rebuild(plans, tmp_path / "quick", tmp_path / "quick" / "r.md",
                                   tmp_path / "quick" / "img", quick=True)
    assert verdict.verdict == "not run"


def test_a_study_of_one_run_says_run_not_runs(tmp_path):
    # before: "1 runs done (1 arms, 1 settings, ..."
    plans_dir = write_plan(tmp_path / "plans")
    one = "".join(line for line in PLAN.split("findings:")[0].splitlines(keepends=True)
                  if "label: Flat" not in line)
    one = (one.replace("seeds: 3", "seeds: 1").replace("[2, 4]}", "[2]}")
           .replace(', Flat: {"fast, 2": "-"}', ""))
    (plans_dir / "tiny.yaml").write_text(one)
    plans = load_plans(plans_dir)
    run_plans(plans, tmp_path / "out", lambda: LocalExecutor(1))
    doc = tmp_path / "out" / "r.md"
    rebuild(plans, tmp_path / "out", doc, tmp_path / "out" / "img")
    assert "1 run done (1 arm, 1 setting, 1 seed per point" in doc.read_text()


# a study whose one arm is the speed study's Hier, run for run (the same run ids)
TWIN = ("  - id: twin\n    title: the same runs\n    seeds: 3\n"
        "    points:\n      - {label: fast, set: [links.access.rate=100 Mbps]}\n"
        "    grid: {algorithm.local_steps: [2, 4]}\n"
        "    arms:\n      - {label: Hier, scenario: scenarios/hier.yaml}\n"
        "    metrics: [final_accuracy]\n")


def write_twin_plan(folder: Path) -> Path:
    """``write_plan``'s plan with the TWIN study before its own."""
    plans_dir = write_plan(folder)
    (plans_dir / "tiny.yaml").write_text(PLAN.replace("studies:\n", "studies:\n" + TWIN, 1))
    return plans_dir


def test_a_run_two_studies_share_is_run_once_and_its_host_time_counted_once(tmp_path):
    # a study whose arm is another's, run for run: its runs are copied, not run again, and
    # the regeneration's host time counts them once (before: run twice, counted twice)
    from netfl.reproduction.execute import study_rows

    plans = load_plans(write_twin_plan(tmp_path / "plans"))
    results = {(run.study.id, run.arm.label): (run, result) for run, result in
               run_plans(plans, tmp_path / "out", lambda: LocalExecutor(2))}
    copied = results[("speed", "Hier")][1]
    assert copied.reused == 6 and copied.counts["done"] == 6
    times = json.loads((tmp_path / "out" / HOST_TIMES).read_text())["sections"]["tiny"]
    flat = sum(float(r["host_time_s"]) for r in study_rows(results[("speed", "Flat")][0]))
    assert times["studies"]["speed"] == flat  # Hier's six runs count in twin only
    assert times["total_s"] == times["studies"]["twin"] + flat


ACCURACY_FINDING = """  - id: more-accurate
    claim: Hier ends more accurate than Flat
    study: speed
    rule: {kind: less, metric: final_accuracy, arm: Hier, than: Flat, higher_is_better: true}
"""


def test_an_accuracy_finding_on_runs_that_stop_at_the_target_is_refused_before_they_run(
        tmp_path):
    # before: Group-FEL's regrouping study compared final accuracy over runs that stopped at
    # 0.85, each ending at about 0.85; seven runs were made before anyone noticed
    import pytest

    from netfl.errors import NetflError

    plans_dir = write_plan(tmp_path / "plans")
    (plans_dir / "tiny.yaml").write_text(PLAN + ACCURACY_FINDING)
    plans = load_plans(plans_dir)
    with pytest.raises(NetflError, match=r"tiny.yaml: finding 'more-accurate' compares "
                                         r"final_accuracy in study 'speed', but arm 'Hier' "
                                         r"stops at its target .*stop.at_target=false"):
        run_plans(plans, tmp_path / "out", lambda: LocalExecutor(1))
    assert not (tmp_path / "out" / "tiny").exists()  # refused before anything ran
    fixed = PLAN.replace("    grid: {algorithm.local_steps: [2, 4]}\n",
                         "    grid: {algorithm.local_steps: [2, 4]}\n"
                         "    set: [stop.at_target=false]\n", 1)
    (plans_dir / "tiny.yaml").write_text(fixed + ACCURACY_FINDING)
    from netfl.reproduction.execute import arm_runs, check_accuracy_findings

    for run in arm_runs(load_plans(plans_dir)[0], tmp_path / "out"):
        check_accuracy_findings(run, run.load())  # no error


def test_in_quick_mode_such_a_finding_says_it_is_not_judged(tmp_path):
    plans_dir = write_plan(tmp_path / "plans")
    quick_both = PLAN.replace("      arms: {Hier: scenarios/hier.yaml}",
                              "      arms: {Hier: scenarios/hier.yaml, Flat: scenarios/flat.yaml}")
    (plans_dir / "tiny.yaml").write_text(quick_both + ACCURACY_FINDING)
    plans = load_plans(plans_dir)
    out = tmp_path / "quick"
    run_plans(plans, out, lambda: LocalExecutor(2), quick=True)
    verdicts = dict((f.id, v) for f, v in rebuild(plans, out, out / "r.md", out / "img",
                                                   quick=True))
    assert verdicts["more-accurate"].verdict == "not judged"
    assert verdicts["more-accurate"].reason.startswith("Hier, Flat stopped at the target")


def test_a_finding_waits_for_every_run_its_plan_asks_for(tmp_path):
    from netfl.reproduction.cells import collect
    from netfl.reproduction.execute import arm_runs
    from netfl.reproduction.render import finding_verdict

    plans_dir = write_plan(tmp_path / "plans")
    [plan] = load_plans(plans_dir)
    out = tmp_path / "out"
    run_plans([plan], out, lambda: LocalExecutor(2))
    runs = list(arm_runs(plan, out))
    results = collect(plan.studies[0], runs)
    assert results.expected == {"Hier": 6, "Flat": 6} and results.done("Flat") == 6
    # one of Flat's runs lost: the finding is not judged on the five left
    flat = next(r for r in runs if r.arm.label == "Flat")
    index = flat.folder / "index.parquet"
    table = pd.read_parquet(index)
    table.loc[0, "status"] = "failed"
    table.to_parquet(index)
    (flat.folder / "index.csv").unlink()
    verdict = finding_verdict(plan.findings[0], collect(plan.studies[0], runs))
    assert verdict.verdict == "not run" and verdict.reason == "runs done: Flat 5 of 6"


def test_a_study_without_runs_says_so_in_the_host_times(tmp_path):
    # before: "0 ms", as if its runs had taken no time
    (tmp_path / HOST_TIMES).write_text(json.dumps({
        "sections": {"chfl": {"total_s": 0.0, "studies": {"table3": 0.0}},
                     "network": {"total_s": 90.0, "studies": {"iov": 90.0, "leo": 0.0}}},
        "total_s": 90.0}))
    block = host_time_block(tmp_path)
    assert "| chfl | none run | table3 none run |" in block
    assert "iov 1 min 30 s, leo none run" in block and "0 ms" not in block


def test_a_kept_section_shows_its_row_and_counts_in_the_total(tmp_path):
    (tmp_path / HOST_TIMES).write_text(json.dumps({
        "sections": {"chfl": {"total_s": 0.0, "studies": {"table3": 0.0}},
                     "network": {"total_s": 90.0, "studies": {"iov": 90.0}}},
        "total_s": 90.0}))
    kept = "| chfl | 2 h 30 min | table3 2 h 30 min |"
    block = host_time_block(tmp_path, {"chfl": kept})
    assert kept in block and "| network | 1 min 30 s | iov 1 min 30 s |" in block
    assert "| all | 2 h 31 min |  |" in block  # 9,000 s kept + 90 s run
    assert "Sections chfl: kept as rendered from results not in this folder." in block


def test_a_kept_row_that_is_no_duration_is_a_clear_error(tmp_path):
    import re

    import pytest

    from netfl.errors import NetflError

    (tmp_path / HOST_TIMES).write_text(json.dumps({
        "sections": {"chfl": {"total_s": 0.0, "studies": {}}}, "total_s": 0.0}))
    message = re.escape("'3.2e+05 years', which does not read as a duration")
    with pytest.raises(NetflError, match=message):
        host_time_block(tmp_path, {"chfl": "| chfl | 3.2e+05 years | |"})
