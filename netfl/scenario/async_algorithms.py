"""The asynchronous algorithms' sections: FedAsync and FedBuff (netfl/algorithms/fedasync.py,
fedbuff.py), the staleness function they weight updates by, and hierarchical FL with an
aggregation policy per tier (netfl/algorithms/hier_async.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.kinds import builtin_algorithm
from netfl.scenario.types import PositiveDuration, Section


class StalenessSpec(Section):
    """s(staleness), as FedAsync defines it ("Asynchronous Federated Optimization",
    arXiv:1903.03934): ``constant`` 1; ``polynomial`` (staleness + 1)^-a (FedBuff's
    1/sqrt(1 + staleness): a = 0.5); ``hinge`` 1 up to b, then 1 / (a (staleness - b) + 1).

    offset: added to the staleness (the aggregator's versions since the update left it: 0 for
    one from its latest model) before s is applied; null: the rule's own. FedAsync's Algorithm 1
    applies s to t - tau at its t-th update for a worker that got version tau, 1 for an update
    from the latest model: a mix's offset is 1 (Async-HFL's code counts the same). FedBuff
    counts 0: a buffer's, and a deadline's carried updates', offset is 0."""

    kind: Literal["constant", "polynomial", "hinge"] = "polynomial"
    a: PositiveFloat = 0.5
    b: NonNegativeFloat = 0.0
    offset: NonNegativeInt | None = None


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
    SATELLITE_CLIENTS = True
    USES_CLOUD = True
    ASYNCHRONOUS = True
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


class SyncPolicy(Section):
    """The tier's barrier: the aggregator waits for every source it started (or its failure),
    then averages their models weighted by data."""

    policy: Literal["sync"] = "sync"


class DeadlinePolicy(Section):
    """Semi-synchronous: the aggregator waits for the sources it started until ``deadline``
    simulated seconds have passed (or all have answered) and averages what arrived. ``late``:
    ``drop`` cancels the sources still under way (counted as cancelled); ``carry`` lets them
    finish, and their updates go into the aggregator's next step weighted by ``staleness``
    (s of the versions the aggregator moved on meanwhile)."""

    policy: Literal["deadline"]
    deadline: PositiveDuration
    late: Literal["drop", "carry"] = "drop"
    staleness: StalenessSpec = StalenessSpec(kind="polynomial", a=0.5)


class BufferedPolicy(Section):
    """FedBuff's rule at the tier: every ``buffer_size`` (K) arrivals,
    x <- x + ``server_lr`` x (sum of s(staleness_i) Delta_i) / K. ``late``: as an async
    tier's (AsyncPolicy)."""

    policy: Literal["buffered"]
    buffer_size: PositiveInt = 2
    server_lr: PositiveFloat = 1.0
    staleness: StalenessSpec = StalenessSpec(kind="polynomial", a=0.5)
    late: Literal["drop", "carry"] | None = None


class AsyncPolicy(Section):
    """FedAsync's rule at the tier: each arrival is mixed in as it arrives,
    x <- (1 - a) x + a x_new with a = ``alpha`` x s(staleness + offset) (offset 1 by default:
    FedAsync's t - tau); an update staler than ``max_staleness`` is dropped (counted).

    At the edge tier (buffered or async), ``late`` says what becomes of the clients still
    training when an edge has made its ``edge_rounds`` versions and sends its model up:
    ``drop`` (the default: cancelled, counted; Async-HFL's gateways) or ``carry`` (they finish,
    and the edge's next cycle takes their updates with their staleness). At the cloud every
    edge loops on its own and nothing is left under way: ``late`` is not set there."""

    policy: Literal["async"]
    alpha: float = Field(0.6, gt=0, le=1)
    staleness: StalenessSpec = StalenessSpec(kind="polynomial", a=0.5)
    max_staleness: NonNegativeInt | None = None
    late: Literal["drop", "carry"] | None = None


TierPolicy = Annotated[SyncPolicy | DeadlinePolicy | BufferedPolicy | AsyncPolicy,
                       Field(discriminator="policy")]


@builtin_algorithm
class HierAsyncSpec(AlgorithmSpec):
    """Hierarchical FL (clients -> edge servers -> cloud) with an aggregation policy for each
    tier (netfl/algorithms/hier_async.py): ``edge`` says how an edge server takes its clients'
    updates, ``cloud`` how the cloud takes its edges'. Both ``sync`` is hierarchical FedAvg.

    rounds: cloud model versions (T): the run ends at version T.
    edge_rounds: edge model versions an edge server makes between taking the cloud's model
        and sending its own up (E: sync or deadline edge rounds, mixes or buffer steps).
    edges_per_round: edges started each cloud round (sync or deadline cloud; all when null).
    clients_per_round: clients started each edge round (sync or deadline edge; all when null).
    concurrency: clients of one edge training at once (buffered or async edge; all its
        clients when null).
    rho: the clients' proximal weight: local steps on f(x) + rho/2 ||x - x_0||^2 from the
        model x_0 they downloaded (FedAsync's and Async-HFL's; 0: plain SGD).
    """

    kind: Literal["hier-async"]
    IMPLEMENTATION = "netfl.algorithms.hier_async:HierAsync"
    WORLDS = ("edge", "iov", "leo")
    SATELLITE_CLIENTS = True
    USES_CLOUD = True
    ASYNCHRONOUS = True
    edge_rounds: PositiveInt = 2
    edges_per_round: PositiveInt | None = None
    clients_per_round: PositiveInt | None = None
    concurrency: PositiveInt | None = None
    rho: NonNegativeFloat = 0.0
    edge: TierPolicy = SyncPolicy()
    cloud: TierPolicy = SyncPolicy()

    @field_validator("edge", "cloud", mode="before")
    @classmethod
    def _policy_by_name(cls, value):
        """``edge: async`` for ``edge: {policy: async}``."""
        return {"policy": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _late_at_the_edge_only(self):
        if self.cloud.policy in ("buffered", "async") and self.cloud.late is not None:
            raise ValueError(f"algorithm.cloud.late: the cloud's {self.cloud.policy} policy "
                             f"has every edge loop on its own, nothing is left under way; set "
                             f"late on algorithm.edge (or a deadline cloud)")
        if self.edge.policy in ("buffered", "async") and self.edge.late is None:
            self.edge = self.edge.model_copy(update={"late": "drop"})
        return self


@builtin_algorithm
class AsyncHflSpec(HierAsyncSpec):
    """Async-HFL ("Async-HFL: Efficient and Robust Asynchronous Federated Learning in
    Hierarchical IoT Networks", IoTDI 2023, arXiv:2301.06646), its aggregation: FedAsync's mix
    at the gateways (edge servers) and at the cloud, x <- (1 - a) x + a x_new with
    a = ``alpha`` x (1 + staleness)^-0.5; a gateway run takes ``edge_rounds`` device updates
    (K_g), then sends its model up and drops the devices still training. Defaults are the
    authors' code's (alpha 0.9 at both tiers, K_g = 20, rho 0.1). Devices are drawn uniformly
    (its device selection and device-gateway association modules are not part of netfl:
    docs/models/async.md)."""

    kind: Literal["async-hfl"]
    edge_rounds: PositiveInt = 20
    rho: NonNegativeFloat = 0.1
    edge: AsyncPolicy = AsyncPolicy(policy="async", alpha=0.9, late="drop")
    cloud: AsyncPolicy = AsyncPolicy(policy="async", alpha=0.9)
