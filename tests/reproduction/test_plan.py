"""Reproduction plans: the shipped ones load and every run of them validates; bad plans are
clear errors naming the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from netfl.errors import ScenarioError
from netfl.reproduction.execute import arm_runs, grid_arguments, slug
from netfl.reproduction.plan import load_plan, load_plans

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "scenarios" / "reproduction"


def test_every_shipped_plan_loads_and_every_run_validates(tmp_path):
    plans = load_plans(PLANS)
    assert [p.section for p in plans] == ["fed-chs", "chfl", "hfl-pwp", "group-fel", "network",
                                          "asynchrony", "backhaul"]
    for quick in (False, True):
        runs = [r for p in plans for r in arm_runs(p, tmp_path, quick)]
        points = sum(len(r.load().points) for r in runs)
        assert points > (200 if not quick else 30)
        # every study the quick mode runs has a finding or a table to show, on its short files
        # (scenarios/async/'s files are short ones: seconds each)
        if quick:
            assert all("short" in r.scenario.name or r.scenario.parent.name == "async"
                       for r in runs)
    # each section's first headline finding (or, without one, its first study) is judged on at
    # least 3 seeds of each arm it reads
    for plan in plans:
        finding = next((f for f in plan.findings if f.headline), None)
        study = next(s for s in plan.studies if finding is None or s.id == finding.study)
        paired = [a for a in study.arms
                  if finding is None or a.label in (finding.rule.arm, finding.rule.than)]
        assert paired, plan.section
        for arm in paired:
            seeds = max([arm.seeds or study.seeds, *[p.seeds or 0 for p in study.points]])
            assert seeds >= 3, (plan.section, arm.label)


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    (tmp_path / "a.yaml").write_text("name: a\n")
    return path


def test_a_bad_field_names_file_line_and_field(tmp_path):
    path = _plan(tmp_path, """section: s
title: t
studies:
  - id: one
    title: x
    seeds: 0
    arms:
      - {label: A, scenario: a.yaml}
""")
    with pytest.raises(ScenarioError) as caught:
        load_plan(path)
    text = str(caught.value)
    assert f"{path}:6: studies.0.seeds = 0" in text


def test_a_missing_scenario_and_an_unknown_arm_are_named(tmp_path):
    path = _plan(tmp_path, """section: s
title: t
studies:
  - id: one
    title: x
    arms:
      - {label: A, scenario: nowhere.yaml}
""")
    with pytest.raises(ScenarioError, match="studies.0.arms.0.scenario = 'nowhere.yaml': no such"):
        load_plan(path)
    path = _plan(tmp_path, """section: s
title: t
studies:
  - id: one
    title: x
    arms: [{label: A, scenario: a.yaml}]
findings:
  - {id: f, claim: c, study: one, rule: {kind: less, metric: time_to_target_s, arm: A, than: B}}
""")
    with pytest.raises(ScenarioError, match="'B' is not an arm of 'one'"):
        load_plan(path)


def test_unknown_metrics_keys_and_sections_are_errors(tmp_path):
    path = _plan(tmp_path, """section: s
title: t
studies:
  - id: one
    title: x
    metrics: [speed]
    arms: [{label: A, scenario: a.yaml}]
