"""Dot products, products with a small matrix and lengths of short vectors, rounded alike on
every CPU (pure).

numpy hands ``a @ b`` and the length of a 1-D vector (``np.linalg.norm(v)``) to BLAS, whose
kernel is picked at run time for the CPU (OpenBLAS's SkylakeX on one machine, Haswell or Zen on
another) and fuses and orders the multiply-adds its own way. The same satellite positions then
gave slant ranges that differed in the last bit from one machine to the next, and with them a
link's delay and, now and then, a round's time. These functions multiply elementwise and add
the components in index order: each step is one correctly rounded IEEE operation, so the
result is the same wherever it runs.
"""

from __future__ import annotations

import numpy as np


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sum_k a[..., k] * b[..., k]`` over the last axis (broadcast), added in index order.

    The last axes must have the same length, at least 1."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape[-1] != b.shape[-1] or a.shape[-1] == 0:
        raise ValueError(f"dot: last axes of length {a.shape[-1]} and {b.shape[-1]}: they "
                         "must be equal and non-zero")
    total = a[..., 0] * b[..., 0]
    for k in range(1, a.shape[-1]):
        total = total + a[..., k] * b[..., k]
    return total


def times_columns(rows: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``rows @ matrix`` for ``rows`` (n, k) and ``matrix`` (k, m): (n, m), each entry added
    in index order over k (without the (n, m, k) array a broadcast :func:`dot` would make)."""
    rows = np.asarray(rows, dtype=float)
    matrix = np.asarray(matrix, dtype=float)
    if rows.ndim != 2 or matrix.ndim != 2 or rows.shape[1] != matrix.shape[0]:
        raise ValueError(f"times_columns: shapes {rows.shape} and {matrix.shape} do not "
                         "multiply as (n, k) @ (k, m)")
    total = rows[:, 0, None] * matrix[0]
    for k in range(1, matrix.shape[0]):
        total = total + rows[:, k, None] * matrix[k]
    return total


def length(a: np.ndarray) -> np.ndarray:
    """The Euclidean length over the last axis: ``sqrt(dot(a, a))`` (a float for a 1-D ``a``)."""
    return np.sqrt(dot(a, a))
