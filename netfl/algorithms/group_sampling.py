"""Group sampling and global aggregation weights of Group-FEL (Section 5 and eqs. 4, 38, 39 of
../shared/seeds/001_69adb4b28a588ef3.txt); pure functions.

Probabilities are kept as logarithms: ESRCoV's w(x) = e^{x^2} of x = 1/CoV overflows a float
for CoV below about 0.04, and 1/p_g of eq. (4) does the same for the groups it starves.

    p_g = w(1/CoV(g)) / sum_g' w(1/CoV(g'))                                         (38)
        uniform: w = 1;  RCoV: w(x) = x;  SRCoV: w(x) = x^2;  ESRCoV: w(x) = e^{x^2}

Global aggregation (Line 15 of Algorithm 1 and its two replacements), over the sampled set S_t:
    biased      n_g / n_t,   n_t = sum over S_t of n_g                          (Line 15)
    unbiased    (1 / (p_g S)) (n_g / n),  n = all clients' data                     (4)
    normalized  the unbiased weights divided by their sum over S_t                  (39)
"""

from __future__ import annotations

import numpy as np

from netfl.algorithms.grouping import EPS, gumbel_top_k

SAMPLING_RULES = ("uniform", "rcov", "srcov", "esrcov")
AGGREGATION_RULES = ("biased", "unbiased", "normalized")


def log_sampling_weights(covs: np.ndarray, rule: str) -> np.ndarray:
    """log w(1/CoV(g)) for each group under ``rule`` (a CoV of 0 counts as 1e-12)."""
    x = 1.0 / np.maximum(np.asarray(covs, dtype=np.float64), EPS)
    if rule == "uniform":
        return np.zeros_like(x)
    if rule == "rcov":
        return np.log(x)
    if rule == "srcov":
        return 2.0 * np.log(x)
    if rule == "esrcov":
        return x ** 2
    raise ValueError(f"unknown sampling rule {rule!r}; known: {', '.join(SAMPLING_RULES)}")


def log_probabilities(log_weights: np.ndarray) -> np.ndarray:
    """log p_g of eq. (38): the log-weights normalized so that sum_g p_g = 1."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    top = log_weights.max()
    return log_weights - (top + np.log(np.exp(log_weights - top).sum()))


def sampling_probabilities(covs: np.ndarray, rule: str) -> np.ndarray:
    """p of eq. (38) (some entries may underflow to 0 under ESRCoV; use the logs to compute)."""
    return np.exp(log_probabilities(log_sampling_weights(covs, rule)))


def sample_groups(log_p: np.ndarray, count: int, rng: np.random.Generator) -> list[int]:
    """S_t: ``count`` distinct groups (all when there are fewer), drawn one after another with
    probability proportional to p_g among those not yet drawn; in index order."""
    return sorted(int(g) for g in gumbel_top_k(log_p, min(count, len(log_p)), rng))


def aggregation_weights(sizes: np.ndarray, log_p: np.ndarray, total_data: float,
                        rule: str) -> np.ndarray:
    """Weights of the sampled groups' models in x_{t+1} = sum_g weight_g x_g.

    sizes: n_g of the sampled groups; log_p: their log p_g; total_data: n (all clients).
    The unbiased weights of eq. (4) do not sum to 1 (only their expectation does) and blow up
    for groups of small p_g, as the paper warns; eq. (39) is the stabilized form.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    log_p = np.asarray(log_p, dtype=np.float64)
    if rule == "biased":
        return sizes / sizes.sum()
    if rule == "unbiased":
        with np.errstate(over="ignore"):
            return np.exp(np.log(sizes / total_data) - log_p - np.log(len(sizes)))
    if rule == "normalized":
        return np.exp(log_probabilities(np.log(np.maximum(sizes, EPS)) - log_p))
    raise ValueError(f"unknown aggregation rule {rule!r}; known: {', '.join(AGGREGATION_RULES)}")
