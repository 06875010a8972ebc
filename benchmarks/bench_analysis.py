"""What the run analysis costs: a latency-only run (the fake model) with netfl's per-round
analysis (netfl.results.rounds, netfl.results.participation: on in every run) against the same
run with the analysers replaced by ones that subscribe to nothing, back to back in one process,
alternating, the best of ``--repeats`` each. Prints both times and their ratio (the goal: at
most 1.05). Times are the process's CPU seconds (all its threads): on a machine shared with
other work they move far less than wall-clock seconds.

    python benchmarks/bench_analysis.py [--clients 10000] [--rounds 3]
                                        [--algorithms hier-fedavg,fed-chs] [--repeats 3]
                                        [--scenario FILE [--set KEY=VALUE ...]] [--json PATH]

The scenarios are bench_scale.py's (clients / 100 edge servers, 10 Mbit/s access, 100k-parameter
fake model), or the one ``--scenario`` names (e.g. scenarios/fedchs/paper-fed-chs.yaml, with
real training: the ratio then includes training's own noise). Results are the same either
way (the analysis only reads the trace), checked.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import scenario  # noqa: E402

import netfl.results.run_analysis as run_analysis  # noqa: E402
import netfl.simulation as simulation_module  # noqa: E402
from netfl.scenario import load_scenario  # noqa: E402


class _Off:
    """An analyser that reads nothing."""

    def __init__(self, *_args):
        self.rows = []

    def summary(self) -> dict:
        return {}


def timed(spec, analysis: bool) -> tuple[float, dict]:
    saved = run_analysis.RoundAnalyzer, run_analysis.Participation
    if not analysis:
        run_analysis.RoundAnalyzer = run_analysis.Participation = _Off
    try:
        began = time.process_time()
        simulation = simulation_module.Simulation(spec)
        simulation.run()
        summary = simulation.summary()
        return time.process_time() - began, summary
    finally:
        run_analysis.RoundAnalyzer, run_analysis.Participation = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--algorithms", default="hier-fedavg,fed-chs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenario", type=Path, default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    cases = ([(args.scenario.stem, load_scenario(args.scenario, args.overrides))]
             if args.scenario is not None else
             [(a, load_scenario(scenario(args.clients, a, args.rounds)))
              for a in args.algorithms.split(",")])
    for algorithm, spec in cases:
        on, off = [], []
        for _ in range(args.repeats):
            t_off, s_off = timed(spec, False)
            t_on, s_on = timed(spec, True)
            off.append(t_off)
            on.append(t_on)
        same = all(s_on[k] == s_off[k] for k in s_off
                   if not k.startswith("host_time") and k not in ("round_critical_path",
                                                                  "participation"))
        row = {"algorithm": algorithm, "clients": s_on["clients"], "with_s": min(on),
               "without_s": min(off), "ratio": min(on) / min(off), "same_results": same,
               "transfers": s_on["transfers_delivered"], "rounds": s_on["rounds"]}
        rows.append(row)
        print(f"{algorithm} {row['clients']:,} clients, {row['transfers']:,} transfers: "
              f"{row['with_s']:.2f} CPU s with the analysis, {row['without_s']:.2f} without, "
              f"ratio {row['ratio']:.3f}; same results: {same}")
    worst = max(r["ratio"] for r in rows)
    print(f"analysis_cost: worst ratio {worst:.3f} (goal <= 1.05)")
    if args.json is not None:
        from record import write

        columns = ["algorithm", "clients", "transfers", "with_s", "without_s", "ratio"]
        write(args.json, {"analysis_cost_worst_ratio": worst}, columns,
              [[r[c] for c in columns] for r in rows])
    return 0 if all(r["same_results"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
