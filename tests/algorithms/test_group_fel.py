"""Group-FEL's loop (Algorithm 1), its costs (eq. 5) and its baselines, on small worlds."""

import copy
import json
import types

import numpy as np
import pytest

import netfl
from netfl import load_scenario
from netfl.algorithms.aggregation import data_weights
from netfl.algorithms.group_fel import Group
from netfl.algorithms.group_sampling import log_inclusion_probabilities
from netfl.algorithms.grouping import group_covs
from netfl.compute.timing import group_overhead_s, solver_overhead_s, train_time_s
from netfl.errors import ScenarioError, SimulationError
from netfl.simulation import Simulation
from tests.algorithms.target_grid import grid_missing_the_crossing


def group_scenario(tiny, **algorithm):
    """A fresh scenario of 24 clients under 2 edge servers (``tiny`` is not modified)."""
    tiny = copy.deepcopy(tiny)
    tiny["world"] = {"kind": "edge", "clients": 24, "edge_servers": 2}
    tiny["data"]["partition"] = {"kind": "dirichlet", "alpha": 0.3,
                                 "sizes": {"kind": "normal", "mean": 40, "std": 15, "min": 20,
                                           "max": 70}}
    tiny["algorithm"] = {"kind": "group-fel", "rounds": 4, "group_rounds": 2, "local_steps": 2,
                         "groups_per_round": 3, "batch_size": 16,
                         "grouping": {"kind": "cov", "min_group_size": 3, "max_cov": 0.3},
                         **algorithm}
    return tiny


def run_recording(scenario):
    """Run with the algorithm's sampler wrapped; returns the simulation, every round's sampled
    groups, the groups each round sampled from, and the summary."""
    sim = Simulation(load_scenario(scenario))
    sampled, offered, original = [], [], sim.algorithm.sample

    def sample(groups):
        chosen = original(groups)
        sampled.append(chosen)
        offered.append(groups)
        return chosen

    sim.algorithm.sample = sample
    sim.run()
    return sim, sampled, offered, sim.summary()


def test_cost_of_eq_5_adds_up(tiny):
    sim, sampled, offered, summary = run_recording(group_scenario(tiny))
    spec, trainer, fleet = sim.scenario.algorithm, sim.trainer, sim.fleet
    op = spec.group_operation
    index = {c: i for i, c in enumerate(sim.world.clients)}
    overhead = training = 0.0
    for groups in sampled:
        for g in groups:
            size = len(g.clients)
            for client in g.clients:
                overhead += spec.group_rounds * group_overhead_s(size, op.quadratic_s,
                                                                 op.linear_s, op.constant_s)
                n_i = int(trainer.client_sizes[index[client]])
                training += spec.group_rounds * spec.local_steps * train_time_s(
                    trainer.train_flops_per_sample, n_i, fleet.profile(client).flops)
    assert len(sampled) == 4 and all(len(groups) == 3 for groups in sampled)
    assert summary["cost_by_kind"]["group_operation"] == pytest.approx(overhead)
    assert summary["cost_by_kind"]["training"] == pytest.approx(training)
    assert summary["cost_total"] == pytest.approx(overhead + training)
    # secure aggregation's pairwise messages: |g| (|g| - 1) peer messages each way per round
    pairs = sum(spec.group_rounds * len(g.clients) * (len(g.clients) - 1)
                for groups in sampled for g in groups)
    assert summary["bytes_by_tag"]["secagg client->edge"] == pytest.approx(pairs * op.peer_bytes)
    assert summary["bytes_by_tag"]["secagg edge->client"] == pytest.approx(pairs * op.peer_bytes)


@pytest.mark.parametrize(("kind", "per_step", "once"), [("group-fedprox", 3.0, 0.0),
                                                       ("group-scaffold", 1.0, 4.0)])
def test_local_solver_extra_work_is_charged_to_cost_and_clock(tiny, kind, per_step, once):
    scenario = group_scenario(tiny, kind=kind, grouping={"kind": "random", "group_size": 3},
                              group_operation={"kind": "none"})
    sim, sampled, offered, summary = run_recording(scenario)
    spec, trainer, fleet = sim.scenario.algorithm, sim.trainer, sim.fleet
    expected = sum(spec.group_rounds * solver_overhead_s(
        trainer.num_params, sim.algorithm.steps_of(c), per_step, fleet.profile(c).flops,
        fleet.slowdown(c), once) for groups in sampled for g in groups for c in g.clients)
    assert expected > 0
    assert summary["cost_by_kind"]["solver"] == pytest.approx(expected)
    assert summary["cost_total"] == pytest.approx(sum(summary["cost_by_kind"].values()))
    plain = copy.deepcopy(scenario)
    plain["algorithm"]["kind"] = "group-fedavg"
    plain["algorithm"].pop("grouping")
    plain["algorithm"]["grouping"] = {"kind": "random", "group_size": 3}
    baseline = netfl.run(plain, write=False).summary
    assert "solver" not in baseline["cost_by_kind"]
    assert summary["sim_time_s"] > baseline["sim_time_s"]


