"""Algorithm sections: one model per algorithm, chosen by ``kind``.

Fields common to every algorithm live in :class:`AlgorithmSpec`, so switching ``kind`` with
``--set algorithm.kind=...`` keeps a scenario valid as long as it sets only common fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from netfl.scenario.types import PositiveDuration, Section


class AlgorithmSpec(Section):
    """Shared by every algorithm.

    rounds: global rounds (cloud aggregations, or the algorithm's own notion of a round).
    local_steps: SGD steps a client takes per local training (E).
    lr: client learning rate (constant).
    momentum, weight_decay: of the clients' SGD (momentum buffers start at zero each local
        training).
    batch_size: mini-batch size per local step.
    eval_every: evaluate the global model every this many rounds (and after the last).
    idle_wait: when a server's round gets no update at all (every client unreachable or
        dropped), it waits this long before going on, so rounds are not burnt in no time.
    """

    rounds: PositiveInt = 100
    local_steps: PositiveInt = 5
    lr: PositiveFloat = 0.05
    momentum: float = Field(0.0, ge=0, lt=1)
    weight_decay: NonNegativeFloat = 0.0
    batch_size: PositiveInt = 32
    eval_every: PositiveInt = 1
    idle_wait: PositiveDuration = 1.0


class FedAvgSpec(AlgorithmSpec):
    """FedAvg (McMahan et al. 2017): the cloud trains with clients over the multi-hop network.

    clients_per_round: clients sampled per round without replacement (all when absent).
    """

    kind: Literal["fedavg"]
    clients_per_round: PositiveInt | None = None


class HierFedAvgSpec(AlgorithmSpec):
    """Hierarchical FedAvg (HierFAVG, Liu et al. 2020): ``local_steps`` local steps per edge round,
    edge aggregation every edge round, cloud aggregation every ``edge_rounds`` edge rounds."""

    kind: Literal["hier-fedavg"]
    edge_rounds: PositiveInt = 2


Algorithm = Annotated[FedAvgSpec | HierFedAvgSpec, Field(discriminator="kind")]
