"""The weighted average every aggregation is made of (``netfl.algorithms.aggregation`` hands it
to the algorithms; the trainer spreads a large one over its worker threads with the same floats,
``parallel.weighted_average_in_parts``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def weighted_average(vectors: Sequence, weights: Sequence[float] | np.ndarray):
    """sum_i weights[i] * vectors[i]; weights are used as given (normalize them first)."""
    if len(vectors) == 0:
        raise ValueError("nothing to aggregate")
    if len(vectors) != len(weights):
        raise ValueError(f"{len(vectors)} vectors but {len(weights)} weights")
    first = vectors[0]
    if isinstance(first, np.ndarray) and first.shape == (1,) and first.dtype == np.float64 and (
            all(isinstance(v, np.ndarray) and v.shape == (1,) and v.dtype == np.float64
                for v in vectors)):
        # one-element vectors (the fake trainer's): the same IEEE operations on Python floats,
        # without a numpy call per vector
        total = float(first[0]) * float(weights[0])
        for vector, weight in zip(vectors[1:], weights[1:], strict=True):
            total += float(vector[0]) * float(weight)
        return np.array([total])
    total = vectors[0] * float(weights[0])  # a new array: adding into it in place is safe
    for vector, weight in zip(vectors[1:], weights[1:], strict=True):
        term = vector * float(weight)
        if term.dtype == total.dtype and term.shape == total.shape:
            total += term  # the same sum as total + term, without a new array per vector
        else:
            total = total + term  # (promotes, or broadcasts, as the operator does)
    return total