def test_group_operations_take_simulated_time(tiny):
    free = netfl.run(group_scenario(tiny, group_operation={"kind": "none"}), write=False)
    slow = netfl.run(group_scenario(tiny, group_operation={"kind": "backdoor-detection",
                                                           "constant_s": "100 s"}), write=False)
    # each of 4 rounds has 2 group rounds, each holding every member 100 s or more
    assert slow.summary["sim_time_s"] >= free.summary["sim_time_s"] + 4 * 2 * 100
    assert free.summary["cost_by_kind"] == {"training": pytest.approx(
        free.summary["cost_total"])}
    assert not any(tag.startswith("secagg") for tag in free.summary["bytes_by_tag"])


def test_the_cost_budget_stops_the_run(tiny):
    scenario = group_scenario(tiny, rounds=50)
    per_round = netfl.run(group_scenario(tiny, rounds=1), write=False).summary["cost_total"]
    scenario["stop"] = {"max_cost": 3.5 * per_round}
    result = netfl.run(scenario, write=False)
    assert result.summary["stop_reason"] == "max_cost"
    assert result.summary["cost_total"] >= 3.5 * per_round
    assert 3 <= result.summary["rounds"] <= 6
    assert result.metrics["cost_total"].iloc[-1] == pytest.approx(result.summary["cost_total"])


def test_a_cost_grid_checks_the_first_update_at_or_after_each_multiple(tiny):
    """stop.target_check_cost: only the first update at or after each multiple of C
    client-seconds of eq. (5) is checked for the target."""
    scenario = group_scenario(tiny, rounds=40, eval_every=1)
    scenario["stop"] = {"target_accuracy": 0.4, "at_target": False}
    every = netfl.run(scenario, write=False)
    crossing = every.summary["rounds_to_target"]
    grid, expected = grid_missing_the_crossing(
        every.metrics, "cost_total", 0.4, every.summary["cost_total"] / every.summary["rounds"],
        crossing)
    scenario["stop"] = {"target_accuracy": 0.4, "target_check_cost": grid}
    scenario["algorithm"]["eval_every"] = 50
    gridded = netfl.run(scenario, write=False).summary
    assert gridded["rounds_to_target"] == expected.round
    assert gridded["cost_to_target"] == pytest.approx(expected.cost_total)
    tiny["stop"] = {"target_check_cost": "100 s"}
    with pytest.raises(ScenarioError, match="target_check_cost .* hier-fedavg does not charge"):
        load_scenario(tiny)


def test_esrcov_samples_the_low_cov_groups(tiny):
    scenario = group_scenario(tiny, rounds=6, groups_per_round=2)
    sim, sampled, offered, summary = run_recording(scenario)
    best = sorted(offered[0], key=lambda g: -g.log_p)[:2]
    assert summary["distinct_groups_sampled"] <= 3
    assert {g.clients for g in best} <= {g.clients for groups in sampled for g in groups}


@pytest.mark.parametrize("definition", ["std-mean", "eq31"])
def test_groups_carry_inclusion_probabilities_and_the_chosen_cov(tiny, definition):
    sim = Simulation(load_scenario(group_scenario(tiny, sampling="srcov",
                                                  aggregation="unbiased",
                                                  cov_definition=definition)))
    algorithm = sim.algorithm
    groups = algorithm.form_groups()
    log_pi = log_inclusion_probabilities(np.array([g.log_p for g in groups]), 3)
    assert [g.log_pi for g in groups] == pytest.approx(log_pi.tolist())
    assert np.exp(log_pi).sum() == pytest.approx(3.0)
    rows = [algorithm.indices(list(g.clients)) for g in groups]
    covs = group_covs(sim.trainer.partition.counts, rows, definition)
    assert algorithm.stats["avg_cov"] == pytest.approx(covs.mean())
    # eq. (38) is taken of the same CoV
    weights = (1 / covs) ** 2
    assert np.exp([g.log_p for g in groups]) == pytest.approx(weights / weights.sum())


