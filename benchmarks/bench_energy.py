"""What energy accounting costs: the same scenario with and without an ``energy:`` section
(idle power and client radios on), back to back in one process, alternating, the best of
``--repeats`` each. Prints both CPU times and their ratio (the goal: at most 1.05) and checks
that every other result is the same.

    python benchmarks/bench_energy.py [--scenario FILE] [--set KEY=VALUE ...] [--repeats 3]
                                      [--json PATH]

Default: scenarios/fedchs/short-fedavg.yaml (100 clients, 62 rounds, real training), its
devices given power figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import netfl.simulation as simulation_module
from netfl.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
ENERGY = ["energy={idle: true, radios: {clients: {tx: 1.6 W, rx: 1.0 W}, edge: {tx: 4 W}}}",
          "devices.edge.power={active: 15 W, idle: 3 W}"]


def timed(spec) -> tuple[float, dict]:
    began = time.process_time()
    simulation = simulation_module.Simulation(spec)
    simulation.run()
    summary = simulation.summary()
    return time.process_time() - began, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=Path,
                        default=ROOT / "scenarios" / "fedchs" / "short-fedavg.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    plain = load_scenario(args.scenario, args.overrides)
    counted = load_scenario(args.scenario, [*args.overrides, *ENERGY])
    with_s, without_s = [], []
    for _ in range(args.repeats):
        t_off, s_off = timed(plain)
        t_on, s_on = timed(counted)
        without_s.append(t_off)
        with_s.append(t_on)
    same = all(s_on[k] == s_off[k] for k in s_off if not k.startswith("host_time"))
    ratio = min(with_s) / min(without_s)
    print(f"{args.scenario.name}: {min(with_s):.2f} CPU s counting energy "
          f"({s_on['energy_j_total']:,.0f} J), {min(without_s):.2f} without; same results: "
          f"{same}")
    print(f"energy_cost: ratio {ratio:.3f} (goal <= 1.05)")
    if args.json is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from record import write

        columns = ["scenario", "with_s", "without_s", "ratio", "energy_j"]
        write(args.json, {"energy_cost_ratio": ratio}, columns,
              [[args.scenario.name, min(with_s), min(without_s), ratio,
                s_on["energy_j_total"]]])
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
