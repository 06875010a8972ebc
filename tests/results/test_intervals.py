"""Student t and paired t intervals against values worked by hand (t tables)."""

from __future__ import annotations

import math

import pytest

from netfl.results.intervals import (
    Interval,
    format_interval,
    paired_difference,
    t_interval,
    t_quantile,
)


def test_t_quantiles_match_the_tables():
    assert t_quantile(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(2) == pytest.approx(4.303, abs=1e-3)
    assert t_quantile(4) == pytest.approx(2.776, abs=1e-3)
    assert t_quantile(29) == pytest.approx(2.045, abs=1e-3)


def test_interval_of_known_values():
    # 1, 2, 3: mean 2, s = 1, half = 4.303 / sqrt(3)
    interval = t_interval([1.0, 2.0, 3.0])
    assert interval.n == 3 and interval.mean == pytest.approx(2.0)
    assert interval.half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    # 10, 12: mean 11, s = sqrt(2), half = 12.706 * sqrt(2) / sqrt(2)
    assert t_interval([10.0, 12.0]).half == pytest.approx(12.706205, rel=1e-6)
    # missing values are left out, not counted
    assert t_interval([1.0, None, math.nan, 3.0]).n == 2


def test_one_value_has_no_interval_and_prints_none():
    one = t_interval([0.8])
    assert one.n == 1 and one.mean == 0.8 and math.isnan(one.half)
    assert not one.excludes_zero
    text = format_interval(one, lambda v: f"{v:.3f}")
    assert text == "0.800 (n=1, no interval)"
    assert "nan" not in text and "inf" not in text
    assert format_interval(t_interval([]), str) == "-"
    assert format_interval(t_interval([None]), str) == "-"


def test_format_signs_and_tiny_spreads():
    fmt = lambda v: f"{v:.2f}"  # noqa: E731
    assert format_interval(Interval(-0.5, 0.1, 3), fmt) == "-0.50 ± 0.10"
    assert format_interval(Interval(0.5, 0.1, 3), fmt, sign=True, show_n=True) == \
        "+0.50 ± 0.10 (n=3)"
    assert format_interval(Interval(1.0, 0.0001, 3), fmt) == "1.00 ± 1.0e-04"
    assert format_interval(Interval(1.0, 0.0, 3), fmt) == "1.00"


def test_paired_interval_excludes_zero_where_unpaired_ones_overlap():
    # the seed moves both algorithms a lot; b is better than a by about 0.02 at every seed
    a = {1: 0.60, 2: 0.70, 3: 0.80, 4: 0.65, 5: 0.75}
    b = {1: 0.62, 2: 0.72, 3: 0.83, 4: 0.66, 5: 0.77}
    ia, ib = t_interval(a.values()), t_interval(b.values())
    assert ia.high > ib.low and ib.high > ia.low  # the groups' intervals overlap
    diff = paired_difference(b, a)
    assert diff.n == 5
    assert diff.mean == pytest.approx(0.02)
    # differences 0.02 0.02 0.03 0.01 0.02: s = sqrt(0.0002/4), half = 2.776 * s / sqrt(5)
    assert diff.half == pytest.approx(2.776445 * math.sqrt(0.0002 / 4) / math.sqrt(5), rel=1e-5)
    assert diff.excludes_zero


def test_paired_uses_only_seeds_both_have():
    diff = paired_difference({1: 2.0, 2: 5.0, 3: None, 4: 1.0}, {1: 1.0, 2: 3.0, 3: 0.0, 5: 9.0})
    assert diff.n == 2 and diff.mean == pytest.approx(1.5)
    assert paired_difference({1: 1.0}, {2: 1.0}).n == 0


def test_paired_log_ratio_is_the_mean_log_of_the_ratios_at_shared_seeds():
    from netfl.results.intervals import paired_log_ratio

    interval = paired_log_ratio({1: 20.0, 2: 40.0, 3: None, 4: 8.0}, {1: 10.0, 2: 20.0, 3: 5.0})
    assert interval.n == 2 and interval.mean == pytest.approx(math.log(2.0))
    assert interval.half == 0.0
    with pytest.raises(ValueError, match="seed 1: a log ratio needs positive values"):
        paired_log_ratio({1: 0.0}, {1: 3.0})


def test_equal_values_up_to_rounding_print_the_mean_alone():
    # five seeds reaching the target at one instant: their mean's rounding is not a spread
    values = [31320.0000000001, 31320.0, 31320.0, 31319.9999999999, 31320.0]
    shown = format_interval(t_interval(values), lambda v: f"{v:,.0f} s")
    assert shown == "31,320 s"
