"""Group formation for group-based HFL (Group-FEL: Liu et al., "Group Formation and Sampling in
Group-Based Hierarchical Federated Learning", IEEE Transactions on Cloud Computing, 2024):
pure functions on a client-by-label count matrix ``counts`` (clients x labels, the paper's L).

Every function returns groups as lists of row indices into ``counts``; together they cover each
row exactly once. Randomness comes only from the ``rng`` handed in.

* ``cov``                 the group coefficient of variation (``std-mean`` by default, or
                          eq. 31 read literally, ``eq31``; see ``COV_DEFINITIONS``);
* ``cov_grouping``        CoV-Grouping, Algorithm 2 (random first client, greedy CoV descent,
                          MinGS and MaxCoV);
* ``random_grouping``     RG: shuffle and cut into groups of about ``group_size``;
* ``cdg_grouping``        CDG, cluster-then-distribute as OUEA (Mhaisen et al. 2021) does it;
* ``kld_grouping``        KLDG, greedy KL-divergence balancing as SHARE (Deng et al. 2021);
* ``qcid_sample_groups``  Fed-CBS's QCID sampling (Zhang et al. 2023), adapted per edge server
                          as the paper's Section 6.1 describes (new groups every round).

How each baseline is read from its source is written down in docs/models/group-fel.md.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

EPS = 1e-12


# The CoV of a group's label counts B (length m, n_g = sum_j B_j):
#   std-mean  std(B) / mean(B) = sqrt(sum_j (n_g/m - B_j)^2 / m) / (n_g / m), the textbook
#             coefficient of variation (population std), which eq. (31)'s first member writes
#             as sigma / mu. It reproduces the paper's Table 1 (benchmarks/group_fel_table1.py).
#   eq31      eq. (31)'s last member read literally, sqrt(sum_j (n_g/m - B_j)^2) / n_g: the
#             std-mean CoV divided by sqrt(m), so never above sqrt((m-1)/m) (about 0.95); with
#             it MaxCoV 0.5 and 1.0 give the same groups and Table 1 is not reproduced.
COV_DEFINITIONS = ("std-mean", "eq31")
DEFAULT_COV = "std-mean"


def cov(label_counts: np.ndarray, definition: str = DEFAULT_COV) -> float:
    """CoV(g) of a group's summed label counts B (length m), by ``definition`` (one of
    ``COV_DEFINITIONS``); infinite for an empty group."""
    return float(_covs(np.asarray(label_counts, dtype=np.float64)[None, :], definition)[0])


def _covs(label_counts: np.ndarray, definition: str = DEFAULT_COV) -> np.ndarray:
    """The CoV of each row of ``label_counts`` (groups x labels)."""
    n = label_counts.sum(axis=1)
    m = label_counts.shape[1]
    spread = np.sqrt(((n[:, None] / m - label_counts) ** 2).sum(axis=1))
    if definition == "std-mean":
        spread = spread * np.sqrt(m)
    elif definition != "eq31":
        raise ValueError(f"unknown CoV definition {definition!r}; known: "
                         f"{', '.join(COV_DEFINITIONS)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, spread / np.where(n > 0, n, 1.0), np.inf)


def group_covs(counts: np.ndarray, groups: list[list[int]],
               definition: str = DEFAULT_COV) -> np.ndarray:
    """CoV of each group (of its members' summed label counts)."""
    counts = np.asarray(counts, dtype=np.float64)
    return _covs(np.stack([counts[g].sum(axis=0) for g in groups]), definition)


def cov_grouping(counts: np.ndarray, min_group_size: int, max_cov: float,
                 rng: np.random.Generator,
                 definition: str = DEFAULT_COV) -> list[list[int]]:
    """CoV-Grouping, Algorithm 2 of the paper, line by line:

        2: while K is not empty:
        3:   pick a random c in K; g = {c}; K = K minus c
        4:   while (CoV(g) > MaxCoV or |g| < MinGS) and K is not empty:
        5:     c = the client of K minimizing CoV(g with c)
        6-7:   if CoV(g with c) < CoV(g) or |g| < MinGS: add c to g, remove it from K
        8-9:   else: finalize g
        10:  add g to the groups

    One deviation (docs/models/group-fel.md): Algorithm 2 can end with a last group smaller
    than MinGS when the clients run out, which breaks constraint (35); its clients then join,
    one by one, the group whose CoV they leave lowest. (With fewer than MinGS clients in all,
    they form one group.) Ties in line 5 go to the lowest client index. CoV is by
    ``definition`` (see ``COV_DEFINITIONS``).
    """
    counts = np.asarray(counts, dtype=np.float64)
    remaining = list(range(len(counts)))
    groups: list[list[int]] = []
    while remaining:
        group = [remaining.pop(int(rng.integers(len(remaining))))]
        totals = counts[group[0]].copy()
        current = cov(totals, definition)
        while (current > max_cov or len(group) < min_group_size) and remaining:
            candidates = _covs(totals[None, :] + counts[remaining], definition)
            best = int(np.argmin(candidates))
            if candidates[best] < current or len(group) < min_group_size:
                client = remaining.pop(best)
                group.append(client)
                totals += counts[client]
                current = float(candidates[best])
            else:
                break
        groups.append(group)
    if len(groups) > 1 and len(groups[-1]) < min_group_size:
        for client in groups.pop():
            _join_best(groups, counts, client, definition)
    return groups


def _join_best(groups: list[list[int]], counts: np.ndarray, client: int,
               definition: str) -> None:
    """Add ``client`` to the group whose CoV is lowest with it (lowest index on ties)."""
    totals = np.stack([counts[g].sum(axis=0) for g in groups]) + counts[client]
    groups[int(np.argmin(_covs(totals, definition)))].append(client)


def _group_count(n_clients: int, group_size: int) -> int:
    return max(1, n_clients // group_size)


def random_grouping(n_clients: int, group_size: int,
                    rng: np.random.Generator) -> list[list[int]]:
    """RG: a random permutation cut into n // group_size groups whose sizes differ by at most
    one (so each holds at least ``group_size`` clients when there are that many)."""
    order = rng.permutation(n_clients)
    return [sorted(int(i) for i in part)
            for part in np.array_split(order, _group_count(n_clients, group_size))]


def label_shares(counts: np.ndarray) -> np.ndarray:
    """Each row's label distribution (rows of zeros stay zero)."""
    counts = np.asarray(counts, dtype=np.float64)
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), EPS)


