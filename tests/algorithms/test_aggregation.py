"""The pure aggregation maths of netfl.algorithms.aggregation."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from netfl.algorithms.aggregation import data_weights, option_ii_control, weighted_average


@given(st.lists(st.floats(0.1, 1e3), min_size=1, max_size=20))
def test_data_weights_are_proportional_and_sum_to_one(sizes):
    weights = data_weights(sizes)
    assert weights.sum() == pytest.approx(1.0)
    assert np.allclose(weights * sum(sizes), sizes)


def test_the_weighted_average_of_equal_vectors_is_the_vector():
    v = np.array([1.0, -2.0, 3.0])
    assert np.allclose(weighted_average([v, v, v], data_weights([1, 2, 3])), v)


@given(st.integers(1, 12), st.integers(1, 50), st.integers(0, 2**31 - 1),
       st.sampled_from(["float32", "float64"]))
def test_the_weighted_average_is_the_plain_left_to_right_sum_to_the_bit(n, size, seed, dtype):
    # the sum runs in place; it must be the same floats as total = total + v * w, in order,
    # on torch tensors and numpy arrays alike, and leave its inputs untouched
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(size).astype(dtype) for _ in range(n)]
    weights = data_weights(rng.uniform(1, 100, n))
    for vectors in (arrays, [torch.from_numpy(a.copy()) for a in arrays]):
        kept = [v.copy() if isinstance(v, np.ndarray) else v.clone() for v in vectors]
        want = vectors[0] * float(weights[0])
        for v, w in zip(vectors[1:], weights[1:], strict=True):
            want = want + v * float(w)
        got = weighted_average(vectors, weights)
        assert got.dtype == want.dtype
        assert np.array_equal(np.asarray(got), np.asarray(want))
        assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(vectors, kept,
                                                                             strict=True))


def test_a_weighted_average_of_mixed_precisions_promotes_as_the_operators_do():
    low, high = np.ones(3, dtype=np.float32), np.full(3, 0.1, dtype=np.float64)
    got = weighted_average([low, high], [0.5, 0.5])
    assert got.dtype == np.float64
    assert np.array_equal(got, np.float32(0.5) * 1.0 + high * 0.5)


@given(st.integers(1, 30), st.floats(0.01, 0.2), st.floats(0.1, 3.0),
       st.floats(-1.0, 1.0), st.floats(-1.0, 1.0))
def test_option_ii_is_the_mean_gradient_of_the_local_work(steps, lr, curvature, c, c_i):
    # plain SGD with the constant correction c - c_i on f(y) = a/2 (y - b)^2, from x:
    # option II must give back the mean of the gradients a (y_s - b) the client computed
    a, b, x = curvature, 0.7, -1.3
    y, gradients = x, []
    for _ in range(steps):
        g = a * (y - b)
        gradients.append(g)
        y -= lr * (g + c - c_i)
    assert option_ii_control(c_i, c, x - y, steps, lr) == pytest.approx(np.mean(gradients),
                                                                       abs=1e-9)


def test_option_ii_rejects_no_work():
    with pytest.raises(ValueError, match="steps > 0"):
        option_ii_control(0.0, 0.0, 0.0, 0, 0.1)


@given(st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False),
                          st.floats(0, 1, allow_nan=False)), min_size=1, max_size=30))
def test_one_element_vectors_average_to_the_same_floats_as_arrays(pairs):
    """weighted_average's fast path for one-element vectors (the fake trainer's) gives the
    very floats of the array path."""
    from netfl.learn.average import weighted_average

    vectors = [np.array([v]) for v, _ in pairs]
    weights = [w for _, w in pairs]
    expected = vectors[0] * weights[0]
    for vector, weight in zip(vectors[1:], weights[1:], strict=True):
        expected += vector * weight
    got = weighted_average(vectors, weights)
    assert got.shape == (1,) and got.dtype == np.float64
    assert got[0] == expected[0] or (np.isnan(got[0]) and np.isnan(expected[0]))
