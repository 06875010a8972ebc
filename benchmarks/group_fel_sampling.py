"""How much of the data Group-FEL's sampling reaches: eq. (38)'s ESRCoV against uniform sampling
on the paper-scale scenario's own groups.

For each seed the scenario is built as a run builds it (its partition, its CoV groups), and the
groups' inclusion probabilities pi_g, the chance that a group is among the S sampled in a round,
are computed as the algorithm computes them. Nothing is trained. Printed per seed and sampling
rule: the number of groups and their average CoV (as the run's summary.json has them: the
groups are the run's); how many are sampled in at least half the rounds ("often") and what
share of the clients' samples they hold; the share of the samples in groups sampled in under 1%
of the rounds ("rarely"); and the expected number of rounds of the budget in which a sample's
group trains (median over the samples).

    python benchmarks/group_fel_sampling.py [--seeds 1 2 3] [--rounds 574]
        [--scenario scenarios/group_fel/paper-group-fel.yaml] [--set data.partition.alpha=1.0]
        [--regroup 1 10 50 0]

``--rounds``: the rounds a run makes in its budget (574 for Group-FEL at seed 1).
``--regroup``: instead, for each regrouping interval (0: never), ESRCoV's reach when lines 1-4
run again every so many rounds, as the run does: each formation's groups hold for their
rounds, and a sample's expected rounds trained add up over the formations. Printed: the share
of the samples trained in under 1% of the rounds on expectation, and the expected rounds of the
10th-percentile and the median sample. (The formations are drawn as a run draws them, from the
grouping stream, on which a run draws nothing else: these are the run's own groups.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from netfl import load_scenario
from netfl.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
OFTEN, RARELY = 0.5, 0.01  # inclusion probabilities: in half the rounds or more; under 1%


def scenario_algorithm(scenario_path: Path, seed: int, overrides: list[str]):
    """The scenario's algorithm at ``seed``, built as its run builds it (nothing run)."""
    return Simulation(load_scenario(scenario_path, [*overrides, f"seed={seed}"])).algorithm


def sampling_reach(scenario_path: Path, seed: int, sampling: str, rounds: int,
                   overrides: list[str] = ()) -> dict:
    """One seed and rule: the groups' inclusion probabilities, summarised. ``overrides``:
    ``--set`` strings applied first (say another alpha)."""
    algorithm = scenario_algorithm(scenario_path, seed,
                                   [*overrides, f"algorithm.sampling={sampling}"])
    groups = algorithm.form_groups()
    pi = np.exp([g.log_pi for g in groups])
    data = np.array([g.data for g in groups], dtype=float)
    share = data / data.sum()
    per_sample = np.repeat(pi * rounds, data.astype(int))
    return {"groups": len(groups), "avg_cov": algorithm.stats["avg_cov"],
            "often": int((pi >= OFTEN).sum()),
            "often_share": float(share[pi >= OFTEN].sum()),
            "rarely_share": float(share[pi < RARELY].sum()),
            "median_rounds": float(np.median(per_sample))}


def regrouping_reach(scenario_path: Path, seed: int, interval: int, rounds: int,
                     overrides: list[str] = ()) -> dict:
    """ESRCoV's reach over ``rounds`` rounds when the groups are formed anew every ``interval``
    rounds (0: once). Returns the share of the samples whose expected rounds trained are under
    1% of ``rounds``, and the 10th-percentile and median sample's expected rounds trained."""
    regroup = [f"algorithm.regroup_interval={interval}"] if interval else []
    algorithm = scenario_algorithm(scenario_path, seed, [*overrides, *regroup])
    clients = [c for edge in algorithm.world.edge_servers for c in algorithm.world.clients_of(edge)]
    expected = dict.fromkeys(clients, 0.0)
    start = 0
    while start < rounds:
        span = min(interval or rounds, rounds - start)
        for group in algorithm.form_groups():
            for client in group.clients:
                expected[client] += float(np.exp(group.log_pi)) * span
        start += span
    samples = np.asarray(algorithm.data_sizes(clients))
    per_client = np.array([expected[c] for c in clients])
    p10, median = np.percentile(np.repeat(per_client, samples), [10, 50])
    return {"formations": algorithm.formations,
            "rarely_share": float(samples[per_client < RARELY * rounds].sum() / samples.sum()),
            "p10_rounds": float(p10), "median_rounds": float(median)}


def print_regrouping(args) -> None:
    """The ``--regroup`` table: one row per seed and interval."""
    print(f"{args.scenario.name} {' '.join(args.overrides)}, {args.rounds} rounds, ESRCoV; "
          f"'rarely': expected rounds trained < {RARELY:.0%} of them")
    print("seed regroup every | formations  data rarely trained  rounds a sample trains: "
          "10th percentile, median")
    for seed in args.seeds:
        for interval in args.regroup:
            r = regrouping_reach(args.scenario, seed, interval, args.rounds, args.overrides)
            every = f"{interval:>5}" if interval else "never"
            print(f"{seed:4} {every:>13} | {r['formations']:10}  {100 * r['rarely_share']:18.1f}%  "
                  f"{r['p10_rounds']:8.1f} {r['median_rounds']:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=574)
    parser.add_argument("--scenario", type=Path,
                        default=ROOT / "scenarios/group_fel/paper-group-fel.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="a scenario override, as netfl run --set")
    parser.add_argument("--regroup", type=int, nargs="+", metavar="ROUNDS",
                        help="regrouping intervals to compare (0: never), ESRCoV only")
    args = parser.parse_args()
    if args.regroup:
        if min(args.regroup) < 0:
            parser.error(f"--regroup: an interval is 0 (never) or a number of rounds, "
                         f"not {min(args.regroup)}")
        print_regrouping(args)
        return
    print(f"{args.scenario.name} {' '.join(args.overrides)}, {args.rounds} rounds; "
          f"'often': pi >= {OFTEN}, 'rarely': pi < {RARELY}")
    print("seed sampling | groups avg CoV  often (their data)  data rarely sampled  "
          "median rounds a sample trains")
    for seed in args.seeds:
        for sampling in ("esrcov", "uniform"):
            r = sampling_reach(args.scenario, seed, sampling, args.rounds, args.overrides)
            print(f"{seed:4} {sampling:8} | {r['groups']:6} {r['avg_cov']:7.3f}  {r['often']:5} "
                  f"({100 * r['often_share']:5.1f}%)  {100 * r['rarely_share']:18.1f}%  "
                  f"{r['median_rounds']:8.1f}")


if __name__ == "__main__":
    main()
