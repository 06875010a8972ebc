"""FedCLAR (Presotto et al. 2022, "FedCLAR: Federated Clustering for Personalized Sensor-Based
Human Activity Recognition"), in the hierarchical, group-based version the Group-FEL paper
compares against (its Section 6.3): random groups and uniform sampling, then clustering.

    rounds 1 .. t_c - 1:  hierarchical FedAvg over randomly formed groups (Group-FEL's loop)
    round t_c:            every group trains once from x; the cloud clusters the groups by the
                          cosine similarity of their updates x_g - x (agglomerative, average
                          linkage) into C clusters; cluster c starts from the data-weighted
                          average of its groups' models
    rounds t_c + 1 ..:    each sampled group trains its cluster's model; each cluster
                          aggregates its own groups (clusters with no sampled group keep theirs)

Deviation (docs/models/group-fel.md): FedCLAR clusters clients; with secure aggregation in
groups the cloud only sees group updates, so groups are what is clustered here. The accuracy
reported is that of the cluster models on the (global) test set, weighted by their data.
"""

from __future__ import annotations

import numpy as np

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.group_fel import Group, GroupFEL
from netfl.algorithms.grouping import cluster_by_cosine


class FedCLAR(GroupFEL):
    def run(self):
        spec = self.spec
        models = {0: self.trainer.init_params()}
        self.cluster_data = {0: float(self.data_sizes().sum())}
        if self.evaluate(models, 0):
            return
        groups = self.form_groups()
        cluster_of = {g.clients: 0 for g in groups}
        for t in range(1, spec.rounds + 1):
            if t == spec.clustering_round:
                models, cluster_of = yield from self.cluster(groups, models[0], t)
            else:
                models = yield from self.cluster_rounds(models, cluster_of,
                                                        self.sample(groups), t)
            if self.end_round(t, models):
                return

    def cluster_rounds(self, models: dict, cluster_of: dict, sampled: list[Group], t: int):
        """One global round per cluster, in parallel, over that cluster's sampled groups."""
        members: dict[int, list[Group]] = {}
        for g in sampled:
            members.setdefault(cluster_of[g.clients], []).append(g)
        jobs = {c: self.env.process(self.global_round(models[c], gs, t))
                for c, gs in members.items()}
        yield self.env.all_of(list(jobs.values()))
        return {c: (jobs[c].value if c in jobs else x) for c, x in models.items()}

    def cluster(self, groups: list[Group], x, t: int):
        """Round t_c: every group trains once; the groups are clustered by their updates."""
        results = yield from self.train_groups(groups, x, t)
        trained = [(g, r[0]) for g, r in zip(groups, results, strict=True) if r is not None]
        if not trained:
            return {0: x}, {g.clients: 0 for g in groups}
        labels = cluster_by_cosine([np.asarray(model - x) for _, model in trained],
                                   self.spec.clusters)
        cluster_of = {g.clients: int(label) for (g, _), label in zip(trained, labels,
                                                                     strict=True)}
        largest = int(np.bincount(labels).argmax())
        for g in groups:  # groups whose update did not arrive join the largest cluster
            cluster_of.setdefault(g.clients, largest)
        models = {}
        for c in sorted(set(cluster_of.values())):
            mine = [(g, m) for (g, m), label in zip(trained, labels, strict=True) if label == c]
            models[c] = (self.trainer.weighted_average([m for _, m in mine],
                                                       data_weights([g.data for g, _ in mine]))
                         if mine else x)
        self.cluster_data = {c: float(sum(g.data for g in groups if cluster_of[g.clients] == c))
                             for c in models}
        return models, cluster_of

    def test(self, models: dict, subset=None) -> tuple[float, float]:
        """Accuracy and loss of the cluster models on the test set (or the samples at
        ``subset``), weighted by their data."""
        shares = data_weights([self.cluster_data[c] for c in models])
        scores = [super(FedCLAR, self).test(models[c], subset) for c in models]
        return (float(sum(w * a for w, (a, _) in zip(shares, scores, strict=True))),
                float(sum(w * loss for w, (_, loss) in zip(shares, scores, strict=True))))

    def summary_extras(self) -> dict:
        return {**super().summary_extras(), "clusters_formed": len(self.cluster_data)}
