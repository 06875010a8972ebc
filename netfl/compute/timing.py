"""Pure timing functions of the device model (see docs/models/compute.md).

Training one sample costs the model's counted training FLOPs per sample (forward and backward,
netfl.learn.models.train_flops_per_sample), so::

    train_time_s = train_flops_per_sample * samples / effective_flops * slowdown * jitter

where ``slowdown`` is a straggler's factor (1 for others) and ``jitter`` a lognormal factor with
median 1. Aggregating n updates of P parameters costs 2 * P * n FLOPs (one multiply-add each).
"""

from __future__ import annotations

import math

import numpy as np

AGGREGATE_FLOPS_PER_PARAM = 2.0


def train_time_s(train_flops_per_sample: float, samples: int, effective_flops: float,
                 slowdown: float = 1.0, jitter: float = 1.0) -> float:
    """Simulated seconds to train on ``samples`` samples, ``train_flops_per_sample`` FLOPs each
    (forward and backward)."""
    if effective_flops <= 0:
        raise ValueError("effective_flops must be positive")
    flops = train_flops_per_sample * samples
    return flops / effective_flops * slowdown * jitter


def aggregation_time_s(num_params: int, n_updates: int, effective_flops: float) -> float:
    """Simulated seconds for a weighted average of ``n_updates`` vectors of ``num_params``."""
    return AGGREGATE_FLOPS_PER_PARAM * num_params * n_updates / effective_flops


def jitter_factor(rng: np.random.Generator, sigma: float) -> float:
    """A lognormal factor exp(N(0, sigma^2)): median 1, mean exp(sigma^2 / 2). No draw at 0."""
    return 1.0 if sigma <= 0 else math.exp(rng.normal(0.0, sigma))


def pick_stragglers(rng: np.random.Generator, n: int, fraction: float) -> np.ndarray:
    """A boolean mask with exactly round(fraction * n) stragglers among ``n`` nodes."""
    mask = np.zeros(n, dtype=bool)
    count = int(round(fraction * n))
    if count:
        mask[rng.choice(n, size=count, replace=False)] = True
    return mask


def group_overhead_s(group_size: int, quadratic_s: float, linear_s: float,
                     constant_s: float = 0.0) -> float:
    """O_g(|g|) of Group-FEL's eq. (5): one client's cost of a group operation (secure
    aggregation, backdoor detection, ...) in one group round, quadratic in the group size:
    quadratic_s |g|^2 + linear_s |g| + constant_s seconds."""
    return quadratic_s * group_size ** 2 + linear_s * group_size + constant_s


# Extra vector work of a local solver beyond plain SGD, in FLOPs per parameter (our reading of
# the update rules; docs/models/group-fel.md):
#   FedProx (Li et al. 2020) adds mu (x - x_g) to every gradient: a subtraction, a scaling and an
#     addition per parameter and step;
#   SCAFFOLD (Karimireddy et al. 2020) adds the correction c - c_i (formed once) to every
#     gradient: an addition per parameter and step; and once per local training updates
#     c_i <- c_i - c + (x_g - y_i) / (k lr): two subtractions, a scaling and an addition.
PROX_FLOPS_PER_PARAM_STEP = 3.0
CORRECTION_FLOPS_PER_PARAM_STEP = 1.0
CONTROL_UPDATE_FLOPS_PER_PARAM = 4.0


def solver_overhead_s(num_params: int, steps: int, flops_per_param_step: float,
                      effective_flops: float, slowdown: float = 1.0,
                      flops_per_param_once: float = 0.0) -> float:
    """Simulated seconds of a local solver's extra vector work on a model of ``num_params``:
    ``flops_per_param_step`` FLOPs per parameter in each of ``steps`` SGD steps, plus
    ``flops_per_param_once`` per parameter once per local training."""
    if effective_flops <= 0:
        raise ValueError("effective_flops must be positive")
    flops = num_params * (flops_per_param_step * steps + flops_per_param_once)
    return flops / effective_flops * slowdown