def test_regrouping_every_interval(tiny):
    sim, sampled, offered, summary = run_recording(group_scenario(tiny, rounds=5,
                                                                  regroup_interval=2))
    assert summary["groupings_formed"] == 3  # before rounds 1, 3 and 5
    grouping = [{g.clients for g in groups} for groups in offered]
    assert grouping[0] == grouping[1] != grouping[2] == grouping[3] != grouping[4]


def test_qcid_samples_new_groups_every_round(tiny):
    sim, sampled, offered, summary = run_recording(group_scenario(
        tiny, rounds=5, sampling="uniform", grouping={"kind": "qcid", "group_size": 3}))
    assert all(len(groups) == 3 for groups in sampled)  # 3 groups split over 2 edges: 2 + 1
    assert all(len(g.clients) == 3 for groups in sampled for g in groups)
    assert summary["distinct_groups_sampled"] > 3


def test_scaffold_doubles_the_bytes_and_keeps_control_variates(tiny):
    plain = netfl.run(group_scenario(tiny, kind="group-fedavg"), write=False).summary
    scaffold_sim = Simulation(load_scenario(group_scenario(tiny, kind="group-scaffold")))
    scaffold_sim.run()
    scaffold = scaffold_sim.summary()
    for tag in ("client->edge", "edge->client", "edge->cloud", "cloud->edge"):
        assert scaffold["bytes_by_tag"][tag] == pytest.approx(2 * plain["bytes_by_tag"][tag])
    assert scaffold_sim.algorithm.c_client  # clients' control variates were updated


def test_scaffold_control_variates_follow_option_ii_over_the_global_round(tiny):
    sim = Simulation(load_scenario(group_scenario(tiny, kind="group-scaffold")))
    algorithm = sim.algorithm
    x = algorithm.trainer.init_params() + 1.0
    clients = sim.world.clients[:3]
    algorithm.c_global = x * 0 + 0.3
    algorithm.c_client = {clients[0]: x * 0 - 0.2, clients[1]: x * 0 + 0.1}
    old = {c: algorithm.c_client.get(c, x * 0) for c in clients}
    # two group rounds: clients 0 and 1 from x, client 2 from 2x; then clients 0 and 2 again
    # from new group models. c_i changes only after both (refresh_controls).
    moved = {}
    first = algorithm.local_rounds([x, 2 * x], [clients[:2], clients[2:]], moved)
    assert all(np.array_equal(algorithm.c_client.get(c, x * 0), old[c]) for c in clients)
    second = algorithm.local_rounds([3 * x, -x], [clients[:1], clients[2:]], moved)
    changes = algorithm.refresh_controls(moved)
    lr = sim.scenario.algorithm.lr
    displacement = {clients[0]: (x - first[0][0]) + (3 * x - second[0][0]),
                    clients[1]: x - first[0][1],
                    clients[2]: (2 * x - first[1][0]) + (-x - second[1][0])}
    rounds = {clients[0]: 2, clients[1]: 1, clients[2]: 2}
    # c_i+ = c_i - c + (sum of x_g - y_i) / (lr * all its steps)
    for client in clients:
        steps = rounds[client] * algorithm.steps_of(client)
        expected = old[client] - 0.3 + displacement[client] / (steps * lr)
        assert np.allclose(algorithm.c_client[client], expected)
        assert np.allclose(changes[client], expected - old[client])


def test_scaffold_corrections_stay_fixed_within_a_global_round(tiny):
    # SCAFFOLD's local work uses one c - c_i throughout; c changes only at the cloud, once per
    # global round, so c_i must too. Refreshing c_i after every group round while c stayed
    # fixed made each group descend along a stale c for K rounds: paper-group-scaffold
    # diverged at round 11.
    sim = Simulation(load_scenario(group_scenario(
        tiny, kind="group-scaffold", rounds=3, group_rounds=3, groups_per_round=4,
        grouping={"kind": "random", "group_size": 3})))
    rounds, train = [], sim.trainer.local_train

    def recording(params, clients, *args, corrections=None, **kwargs):
        for client, correction in zip(clients, corrections, strict=True):
            rounds[-1].setdefault(client, []).append(np.array(correction))
        return train(params, clients, *args, corrections=corrections, **kwargs)

    def models(*args, original=sim.algorithm.group_models):
        rounds.append({})
        return original(*args)

    sim.trainer.local_train = recording
    sim.algorithm.group_models = models
    sim.run()
    assert len(rounds) == 3
    seen = [c for corrections in rounds for c in corrections.values()]
    assert max(len(c) for c in seen) == 3  # clients trained in several group rounds
    assert all(np.array_equal(c[0], later) for c in seen for later in c[1:])
    assert any(not np.array_equal(rounds[0][i][0], rounds[2][i][0])
               for i in set(rounds[0]) & set(rounds[2]))  # they do change between rounds


