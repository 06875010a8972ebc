"""Splitting a training set over clients. Every partition exposes its client-by-label counts.

Single-level (every client alike):

* iid: shuffle, then cut into parts of the client sizes;
* dirichlet(alpha): each client draws label proportions q ~ Dir(alpha * 1_K) and fills its size
  from the class pools by q (where a pool runs dry, from the classes left, in proportion to q);
  clients fill in a random order so none is systematically left the leftovers;
* labels(p): each client holds p distinct labels (labels dealt in turn over a random permutation,
  so every label is held by about N*p/K clients); each label's samples are split equally among
  the clients that hold it (McMahan et al.'s shards, with exactly p labels per client).

Two-level, for HFL (``groups`` are the clients of each edge server):

* edge-labels(p_g, p_c): each edge holds p_g labels (dealt as above over edges), each label's
  samples split equally among the edges holding it; inside each edge, each client holds p_c of
  its edge's labels, split the same way. CHFL's intra-/inter-edge heterogeneity (p_c, p_g) and
  HFL-PWP's "group non-i.i.d." (k classes per group, 2 per worker) are both this scheme.
* edge-iid-dirichlet(alpha): the data is split iid over edges (in proportion to their client
  counts), then each edge's share is split over its clients by dirichlet(alpha): iid across
  edges, non-iid inside each (Fed-CHS's "partial data heterogeneity", its Fig. 4).
* per-edge: split iid over edges likewise, then each edge's share by its own single-level
  scheme (HFL-PWP's Table 5: one group iid, the other non-iid).

Client sizes for iid and dirichlet: equal (all the data, split evenly) or drawn from a normal
distribution clipped to [min, max] (Group-FEL: 20 to 200 per client).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from netfl.extensions import call_extension
from netfl.sim.csvfile import csv_rows


@dataclass(frozen=True)
class Partition:
    """client_indices[i]: training-set indices of client i; counts[i, k]: its samples of class k."""

    client_indices: list[np.ndarray]
    counts: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return self.counts.sum(axis=1)


# ------------------------------------------------------------------------------- sizes


def equal_sizes(total: int, n_clients: int) -> np.ndarray:
    """Split ``total`` samples as evenly as possible (sizes differ by at most one)."""
    if total < n_clients:
        raise ValueError(f"{total} training samples cannot give {n_clients} clients a sample "
                         f"each; use fewer clients or a larger data set")
    return np.array([total // n_clients + (1 if i < total % n_clients else 0)
                     for i in range(n_clients)])


def normal_sizes(n_clients: int, mean: float, std: float, low: int, high: int, total: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Sizes ~ round(N(mean, std)) clipped to [low, high]; they must fit in ``total``."""
    sizes = np.clip(np.rint(rng.normal(mean, std, n_clients)), low, high).astype(np.int64)
    if sizes.sum() > total:
        raise ValueError(f"client sizes drawn from N({mean}, {std}) clipped to [{low}, {high}] "
                         f"add up to {sizes.sum()} samples but the training set has {total}")
    return sizes


# ------------------------------------------------------------------------ single level


def _from_indices(indices: list[np.ndarray], labels: np.ndarray, num_classes: int) -> Partition:
    counts = np.stack([np.bincount(labels[i], minlength=num_classes) for i in indices])
    return Partition([np.sort(i) for i in indices], counts)


def partition_iid(labels: np.ndarray, sizes: np.ndarray, num_classes: int,
                  rng: np.random.Generator) -> Partition:
    """A random permutation cut into consecutive parts of the given sizes."""
    order = rng.permutation(len(labels))
    cuts = np.cumsum(sizes)[:-1]
    return _from_indices(list(np.split(order[: int(np.sum(sizes))], cuts)), labels, num_classes)


def dirichlet_counts(pool_counts: np.ndarray, sizes: np.ndarray, alpha: float,
                     rng: np.random.Generator) -> np.ndarray:
    """Client-by-label counts: each client's size filled from the pools by q ~ Dir(alpha)."""
    num_classes = len(pool_counts)
    left = pool_counts.astype(np.int64).copy()
    if sizes.sum() > left.sum():
        raise ValueError(f"{sizes.sum()} samples requested from a pool of {left.sum()}")
    counts = np.zeros((len(sizes), num_classes), dtype=np.int64)
    for client in rng.permutation(len(sizes)):
        q = rng.dirichlet(np.full(num_classes, alpha))
        need = int(sizes[client])
        while need > 0:
            weights = np.where(left > 0, q, 0.0)
            if weights.sum() <= 0:  # q is ~0 on every class left: take what is left
                weights = left.astype(float)
            draw = np.minimum(rng.multinomial(need, weights / weights.sum()), left)
            counts[client] += draw
            left -= draw
            need -= int(draw.sum())
    return counts


