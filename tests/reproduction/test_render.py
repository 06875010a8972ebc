"""A study's table cells, and its figures: accuracy against time, bits or the learning cost,
per setting."""

from __future__ import annotations

import pandas as pd

from netfl.reproduction.cells import Run, StudyResults
from netfl.reproduction.plan import Arm, Study
from netfl.reproduction.render import metric_cell, study_figures
from netfl.reproduction.verdicts import Censored


def run(tmp_path, name: str, seed: int, cost: list | None) -> Run:
    folder = tmp_path / f"{name}-{seed}"
    folder.mkdir()
    rounds = [0, 1, 2]
    pd.DataFrame({"sim_time_s": [0.0, 5.0, 10.0], "round": rounds,
                  "accuracy": [0.1, 0.5, 0.6 + seed / 100], "bytes_total": [0.0, 1e6, 2e6],
                  "cost_total": cost if cost else [None] * 3}).to_csv(folder / "metrics.csv",
                                                                     index=False)
    return Run(seed, {}, folder)


def test_a_cost_figure_draws_the_arms_with_a_cost_model_from_zero_cost(tmp_path, monkeypatch):
    drawn = {}

    def capture(curves, x, path, title, target):
        drawn[path.name] = (x, curves)

    monkeypatch.setattr("netfl.reproduction.render.plot_bands", capture)
    study = Study(id="b", title="at a budget", arms=[Arm(label=a, scenario="x.yaml")
                                                     for a in ("Grouped", "Plain")],
                  figures=["time", "cost"])
    runs = {"Grouped": {"": [run(tmp_path, "g", s, [None, 40.0, 80.0]) for s in (1, 2)]},
            "Plain": {"": [run(tmp_path, "p", s, None) for s in (1, 2)]}}
    results = StudyResults(study, ["Grouped", "Plain"], [""], runs=runs)
    written = study_figures(results, tmp_path / "img", "sec-b")
    assert [caption for caption, _ in written] == ["accuracy against simulated time",
                                                   "accuracy against learning cost"]
    x, curves = drawn["sec-b-cost.png"]
    assert x == "cost_total" and list(curves) == ["Grouped"]  # Plain has no cost model
    assert curves["Grouped"]["cost_total"].tolist() == [0.0, 40.0, 80.0]
    assert curves["Grouped"]["mean"].tolist()[0] == 0.1  # the start, at zero cost
    assert list(drawn["sec-b-time.png"][1]) == ["Grouped", "Plain"]


def test_a_cost_figure_with_no_cost_model_anywhere_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr("netfl.reproduction.render.plot_bands", lambda *a: None)
    study = Study(id="b", title="t", arms=[Arm(label="Plain", scenario="x.yaml")],
                  figures=["cost"])
    results = StudyResults(study, ["Plain"], [""],
                           runs={"Plain": {"": [run(tmp_path, "p", 1, None)]}})
    assert study_figures(results, tmp_path / "img", "sec-b") == []


def test_a_cell_of_one_run_is_its_value_alone_and_of_several_a_mean_with_its_interval():
    assert metric_cell({1: 0.8821}, "final_accuracy") == "0.8821"
    assert metric_cell({1: 0.80, 2: 0.82}, "final_accuracy").startswith("0.8100 ± ")
    # no mean of a run that never got there: a lower bound, that run at what it had spent
    assert (metric_cell({1: 300.0, 2: Censored(900.0)}, "time_to_target_s")
            == "≥ 10 min 00 s (1/2 reached)")
    assert metric_cell({1: 300.0, 2: None}, "time_to_target_s") == "1/2 reached"
    assert metric_cell({1: None}, "time_to_target_s") == "not reached (0/1)"
    assert metric_cell({}, "final_accuracy") == "not run"
