"""The asynchronous algorithms' sections: FedAsync and FedBuff (netfl/algorithms/fedasync.py,
fedbuff.py), and the staleness function they weight updates by."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.kinds import builtin_algorithm
from netfl.scenario.types import Section


class StalenessSpec(Section):
    """s(staleness), as FedAsync defines it ("Asynchronous Federated Optimization",
    arXiv:1903.03934): ``constant`` 1; ``polynomial`` (staleness + 1)^-a (FedBuff's
    1/sqrt(1 + staleness): a = 0.5); ``hinge`` 1 up to b, then 1 / (a (staleness - b) + 1)."""

    kind: Literal["constant", "polynomial", "hinge"] = "polynomial"
    a: PositiveFloat = 0.5
    b: NonNegativeFloat = 0.0


class AsyncSpec(AlgorithmSpec):
    """Shared by the asynchronous algorithms: the cloud serves the clients directly, over the
    world's multi-hop routes, as FedAvg's does.

    rounds: server model versions (T): the run ends at version T.
    concurrency: clients training at once (C): each that finishes, arrived or not, is
        replaced by a client drawn uniformly from the idle ones present (the sampling
        stream).
    eval_every: evaluate the server's model every this many versions (the target is checked on
        every version).
    """

    WORLDS = ("edge", "iov", "leo")
    USES_CLOUD = True
    rounds: PositiveInt = 200
    concurrency: PositiveInt = 10


@builtin_algorithm
class FedAsyncSpec(AsyncSpec):
    """FedAsync ("Asynchronous Federated Optimization", arXiv:1903.03934, Algorithm 1): the
    server mixes each arriving model into its own, x <- (1 - alpha_t) x + alpha_t x_new with
    alpha_t = ``alpha`` x s(staleness); a client trains ``local_steps`` (H) steps on
    f(x) + ``rho``/2 ||x - x_t||^2 from the model x_t it downloaded; an update staler than
    ``max_staleness`` is dropped (counted), none when null."""

    kind: Literal["fedasync"]
    IMPLEMENTATION = "netfl.algorithms.fedasync:FedAsync"
    alpha: float = Field(0.6, gt=0, le=1)
    staleness: StalenessSpec = StalenessSpec(kind="polynomial", a=0.5)
    rho: NonNegativeFloat = 0.0
    max_staleness: NonNegativeInt | None = None


@builtin_algorithm
class FedBuffSpec(AsyncSpec):
    """FedBuff ("Federated Learning with Buffered Asynchronous Aggregation", AISTATS 2022,
    Algorithm 1): clients send their update Delta_i = x_i - x_tau; the server adds each, scaled
    by s(staleness), to a buffer and, every ``buffer_size`` (K) arrivals, steps
    x <- x + ``server_lr`` (eta_g) x buffer / K, a new version."""

    kind: Literal["fedbuff"]
    IMPLEMENTATION = "netfl.algorithms.fedbuff:FedBuff"
    buffer_size: PositiveInt = 10
    server_lr: PositiveFloat = 1.0
    staleness: StalenessSpec = StalenessSpec(kind="polynomial", a=0.5)