def _deal(pools: list[np.ndarray], counts: np.ndarray) -> list[np.ndarray]:
    """Give client i counts[i, k] samples of each class k, taking pools[k] in order."""
    taken = np.zeros(len(pools), dtype=np.int64)
    out = []
    for row in counts:
        parts = []
        for k, count in enumerate(row):
            parts.append(pools[k][taken[k]:taken[k] + count])
            taken[k] += count
        out.append(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))
    return out


def _class_pools(indices: np.ndarray, labels: np.ndarray, num_classes: int,
                 rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.permutation(indices[labels[indices] == k]) for k in range(num_classes)]


def partition_dirichlet(labels: np.ndarray, sizes: np.ndarray, num_classes: int, alpha: float,
                        rng: np.random.Generator,
                        indices: np.ndarray | None = None) -> Partition:
    """Dirichlet(alpha) label skew over ``indices`` (default: the whole training set)."""
    indices = np.arange(len(labels)) if indices is None else indices
    pools = _class_pools(indices, labels, num_classes, rng)
    counts = dirichlet_counts(np.array([len(p) for p in pools]), np.asarray(sizes), alpha, rng)
    return _from_indices(_deal(pools, counts), labels, num_classes)


def deal_labels(n_holders: int, per_holder: int, label_set: np.ndarray,
                rng: np.random.Generator) -> list[np.ndarray]:
    """Give each of ``n_holders`` ``per_holder`` distinct labels from ``label_set``, dealt in
    turn over a random permutation so that every label is used about equally often."""
    if not 1 <= per_holder <= len(label_set):
        raise ValueError(f"cannot give {per_holder} distinct labels from {len(label_set)}")
    order = rng.permutation(label_set)
    return [order[(np.arange(per_holder) + h * per_holder) % len(order)]
            for h in range(n_holders)]


def split_by_labels(indices: np.ndarray, labels: np.ndarray, holders: list[np.ndarray],
                    rng: np.random.Generator) -> list[np.ndarray]:
    """Split ``indices`` so that holder h gets an equal share of every label in holders[h]
    (each label's samples divided evenly among the holders of that label)."""
    owners: dict[int, list[int]] = {}
    for h, held in enumerate(holders):
        for label in held:
            owners.setdefault(int(label), []).append(h)
    parts: list[list[np.ndarray]] = [[] for _ in holders]
    for label, who in owners.items():
        pool = rng.permutation(indices[labels[indices] == label])
        for h, chunk in zip(who, np.array_split(pool, len(who)), strict=True):
            parts[h].append(chunk)
    return [np.concatenate(p) if p else np.zeros(0, dtype=np.int64) for p in parts]


def partition_labels(labels: np.ndarray, n_clients: int, num_classes: int, per_client: int,
                     rng: np.random.Generator) -> Partition:
    """Each client holds exactly ``per_client`` labels."""
    held = deal_labels(n_clients, per_client, np.arange(num_classes), rng)
    indices = split_by_labels(np.arange(len(labels)), labels, held, rng)
    return _from_indices(indices, labels, num_classes)


# --------------------------------------------------------------------------- two level


def _assemble(groups: list[list[int]], per_group: list[list[np.ndarray]], labels: np.ndarray,
              num_classes: int) -> Partition:
    n_clients = sum(len(g) for g in groups)
    out: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * n_clients
    for members, parts in zip(groups, per_group, strict=True):
        for client, part in zip(members, parts, strict=True):
            out[client] = part
    return _from_indices(out, labels, num_classes)


