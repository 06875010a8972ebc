"""A study's cells: metrics read from the runs' index rows, derived ones in their own unit."""

from __future__ import annotations

import math
from pathlib import Path

from netfl.reproduction.cells import Run, StudyResults, metric_value


def test_bits_times_hops_come_from_the_hop_weighted_bytes():
    row = {"bits_to_target": 8e9, "bytes_hop_weighted_to_target": 2.5e9}
    assert metric_value(row, "hop_bits_to_target") == 2e10
    assert metric_value(row, "bits_to_target") == 8e9


def test_a_missing_or_nan_value_is_none_not_zero():
    assert metric_value({}, "hop_bits_to_target") is None
    assert metric_value({"bytes_hop_weighted_to_target": math.nan}, "hop_bits_to_target") is None
    assert metric_value({"time_to_target_s": ""}, "time_to_target_s") is None


def test_a_studys_values_use_the_derived_metric_per_arm_point_and_seed():
    runs = {"Fed-CHS": {"": [Run(1, {"bytes_hop_weighted_to_target": 1e9}, Path("a")),
                             Run(2, {"bytes_hop_weighted_to_target": None}, Path("b"))]}}
    results = StudyResults(study=None, arms=["Fed-CHS"], points=[""], runs=runs)
    assert results.values("hop_bits_to_target") == {"Fed-CHS": {"": {1: 8e9, 2: None}}}
