"""Group-FEL's groups: lines 1-4 and 6 of its Algorithm 1 (Liu et al., "Group Formation and
Sampling in Group-Based Hierarchical Federated Learning", IEEE Transactions on Cloud Computing,
2024): every edge server groups its clients (Algorithm 2, or a baseline's grouping), the cloud
computes each group's sampling probability (eq. 38) and inclusion probability, and samples S
groups a round. The maths is pure (grouping.py, group_sampling.py); this mixin applies it to
an algorithm's world with the primitives of netfl.algorithms.base.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from netfl.algorithms.group_sampling import (
    log_inclusion_probabilities,
    log_probabilities,
    log_sampling_weights,
    sample_groups,
)
from netfl.algorithms.grouping import (
    cdg_grouping,
    cov_grouping,
    group_covs,
    grouping_stats,
    kld_grouping,
    qcid_sample_groups,
    random_grouping,
)


@dataclass(frozen=True)
class Group:
    """A group of clients under one edge server, with its data n_g, log p_g (eq. 38) and
    log pi_g, the probability that it is among the S groups sampled in a round."""

    edge: str
    clients: tuple[str, ...]
    data: int
    log_p: float = 0.0
    log_pi: float = 0.0


class GroupFormation:
    """Forming and sampling Group-FEL's groups; mixed into an Algorithm whose ``spec`` has
    ``grouping``, ``sampling``, ``groups_per_round`` and ``cov_definition``."""

    formations = 0
    stats: dict | None = None

    def form_groups(self) -> list[Group]:
        """Lines 1-4: every edge server groups its clients; the cloud computes log p and
        each group's log pi for S = ``groups_per_round``. (QCID forms its groups when it
        samples, every round.)"""
        spec = self.spec
        if spec.grouping.kind == "qcid":
            return []
        rng = self.stream("grouping")
        groups, index_groups = self.groups_by_edge(lambda j, counts: self.group_edge(counts, rng))
        covs = group_covs(self.label_counts(), index_groups, spec.cov_definition)
        log_p = log_probabilities(log_sampling_weights(covs, spec.sampling))
        log_pi = log_inclusion_probabilities(log_p, spec.groups_per_round)
        return [replace(g, log_p=float(lp), log_pi=float(li))
                for g, lp, li in zip(groups, log_p, log_pi, strict=True)]

    def groups_by_edge(self, make_groups) -> tuple[list[Group], list[list[int]]]:
        """Groups of every edge server, as ``make_groups(edge index, its clients' label
        counts)`` forms them from row indices; also books the grouping's figures. Returns the
        groups and each one's client indices."""
        counts, groups, index_groups = self.label_counts(), [], []
        for j, edge in enumerate(self.world.edge_servers):
            members = self.world.clients_of(edge)
            rows = self.indices(members)
            for part in make_groups(j, counts[rows]):
                index_groups.append([rows[i] for i in part])
                groups.append(Group(edge, tuple(members[i] for i in part),
                                    int(counts[index_groups[-1]].sum())))
        self.formations += 1
        self.stats = grouping_stats(counts, index_groups, self.spec.cov_definition).as_dict()
        return groups, index_groups

    def group_edge(self, counts: np.ndarray, rng: np.random.Generator) -> list[list[int]]:
        """One edge server's groups, as row indices of its clients' label counts."""
        grouping = self.spec.grouping
        if grouping.kind == "cov":
            return cov_grouping(counts, grouping.min_group_size, grouping.max_cov, rng,
                                self.spec.cov_definition)
        if grouping.kind == "random":
            return random_grouping(len(counts), grouping.group_size, rng)
        if grouping.kind == "cdg":
            return cdg_grouping(counts, grouping.group_size, rng)
        if grouping.kind == "kld":
            return kld_grouping(counts, grouping.group_size, rng)
        raise ValueError(f"unknown grouping {grouping.kind!r}")

    def sample(self, groups: list[Group]) -> list[Group]:
        """Line 6: S_t by p (without replacement). QCID instead has every edge server sample
        its share of S new groups (S split evenly over the edge servers)."""
        rng = self.stream("sampling")
        spec = self.spec
        if spec.grouping.kind != "qcid":
            return [groups[i] for i in sample_groups(np.array([g.log_p for g in groups]),
                                                     spec.groups_per_round, rng)]
        n_edges, grouping = len(self.world.edge_servers), spec.grouping

        def qcid_groups(j: int, counts: np.ndarray) -> list[list[int]]:
            share = spec.groups_per_round // n_edges + (j < spec.groups_per_round % n_edges)
            return qcid_sample_groups(counts, share, grouping.group_size, grouping.beta, rng)

        return self.groups_by_edge(qcid_groups)[0]  # the figures are of this round's groups
