"""Staleness weights of asynchronous aggregation: pure functions.

An update that started from the aggregator's model version ``tau`` and arrives when the
aggregator is at version ``t`` has staleness ``t - tau`` (0: nothing was aggregated meanwhile).
Its weight s(t - tau) scales its mixing rate, as FedAsync defines them ("Asynchronous Federated
Optimization", arXiv:1903.03934, Sec. 5.2):

* constant:   s(x) = 1
* polynomial: s_a(x) = (x + 1)^(-a)                       (FedBuff's 1 / sqrt(1 + x): a = 0.5)
* hinge:      s_{a,b}(x) = 1 if x <= b, else 1 / (a (x - b) + 1)

Every weight lies in (0, 1] and does not grow with staleness.
"""

from __future__ import annotations

import math


def staleness_weight(kind: str, staleness: int, a: float = 0.5, b: float = 0.0) -> float:
    """s(staleness) of the named function (see module); ``a`` and ``b`` its parameters.

    Raises:
        ValueError: a negative staleness (an update from a version the aggregator has not
            reached yet: a bookkeeping error), or an unknown kind.
    """
    if staleness < 0:
        raise ValueError(f"staleness {staleness} < 0: an update cannot start from a model "
                         f"version the aggregator has not reached")
    if kind == "constant":
        return 1.0
    if kind == "polynomial":
        return math.pow(staleness + 1.0, -a)
    if kind == "hinge":
        return 1.0 if staleness <= b else 1.0 / (a * (staleness - b) + 1.0)
    raise ValueError(f"unknown staleness function {kind!r}: constant, polynomial or hinge")


def time_hinge_weight(elapsed_s: float, hinge_s: float, a_per_s: float) -> float:
    """s(t) of a staleness measured in time (Razmi et al., "Ground-Assisted Federated Learning
    in LEO Satellite Constellations", IEEE WCL 2022, eq. (6)): 1 while ``elapsed_s`` <=
    ``hinge_s``, then 1 / (1 + ``a_per_s`` (elapsed_s - hinge_s)); in (0, 1], not growing with
    the time.

    Raises:
        ValueError: a negative time (an update from a version made after it arrived).
    """
    if elapsed_s < 0:
        raise ValueError(f"elapsed time {elapsed_s} s < 0: an update cannot start from a "
                         f"version made after it arrived")
    if elapsed_s <= hinge_s:
        return 1.0
    return 1.0 / (1.0 + a_per_s * (elapsed_s - hinge_s))