def test_fedclar_clusters_the_groups_after_its_round(tiny):
    sim = Simulation(load_scenario(group_scenario(
        tiny, kind="fedclar", rounds=5, clustering_round=2, clusters=2,
        grouping={"kind": "random", "group_size": 3})))
    sim.run()
    data = sim.algorithm.cluster_data
    assert sorted(data) == [0, 1] and all(d > 0 for d in data.values())
    assert sum(data.values()) == sim.trainer.client_sizes.sum()
    assert sim.summary()["clusters_formed"] == 2 and len(sim.metrics()) == 6


def test_fedclar_reports_the_data_weighted_accuracy_of_its_cluster_models(tiny):
    sim = Simulation(load_scenario(group_scenario(tiny, kind="fedclar")))
    algorithm = sim.algorithm
    algorithm.cluster_data = {0: 1.0, 1: 3.0}
    models = {0: np.array([0.5]), 1: np.array([3.0])}
    (a0, l0), (a1, l1) = sim.trainer.evaluate(models[0]), sim.trainer.evaluate(models[1])
    assert algorithm.test(models) == pytest.approx((0.25 * a0 + 0.75 * a1, 0.25 * l0 + 0.75 * l1))


def test_an_overflowing_unbiased_weight_stops_with_a_clear_error(tiny):
    sim = Simulation(load_scenario(group_scenario(tiny, aggregation="unbiased")))
    groups = [Group("e0", ("c0",), 10, log_p=-1e4, log_pi=-1e4),
              Group("e1", ("c1",), 10, log_p=-0.01, log_pi=-0.01)]
    with pytest.raises(SimulationError, match="aggregation: normalized"):
        sim.algorithm.global_weights(groups)


def test_invalid_combinations_are_named(tiny):
    with pytest.raises(ScenarioError, match="qcid"):
        load_scenario(group_scenario(tiny, grouping={"kind": "qcid"}))
    with pytest.raises(ScenarioError, match="regroup_interval"):
        load_scenario(group_scenario(tiny, kind="fedclar", regroup_interval=5))
    with pytest.raises(ScenarioError, match="fedclar clusters fixed groups: grouping qcid"):
        load_scenario(group_scenario(tiny, kind="fedclar", sampling="uniform",
                                     grouping={"kind": "qcid"}))
    tiny["stop"] = {"max_cost": "100 s"}
    with pytest.raises(ScenarioError, match="max_cost .* hier-fedavg does not charge"):
        load_scenario(tiny)
    with pytest.raises(ScenarioError, match="constant_s"):
        load_scenario(group_scenario(tiny, group_operation={"constant_s": "-1 s"}))


@pytest.mark.slow
def test_group_fel_learns_digits_for_real(tiny, tmp_path):
    scenario = group_scenario(tiny, rounds=12, lr=0.3, groups_per_round=4)
    scenario["world"] = {"kind": "edge", "clients": 30, "edge_servers": 3}
    scenario["model"] = {"kind": "mlp", "hidden": [32]}
    scenario["output"] = {"plots": True}
    result = netfl.run(scenario, out_dir=tmp_path, run_id="r")
    summary = json.loads((result.path / "summary.json").read_text())
    assert summary["final_accuracy"] > 0.75
    assert summary["grouping"]["size_min"] >= 3
    assert (result.path / "accuracy_vs_cost.png").exists()


@pytest.mark.parametrize("compression", [None, {"kind": "qsgd", "levels": 4, "bucket_size": 64}])
def test_groups_trained_together_give_what_each_group_round_alone_gives(tiny, compression):
    # The sampled groups' rounds train in one call per wave. Each group's next round
    # must start from its own x_g after its previous round, however the groups' rounds
    # interleave in simulated time (device jitter 3 makes one group's second round end
    # before another's first: with less, no round here overtook another and the test could
    # not fail),
    # and QSGD must draw in the order the rounds ended: the same bits as one group round at
    # a time.
    scenario = group_scenario(tiny, rounds=3, group_rounds=3, groups_per_round=4,
                              grouping={"kind": "random", "group_size": 3})
    scenario["devices"] = {"clients": {"preset": "raspberry-pi-4", "jitter": 3.0}}
    if compression:
        scenario["algorithm"]["compression"] = compression
    runs, waves = [], []
    for batched in (True, False):
        sim = Simulation(load_scenario(scenario))
        sim.algorithm.batch_groups = batched
        def counted(starts, members, moved=None, original=sim.algorithm.local_rounds):
            waves.append(len(members))
            return original(starts, members, moved)

        sim.algorithm.local_rounds = counted
        sim.run()
        runs.append(sim.metrics())
    assert max(waves) > 1  # some calls trained several groups
    assert runs[0].equals(runs[1])