def partition_edge_labels(labels: np.ndarray, groups: list[list[int]], num_classes: int,
                          per_edge: int, per_client: int,
                          rng: np.random.Generator) -> Partition:
    """p_g = ``per_edge`` labels per edge, p_c = ``per_client`` of them per client."""
    if per_client > per_edge:
        raise ValueError(f"a client cannot hold {per_client} labels when its edge holds "
                         f"{per_edge}")
    edge_labels = deal_labels(len(groups), per_edge, np.arange(num_classes), rng)
    edge_pools = split_by_labels(np.arange(len(labels)), labels, edge_labels, rng)
    per_group = []
    for members, held, pool in zip(groups, edge_labels, edge_pools, strict=True):
        client_labels = deal_labels(len(members), per_client, np.sort(held), rng)
        per_group.append(split_by_labels(pool, labels, client_labels, rng))
    return _assemble(groups, per_group, labels, num_classes)


def _edge_pools(n_samples: int, groups: list[list[int]],
                rng: np.random.Generator) -> list[np.ndarray]:
    """The data split iid over edges, each share proportional to its client count."""
    n_clients = sum(len(g) for g in groups)
    edge_sizes = [n_samples * len(g) // n_clients for g in groups]
    cuts = np.cumsum(edge_sizes)[:-1]
    return np.split(rng.permutation(n_samples)[: sum(edge_sizes)], cuts)


def _split_pool(spec, pool: np.ndarray, n_clients: int, labels: np.ndarray, num_classes: int,
                rng: np.random.Generator) -> list[np.ndarray]:
    """Split one edge's pool over its clients by a single-level scheme (iid, dirichlet,
    labels)."""
    if spec.kind == "labels":
        label_set = np.unique(labels[pool])
        held = deal_labels(n_clients, spec.per_client, label_set, rng)
        return split_by_labels(pool, labels, held, rng)
    sizes = client_sizes(spec.sizes, len(pool), n_clients, rng)
    if spec.kind == "iid":
        order = rng.permutation(pool)
        return np.split(order[: int(sizes.sum())], np.cumsum(sizes)[:-1])
    if spec.kind == "dirichlet":
        return partition_dirichlet(labels, sizes, num_classes, spec.alpha, rng,
                                   indices=pool).client_indices
    raise ValueError(f"{spec.kind!r} cannot split one edge's share")


def partition_edge_iid_dirichlet(labels: np.ndarray, groups: list[list[int]], num_classes: int,
                                 alpha: float, rng: np.random.Generator) -> Partition:
    """iid over edges (shares proportional to client counts), dirichlet(alpha) inside each."""
    per_group = []
    for members, pool in zip(groups, _edge_pools(len(labels), groups, rng), strict=True):
        sizes = equal_sizes(len(pool), len(members))
        inner = partition_dirichlet(labels, sizes, num_classes, alpha, rng, indices=pool)
        per_group.append(inner.client_indices)
    return _assemble(groups, per_group, labels, num_classes)


def partition_per_edge(labels: np.ndarray, groups: list[list[int]], num_classes: int,
                       specs: list, rng: np.random.Generator) -> Partition:
    """iid over edges, then edge i's share split by its own scheme ``specs[i]``."""
    per_group = [_split_pool(spec, pool, len(members), labels, num_classes, rng)
                 for members, pool, spec in zip(groups, _edge_pools(len(labels), groups, rng),
                                                specs, strict=True)]
    return _assemble(groups, per_group, labels, num_classes)


# ---------------------------------------------------------------------------- dispatch


def client_sizes(spec, total: int, n_clients: int, rng: np.random.Generator) -> np.ndarray:
    """Sizes for a ``sizes:`` block (equal, or normal clipped)."""
    if spec.kind == "normal":
        return normal_sizes(n_clients, spec.mean, spec.std, spec.min, spec.max, total, rng)
    return equal_sizes(total, n_clients)


def make_partition(spec, labels: np.ndarray, num_classes: int, groups: list[list[int]],
                   rng: np.random.Generator,
                   natural: list[np.ndarray] | None = None) -> Partition:
    """The partition a scenario's ``data.partition`` describes.

    groups: the client indices of each edge server (two-level kinds use them); natural: the data
    set's own split, one index array per client (kind natural). Raises ValueError where the
    partition cannot be made, with a message saying why.
    """
    n_clients = sum(len(g) for g in groups)
    kind = spec.kind
    if kind == "iid":
        return partition_iid(labels, client_sizes(spec.sizes, len(labels), n_clients, rng),
                             num_classes, rng)
    if kind == "dirichlet":
        sizes = client_sizes(spec.sizes, len(labels), n_clients, rng)
        return partition_dirichlet(labels, sizes, num_classes, spec.alpha, rng)
    if kind == "labels":
        return partition_labels(labels, n_clients, num_classes, spec.per_client, rng)
    if kind == "edge-labels":
        return partition_edge_labels(labels, groups, num_classes, spec.per_edge,
                                     spec.per_client, rng)
    if kind == "edge-iid-dirichlet":
        return partition_edge_iid_dirichlet(labels, groups, num_classes, spec.alpha, rng)
    if kind == "per-edge":
        return partition_per_edge(labels, groups, num_classes, spec.edges, rng)
    if kind == "natural":
        if natural is None or len(natural) != n_clients:
            raise ValueError("this data set has no natural split over these clients")
        return _from_indices(list(natural), labels, num_classes)
    if kind == "file":
        return _from_indices(read_partition_file(spec.path, len(labels), n_clients), labels,
                             num_classes)
    # an extension's (netfl.extensions): its class splits, netfl checks the split
    split = call_extension("partition", kind, "split", spec, labels, num_classes, groups, rng)
    return _from_indices(checked_split(split, len(labels), n_clients, f"partition {kind!r}"),
                         labels, num_classes)


def checked_split(split, n_samples: int, n_clients: int, who: str) -> list[np.ndarray]:
    """``split`` (one index sequence per client) as int64 arrays, or ValueError naming ``who``
    where it is not a partition of the training set over the clients: a wrong number of
    clients, an index out of range or given twice, a client without a sample."""
    try:
        parts = [np.asarray(indices).reshape(-1) for indices in split]
    except (TypeError, ValueError):
        raise ValueError(f"{who}: expected one sequence of sample indices per client, got "
                         f"{type(split).__name__}") from None
    if any(len(p) and not np.issubdtype(p.dtype, np.integer) for p in parts):
        raise ValueError(f"{who}: sample indices must be integers")
    parts = [p.astype(np.int64) for p in parts]
    if len(parts) != n_clients:
        raise ValueError(f"{who}: gave {len(parts)} clients' indices for {n_clients} clients")
    every = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if len(every) and (every.min() < 0 or every.max() >= n_samples):
        raise ValueError(f"{who}: an index is outside 0..{n_samples - 1} (the training set)")
    if len(np.unique(every)) != len(every):
        values, counts = np.unique(every, return_counts=True)
        raise ValueError(f"{who}: sample {int(values[counts > 1][0])} is given twice (a "
                         f"partition is disjoint)")
    empty = [c for c, part in enumerate(parts) if len(part) == 0]
    if empty:
        more = " ..." if len(empty) > 5 else ""
        raise ValueError(f"{who}: {len(empty)} clients have no samples ({empty[:5]}{more})")
    return parts


def read_partition_file(path: Path, n_samples: int, n_clients: int) -> list[np.ndarray]:
    """Each client's training-set indices from a partition file (see FilePartition): JSON
    ``{"0": [indices], ...}`` or CSV ``client,sample``. Raises ValueError naming the file and
    what is wrong: a client out of range or without samples, an index out of range, an index
    given twice."""
    path = Path(path)
    owned: dict[int, list[int]] = {}

    def fail(message: str) -> None:
        raise ValueError(f"{path}: {message}")

    def add(client: object, sample: object, where: str) -> None:
        try:
            c, i = int(client), int(sample)
        except (TypeError, ValueError):
            fail(f"{where}: client and sample must be integers, got {client!r}, {sample!r}")
        if not 0 <= c < n_clients:
            fail(f"{where}: client {c} is not in 0..{n_clients - 1}")
        if not 0 <= i < n_samples:
            fail(f"{where}: sample {i} is not in 0..{n_samples - 1} (the training set)")
        owned.setdefault(c, []).append(i)

    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            fail(f"not a JSON file: {exc}")
        if not isinstance(data, dict):
            fail('expected a JSON object {"client": [sample indices], ...}')
        for client, samples in data.items():
            if not isinstance(samples, list):
                fail(f"client {client!r}: expected a list of sample indices")
            for sample in samples:
                add(client, sample, f"client {client!r}")
    else:
        for row_number, row in csv_rows(path, {"client", "sample"}, fail):
            add(row["client"], row["sample"], f"row {row_number}")
    return checked_split([owned.get(c, []) for c in range(n_clients)], n_samples, n_clients,
                         str(path))
