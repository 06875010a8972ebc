"""Comparison reports on small hand-made results: numbers checked by hand."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml

from netfl.errors import NetflError
from netfl.results.report import (
    band,
    classify_tag,
    collect,
    comparison_table,
    markdown_table,
    time_breakdown,
    write_report,
)
from netfl.results.store import write_run

BASE = {"target_accuracy": 0.8, "sim_time_s": 30.0, "bytes_total": 1000.0, "clients": 2,
        "handovers_failed": 0, "transfers_failed": 0, "uploads_lost": 0, "dropouts": 0,
        "compute_time_s_by_tier": {"client": 2.0}, "aggregation_time_s_by_tier": {},
        "transfer_time_s_by_tag": {"client->edge": 1.0}}


def make_run(parent, run_id, algorithm, seed, final, ttt=None, btt=None, handovers=0,
             lr=0.1, name="x", curve=((0.0, 0.1), (10.0, 0.5))):
    summary = {**BASE, "name": name, "algorithm": algorithm, "seed": seed,
               "final_accuracy": final, "best_accuracy": final, "time_to_target_s": ttt,
               "bytes_to_target": btt, "rounds_to_target": None if ttt is None else 3,
               "rounds": 5, "handovers": handovers}
    metrics = pd.DataFrame({"sim_time_s": [c[0] for c in curve],
                            "accuracy": [c[1] for c in curve],
                            "bytes_total": [c[0] * 10 for c in curve]})
    scenario = {"name": name, "seed": seed, "algorithm": {"kind": algorithm, "lr": lr},
                "output": {"dir": f"somewhere-{seed}"}}
    return write_run(parent, run_id, summary, metrics, yaml.safe_dump(scenario))


@pytest.fixture
def loose(tmp_path):
    """fed-a with three seeds (one misses the target), fed-b with two (neither reaches it)."""
    root = tmp_path / "runs"
    make_run(root, "a1", "fed-a", 1, 0.80, ttt=10.0, btt=100.0, handovers=1)
    make_run(root, "a2", "fed-a", 2, 0.82, ttt=20.0, btt=300.0, handovers=2)
    make_run(root, "a3", "fed-a", 3, 0.84, handovers=3)
    make_run(root, "b1", "fed-b", 1, 0.5)
    make_run(root, "b2", "fed-b", 2, 0.7)
    return root


def test_table_gives_mean_std_and_95_percent_interval_over_seeds(loose):
    collection = collect([loose])
    assert collection.param_keys == []  # lr is the same everywhere; seed and output aside
    table = comparison_table(collection).set_index("algorithm")
    a, b = table.loc["fed-a"], table.loc["fed-b"]
    assert a["runs"] == 3 and a["seeds"] == "1 2 3"
    assert a["final_accuracy_mean"] == pytest.approx(0.82)
    assert a["final_accuracy_std"] == pytest.approx(0.02)
    assert a["time_to_target_s_mean"] == pytest.approx(15.0)
    assert a["time_to_target_s_std"] == pytest.approx(math.sqrt(50.0))
    assert a["time_to_target_s_n"] == 2
    assert a["bytes_to_target_mean"] == pytest.approx(200.0)
    assert a["handovers_mean"] == pytest.approx(2.0) and a["handovers_std"] == pytest.approx(1)
    assert b["final_accuracy_mean"] == pytest.approx(0.6)
    assert b["final_accuracy_std"] == pytest.approx(math.sqrt(0.02))
    assert b["time_to_target_s_n"] == 0 and math.isnan(b["time_to_target_s_mean"])
    # half-widths t(0.975, n-1) s / sqrt(n): t(2) = 4.303, t(1) = 12.706
    assert a["final_accuracy_ci95"] == pytest.approx(4.302653 * 0.02 / math.sqrt(3))
    assert a["time_to_target_s_ci95"] == pytest.approx(12.706205 * math.sqrt(50.0 / 2))
    assert b["final_accuracy_ci95"] == pytest.approx(12.706205 * math.sqrt(0.02 / 2))

    text = markdown_table(comparison_table(collection), ["algorithm"])
    lines = text.splitlines()
    assert lines[0].startswith("| algorithm | runs | final accuracy | time to target |")
    assert ("| fed-a | 3 | 0.820 ± 0.050 | 15.0 s ± 1 min 04 s (2/3) | 200 B ± 1.27 kB (2/3) |"
            in text)
    assert "| fed-b | 2 | 0.600 ± 1.271 | not reached (0/2) | not reached (0/2) |" in text
    assert "| 2 ± 2.5 |" in lines[2]  # hand-overs of fed-a: 1 2 3
    assert "nan" not in text.lower() and "inf" not in text


def test_differing_scenario_fields_become_parameters(tmp_path):
    root = tmp_path / "runs"
    for seed in (1, 2):
        make_run(root, f"lr1-{seed}", "fed-a", seed, 0.7 + seed / 100, lr=0.1)
        make_run(root, f"lr2-{seed}", "fed-a", seed, 0.8 + seed / 100, lr=0.2)
    collection = collect([root])
    assert collection.param_keys == ["algorithm.lr"]
    table = comparison_table(collection)
    assert list(table["algorithm.lr"]) == ["0.1", "0.2"]
    assert list(table["final_accuracy_mean"]) == pytest.approx([0.715, 0.815])


def test_band_follows_each_seed_as_a_step_and_holds_its_final_value():
    one = pd.DataFrame({"sim_time_s": [0.0, 1.0, 2.0], "accuracy": [0.1, 0.5, 0.7]})
    two = pd.DataFrame({"sim_time_s": [0.0, 1.5], "accuracy": [0.1, 0.6]})
    curve = band([one, two], "sim_time_s")
    assert list(curve["sim_time_s"]) == [0.0, 1.0, 1.5, 2.0]
    assert list(curve["mean"]) == pytest.approx([0.1, 0.3, 0.55, 0.65])
    assert curve["std"].iloc[1] == pytest.approx(math.sqrt(0.08))  # 0.5 and 0.1, ddof=1
    # the band: the mean's 95% interval, t(0.975, 1) = 12.706 for two runs
    assert curve["ci95"].iloc[1] == pytest.approx(12.7062 * math.sqrt(0.08) / math.sqrt(2),
                                                  rel=1e-4)
    assert list(curve["n"]) == [2, 2, 2, 2]
    alone = band([one], "sim_time_s")
    assert alone["std"].isna().all() and alone["ci95"].isna().all()


def test_time_breakdown_by_hand():
    summary = {"clients": 2, "sim_time_s": 5.0,
               "compute_time_s_by_tier": {"client": 2.0, "edge": 1.0},
               "aggregation_time_s_by_tier": {"edge": 0.5},
               "transfer_time_s_by_tag": {"client->edge": 3.0, "edge->client": 1.0,
                                          "edge->edge": 2.0, "edge->cloud": 0.5,
                                          "resumed-part": 0.25}}
    assert time_breakdown(summary) == {
        "compute": 3.5, "client-edge": 4.0, "edge-edge": 2.0, "edge-cloud": 0.5,
        "client-cloud": 0.0, "other transfers": 0.25, "failed transfers": 0.0,
        "cancelled transfers": 0.0, "waiting": 2 * 5.0 - 2.0 - 4.0}
    # airtime of failed and cancelled attempts is its own category, not the client waiting
    lost = {**summary, "failed_transfer_time_s_by_tag": {"client->edge": 1.5},
            "cancelled_transfer_time_s_by_tag": {"edge->client": 0.5, "edge->cloud": 0.25}}
    parts = time_breakdown(lost)
    assert parts["failed transfers"] == 1.5 and parts["cancelled transfers"] == 0.75
    assert parts["waiting"] == 2 * 5.0 - 2.0 - 4.0 - 1.5 - 0.5
    # on a road world, presence is the vehicle-seconds in coverage
    road = {**summary, "load_by_rsu": {"r0": {"vehicle_seconds": 7.0},
                                       "r1": {"vehicle_seconds": 1.0}}}
    assert time_breakdown(road)["waiting"] == 8.0 - 2.0 - 4.0
    assert time_breakdown({**summary, "clients": 0})["waiting"] == 0.0  # floored
    assert classify_tag("secagg client->edge") == "client-edge"
    assert classify_tag("cloud->client") == "client-cloud"


def test_report_writes_markdown_csv_and_plots_and_replaces_an_earlier_one(loose, tmp_path):
    out = tmp_path / "report"
    report = write_report([loose], out)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["accuracy_vs_bytes.png", "accuracy_vs_time.png", "comparison.csv",
                     "comparison.md", "paired.csv", "runs.csv", "time_breakdown.csv",
                     "time_breakdown.png"]
    for png in out.glob("*.png"):
        assert png.stat().st_size > 5000
    csv = pd.read_csv(out / "comparison.csv")
    assert list(csv["final_accuracy_mean"]) == pytest.approx([0.82, 0.6])
    assert len(pd.read_csv(out / "runs.csv")) == 5
    breakdown = pd.read_csv(out / "time_breakdown.csv", index_col="group")
    assert breakdown.loc["fed-a", "compute"] == pytest.approx(2.0)
    assert breakdown.loc["fed-a", "waiting"] == pytest.approx(2 * 30.0 - 2.0 - 1.0)
    assert "| fed-a | 3 |" in report.markdown
    assert "INCOMPLETE" not in report.markdown
    assert "## Node-seconds by category" in report.markdown  # not "simulated time": they overlap
    assert "time per tier" not in report.markdown.lower()
    assert "![accuracy against simulated time](accuracy_vs_time.png)" in report.markdown
    (out / "stale.txt").write_text("from an earlier report")
    write_report([loose], out)
    assert not (out / "stale.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    not_a_report = tmp_path / "mine"
    not_a_report.mkdir()
    (not_a_report / "notes.txt").write_text("keep me")
    with pytest.raises(NetflError, match="not a netfl report"):
        write_report([loose], not_a_report)


def test_report_on_a_sweep_uses_its_parameters_and_lists_unfinished_runs(tmp_path):
    sweep = tmp_path / "sweep"
    points = []
    for lr in (0.1, 0.2):
        for seed in (1, 2):
            run_id = f"lr-{lr}_s{seed}"
            points.append({"run_id": run_id, "params": {"algorithm.lr": lr, "seed": seed},
                           "path": f"runs/x/{run_id}"})
            if (lr, seed) != (0.2, 2):
                make_run(sweep / "runs" / "x", run_id, "fed-a", seed, 0.5 + lr, lr=lr)
    (sweep / "sweep.json").write_text(json.dumps({"params": ["algorithm.lr", "seed"],
                                                  "points": points}))
    pd.DataFrame({"run_id": [p["run_id"] for p in points],
                  "status": ["done", "done", "done", "failed"],
                  "error": [None, None, None, "boom"]}).to_csv(sweep / "index.csv", index=False)
    report = write_report([sweep])
    assert report.out_dir == sweep / "report"
    table = report.table
    assert list(table["algorithm.lr"]) == ["0.1", "0.2"] and list(table["runs"]) == [2, 1]
    assert list(table["runs_expected"]) == [2, 2]
    assert report.markdown.startswith("**INCOMPLETE: 3 of 4 runs finished.**")
    assert "| 0.2 | 1 of 2 (no interval) |" in report.markdown
    assert list(pd.read_csv(sweep / "report" / "comparison.csv")["runs_expected"]) == [2, 2]
    assert "| lr-0.2_s2 | failed | boom | " in report.markdown
    assert str(sweep / "logs" / "lr-0.2_s2.log") in report.markdown
    # the same sweep given twice, or inside a folder given too, is counted once
    again = collect([sweep, tmp_path])
    assert len(again.runs) == 3


def test_nothing_to_report_is_a_clear_error(tmp_path):
    with pytest.raises(NetflError, match="no run results"):
        collect([tmp_path])
    with pytest.raises(NetflError, match="no such folder"):
        collect([tmp_path / "missing"])


def _sweep_of(folder, runs):
    """A sweep folder whose sweep.json names ``params`` for each (run_id, params) of runs."""
    points = [{"run_id": rid, "params": params, "path": f"runs/x/{rid}"} for rid, params in runs]
    keys = list(dict.fromkeys(k for _, params in runs for k in params))
    (folder / "sweep.json").write_text(json.dumps({"params": keys, "points": points}))


def test_a_swept_algorithm_key_is_not_hidden_by_the_algorithm_column(tmp_path):
    sweep = tmp_path / "sweep"
    for rid, lr in (("a-3", 0.1), ("a-6", 0.2)):
        make_run(sweep / "runs" / "x", rid, "fed-a", 1, 0.5 + lr, lr=lr)
    _sweep_of(sweep, [("a-3", {"algorithm": {"kind": "fed-a", "lr": 0.1}, "seed": 1}),
                      ("a-6", {"algorithm": {"kind": "fed-a", "lr": 0.2}, "seed": 1})])
    table = comparison_table(collect([sweep]))
    assert list(table["runs"]) == [1, 1]
    assert list(table["algorithm.lr"]) == ["0.1", "0.2"]


def test_sweeps_that_differ_only_in_their_fixed_set_are_not_merged(tmp_path):
    for name, lr in (("one", 0.1), ("two", 0.2)):  # e.g. --set algorithm.lr=... on each
        sweep = tmp_path / name
        make_run(sweep / "runs" / "x", f"{name}-s1", "fed-a", 1, 0.5 + lr, lr=lr)
        _sweep_of(sweep, [(f"{name}-s1", {"seed": 1})])
    table = comparison_table(collect([tmp_path / "one", tmp_path / "two"]))
    assert list(table["algorithm.lr"]) == ["0.1", "0.2"] and list(table["runs"]) == [1, 1]


def test_a_group_holding_the_same_seed_twice_is_refused_naming_both_runs(tmp_path):
    make_run(tmp_path / "here", "r1", "fed-a", 1, 0.5)
    make_run(tmp_path / "there", "r1-copy", "fed-a", 1, 0.6)
    with pytest.raises(NetflError, match=r"seed 1 twice.*r1.*r1-copy"):
        comparison_table(collect([tmp_path]))


def test_damaged_inputs_are_errors_that_name_the_file(tmp_path, loose):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{not json")
    with pytest.raises(NetflError, match=r"sweep\.json.*not valid JSON"):
        collect([sweep])
    (sweep / "sweep.json").write_text(json.dumps({"points": [{"params": {}}]}))
    with pytest.raises(NetflError, match=r"sweep\.json.*run_id"):
        collect([sweep])
    (loose / "b2" / "metrics.csv").unlink()
    with pytest.raises(NetflError, match=r"b2.*metrics\.csv"):
        write_report([loose], tmp_path / "report")
    (loose / "b1" / "summary.json").write_text("{")
    with pytest.raises(NetflError, match=r"b1.*summary\.json"):
        collect([loose])
    (loose / "b1" / "summary.json").write_text("{}")
    (loose / "a1" / "scenario.yaml").write_text("a: [")
    with pytest.raises(NetflError, match=r"a1.*scenario\.yaml"):
        collect([loose])
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    with pytest.raises(NetflError, match=r"notes\.txt.*a file, not a folder"):
        collect([a_file])
    with pytest.raises(NetflError, match=r"notes\.txt.*a file, not a folder"):
        write_report([loose / "a2"], a_file)


def test_report_plots_do_not_use_pyplot_so_threads_may_plot_at_once(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    import matplotlib.pyplot as plt

    from netfl.results.bands import plot_bands
    from netfl.results.plots import plot_time_breakdown

    def no_pyplot(*args, **kwargs):
        raise AssertionError("pyplot's global state is not thread-safe")

    monkeypatch.setattr(plt, "subplots", no_pyplot)
    monkeypatch.setattr(plt, "figure", no_pyplot)
    curve = band([pd.DataFrame({"sim_time_s": [0.0, 1.0], "accuracy": [0.1, 0.5]})],
                 "sim_time_s")
    breakdown = pd.DataFrame({"compute": [2.0], "waiting": [1.0]}, index=["fed-a"])

    def draw(i: int) -> None:
        plot_bands({"fed-a": curve}, "sim_time_s", tmp_path / f"b{i}.png", "t", 0.4)
        plot_time_breakdown(breakdown, tmp_path / f"t{i}.png", "t")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(draw, range(8)))
    assert all((tmp_path / f"{k}{i}.png").stat().st_size > 1000 for k in "bt" for i in range(8))


def test_a_tiny_spread_is_not_printed_as_zero_and_counts_agree_in_number(tmp_path):
    make_run(tmp_path / "runs", "a1", "fed-a", 1, 0.9)
    make_run(tmp_path / "runs", "a2", "fed-a", 2, 0.9 + 1e-7)
    report = write_report([tmp_path / "runs"], tmp_path / "report")
    assert "| 0.900 ± 6.4e-07 |" in report.markdown
    assert "2 runs in 1 group," in report.markdown


def test_a_swept_value_is_shown_as_written_and_grouped_as_resolved(tmp_path):
    sweep = tmp_path / "sweep"
    for rid, seed in (("s1", 1), ("s2", 2)):
        make_run(sweep / "runs" / "x", rid, "fed-a", seed, 0.5, lr=0.1)
    for rid, seed in (("t1", 1),):
        make_run(sweep / "runs" / "x", rid, "fed-a", seed, 0.5, lr=0.2)
    _sweep_of(sweep, [("s1", {"algorithm.lr": "1e-1", "seed": 1}),
                      ("s2", {"algorithm.lr": "1e-1", "seed": 2}),
                      ("t1", {"algorithm.lr": "2e-1", "seed": 1})])
    table = comparison_table(collect([sweep]))
    assert list(table["algorithm.lr"]) == ["1e-1", "2e-1"] and list(table["runs"]) == [2, 1]


def _pairs(root, extra=None):
    """fed-a and fed-b at seeds 1-5: the seed moves both a lot, fed-b is 0.02 better at each."""
    a = {1: 0.60, 2: 0.70, 3: 0.80, 4: 0.65, 5: 0.75}
    b = {1: 0.62, 2: 0.72, 3: 0.83, 4: 0.66, 5: 0.77}
    for seed in a:
        make_run(root, f"a{seed}", "fed-a", seed, a[seed])
        make_run(root, f"b{seed}", "fed-b", seed, b[seed])
    return root


def test_paired_differences_against_the_first_group_or_a_chosen_baseline(tmp_path):
    from netfl.results.report import paired_table

    collection = collect([_pairs(tmp_path / "runs")])
    table = comparison_table(collection).set_index("group")
    a, b = table.loc["fed-a"], table.loc["fed-b"]
    # the groups' 95% intervals overlap ...
    assert a["final_accuracy_mean"] + a["final_accuracy_ci95"] > \
        b["final_accuracy_mean"] - b["final_accuracy_ci95"]
    paired = paired_table(collection).set_index("metric")
    row = paired.loc["final_accuracy"]
    assert (row["group"], row["baseline"], row["n"]) == ("fed-b", "fed-a", 5)
    assert row["mean"] == pytest.approx(0.02)
    assert row["ci95"] == pytest.approx(2.776445 * math.sqrt(0.0002 / 4) / math.sqrt(5), rel=1e-5)
    assert row["low"] > 0  # ... the paired one excludes 0
    other = paired_table(collection, baseline="fed-b").set_index("metric").loc["final_accuracy"]
    assert other["group"] == "fed-a" and other["mean"] == pytest.approx(-0.02)
    with pytest.raises(NetflError, match=r"--baseline 'fed-z': no such group.*'fed-a'"):
        paired_table(collection, baseline="fed-z")
    report = write_report([tmp_path / "runs"], tmp_path / "report", baseline="fed-a")
    assert "## Paired differences" in report.markdown
    assert "| fed-b | fed-a | **+0.020 ± 0.009 (n=5)** |" in report.markdown
    assert len(pd.read_csv(tmp_path / "report" / "paired.csv")) == len(report.paired)
    (title, head, rows), (paired_title, paired_head, paired_rows) = report.terminal_tables()
    assert "95% interval" in title and head[:3] == ["group", "runs", "final accuracy"]
    assert paired_head[:3] == ["group", "baseline", "Δ final accuracy"]
    assert paired_rows[0][:3] == ["fed-b", "fed-a", "+0.020 ± 0.009 (n=5)"]


def test_a_paired_difference_uses_the_seeds_both_groups_have(tmp_path):
    from netfl.results.report import paired_table

    root = tmp_path / "runs"
    for seed, final in ((1, 0.5), (2, 0.6), (3, 0.7)):
        make_run(root, f"a{seed}", "fed-a", seed, final, ttt=8.0 if seed == 3 else None)
    make_run(root, "b2", "fed-b", 2, 0.9, ttt=5.0, btt=10.0)
    paired = paired_table(collect([root])).set_index("metric").loc["final_accuracy"]
    assert paired["n"] == 1 and paired["mean"] == pytest.approx(0.3)
    assert math.isnan(paired["ci95"])  # one pair: no interval
    report = write_report([root], tmp_path / "report")
    assert "+0.300 (n=1, no interval)" in report.markdown
    assert "| fed-b | 1 (no interval) | 0.900 | 5.0 s (1/1) |" in report.markdown  # one run
    assert "| 8.0 s (1/3, no interval) |" in report.markdown  # one of fed-a's three
    assert "nan" not in report.markdown.lower()


def _world_run(root, run_id, name, kind, algorithm, seed, final, counts, world_extra):
    summary = {**BASE, "name": name, "algorithm": algorithm, "seed": seed,
               "final_accuracy": final, "best_accuracy": final, "rounds": 5, "handovers": 0,
               **counts}
    metrics = pd.DataFrame({"sim_time_s": [0.0, 10.0], "accuracy": [0.1, final],
                            "bytes_total": [0.0, 100.0]})
    scenario = {"name": name, "seed": seed, "world": {"kind": kind, **world_extra},
                "algorithm": {"kind": algorithm, "lr": 0.1}}
    return write_run(root, run_id, summary, metrics, yaml.safe_dump(scenario))


def test_a_report_over_two_worlds_groups_by_world_without_their_fields_as_columns(tmp_path):
    root = tmp_path / "runs"
    for seed in (1, 2):
        for algorithm in ("fed-a", "fed-b"):
            _world_run(root, f"iov-{algorithm}-{seed}", "iov-short", "road", algorithm, seed,
                       0.7 + seed / 100, {"vehicle_handovers": 10 * seed, "downloads_lost": 3,
                                          "uploads_lost": 2},
                       {"rsus": 6, "road_length": "5 km", "traffic": {"rate": 0.5}})
            _world_run(root, f"leo-{algorithm}-{seed}", "leo-short", "leo", algorithm, seed,
                       0.8, {"satellite_handovers": seed, "downloads_lost": 0,
                             "uploads_lost": 0},
                       {"satellites": 200, "beams": 4})
    collection = collect([root])
    assert collection.param_keys == []  # world fields differ only between the worlds
    table = comparison_table(collection)
    assert list(table["world"]) == ["iov-short"] * 2 + ["leo-short"] * 2
    assert list(table["group"]) == ["iov-short fed-a", "iov-short fed-b", "leo-short fed-a",
                                    "leo-short fed-b"]
    text = markdown_table(table, ["world", "algorithm"])
    head = text.splitlines()[0]
    for title in ("vehicle hand-overs", "satellite hand-overs", "downloads lost",
                  "uploads lost"):
        assert title in head
    assert "| iov-short | fed-a | 2 | 0.715 ± 0.064 |" in text
    from netfl.results.report import paired_table

    paired = paired_table(collection, baseline="fed-a")  # each world against its own fed-a
    assert set(zip(paired["group"], paired["baseline"], strict=True)) == {
        ("iov-short fed-b", "iov-short fed-a"), ("leo-short fed-b", "leo-short fed-a")}


def test_a_sweep_case_label_names_its_group_in_tables_and_legends(tmp_path):
    sweep = tmp_path / "sweep"
    runs = []
    for case, (algorithm, lr) in {"mine": ("fed-a", 0.1), "theirs": ("fed-a", 0.2)}.items():
        for seed in (1, 2):
            rid = f"{case}_s{seed}-abc"
            make_run(sweep / "runs" / "x", rid, algorithm, seed, 0.5 + lr + seed / 100, lr=lr)
            runs.append((rid, {"algorithm": {"kind": algorithm, "lr": lr}, "seed": seed}, case))
    points = [{"run_id": rid, "params": params, "path": f"runs/x/{rid}", "label": case}
              for rid, params, case in runs]
    (sweep / "sweep.json").write_text(json.dumps({"params": ["algorithm", "seed"],
                                                  "points": points}))
    report = write_report([sweep], baseline="theirs")
    assert list(report.table["group"]) == ["mine", "theirs"]
    assert list(report.table["label"]) == ["mine", "theirs"]
    assert report.markdown.count("| group | algorithm | algorithm.lr | runs |") == 1
    assert "| mine | fed-a | 0.1 | 2 |" in report.markdown
    assert "| mine | theirs | **-0.100 (n=2)** |" in report.markdown
    assert "{" not in report.markdown  # no JSON dict anywhere
    assert list(report.breakdown.index) == ["mine", "theirs"]
    assert list(pd.read_csv(sweep / "report" / "runs.csv")["group"]) == ["mine"] * 2 + [
        "theirs"] * 2


def test_a_report_says_what_an_asynchronous_runs_rounds_count(tiny, tmp_path):
    """The report once compared 'rounds' across algorithms where FedBuff's are versions."""
    import netfl
    from netfl.results.report import write_report

    tiny["output"] = {"dir": str(tmp_path / "runs"), "plots": False}
    tiny["algorithm"] = {"kind": "fedbuff", "rounds": 4, "concurrency": 3, "buffer_size": 2,
                         "local_steps": 2}
    netfl.run(tiny)
    tiny["algorithm"] = {"kind": "fedavg", "rounds": 2, "local_steps": 2}
    netfl.run(tiny)
    markdown = write_report([tmp_path / "runs"], tmp_path / "report").markdown
    assert "*rounds* of fedbuff count the cloud model's versions" in markdown
