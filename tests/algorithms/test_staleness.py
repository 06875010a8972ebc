"""Staleness weights: the FedAsync paper's three functions."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfl.algorithms.staleness import staleness_weight


def test_the_papers_definitions():
    assert staleness_weight("constant", 7) == 1.0
    assert staleness_weight("polynomial", 3, a=0.5) == pytest.approx(0.5)  # FedBuff's 1/sqrt(4)
    assert staleness_weight("polynomial", 0, a=2.0) == 1.0
    assert staleness_weight("hinge", 4, a=10, b=4) == 1.0
    assert staleness_weight("hinge", 6, a=10, b=4) == pytest.approx(1 / 21)


@given(kind=st.sampled_from(["constant", "polynomial", "hinge"]),
       x=st.integers(0, 10_000), a=st.floats(0.01, 10), b=st.floats(0, 100))
def test_weights_lie_in_zero_one_and_never_grow_with_staleness(kind, x, a, b):
    w, later = staleness_weight(kind, x, a, b), staleness_weight(kind, x + 1, a, b)
    assert 0 < w <= 1 and later <= w and math.isfinite(w)


def test_a_negative_staleness_and_an_unknown_kind_are_errors():
    with pytest.raises(ValueError, match="cannot start from a model version"):
        staleness_weight("constant", -1)
    with pytest.raises(ValueError, match="unknown staleness function 'linear'"):
        staleness_weight("linear", 1)


def test_the_time_hinge_is_one_until_the_hinge_then_one_over_linear():
    from netfl.algorithms.staleness import time_hinge_weight

    assert time_hinge_weight(0.0, 7700.0, 1e-3) == 1.0
    assert time_hinge_weight(7700.0, 7700.0, 1e-3) == 1.0
    assert time_hinge_weight(8700.0, 7700.0, 1e-3) == pytest.approx(0.5)
    weights = [time_hinge_weight(t, 7700.0, 1e-3) for t in range(0, 50_000, 500)]
    assert all(0 < w <= 1 for w in weights) and weights == sorted(weights, reverse=True)
    with pytest.raises(ValueError, match="after it arrived"):
        time_hinge_weight(-1.0, 7700.0, 1e-3)
