"""Dot products and lengths summed in index order: the values numpy's own elementwise
operations give, whatever BLAS the machine has."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from netfl.world.vectors import dot, length, times_columns

finite = st.floats(-1e7, 1e7, allow_nan=False, allow_infinity=False)


def test_dot_adds_the_products_in_index_order():
    a = np.array([1e16, 1.0, -1e16])
    b = np.ones(3)
    # (1e16 + 1) rounds to 1e16, so the sum in order is 0; another order gives 1
    assert dot(a, b) == 0.0
    assert dot(a[::-1], b) == 0.0 and dot(a[[0, 2, 1]], b) == 1.0


@given(arrays(float, (5, 3), elements=finite), arrays(float, (3, 4), elements=finite))
def test_times_columns_is_each_row_dotted_with_each_column(rows, matrix):
    got = times_columns(rows, matrix)
    want = np.array([[dot(r, c) for c in matrix.T] for r in rows])
    assert np.array_equal(got, want)
    np.testing.assert_allclose(got, rows @ matrix, rtol=1e-9, atol=1e-9 * (1 + abs(got).max()))


@given(arrays(float, (4, 2, 3), elements=finite))
def test_length_is_the_euclidean_norm_over_the_last_axis(points):
    np.testing.assert_allclose(length(points), np.linalg.norm(points, axis=-1), rtol=1e-12)
    assert length(points[0, 0]).shape == ()


def test_mismatched_shapes_are_named():
    with pytest.raises(ValueError, match="last axes of length 3 and 2"):
        dot(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(2, 3\)"):
        times_columns(np.ones((2, 3)), np.ones((2, 3)))
