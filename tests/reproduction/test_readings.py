"""Findings judged under each reading of a setting the paper states two ways."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfl.errors import ScenarioError
from netfl.reproduction.plan import Plan, load_plan
from netfl.reproduction.readings import judged_findings, readings_table
from netfl.reproduction.verdicts import Censored

PLANS = Path(__file__).parents[2] / "scenarios" / "reproduction"


def _plan(readings: list[dict], findings: list[dict]) -> Plan:
    return Plan.model_validate({
        "section": "s", "title": "S",
        "studies": [{"id": "t", "title": "T", "readings": readings, "arms": [
            {"label": label, "scenario": "x.yaml"}
            for label in ("A", "B", "C", "B20", "C1")]}],
        "findings": findings})


STEPS = {"setting": "B's steps", "source": "B.1", "choices": [
    {"label": "one", "default": True, "quote": "one local iteration", "why": "closest"},
    {"label": "twenty", "quote": "K = 20", "arms": {"B": "B20"}}]}
VISITS = {"setting": "C's steps", "choices": [
    {"label": "twenty", "default": True, "quote": "K = 20"},
    {"label": "one", "quote": "one local iteration", "arms": {"C": "C1"}}]}


def test_a_finding_is_judged_once_per_reading_of_the_arms_it_compares():
    plan = _plan([STEPS, VISITS], [
        {"id": "lowest", "claim": "A lowest", "study": "t",
         "rule": {"kind": "lowest", "metric": "bits_to_target", "arm": "A"}},
        {"id": "vs-c", "claim": "A beats C", "study": "t",
         "rule": {"kind": "less", "metric": "bits_to_target", "arm": "A", "than": "C"}},
        {"id": "vs-b-c", "claim": "A's accuracy", "study": "t",
         "rule": {"kind": "comparable", "metric": "final_accuracy", "arm": "A",
                  "tolerance": 0.01, "among": ["B"]}}])
    judged = [(f.id, f.reading, f.rule.than, tuple(f.rule.among))
              for f in judged_findings(plan.studies[0], plan.findings)]
    assert judged == [
        # "every other arm" is the default readings' arms: no reading's arm joins it
        ("lowest", "one (default); twenty (default)", None, ("B", "C")),
        ("lowest", "twenty", None, ("B20", "C")),
        ("lowest", "one", None, ("B", "C1")),
        ("vs-c", "twenty (default)", "C", ()),
        ("vs-c", "one", "C1", ()),
        ("vs-b-c", "one (default)", None, ("B",)),
        ("vs-b-c", "twenty", None, ("B20",))]


def test_a_finding_no_reading_touches_is_judged_once_without_a_label():
    plan = _plan([STEPS], [{"id": "a-c", "claim": "A beats C", "study": "t",
                            "rule": {"kind": "less", "metric": "rounds", "arm": "A",
                                     "than": "C"}}])
    (finding,) = judged_findings(plan.studies[0], plan.findings)
    assert finding.reading == "" and finding.rule.than == "C"


def test_the_readings_table_quotes_the_paper_and_says_why_the_default():
    table = readings_table(_plan([STEPS], []).studies[0])
    assert "| B's steps (B.1) | **one** (default) | \u201cone local iteration\u201d" in table
    assert "| twenty | \u201cK = 20\u201d | B20 |" in table


@pytest.mark.parametrize("choices, message", [
    ([{"label": "a", "quote": "q", "default": True}, {"label": "b", "quote": "q",
                                                        "default": True, "arms": {"B": "B20"}}],
     "exactly one choice is the default"),
    ([{"label": "a", "quote": "q", "default": True}, {"label": "b", "quote": "q"}],
     "names the arms it runs instead"),
    ([{"label": "a", "quote": "q", "default": True},
      {"label": "b", "quote": "q", "arms": {"B": "nope"}}], "'nope'"),
])
def test_an_inconsistent_reading_is_refused(tmp_path, choices, message):
    (tmp_path / "x.yaml").write_text("name: x\n")
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "section: s\ntitle: S\nstudies:\n  - id: t\n    title: T\n    arms:\n"
        "      - {label: B, scenario: x.yaml}\n      - {label: B20, scenario: x.yaml}\n"
        f"    readings:\n      - setting: steps\n        choices: {choices}\n")
    with pytest.raises(ScenarioError, match=message) as error:
        load_plan(plan)
    assert "p.yaml:" in str(error.value)  # the file and the line


def test_fed_chs_flagship_findings_are_judged_under_both_readings_of_b1():
    """Fed-CHS's App. B.1 gives FedAvg both one local iteration a round and K = 20: the bits
    finding, the accuracy findings and the dedicated-link time finding each get a verdict per
    reading."""
    plan = load_plan(PLANS / "fed-chs.yaml")
    readings: dict[str, list[str]] = {}
    for study in plan.studies:
        for finding in judged_findings(study, plan.findings):
            readings.setdefault(finding.id, []).append(finding.reading)
    for finding_id in ("fewest-bits", "accuracy-close-to-fedavg", "dedicated-time",
                       "accuracy-above-wrwgd"):
        assert len(readings[finding_id]) == 2, finding_id
    assert readings["fewest-bits"][1] == "K = 20 local iterations a round"


def test_a_reading_whose_arms_did_not_run_is_not_judged_on_the_others_alone(tmp_path):
    from netfl.reproduction.cells import Run, StudyResults
    from netfl.reproduction.render import finding_verdict

    plan = _plan([STEPS], [{"id": "lowest", "claim": "A lowest", "study": "t",
                            "rule": {"kind": "lowest", "metric": "rounds", "arm": "A"}}])
    study = plan.studies[0]
    runs = {arm: {"": [Run(seed, {"rounds": rounds + seed}, tmp_path) for seed in (1, 2)]}
            for arm, rounds in (("A", 10), ("B", 20), ("C", 30))}  # B20 not run (--quick)
    results = StudyResults(study, list(runs), [""], runs=runs)
    default, twenty = judged_findings(study, plan.findings)
    assert finding_verdict(default, results).verdict == "reproduced"
    verdict = finding_verdict(twenty, results)
    assert verdict.verdict == "not run" and "B20" in verdict.reason


def test_a_claim_across_settings_skips_a_reading_run_at_one_setting():
    plan = Plan.model_validate({
        "section": "s", "title": "S",
        "studies": [{"id": "t", "title": "T",
                     "points": [{"label": "p1", "set": ["a=1"]}, {"label": "p2", "set": ["a=2"]}],
                     "arms": [{"label": "A", "scenario": "x.yaml"},
                              {"label": "A2", "scenario": "x.yaml", "points": ["p1"]}],
                     "readings": [{"setting": "A's steps", "choices": [
                         {"label": "one", "default": True, "quote": "q"},
                         {"label": "two", "quote": "q", "arms": {"A": "A2"}}]}]}],
        "findings": [{"id": "across", "claim": "A better at p1", "study": "t",
                      "rule": {"kind": "across", "metric": "rounds", "arm": "A",
                               "settings": [["p1", "p2"]]}}]})
    assert [f.reading for f in judged_findings(plan.studies[0], plan.findings)] == [""]


def test_an_arm_a_reading_does_not_run_drops_out_of_its_comparisons():
    costly = {"setting": "eq. (5)'s coefficients", "choices": [
        {"label": "page's", "default": True, "quote": "q"},
        {"label": "training dominates", "quote": "q", "arms": {"A": "B20", "B": "C1", "C": None}}]}
    plan = _plan([costly], [
        {"id": "lowest", "claim": "A lowest", "study": "t",
         "rule": {"kind": "lowest", "metric": "final_accuracy", "arm": "A"}},
        {"id": "vs-c", "claim": "A beats C", "study": "t",
         "rule": {"kind": "less", "metric": "rounds", "arm": "A", "than": "C"}}])
    judged = [(f.id, f.reading, f.rule.arm, f.rule.than, tuple(f.rule.among))
              for f in judged_findings(plan.studies[0], plan.findings)]
    assert judged == [("lowest", "page's (default)", "A", None, ("B", "C")),
                      ("lowest", "training dominates", "B20", None, ("C1",)),
                      ("vs-c", "", "A", "C", ())]  # C is not run under it: judged once
    assert "B20, C1 (not run: C)" in readings_table(plan.studies[0])


def test_a_reading_of_one_metric_leaves_findings_on_others_judged_once():
    timing = {**STEPS, "metrics": ["time_to_target_s"]}
    plan = _plan([timing], [
        {"id": "time", "claim": "A sooner", "study": "t",
         "rule": {"kind": "less", "metric": "time_to_target_s", "arm": "A", "than": "B"}},
        {"id": "rounds", "claim": "A in fewer rounds", "study": "t",
         "rule": {"kind": "less", "metric": "rounds_to_target", "arm": "A", "than": "B"}}])
    assert [(f.id, f.rule.than) for f in judged_findings(plan.studies[0], plan.findings)] == [
        ("time", "B"), ("time", "B20"), ("rounds", "B")]
    with pytest.raises(ValueError, match="unknown metrics"):
        _plan([{**STEPS, "metrics": ["speed"]}], [])


def _metrics(folder, accuracies, rounds=None):
    import pandas as pd

    folder.mkdir(parents=True)
    rounds = rounds or list(range(len(accuracies)))
    pd.DataFrame({"round": rounds, "sim_time_s": [10.0 * r for r in rounds],
                  "accuracy": accuracies, "bytes_total": [1e6 * r for r in rounds],
                  "cost_total": [None] * len(rounds)}).to_csv(folder / "metrics.csv",
                                                             index=False)
    return folder


def test_a_finding_with_targets_is_judged_at_each_from_every_updates_accuracy(tmp_path):
    from netfl.reproduction.cells import Run, StudyResults
    from netfl.reproduction.render import claim_text, finding_verdict

    plan = _plan([], [{"id": "r", "claim": "A in fewer rounds", "study": "t",
                       "targets": [0.5, 0.9],
                       "rule": {"kind": "less", "metric": "rounds_to_target", "arm": "A",
                                "than": "B"}}])
    judged = judged_findings(plan.studies[0], plan.findings)
    assert [f.target for f in judged] == [None, 0.5, 0.9]
    assert claim_text(judged[1]).endswith("at test accuracy 0.5*")
    fast, slow = [0.1, 0.6, 0.7, 0.8], [0.1, 0.2, 0.55, 0.6]
    runs = {arm: {"": [Run(s, {"rounds_to_target": None},
                           _metrics(tmp_path / f"{arm}{s}", curve)) for s in (1, 2)]}
            for arm, curve in (("A", fast), ("B", slow))}
    results = StudyResults(plan.studies[0], ["A", "B"], [""], runs=runs)
    at_half = results.values_at_accuracy("rounds_to_target", 0.5)
    assert at_half["A"][""] == {1: 1.0, 2: 1.0} and at_half["B"][""] == {1: 2.0, 2: 2.0}
    never = results.values_at_accuracy("time_to_target_s", 0.9)["A"][""][1]
    assert never == Censored(30.0)  # never reached: at least its last row's time
    assert "B/A = 2.00x" in finding_verdict(judged[1], results).reason
    # rows every other update: the first row at or above 0.5 need not be the crossing
    skipping = {"A": {"": [Run(1, {}, _metrics(tmp_path / "skip", [0.1, 0.6], [0, 2]))]},
                "B": runs["B"]}
    results = StudyResults(plan.studies[0], ["A", "B"], [""], runs=skipping)
    assert results.values_at_accuracy("rounds_to_target", 0.5) is None
    skipped = finding_verdict(judged[1], results)
    assert skipped.verdict == "not judged" and "eval_every: 1" in skipped.reason
    with pytest.raises(ValueError, match="reads 'final_accuracy' from metrics.csv"):
        _plan([], [{"id": "x", "claim": "c", "study": "t", "targets": [0.5],
                    "rule": {"kind": "less", "metric": "final_accuracy", "arm": "A",
                             "than": "B"}}])
