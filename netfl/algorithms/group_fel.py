"""Group-FEL: group-based federated edge learning (Algorithm 1 of Liu et al., "Group Formation
and Sampling in Group-Based Hierarchical Federated Learning", IEEE Transactions on Cloud
Computing, 2024).

    1-3:  every edge server j forms groups of its clients C_j      (``grouping``, Algorithm 2)
    4:    p = SAMPLING-PROB(G)                                      (eq. 38, ``sampling``)
    5:    for t = 0 .. T-1:
    6:      sample S_t from G by p                                  (S = ``groups_per_round``)
    7:      for each group g of S_t in parallel:                    (its edge server runs it)
    8:        x_g = x_t
    9:        for k = 0 .. K-1:                                     (K = ``group_rounds``)
    10-11:      each client i of g in parallel: x_i = x_g
                  (group operation: O_g(|g|) on its device, secure aggregation's messages)
    12-13:      E local rounds of SGD                               (E = ``local_steps``)
    14:         x_g = sum_i (n_i / n_g) x_i                         (group aggregation, at the ES)
    15:     x_{t+1} = sum_g weight_g x_g                            (biased, eq. 4 or eq. 39;
                                                                    eq. 4's p_g S is pi_g, the
                                                                    exact inclusion probability)

Every ``regroup_interval`` rounds lines 1-4 run again (CoV-Grouping's random first client makes
new groups). Costs of eq. (5), O_g(|g|) + E H_i(n_i) per client and group round, are booked as
Cost records and stop the run at ``stop.max_cost``; the group operation also takes its time on
the client's device and its messages cross the network (tag ``secagg client->edge`` and
``secagg edge->client``). FedProx's proximal term and SCAFFOLD's corrections are extra vector
work on every SGD step (``solver_cost_s``): booked as cost ``solver`` (part of H_i in eq. 5)
and run on the client's device after its training.

Baselines are settings of the same loop (netfl.scenario.group_fel): hierarchical FedAvg,
FedProx and SCAFFOLD with random groups and uniform sampling, OUEA (CDG), SHARE (KLDG), QCID,
and FedCLAR (fedclar.py). Deviations (docs/models/group-fel.md): a client whose exchange fails
is left out of its group's average; a group whose model does not reach the cloud counts as x_t
(and, under SCAFFOLD, its clients keep their new c_i while the cloud misses their change, as a
real deployment would).
"""

from __future__ import annotations

import math

import numpy as np

from netfl.algorithms.aggregation import data_weights, option_ii_control
from netfl.algorithms.base import Algorithm
from netfl.algorithms.group_formation import Group, GroupFormation
from netfl.algorithms.group_sampling import aggregation_weights
from netfl.compute.timing import (
    CONTROL_UPDATE_FLOPS_PER_PARAM,
    CORRECTION_FLOPS_PER_PARAM_STEP,
    PROX_FLOPS_PER_PARAM_STEP,
    group_overhead_s,
    solver_overhead_s,
    train_time_s,
)
from netfl.errors import SimulationError