# ---------------------------------------------------------- the code before the batching


def _old_train_groups(self, groups, x, t):
    """Group-FEL's lines 7-14 as they were before the groups trained together (b789e2b): each
    group's rounds trained when their uploads were in, one call per epoch length."""
    jobs = [self.env.process(_old_group_training(self, g, x, t)) for g in groups]
    yield self.env.all_of(jobs)
    results = [job.value for job in jobs]
    arrived = sum(r is not None for r in results)
    if arrived:
        yield from self.charge_aggregation(self.world.cloud, arrived, "cloud", t)
    return results


def _old_group_training(self, group, x, t):
    self.groups_sampled.add(group.clients)
    if not (yield from self.send(self.world.cloud, group.edge, self.download_bytes)):
        return None
    x_group, delta_c = x, self._zeros
    for _ in range(self.spec.group_rounds):
        jobs = [self.env.process(self.member_job(group, c, t)) for c in group.clients]
        yield self.env.all_of(jobs)
        arrived = [c for c, job in zip(group.clients, jobs, strict=True) if job.value]
        if not arrived:
            self.rounds_without_updates += 1
            yield self.env.timeout(self.spec.idle_wait)
            continue
        by_steps: dict[int, list[str]] = {}
        for client in arrived:
            by_steps.setdefault(self.steps_of(client), []).append(client)
        models = {}
        for steps, members in by_steps.items():
            for client, y in zip(members, self.trainer.local_train(
                    x_group, self.indices(members), steps, self.spec.lr, self.spec.batch_size,
                    momentum=self.spec.momentum, weight_decay=self.spec.weight_decay,
                    prox_mu=self.spec.prox_mu), strict=True):
                models[client] = y
        updates = [self.compressed_towards(models[c], x_group) for c in arrived]
        weights = data_weights(self.trainer.client_sizes[self.indices(arrived)])
        x_group = yield from self.aggregate(group.edge, updates, weights, "edge", t)
    if not (yield from self.send_up(group.edge, self.world.cloud)):
        return None
    return self.compressed_towards(x_group, x), delta_c


@pytest.mark.parametrize("options", [
    {}, {"compression": {"kind": "qsgd", "levels": 4, "bucket_size": 64}},
    {"kind": "group-fedprox"}])
def test_the_batched_groups_give_what_the_code_before_them_gave(tiny, options):
    # A real MLP (the dense path), device jitter, clients that drop out and links to the
    # cloud that go down: members miss rounds, some x_g never reach the edge or the cloud
    # (rounds that did still train and draw), QSGD draws as the rounds end, and the 8 groups'
    # rounds interleave in time (a wave that trained a group's round from a stale x_g fails
    # here)
    scenario = group_scenario(tiny, rounds=4, group_rounds=4, groups_per_round=8,
                              grouping={"kind": "random", "group_size": 3}, **options)
    scenario["model"] = {"kind": "mlp", "hidden": [16]}
    scenario["devices"] = {"clients": {"preset": "raspberry-pi-4", "jitter": 3.0,
                                       "availability": {"kind": "random", "mean_up": "2 s",
                                                        "mean_down": "1 s"}}}
    scenario["links"]["core"]["availability"] = {"kind": "random", "mean_up": "3 s",
                                                 "mean_down": "1 s"}
    runs = []
    for old in (True, False):
        sim = Simulation(load_scenario(scenario))
        if old:
            sim.algorithm.train_groups = types.MethodType(_old_train_groups, sim.algorithm)
        sim.run()
        runs.append((sim.metrics(), sim.summary()))
    (old_metrics, old_summary), (new_metrics, new_summary) = runs
    assert old_summary["transfers_failed"] > 0 and old_summary["dropouts"] > 0
    assert old_metrics.equals(new_metrics)
    drop = {"host_time_s", "host_time_s_by_part"}
    assert {k: v for k, v in old_summary.items() if k not in drop} == {
        k: v for k, v in new_summary.items() if k not in drop}