def cdg_grouping(counts: np.ndarray, group_size: int,
                 rng: np.random.Generator) -> list[list[int]]:
    """CDG, OUEA's cluster-then-distribute (Mhaisen et al. 2021), as a group formation:
    k-means (scikit-learn's, k-means++ seeding) on the clients' label distributions into
    ``group_size`` clusters of similar clients; then each cluster, on its own, deals its
    (shuffled) clients round-robin over the n // group_size groups, starting at a random group,
    so that every group draws evenly from every cluster.

    ``group_size`` sets only the number of groups (the tuning the Group-FEL paper did): like
    OUEA, which balances each cluster over the edge servers and nothing else, CDG does not
    control a group's size; a group gets one client more from each cluster whose remainder
    reaches it, so sizes spread around ``group_size`` (from below to well above it).
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    n = len(counts)
    kmeans = KMeans(n_clusters=min(group_size, n), n_init=1,
                    random_state=int(rng.integers(2 ** 31)))
    with warnings.catch_warnings():  # fewer distinct label mixes than clusters is fine here
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = kmeans.fit_predict(label_shares(counts))
    n_groups = _group_count(n, group_size)
    groups: list[list[int]] = [[] for _ in range(n_groups)]
    for cluster in range(labels.max() + 1):
        start = int(rng.integers(n_groups))
        members = rng.permutation(np.flatnonzero(labels == cluster))
        for position, client in enumerate(members):
            groups[(start + position) % n_groups].append(int(client))
    return [sorted(g) for g in groups if g]


def _kld_to(totals: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """KL(P_g || Q) for each row of group totals against the distribution ``reference``."""
    p = label_shares(totals)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / np.maximum(reference, EPS)), 0.0)
    return terms.sum(axis=1)


def kld_grouping(counts: np.ndarray, group_size: int,
                 rng: np.random.Generator) -> list[list[int]]:
    """KLDG, SHARE's KL-divergence-based association (Deng et al. 2021), as a group formation:
    n // group_size groups, each seeded with a random client; then, until every client is
    placed, the (client, group) pair whose assignment lowers that group's KL divergence from the
    edge's overall label distribution the most (raises it the least) is taken.

    ``group_size`` sets only the number of groups (the Group-FEL paper's tuning): like SHARE,
    which associates nodes to edge aggregators by KLD without a size limit, KLDG does not
    control a group's size, so groups short of labels draw more clients than balanced ones.
    """
    counts = np.asarray(counts, dtype=np.float64)
    n = len(counts)
    n_groups = _group_count(n, group_size)
    reference = label_shares(counts.sum(axis=0, keepdims=True))[0]
    remaining = [int(i) for i in rng.permutation(n)]
    groups = [[remaining.pop()] for _ in range(n_groups)]
    totals = np.stack([counts[g[0]] for g in groups])
    before = _kld_to(totals, reference)
    while remaining:
        trial = totals[None, :, :] + counts[remaining][:, None, :]
        after = _kld_to(trial.reshape(-1, counts.shape[1]), reference).reshape(trial.shape[:2])
        i, group = np.unravel_index(int(np.argmin(after - before[None, :])), after.shape)
        client = remaining.pop(int(i))
        groups[int(group)].append(client)
        totals[group] += counts[client]
        before[group] = after[i, group]
    return [sorted(g) for g in groups]


def qcid(label_counts: np.ndarray) -> np.ndarray:
    """Fed-CBS's quadratic class-imbalance degree of each row of group totals:
    sum_j (B_j / n_g - 1/m)^2."""
    label_counts = np.atleast_2d(np.asarray(label_counts, dtype=np.float64))
    m = label_counts.shape[1]
    return ((label_shares(label_counts) - 1.0 / m) ** 2).sum(axis=1)


def qcid_sample_groups(counts: np.ndarray, n_groups: int, group_size: int, beta: float,
                       rng: np.random.Generator) -> list[list[int]]:
    """Fed-CBS's QCID sampling, per edge server: ``n_groups`` disjoint groups of ``group_size``
    clients (fewer where the clients run out), each built client by client, the next client
    drawn with probability proportional to 1 / QCID(group with it)^beta."""
    counts = np.asarray(counts, dtype=np.float64)
    remaining = list(range(len(counts)))
    groups = []
    for _ in range(n_groups):
        if not remaining:
            break
        group, totals = [], np.zeros(counts.shape[1])
        while len(group) < group_size and remaining:
            log_w = -beta * np.log(np.maximum(qcid(totals[None, :] + counts[remaining]), EPS))
            pick = int(gumbel_top_k(log_w, 1, rng)[0])
            client = remaining.pop(pick)
            group.append(client)
            totals += counts[client]
        groups.append(sorted(group))
    return groups


def gumbel_top_k(log_weights: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct indices drawn one after another with probability proportional to
    exp(log_weights) among those not yet drawn (sampling without replacement), by the
    Gumbel-top-k trick; works in log space, so weights far beyond float range are fine."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    keys = log_weights + rng.gumbel(size=log_weights.shape)
    return np.argsort(-keys, kind="stable")[:k]


@dataclass(frozen=True)
class GroupingStats:
    """What the paper's Table 1 reports of a grouping."""

    groups: int
    size_min: int
    size_max: int
    size_avg: float
    avg_cov: float

    def as_dict(self) -> dict:
        return {"groups": self.groups, "size_min": self.size_min, "size_max": self.size_max,
                "size_avg": self.size_avg, "avg_cov": self.avg_cov}


def grouping_stats(counts: np.ndarray, groups: list[list[int]],
                   definition: str = DEFAULT_COV) -> GroupingStats:
    sizes = [len(g) for g in groups]
    return GroupingStats(len(groups), min(sizes), max(sizes), float(np.mean(sizes)),
                         float(np.mean(group_covs(counts, groups, definition))))


def cluster_by_cosine(vectors: list[np.ndarray], n_clusters: int) -> np.ndarray:
    """FedCLAR's clustering: agglomerative clustering (average linkage) of update vectors by
    cosine distance into at most ``n_clusters`` clusters; one label per vector."""
    from sklearn.cluster import AgglomerativeClustering

    if len(vectors) < 2:
        return np.zeros(len(vectors), dtype=int)
    points = np.stack([np.asarray(v, dtype=np.float64).ravel() for v in vectors])
    if points.shape[1] == 1:  # one coordinate: cosine distance is only its sign
        points = np.hstack([points, np.ones_like(points)])
    model = AgglomerativeClustering(n_clusters=min(n_clusters, len(points)), metric="cosine",
                                    linkage="average")
    return model.fit_predict(points)
