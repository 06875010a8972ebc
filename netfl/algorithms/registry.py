"""The explicit registry of algorithms: scenario ``algorithm.kind`` -> class. No name guessing."""

from __future__ import annotations

from netfl.algorithms.base import Algorithm
from netfl.algorithms.fedavg import FedAvg
from netfl.algorithms.hier_fedavg import HierFedAvg

ALGORITHMS: dict[str, type[Algorithm]] = {
    "fedavg": FedAvg,
    "hier-fedavg": HierFedAvg,
}


def algorithm_class(kind: str) -> type[Algorithm]:
    try:
        return ALGORITHMS[kind]
    except KeyError:
        raise ValueError(f"unknown algorithm {kind!r}; known: {', '.join(ALGORITHMS)}") from None
