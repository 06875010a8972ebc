"""Why a finding about bits holds: each arm's rounds, bits per round and main traffic."""

from __future__ import annotations

import json

from netfl.reproduction.cells import Run, StudyResults
from netfl.reproduction.plan import Arm, Study
from netfl.reproduction.render import arm_traffic


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
