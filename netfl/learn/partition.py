"""Splitting a training set over clients. Every partition exposes its client-by-label counts.

* iid: a random permutation cut into equal parts.
* dirichlet(alpha): each client draws label proportions q ~ Dir(alpha * 1_K) and fills an equal
  share of the data from the class pools by q. Where a pool runs dry, the client's remaining
  samples are drawn from the classes left, in proportion to q restricted to them. Clients fill in
  a random order, so no client is systematically left the leftovers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.scenario.sections import DirichletPartition, IidPartition


@dataclass(frozen=True)
class Partition:
    """client_indices[i]: training-set indices of client i; counts[i, k]: its samples of class k."""

    client_indices: list[np.ndarray]
    counts: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return self.counts.sum(axis=1)


def make_partition(spec, labels: np.ndarray, n_clients: int, num_classes: int,
                   rng: np.random.Generator) -> Partition:
    """Dispatch on the scenario's ``data.partition`` kind."""
    if isinstance(spec, IidPartition):
        return partition_iid(labels, n_clients, num_classes, rng)
    if isinstance(spec, DirichletPartition):
        return partition_dirichlet(labels, n_clients, num_classes, spec.alpha, rng)
    raise ValueError(f"unknown partition {spec!r}")


def _from_indices(indices: list[np.ndarray], labels: np.ndarray, num_classes: int) -> Partition:
    counts = np.stack([np.bincount(labels[i], minlength=num_classes) for i in indices])
    return Partition([np.sort(i) for i in indices], counts)


def _check_enough(total: int, n_clients: int, per_client: int) -> None:
    if total < n_clients * per_client:
        raise ValueError(f"{total} training samples cannot give {n_clients} clients "
                         f"{per_client} samples each; use fewer clients or a larger data set")


def partition_iid(labels: np.ndarray, n_clients: int, num_classes: int,
                  rng: np.random.Generator) -> Partition:
    _check_enough(len(labels), n_clients, 1)
    order = rng.permutation(len(labels))
    return _from_indices(list(np.array_split(order, n_clients)), labels, num_classes)


def partition_dirichlet(labels: np.ndarray, n_clients: int, num_classes: int, alpha: float,
                        rng: np.random.Generator) -> Partition:
    _check_enough(len(labels), n_clients, 1)
    size = len(labels) // n_clients
    pools = [rng.permutation(np.flatnonzero(labels == k)) for k in range(num_classes)]
    left = np.array([len(p) for p in pools])
    counts = np.zeros((n_clients, num_classes), dtype=np.int64)
    for client in rng.permutation(n_clients):
        q = rng.dirichlet(np.full(num_classes, alpha))
        need = size
        while need > 0:
            weights = np.where(left > 0, q, 0.0)
            if weights.sum() <= 0:  # q is ~0 on every class left: fall back to what is left
                weights = left.astype(float)
            draw = np.minimum(rng.multinomial(need, weights / weights.sum()), left)
            counts[client] += draw
            left -= draw
            need -= int(draw.sum())
    taken = np.zeros(num_classes, dtype=np.int64)
    indices = []
    for client in range(n_clients):
        parts = []
        for k in range(num_classes):
            parts.append(pools[k][taken[k]:taken[k] + counts[client, k]])
            taken[k] += counts[client, k]
        indices.append(np.concatenate(parts))
    return _from_indices(indices, labels, num_classes)
