"""Group sampling and global aggregation weights of Group-FEL (Section 5 and eqs. 4, 38, 39 of
Liu et al., "Group Formation and Sampling in Group-Based Hierarchical Federated Learning", IEEE
Transactions on Cloud Computing, 2024); pure functions.

Probabilities are kept as logarithms: ESRCoV's w(x) = e^{x^2} of x = 1/CoV overflows a float
for CoV below about 0.04, and 1/p_g of eq. (4) does the same for the groups it starves.

    p_g = w(1/CoV(g)) / sum_g' w(1/CoV(g'))                                         (38)
        uniform: w = 1;  RCoV: w(x) = x;  SRCoV: w(x) = x^2;  ESRCoV: w(x) = e^{x^2}

Global aggregation (Line 15 of Algorithm 1 and its two replacements), over the sampled set S_t:
    biased      n_g / n_t,   n_t = sum over S_t of n_g                          (Line 15)
    unbiased    (n_g / n) / pi_g,  n = all clients' data                            (4)
    normalized  the unbiased weights divided by their sum over S_t                  (39)

pi_g is the probability that g is in S_t. Eq. (4) writes p_g S for it, which is exact only for
S = 1 (or uniform p): S_t is a set of S distinct groups drawn one after another proportional to
p (successive sampling, ``sample_groups``), and then pi_g is not S p_g (it is at most 1, for a
start). With p_g S the weights of eq. (4) summed to about 1.09 on average instead of 1 in the
paper's setting; with pi_g (Horvitz-Thompson) E[sum_{g in S_t} w_g x_g] = sum_g (n_g / n) x_g
exactly. ``log_inclusion_probabilities`` computes pi_g (see there for how).
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
    probability proportional to p_g among those not yet drawn; in index order. Groups of
    p_g = 0 (a group without data under RCoV or SRCoV) are never drawn, so S_t is smaller where
    fewer than ``count`` groups have p_g > 0."""
    log_p = np.asarray(log_p, dtype=np.float64)
    possible = int(np.isfinite(log_p).sum())
    return sorted(int(g) for g in gumbel_top_k(log_p, min(count, possible), rng))


def log_inclusion_probabilities(log_p: np.ndarray, count: int,
                                step: float = 0.1) -> np.ndarray:
    """log pi_g: the probability that group g is among ``count`` distinct groups drawn one
    after another proportional to p (``sample_groups``); sum_g pi_g = min(count, G).

    Exact for count 1 (pi = p), count >= G (pi = 1) and uniform p (pi = count / G). Otherwise by
    the exponential-race form of successive sampling (as in Kool et al. 2020, "Estimating
    gradients for discrete random variables by sampling without replacement"): group j arrives
    at T_j ~ Exp(p_j) and the first ``count`` arrivals are the sample, so

        pi_g = integral_0^inf p_g e^{-p_g t} P(fewer than count of the others arrive by t) dt,

    the probability taken by dynamic programming over the others (a Poisson-binomial count,
    kept below ``count``; prefix and suffix tables leave g out without division). In s = ln t
    the integrand is a product of Gumbel-type terms, smooth on a unit scale, and the trapezoid
    rule with ``step`` 0.1 is accurate to about machine precision (the error of the rule falls
    like exp(-pi^2 / step) for such functions). The grid runs from s = -36 - ln G (below it the
    integrand is under e^-34 of any pi_g) to 8 past the arrival of the (count+1)-th largest p
    (after it fewer than ``count`` others are left unarrived with probability under e^-2980).
    pi_g is returned as log p_g + log(integral), so groups with p_g far below float range keep
    an accurate log pi_g. Cost: O(G count) per grid point.
    """
    log_p = np.asarray(log_p, dtype=np.float64)
    n_groups = len(log_p)
    possible = np.isfinite(log_p)
    count = min(int(count), n_groups)
    if count >= possible.sum():  # every group of p_g > 0 is drawn (sample_groups), no other
        return np.where(possible, 0.0, -np.inf)
    if not possible.all():  # groups of p_g = 0 are never drawn: pi_g = 0
        out = np.full(n_groups, -np.inf)
        out[possible] = log_inclusion_probabilities(log_p[possible], count, step)
        return out
    log_w = log_p - log_p.max()
    if count == 1:
        return log_probabilities(log_w)
    if np.all(log_w == 0.0):
        return np.full(n_groups, np.log(count / n_groups))
    threshold = np.sort(log_w)[::-1][count]  # the (count+1)-th largest
    grid = np.arange(-36.0 - np.log(n_groups), -threshold + 8.0 + step, step)
    integral = np.zeros(n_groups)
    chunk = max(1, 2_000_000 // ((n_groups + 1) * count))
    for start in range(0, len(grid), chunk):
        s = grid[start:start + chunk]
        rates = np.exp(s[None, :] + log_w[:, None])            # w_j t, groups x points
        arrived = -np.expm1(-rates)                             # P(T_j <= t)
        others = _below_count_without_each(arrived, count)      # P(N_{-g}(t) < count)
        integral += step * (np.exp(s[None, :] - rates) * others).sum(axis=1)
    return np.minimum(log_w + np.log(integral), 0.0)


def _below_count_without_each(arrived: np.ndarray, count: int) -> np.ndarray:
    """For each row g and column (time point): P(fewer than ``count`` of the other rows'
    independent events happen), the events happening with probabilities ``arrived``."""
    n, points = arrived.shape

    def step(dist: np.ndarray, q: np.ndarray) -> np.ndarray:
        out = dist * (1.0 - q)[:, None]
        out[:, 1:] += dist[:, :-1] * q[:, None]
        return out

    prefix = np.zeros((n + 1, points, count))
    prefix[0, :, 0] = 1.0
    for j in range(n):
        prefix[j + 1] = step(prefix[j], arrived[j])
    result = np.empty((n, points))
    suffix = np.zeros((points, count))
    suffix[:, 0] = 1.0
    for j in range(n - 1, -1, -1):
        # P(a from before j, b from after j, a + b < count) = sum_a prefix_a * P(b < count - a)
        below = np.cumsum(suffix, axis=1)[:, ::-1]
        result[j] = (prefix[j] * below).sum(axis=1)
        suffix = step(suffix, arrived[j])
    return result


def aggregation_weights(sizes: np.ndarray, log_pi: np.ndarray, total_data: float,
                        rule: str) -> np.ndarray:
    """Weights of the sampled groups' models in x_{t+1} = sum_g weight_g x_g.

    sizes: n_g of the sampled groups; log_pi: their log inclusion probabilities pi_g
    (``log_inclusion_probabilities``; eq. 4's p_g S); total_data: n (all clients).
    The unbiased weights of eq. (4) do not sum to 1 (only their expectation does) and blow up
    for groups of small pi_g, as the paper warns; eq. (39) is the stabilized form.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    log_pi = np.asarray(log_pi, dtype=np.float64)
    if rule == "biased":
        return sizes / sizes.sum()
    if rule == "unbiased":
        with np.errstate(over="ignore"):
            return np.exp(np.log(sizes / total_data) - log_pi)
    if rule == "normalized":
        return np.exp(log_probabilities(np.log(np.maximum(sizes, EPS)) - log_pi))
    raise ValueError(f"unknown aggregation rule {rule!r}; known: {', '.join(AGGREGATION_RULES)}")
