"""benchmarks/group_fel_sampling.py's regrouping mode: never regrouping must give the sampling
mode's ESRCoV figures (the same groups), regrouping must form the groups once per interval,
and a negative interval is refused by name."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import benchmark_module

SHORT = "scenarios/group_fel/short-group-fel.yaml"
# generated data in place of the scenario's Fashion-MNIST: what is tested is the bookkeeping of
# formations and samples, which any labels exercise, on any machine
SYNTHETIC = ["data.dataset=synthetic"]


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("group_fel_sampling") as module:
        yield module


def test_never_regrouping_reaches_the_data_as_one_formation_does(bench):
    path = bench.ROOT / SHORT
    once = bench.sampling_reach(path, 1, "esrcov", 40, SYNTHETIC)
    never = bench.regrouping_reach(path, 1, 0, 40, SYNTHETIC)
    assert never["formations"] == 1
    assert never["median_rounds"] == pytest.approx(once["median_rounds"])
    assert never["rarely_share"] == pytest.approx(once["rarely_share"])


def test_regrouping_forms_the_groups_once_per_interval(bench):
    reach = bench.regrouping_reach(bench.ROOT / SHORT, 1, 10, 35, SYNTHETIC)
    assert reach["formations"] == 4  # rounds 1, 11, 21, 31
    assert 0 <= reach["p10_rounds"] <= reach["median_rounds"] <= 35


def test_a_negative_interval_is_refused_by_name(bench, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["group_fel_sampling.py", "--regroup", "10", "-3"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2
    message = "--regroup: an interval is 0 (never) or a number of rounds, not -3"
    assert message in capsys.readouterr().err
