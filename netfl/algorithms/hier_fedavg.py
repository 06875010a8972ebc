"""Hierarchical FedAvg (HierFAVG; Liu et al., 2020, "Client-Edge-Cloud Hierarchical Federated
Learning", Algorithm 1), in rounds of the cloud.

    for each cloud round t = 1, ..., T:
        S_t <- S edge servers, uniformly without replacement  (edges_per_round; all when null)
        cloud sends w_t to every edge server of S_t
        for each edge server l of S_t in parallel:
            w_l <- w_t
            for edge round k = 0 .. kappa_2 - 1 (edge_rounds):
                P_l <- P of l's clients, uniformly without replacement (clients_per_round)
                each client i of P_l in parallel: w_i <- w_l + kappa_1 (local_steps) SGD
                    steps at rate eta_k                           (schedule; lr by default)
                w_l <- sum_i (n_i / n_l) w_i                      (edge aggregation)
            edge server l sends w_l to the cloud
        w_{t+1} <- sum_l (D_l / D) w_l                            (cloud aggregation)

D_l is the data held by edge l's clients (those that contributed this cloud round). Clients
whose transfers fail, and edges whose transfers fail or whose clients all failed, sit the round
out; the weights are renormalized over those that arrived.

Sampling S edges and P clients per edge is the CHFL paper's setting for every algorithm it
compares (its App. B.1); HierFAVG itself has every edge and client train. On mobile worlds the
S edges are drawn among those that serve clients at the start of the cloud round, and the P
clients among those in the edge's coverage at the start of each edge round. eta_k follows the
Fed-CHS paper's B.1 for Hier-Local-QSGD: "the local communication round number within ESs is
K = 20 and the learning rate is 1/(K sqrt(k+1)) in the k-th communication", so k counts the edge
rounds (edge aggregations) of the cloud round, 0..edge_rounds-1, K = edge_rounds, and restarts
every cloud round as Fed-CHS's k restarts every round; all local steps of one edge round use the
same eta_k.
"""

from __future__ import annotations

from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.base import Algorithm
from netfl.algorithms.schedules import learning_rate


class HierFedAvg(Algorithm):
    def run(self):
        cloud, spec = self.world.cloud, self.spec
        w = self.trainer.init_params()
        if self.evaluate(w, 0):
            return
        for t in range(1, spec.rounds + 1):
            serving = (self.world.edge_servers if self.world.exclusive
                       else self.world.serving_edges())
            # sample_clients draws ``count`` names of any kind (here edge servers)
            serving = self.sample_clients(serving, spec.edges_per_round)
            started = self.env.now
            edges = [self.env.process(self._edge_round(es, w, t)) for es in serving]
            yield self.env.all_of(edges)
            if self.env.now == started:  # nothing could happen (nobody in view, no route)
                yield from self.wait_idle()
            arrived = [job.value for job in edges if job.value is not None]
            if arrived:
                models, sizes = zip(*arrived, strict=True)
                w = yield from self.aggregate(cloud, list(models), data_weights(sizes), "cloud", t)
            if self.end_round(t, w):
                return

    def _edge_round(self, edge_server: str, w, t: int):
        """One cloud round at one edge; returns (w_l, D_l) if it reached the cloud, else None.

        D_l counts the data of the clients that contributed at least once this cloud round; an
        edge none of whose clients contributed sits the round out (it has nothing new to send).
        """
        cloud, spec = self.world.cloud, self.spec
        if not (yield from self.send(cloud, edge_server, self.download_bytes)):
            return None
        w_edge, contributors = w, set()
        for k in range(spec.edge_rounds):
            # changes as clients move; one edge server per client where they see several (LEO)
            clients = self.sample_clients(self.world.primary_clients_of(edge_server),
                                          spec.clients_per_round)
            eta = learning_rate(spec.schedule, k, spec.edge_rounds, spec.lr)
            result = yield from self.train_round(edge_server, clients, w_edge, t, lr=eta)
            if result.updates:
                contributors.update(result.clients)
                w_edge = yield from self.aggregate(edge_server, result.updates, result.weights,
                                                   "edge", t)
        if not contributors:
            return None
        if not (yield from self.send_up(edge_server, cloud)):
            return None
        data = int(self.data_sizes(sorted(contributors)).sum())
        return self.compressed_towards(w_edge, w), data
