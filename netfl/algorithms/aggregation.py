"""Pure aggregation maths, shared by every algorithm (works on torch tensors and numpy arrays)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# sum_i weights[i] * vectors[i]: every algorithm's aggregate (in learn, where the trainer spreads a
# large one over its threads with the same floats)
from netfl.learn.average import weighted_average as weighted_average


def data_weights(sizes: Sequence[float] | np.ndarray) -> np.ndarray:
    """Weights proportional to data sizes, summing to 1 (empty in, empty out)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if sizes.size == 0:
        return sizes
    total = sizes.sum()
    if total <= 0:
        raise ValueError("data sizes must have a positive sum")
    return sizes / total


def option_ii_control(c_i, c, displacement, steps: int, lr: float):
    """SCAFFOLD's control-variate update, option II (Karimireddy et al. 2020, Alg. 1 line 12):
    c_i+ = c_i - c + displacement / (steps * lr), where ``displacement`` is the sum of
    start - result over the client's local work at constant rate ``lr`` and constant
    correction c - c_i: the mean of the gradients it computed in its ``steps`` SGD steps."""
    if steps <= 0 or lr <= 0:
        raise ValueError(f"option II needs steps > 0 and lr > 0, got {steps} and {lr}")
    return c_i - c + displacement / (steps * lr)
