"""Group sampling probabilities (eq. 38) and global aggregation weights (Line 15, eqs. 4, 39)."""

import math

import numpy as np
import pytest

from netfl.algorithms.group_sampling import (
    aggregation_weights,
    log_probabilities,
    log_sampling_weights,
    sample_groups,
    sampling_probabilities,
)

COVS = np.array([0.2, 0.4, 0.5, 1.0])


@pytest.mark.parametrize("rule, w", [
    ("uniform", lambda x: np.ones_like(x)),
    ("rcov", lambda x: x),
    ("srcov", lambda x: x ** 2),
    ("esrcov", lambda x: np.exp(x ** 2)),
])
def test_probabilities_sum_to_one_and_follow_w(rule, w):
    p = sampling_probabilities(COVS, rule)
    expected = w(1 / COVS) / w(1 / COVS).sum()
    assert p.sum() == pytest.approx(1.0)
    assert p == pytest.approx(expected)


def test_esrcov_stays_finite_where_e_to_the_x_squared_overflows():
    covs = np.array([0.01, 0.02, 0.5])  # e^{1/0.01^2} = e^10000
    log_p = log_probabilities(log_sampling_weights(covs, "esrcov"))
    assert np.isfinite(log_p).all() and math.exp(log_p[0]) == pytest.approx(1.0)


def test_sampling_draws_distinct_groups_with_the_stated_frequencies():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    rng = np.random.default_rng(0)
    draws = np.array([sample_groups(np.log(p), 1, rng)[0] for _ in range(20000)])
    assert np.bincount(draws, minlength=4) / 20000 == pytest.approx(p, abs=0.01)
    pairs = [sample_groups(np.log(p), 2, rng) for _ in range(100)]
    assert all(len(set(s)) == 2 and s == sorted(s) for s in pairs)
    assert sample_groups(np.log(p), 9, rng) == [0, 1, 2, 3]


def test_biased_weights_are_data_shares_of_the_sampled_groups():
    w = aggregation_weights([10, 30], np.log([0.5, 0.1]), 1000, "biased")
    assert w.tolist() == pytest.approx([0.25, 0.75])


def test_unbiased_weights_of_eq_4():
    sizes, p, n, s = np.array([10.0, 30.0]), np.array([0.5, 0.1]), 200.0, 2
    w = aggregation_weights(sizes, np.log(p), n, "unbiased")
    assert w.tolist() == pytest.approx((1 / (p * s) * sizes / n).tolist())


def test_unbiased_weights_are_unbiased_in_expectation():
    # one group sampled per round: E[sum_g w_g x_g] = sum_g (n_g / n) x_g
    sizes, p = np.array([10.0, 20.0, 70.0]), np.array([0.6, 0.3, 0.1])
    x = np.array([1.0, -2.0, 5.0])
    expectation = sum(p[g] * aggregation_weights(sizes[[g]], np.log(p[[g]]), 100.0,
                                                 "unbiased")[0] * x[g] for g in range(3))
    assert expectation == pytest.approx((sizes / 100.0 * x).sum())


def test_normalized_weights_of_eq_39():
    sizes, p = np.array([10.0, 30.0]), np.array([0.5, 0.1])
    raw = 1 / (p * 2) * sizes / 200.0
    w = aggregation_weights(sizes, np.log(p), 200.0, "normalized")
    assert w.tolist() == pytest.approx((raw / raw.sum()).tolist())
    # stable where 1/p_g overflows
    w = aggregation_weights(sizes, np.array([-1e4, -1.0]), 200.0, "normalized")
    assert w.tolist() == pytest.approx([1.0, 0.0])
