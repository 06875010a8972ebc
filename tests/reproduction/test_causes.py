"""Why a finding about bits holds: each arm's rounds, bits per round and main traffic."""

from __future__ import annotations

import json

from netfl.reproduction.causes import arm_traffic
from netfl.reproduction.cells import Run, StudyResults
from netfl.reproduction.plan import Arm, Study


def run(tmp_path, name: str, seed: int, summary: dict) -> Run:
    folder = tmp_path / f"{name}-{seed}"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    return Run(seed, {}, folder)


def test_bits_to_target_are_rounds_times_bits_per_round_with_the_largest_traffic(tmp_path):
    study = Study(id="t", title="t", arms=[Arm(label="A", scenario="a.yaml")])
    runs = [run(tmp_path, "a", 1, {"rounds_to_target": 10, "bits_to_target": 8e9,
                                   "bytes_to_target_by_tag": {"client->edge": 6e8,
                                                              "edge->edge": 4e8}}),
            run(tmp_path, "a", 2, {"rounds_to_target": 30, "bits_to_target": 3.6e10,
                                   "bytes_to_target_by_tag": {"client->edge": 4e9,
                                                              "edge->edge": 5e8}}),
            run(tmp_path, "a", 3, {"rounds_to_target": None, "bits_to_target": None})]
    results = StudyResults(study, ["A"], [""], runs={"A": {"": runs}})
    # medians over the two runs that reached it: 20 rounds, (800 M + 1.2 G) / 2 bits per round,
    # client->edge (60% and 89%: median 74%)
    assert arm_traffic(results, "A") == "20 rounds of 1 Gbit (client->edge 74%)"
    assert arm_traffic(StudyResults(study, ["A"], [""], runs={"A": {"": runs[2:]}}), "A") is None


def test_lowest_among_compares_only_the_named_baselines(tmp_path):
    import pytest
    from pydantic import ValidationError

    from netfl.reproduction.plan import Finding, Rule
    from netfl.reproduction.render import finding_verdict

    study = Study(id="t", title="t", arms=[Arm(label=a, scenario="x.yaml") for a in "ABC"])
    bits = {"A": (10.0, 12.0, 11.0), "B": (40.0, 44.0, 42.0), "C": (1.0, 1.2, 1.1)}
    runs = {arm: {"": [run(tmp_path, arm, seed, {"rounds_to_target": 5, "bits_to_target": v})
                       for seed, v in enumerate(values, 1)]} for arm, values in bits.items()}
    for arm, by_point in runs.items():
        for r, v in zip(by_point[""], bits[arm], strict=True):
            r.row["bits_to_target"] = v
    results = StudyResults(study, list("ABC"), [""], runs=runs,
                           expected={"A": 3, "B": 3, "C": 3})

    def verdict(**rule):
        finding = Finding(id="f", claim="A needs the fewest bits", study="t",
                          rule=Rule(kind="lowest", metric="bits_to_target", arm="A", **rule))
        return finding_verdict(finding, results)

    assert verdict().verdict == "not reproduced"  # C needs fewer
    among = verdict(among=["B"])
    assert among.verdict == "reproduced" and "C" not in among.reason
    with pytest.raises(ValidationError, match="'among' is for rules 'lowest' and 'comparable'"):
        Rule(kind="less", metric="m", arm="A", than="B", among=["C"])


def test_a_channel_used_under_half_a_percent_reads_below_one_percent_not_zero(tmp_path):
    from netfl.reproduction.causes import arm_rounds

    study = Study(id="t", title="t", arms=[Arm(label="A", scenario="a.yaml")])
    path = {"duration_s": {"p50": 1.2}, "upload_s": {"p50": 0.6}, "download_s": {"p50": 0.6}}
    runs = [run(tmp_path, "a", seed, {"round_critical_path": path, "bottlenecks": [
        {"channel": "c0->e0", "utilisation": u}]}) for seed, u in ((1, 0.004), (2, 0.001))]
    results = StudyResults(study, ["A"], [""], runs={"A": {"": runs}})
    assert arm_rounds(results, "A").channel == "c0->e0 (<1%)"
    runs[1].summary["bottlenecks"][0]["utilisation"] = 0.012
    assert arm_rounds(results, "A").channel == "c0->e0 (1%)"


def test_a_study_with_settings_shows_each_settings_rounds_and_says_where_it_pools(tmp_path):
    from netfl.reproduction.plan import Finding, Rule
    from netfl.reproduction.render import finding_verdict, round_table

    study = Study(id="t", title="t", arms=[Arm(label=a, scenario="x.yaml") for a in "AB"])

    def at(arm, point, seed, round_s):
        path = {"duration_s": {"p50": round_s}, "upload_s": {"p50": round_s}}
        r = run(tmp_path, f"{arm}-{point}", seed, {"round_critical_path": path})
        r.row["time_to_target_s"] = 10 * round_s
        return r

    # a rate sweep: the slow setting's rounds are 100x the fast one's
    runs = {arm: {point: [at(arm, point, seed, s * (2 if arm == "B" else 1)) for seed in (1, 2, 3)]
                  for point, s in (("2 Mbps", 50.0), ("2 Gbps", 0.5))} for arm in "AB"}
    results = StudyResults(study, list("AB"), ["2 Mbps", "2 Gbps"], runs=runs,
                           expected={"A": 6, "B": 6})
    table = round_table(results)
    assert "| A | 2 Mbps | 50.0 s |" in table and "| A | 2 Gbps | 500 ms |" in table
    assert "| B | 2 Mbps | 1 min 40 s |" in table
    finding = Finding(id="f", claim="A is sooner", study="t",
                      rule=Rule(kind="less", metric="time_to_target_s", arm="A", than="B"))
    assert finding_verdict(finding, results).why.startswith(
        "medians over the runs of all 2 settings: A: rounds of")
    one = StudyResults(study, list("AB"), ["2 Mbps"],
                       runs={a: {"2 Mbps": runs[a]["2 Mbps"]} for a in "AB"},
                       expected={"A": 3, "B": 3})
    assert "setting" not in round_table(one) and "| A | 50.0 s |" in round_table(one)
