"""Max-min fair rates (progressive filling): closed forms and the defining properties."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.network.maxmin import max_min_rates


def test_one_channel_is_split_equally():
    assert max_min_rates([["a"]] * 4, {"a": 8.0}) == [2.0] * 4


def test_the_bottleneck_decides_and_the_rest_goes_to_the_others():
    # the textbook parking lot: a long flow over a and b, one short flow on each
    rates = max_min_rates([["a", "b"], ["a"], ["b"]], {"a": 10.0, "b": 4.0})
    assert rates == pytest.approx([2.0, 8.0, 2.0])


def test_a_capped_flow_leaves_its_share_to_the_others():
    rates = max_min_rates([["a"], ["a"], ["a"]], {"a": 9.0}, caps=[1.0, math.inf, math.inf])
    assert rates == pytest.approx([1.0, 4.0, 4.0])


def test_counts_stand_for_identical_flows():
    # a class of 3 flows and a capped one share 9: 1 for the capped, (9 - 1) / 3 for the others
    rates = max_min_rates([["a"], ["a"]], {"a": 9.0}, caps=[math.inf, 1.0], counts=[3, 1])
    assert rates == pytest.approx([8 / 3, 1.0])
    assert max_min_rates([["a", "b"], ["b"]], {"a": 10.0, "b": 6.0},
                         counts=[2, 1]) == pytest.approx([2.0, 2.0])


def test_a_flow_on_no_channel_gets_its_cap_and_needs_one():
    assert max_min_rates([[]], {}, caps=[5.0]) == [5.0]
    with pytest.raises(ValueError, match="no cap"):
        max_min_rates([[]], {})


def test_a_channel_of_zero_capacity_stops_its_flows_only():
    assert max_min_rates([["a", "b"], ["b"]], {"a": 0.0, "b": 6.0}) == [0.0, 6.0]


@st.composite
def networks(draw):
    channels = [f"c{k}" for k in range(draw(st.integers(1, 6)))]
    capacity = {c: draw(st.floats(0.0, 1e9)) for c in channels}
    n = draw(st.integers(1, 12))
    paths = [draw(st.lists(st.sampled_from(channels), min_size=1, max_size=4, unique=True))
             for _ in range(n)]
    caps = [draw(st.one_of(st.just(math.inf), st.floats(0.0, 1e9))) for _ in range(n)]
    return paths, capacity, caps


@settings(max_examples=300, deadline=None)
@given(networks())
def test_rates_are_feasible_and_every_flow_has_a_bottleneck(net):
    paths, capacity, caps = net
    rates = max_min_rates(paths, capacity, caps)
    tol = 1e-9
    load = {c: 0.0 for c in capacity}
    for path, rate in zip(paths, rates, strict=True):
        assert rate >= 0
        for c in path:
            load[c] += rate
    for c, used in load.items():
        assert used <= capacity[c] * (1 + tol) + tol
    for i, (path, rate) in enumerate(zip(paths, rates, strict=True)):
        if rate >= caps[i] * (1 - tol) - tol:
            continue  # held by its own cap
        # else some channel on its path is full and no flow there is faster
        assert any(load[c] >= capacity[c] * (1 - 1e-7) - tol and all(
            rates[j] <= rate * (1 + 1e-7) + tol for j, p in enumerate(paths) if c in p)
            for c in path), (i, path, rate)