""")
    with pytest.raises(ScenarioError, match="unknown metric 'speed'"):
        load_plan(path)
    path.write_text(path.read_text().replace("metrics: [speed]", "colour: red"))
    with pytest.raises(ScenarioError, match="colour"):
        load_plan(path)
    with pytest.raises(ScenarioError, match="no plan in .* has this section"):
        load_plans(PLANS, ["fed-chs", "nonsense"])
    assert [p.section for p in load_plans(PLANS, ["network", "chfl", "network"])] == [
        "network", "chfl"]


def test_grid_arguments_keep_values_whole():
    assert grid_arguments({"links.access.rate": ["2 Mbps", "20 Mbps"], "x": [[1, 2], 3]}) == [
        "links.access.rate=2 Mbps,20 Mbps", "x=[1, 2],3"]
    assert slug("eta_c=3, eta_g=1") == "eta-c-3-eta-g-1" and slug("p_c=2") == "p-c-2"


def test_the_quick_mode_runs_only_the_short_files_it_names(tmp_path):
    plan = load_plan(PLANS / "chfl.yaml")
    quick = list(arm_runs(plan, tmp_path, quick=True))
    assert {r.point for r in quick} == {"p_c=2"} and all(r.seeds == 2 for r in quick)
    full = list(arm_runs(plan, tmp_path, quick=False))
    assert {r.seeds for r in full if r.point == "p_c=2"} == {3}
    assert {r.seeds for r in full if r.point != "p_c=2"} == {2}
    assert yaml.safe_load((PLANS / "chfl.yaml").read_text())["section"] == "chfl"
    # an arm with its own points runs only those (a reading run at the paper's default row)
    s2 = [r for r in full if r.arm.label == "CHFL S=2"]
    assert [r.point for r in s2] == ["p_c=2"] and s2[0].folder.parts[-2:] == ("chfl-s-2", "p-c-2")
    assert "stop.target_check_steps=400" in s2[0].overrides  # after the study's 80: it wins
    assert s2[0].load().points[0].scenario.stop.target_check_steps == 400


def test_an_across_rule_names_pairs_of_the_studys_named_points(tmp_path):
    from pydantic import ValidationError

    from netfl.reproduction.plan import Plan, Rule

    with pytest.raises(ValidationError, match="rule 'across' .* needs 'settings'"):
        Rule(kind="across", metric="final_accuracy", arm="A")
    with pytest.raises(ValidationError, match="needs 'settings'"):
        Rule(kind="less", metric="final_accuracy", arm="A", than="B", settings=[("x", "y")])
    study = {"id": "t", "title": "t", "arms": [{"label": "A", "scenario": "a.yaml"}],
             "points": [{"label": "p_c=1", "set": ["x=1"]}, {"label": "p_g=1", "set": ["x=2"]}]}
    rule = {"kind": "across", "metric": "final_accuracy", "arm": "A",
            "settings": [["p_c=1", "p_g=2"]]}
    with pytest.raises(ValidationError, match="'p_g=2' is not a named point of 't'"):
        Plan(section="s", title="s", studies=[study],
             findings=[{"id": "f", "claim": "c", "study": "t", "rule": rule}])


def test_an_arm_naming_a_point_the_study_lacks_is_an_error(tmp_path):
    path = _plan(tmp_path, "section: s\ntitle: S\nstudies:\n  - id: t\n    title: T\n"
                 "    points: [{label: p1, set: [x=1]}]\n"
                 "    arms: [{label: A, scenario: a.yaml, points: [p9]}]\n")
    with pytest.raises(ScenarioError, match=r"arm 'A': points \['p9'\] are not named points"):
        load_plan(path)


def test_only_arms_no_finding_reads_run_fewer_seeds_than_their_study(tmp_path):
    """The host-time budget cuts seeds of cells no verdict reads first: an arm's own ``seeds``
    (below its study's) is for those; a judged arm keeps its study's seeds."""
    from netfl.reproduction.readings import judged_findings

    cut = 0
    for plan in load_plans(PLANS):
        for study in plan.studies:
            arms = [a.label for a in study.arms]
            read = {arm for finding in judged_findings(study, plan.findings)
                    for arm in finding.compared(arms)}
            for arm in study.arms:
                if arm.seeds is not None and arm.seeds < study.seeds:
                    cut += 1
                    assert arm.label not in read, (plan.section, study.id, arm.label)
    assert cut >= 2  # HFL-PWP's Table 5 rows I = (10, 200) and n = (1, 19)


def test_an_arm_may_run_fewer_or_more_seeds_than_its_study(tmp_path):
    plan = load_plan(PLANS / "hfl-pwp.yaml")
    seeds = {r.arm.label: r.seeds for r in arm_runs(plan, tmp_path) if r.study.id == "table5"}
    assert seeds["I=(10, 200)"] == seeds["n=(1, 19)"] == 1
    assert seeds["n=(19, 1)"] == 2
    more = load_plan(_plan(tmp_path, "section: s\ntitle: S\nstudies:\n  - id: t\n    title: T\n"
                           "    seeds: 2\n    arms: [{label: A, scenario: a.yaml, seeds: 3},"
                           " {label: B, scenario: a.yaml}]\n"))
    assert {r.arm.label: r.seeds for r in arm_runs(more, tmp_path)} == {"A": 3, "B": 2}
    # the budget's cut of Table 4's third seed was undone when the total allowed it
    assert {r.seeds for r in arm_runs(plan, tmp_path) if r.study.id == "table4"} == {3}
