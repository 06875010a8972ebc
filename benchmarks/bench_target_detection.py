"""What checking the target on every update costs on the host, measured in one process.

One scenario (default: scenarios/fedchs/short-fed-chs.yaml, the Fed-CHS MLP on Fashion-MNIST),
run to a fixed number of rounds with the run kept going past the target (``at_target: false``)
four ways:

* ``eval_every`` only: no target, so the model is evaluated only for the metrics rows (what
  netfl did before targets were checked on every update);
* ``screened``: the target checked on every update, screened on nested stratified subsets of
  the test set (``stop.target_screen_samples``: the default) and confirmed on the full set;
* ``full``: the target checked on every update on the full test set
  (``target_screen_samples: 0``);
* ``plateau``: a target just above the best accuracy the run reaches: never crossed, and within
  the screening margin for most rounds, so nearly every update pays a full evaluation (the
  worst case for screening).

All simulate the same rounds (evaluation costs no simulated time), so the host-time ratios
are the cost of exact detection. Run it on an otherwise idle machine:

    python benchmarks/bench_target_detection.py [--scenario FILE] [--rounds 20] [--target 0.75]
        [--repeats 2] [--json PATH]

Last line: ``screened_vs_eval_every: X`` (host-time ratio; 1.0 means free).
"""

from __future__ import annotations

import argparse
import time

import netfl


def host_time(scenario: str, overrides: list[str]) -> tuple[float, dict]:
    started = time.perf_counter()
    result = netfl.run(scenario, overrides=overrides, write=False)
    return time.perf_counter() - started, result.summary


def evaluation_costs(scenario: str, repeats: int = 20) -> list[float]:
    """Host seconds of one full test-set evaluation and of each screening stage's evaluation
    of the scenario's model (best of ``repeats``)."""
    from netfl.learn.screening import screening_stages
    from netfl.scenario import load_scenario
    from netfl.simulation import Simulation

    sim = Simulation(load_scenario(scenario, ["stop.target_accuracy=0.5"]))
    trainer, params = sim.trainer, sim.trainer.init_params()
    stages = screening_stages(trainer.test_labels, sim.scenario.stop.target_screen_samples,
                              0.5, sim.streams.get("evaluation"))
    costs = []
    for chosen in [None] + [increment for increment, _, _ in stages]:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            trainer.evaluate(params, chosen)
            best = min(best, time.perf_counter() - started)
        costs.append(best)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="scenarios/fedchs/short-fed-chs.yaml")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--target", type=float, default=0.75)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    common = [f"algorithm.rounds={args.rounds}", "algorithm.eval_every=10",
              "stop.at_target=false", "output.plots=false"]
    host_time(args.scenario, ["algorithm.rounds=1", *common[1:]])  # load data, warm caches
    _, plain = host_time(args.scenario, common + ["stop.target_accuracy=null"])
    # never reached, and within the screening margin for most rounds: every round pays a
    # full test-set evaluation (the worst case for screening)
    plateau = min(0.999, plain["best_accuracy"] + 0.01)
    runs = {
        "eval_every": common + ["stop.target_accuracy=null"],
        "screened": common + [f"stop.target_accuracy={args.target}"],
        "full": common + [f"stop.target_accuracy={args.target}", "stop.target_screen_samples=0"],
        "plateau": common + [f"stop.target_accuracy={plateau}"],
    }
    times: dict[str, float] = {}
    summaries: dict[str, dict] = {}
    for _ in range(args.repeats):  # interleaved, best of: the order and the load average out
        for name, overrides in runs.items():
            elapsed, summaries[name] = host_time(args.scenario, overrides)
            times[name] = min(times.get(name, float("inf")), elapsed)
    for name, s in summaries.items():
        print(f"{name:>10}: host {times[name]:6.1f} s, sim {s['sim_time_s']:.1f} s, "
              f"rounds to target {s['rounds_to_target']}")
    assert summaries["screened"]["rounds_to_target"] == summaries["full"]["rounds_to_target"]
    per_round = times["eval_every"] / args.rounds
    full_eval, *stage_evals = evaluation_costs(args.scenario)
    stages = " / ".join(f"{cost * 1e3:.1f}" for cost in stage_evals) or "none"
    print(f"per update: full test set {full_eval * 1e3:.1f} ms, screening stages {stages} ms, "
          f"one round of this scenario {per_round * 1e3:.0f} ms")
    for name in ("full", "plateau"):
        print(f"{name}_vs_eval_every: {times[name] / times['eval_every']:.3f}")
    print(f"screened_vs_eval_every: {times['screened'] / times['eval_every']:.3f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {f"{name}_vs_eval_every": times[name] / times["eval_every"]
                          for name in ("full", "plateau", "screened")},
              ["run", "host s", "sim s", "rounds to target"],
              [[name, times[name], s["sim_time_s"], s["rounds_to_target"]]
               for name, s in summaries.items()])


if __name__ == "__main__":
    main()