class GroupFEL(GroupFormation, Algorithm):
    """Algorithm 1 (module docstring); its groups are formed and sampled by GroupFormation."""

    # False: each group round trains on its own when due (the same results, slower; the
    # reference the batched arithmetic is tested against)
    batch_groups = True

    def __init__(self, ctx, spec):
        # SCAFFOLD's control variate travels with every model (twice the bytes)
        self.MESSAGE_FACTOR = 2 if spec.control_variates else 1
        super().__init__(ctx, spec)
        self.formations = 0
        self.stats: dict | None = None
        self.groups_sampled: set[tuple[str, ...]] = set()
        self._zeros = self.trainer.init_params() * 0
        self.c_global = self._zeros if spec.control_variates else None
        self.c_client: dict[str, object] = {}

    # ------------------------------------------------------------------ Algorithm 1

    def run(self):
        spec = self.spec
        x = self.trainer.init_params()
        if self.evaluate(x, 0):
            return
        groups = self.form_groups()                                          # lines 1-4
        for t in range(1, spec.rounds + 1):
            if spec.regroup_interval and t > 1 and (t - 1) % spec.regroup_interval == 0:
                groups = self.form_groups()
            sampled = self.sample(groups)                                    # line 6
            x = yield from self.global_round(x, sampled, t)                  # lines 7-15
            if self.end_round(t, x):
                return

    def global_round(self, x, sampled: list[Group], t: int):
        """Lines 7-15: the sampled groups train in parallel from x; returns x_{t+1}."""
        results = yield from self.train_groups(sampled, x, t)
        arrived = [r for r in results if r is not None]
        if self.c_global is not None:
            self.update_global_control(arrived)
        models = [x if r is None else r[0] for r in results]
        return self.trainer.weighted_average(models, self.global_weights(sampled))

    def train_groups(self, groups: list[Group], x, t: int):
        """Lines 7-14 for ``groups`` in parallel from x, then the cloud's aggregation charge;
        returns each group's (x_g, control-variate change), None where it did not arrive.

        The groups' network and device time runs first (``group_schedule``), then their
        models are computed (``group_models``): what a client learns never changes when, or
        whether, anything arrives, so the arithmetic can wait for the schedule, and the
        sampled groups' k-th group rounds train in one call instead of one per group, group
        round and epoch length. Same results: each client's batches come from its
        own generator, and the compressor draws in the order the group rounds ended."""
        order: list[tuple[str, int, int]] = []
        jobs = [self.env.process(self.group_schedule(g, i, t, order))
                for i, g in enumerate(groups)]
        yield self.env.all_of(jobs)
        schedules = [job.value for job in jobs]
        arrived = sum(s is not None and s[1] for s in schedules)
        if arrived:
            yield from self.charge_aggregation(self.world.cloud, arrived, "cloud", t)
        return self.group_models(groups, schedules, order, x)

    def group_schedule(self, group: Group, index: int, t: int, order: list):
        """Lines 8-14 at the group's edge server, in simulated time only: returns (the members
        whose uploads arrived in each group round, whether x_g reached the cloud), or None if
        x_t did not reach the edge server. Appends to ``order`` ("round", index, k) when group
        round k's uploads are in and ("up", index, 0) when x_g reached the cloud: the moments
        the compressor works on what arrived."""
        self.groups_sampled.add(group.clients)
        cloud, edge = self.world.cloud, group.edge
        if not (yield from self.send(cloud, edge, self.download_bytes)):
            return None
        rounds = []
        for k in range(self.spec.group_rounds):
            jobs = [self.env.process(self.member_job(group, client, t))
                    for client in group.clients]
            yield self.env.all_of(jobs)
            arrived = [c for c, job in zip(group.clients, jobs, strict=True) if job.value]
            rounds.append(arrived)
            if not arrived:
                yield from self.wait_idle()
                continue
            order.append(("round", index, k))
            yield from self.charge_aggregation(edge, len(arrived), "edge", t)
        if not (yield from self.send_up(edge, cloud)):
            return rounds, False
        order.append(("up", index, 0))
        return rounds, True

    def group_models(self, groups: list[Group], schedules: list, order: list, x) -> list:
        """The arithmetic of ``schedules`` (``group_schedule``'s results), in ``order``: each
        group round's members train from its group's x_g (the sampled groups' next rounds in
        one call, when the first of them is due), their models are compressed towards x_g and
        averaged by data (line 14). Returns (x_g compressed towards x, control-variate change)
        per group, None where x_g did not reach the cloud. Under SCAFFOLD every client's c_i
        is refreshed once, after its last group round of the global round (``refresh_controls``)."""
        x_group = [x] * len(groups)
        trained: dict[tuple[int, int], list] = {}
        moved: dict[str, list] = {}  # client -> [sum of its x_g - y_i, its SGD steps]
        pending = [[k for k, arrived in enumerate(s[0]) if arrived] if s else []
                   for s in schedules]
        up: list[bool] = [False] * len(groups)
        for what, g, k in order:
            if what == "up":
                up[g] = True
                x_group[g] = self.compressed_towards(x_group[g], x)
                continue
            if (g, k) not in trained:  # every group's next round that can start, at once
                waiting = {i for i, _ in trained}  # a round trained, not yet aggregated
                wave = [(i, rounds[0]) for i, rounds in enumerate(pending)
                        if rounds and i not in waiting and (self.batch_groups or i == g)]
                members = [schedules[i][0][r] for i, r in wave]
                models = self.local_rounds([x_group[i] for i, _ in wave], members, moved)
                for (i, r), m in zip(wave, models, strict=True):
                    trained[(i, r)] = m
                    pending[i].pop(0)
            models = trained.pop((g, k))
            arrived = schedules[g][0][k]
            models = [self.compressed_towards(m, x_group[g]) for m in models]
            weights = data_weights(self.data_sizes(arrived))
            x_group[g] = self.trainer.weighted_average(models, weights)
        changes = self.refresh_controls(moved) if self.c_global is not None else {}
        results: list = [None] * len(groups)
        for g, schedule in enumerate(schedules):
            if up[g]:
                members = {c for arrived in schedule[0] for c in arrived}
                results[g] = (x_group[g], sum((changes[c] for c in sorted(members)
                                               if c in changes), self._zeros))
        return results

    def global_weights(self, sampled: list[Group]) -> np.ndarray:
        """Line 15 (biased), eq. (4) (unbiased) or eq. (39) (normalized), with eq. (4)'s
        p_g S taken as the exact inclusion probability pi_g."""
        weights = aggregation_weights([g.data for g in sampled], [g.log_pi for g in sampled],
                                      float(self.data_sizes().sum()),
                                      self.spec.aggregation)
        if not np.isfinite(weights).all():
            worst = sampled[int(np.argmin([g.log_pi for g in sampled]))]
            raise SimulationError(
                f"eq. (4)'s weight 1/pi_g overflowed for the group of {len(worst.clients)} "
                f"clients at {worst.edge} (log pi_g = {worst.log_pi:.1f}): the unbiased "
                f"aggregation diverges with this sampling, as the paper warns; use "
                f"aggregation: normalized (eq. 39) or a milder sampling")
        return weights

    def member_job(self, group: Group, client: str, t: int):
        """One client's group round: download x_g, the group operation (its messages and
        O_g(|g|) on the device), E local rounds, upload. Returns whether the upload arrived."""
        spec, edge, size = self.spec, group.edge, len(group.clients)
        if not (yield from self.send(edge, client, self.download_bytes)):
            return False
        op = spec.group_operation
        if op.peer_bytes and size > 1:
            shares = op.peer_bytes * (size - 1)
            if not (yield from self.send(client, edge, shares, tag="secagg client->edge")):
                return False
            if not (yield from self.send(edge, client, shares, tag="secagg edge->client")):
                return False
        overhead = group_overhead_s(size, op.quadratic_s, op.linear_s, op.constant_s)
        if overhead > 0:
            self.charge_cost(client, "group_operation", overhead, t)
            if not (yield from self.occupy(client, overhead, "group_operation")):
                return False
        self.charge_cost(client, "training", self.training_cost_s(client), t)
        solver = self.solver_cost_s(client)
        if solver > 0:
            self.charge_cost(client, "solver", solver, t)
        if not (yield from self.local_compute(client, t, self.steps_of(client),
                                              self.samples_of(client))):
            return False
        if solver > 0 and not (yield from self.occupy(client, solver, "solver")):
            return False
        return (yield from self.send_up(client, edge))

    # ------------------------------------------------------------------ local rounds

    def steps_of(self, client: str) -> int:
        """SGD steps of E local rounds: E epochs of ceil(n_i / B) mini-batches, or E steps."""
        spec = self.spec
        if spec.local_unit == "step":
            return spec.local_steps
        n_i = int(self.data_sizes([client])[0])
        return spec.local_steps * max(1, math.ceil(n_i / spec.batch_size))

    def samples_of(self, client: str) -> int:
        """Samples of E local rounds: E n_i (E epochs), or E mini-batches."""
        i, spec = self.indices([client])[0], self.spec
        if spec.local_unit == "step":
            return spec.local_steps * self.trainer.samples_per_step(i, spec.batch_size)
        return spec.local_steps * int(self.data_sizes([client])[0])

    def training_cost_s(self, client: str) -> float:
        """E H_i(n_i) of eq. (5): the client's device time for ``samples_of`` samples, without
        jitter (the simulated clock is charged the same samples, with jitter)."""
        flops, slowdown = self.device_speed(client)
        return train_time_s(self.trainer.train_flops_per_sample, self.samples_of(client), flops,
                            slowdown)

    def solver_cost_s(self, client: str) -> float:
        """Device seconds of the local solver's extra vector work in E local rounds, beyond
        plain SGD: FedProx's proximal gradient and SCAFFOLD's corrections on every step, and
        SCAFFOLD's control-variate update once (netfl.compute.timing); 0 for plain SGD.
        Deterministic, like ``training_cost_s``, and charged to the clock as it is booked."""
        spec = self.spec
        per_step = ((PROX_FLOPS_PER_PARAM_STEP if spec.prox_mu > 0 else 0.0)
                    + (CORRECTION_FLOPS_PER_PARAM_STEP if spec.control_variates else 0.0))
        once = CONTROL_UPDATE_FLOPS_PER_PARAM if spec.control_variates else 0.0
        if per_step == 0 and once == 0:
            return 0.0
        flops, slowdown = self.device_speed(client)
        return solver_overhead_s(self.trainer.num_params, self.steps_of(client), per_step,
                                 flops, slowdown, once)

    def local_rounds(self, starts: list, members: list[list[str]],
                     moved: dict[str, list] | None = None) -> list[list]:
        """Real local training of each group's ``members`` from its x_g (``starts``), all in
        one call (FedProx's proximal term and SCAFFOLD's corrections c - c_i where set);
        returns per group its members' models. Under SCAFFOLD, adds each client's x_g - y_i
        and SGD steps to ``moved`` (what ``refresh_controls`` needs)."""
        spec = self.spec
        clients = [c for group in members for c in group]
        own_start = [start for start, group in zip(starts, members, strict=True)
                     for _ in group]
        steps = [self.steps_of(c) for c in clients]
        corrections = None
        if self.c_global is not None:
            corrections = [self.c_global - self.c_client.get(c, self._zeros) for c in clients]
        trained = self.trainer.local_train(
            own_start, self.indices(clients), steps, spec.lr, spec.batch_size,
            momentum=spec.momentum, weight_decay=spec.weight_decay, prox_mu=spec.prox_mu,
            corrections=corrections)
        if moved is not None and self.c_global is not None:
            for client, start, y, n in zip(clients, own_start, trained, steps, strict=True):
                sums = moved.setdefault(client, [self._zeros, 0])
                sums[0] = sums[0] + (start - y)
                sums[1] += n
        models, at = [], 0
        for group in members:
            models.append(trained[at:at + len(group)])
            at += len(group)
        return models

    def refresh_controls(self, moved: dict[str, list]) -> dict[str, object]:
        """SCAFFOLD's option II for every client that trained this global round, over all its
        group rounds: c_i <- c_i - c + (sum of x_g - y_i) / (lr * its steps), the mean of the
        gradients it computed (``option_ii_control``). Returns each client's change of c_i."""
        changes = {}
        for client, (displacement, steps) in moved.items():
            old = self.c_client.get(client, self._zeros)
            new = option_ii_control(old, self.c_global, displacement, steps, self.spec.lr)
            self.c_client[client] = new
            changes[client] = new - old
        return changes

    def update_global_control(self, arrived: list) -> None:
        """SCAFFOLD's server step c <- c + (1/N) sum of the clients' control-variate changes
        (the |S|/N-weighted mean of Karimireddy et al.), over the groups that reached the
        cloud."""
        total = sum((dc for _, dc in arrived), self._zeros)
        self.c_global = self.c_global + total / len(self.world.clients)

    def summary_extras(self) -> dict:
        """Grouping figures for summary.json (the paper's Table 1 columns)."""
        return {"grouping": self.stats, "groupings_formed": self.formations,
                "distinct_groups_sampled": len(self.groups_sampled)}
