"""Event throughput of the mobile worlds: a road with fibre, the same road under Starlink, and
users under Starlink, latency only, each against raw SimPy doing its number of events.

The worlds are the shipped scenarios' (their data set kept, the model replaced by a fake of the
Fashion-MNIST MLP's size, the run cut at ``--minutes`` of simulated time, no target):
``remote/remote-hier-fedavg.yaml`` with fibre (``world.backhaul=null``: an iov world), the same
file as it is (a road under a constellation: 20 RSUs' dishes on Starlink's shell 1, ISLs, two
gateways), and ``leo/starlink-hier-fedavg.yaml`` (100 users under shell 1). Hierarchical FedAvg
on each. Prints per world the build time, the run's events per host second and its ratio to raw
SimPy; the last line is ``joined_vs_iov_events_per_s: X`` (the joined world's events per
second over the fibre road's, each first divided by raw SimPy's measured right after it, so
that load from other processes cancels).

    python benchmarks/bench_worlds.py [--minutes 20] [--json PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_iov import timed_run  # benchmarks/bench_iov.py, beside this script

from netfl.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
FAKE = "model={kind: fake, params: 199210, flops_per_sample: 199000}"
WORLDS = {
    "iov (fibre)": ("remote/remote-hier-fedavg.yaml", ["world.backhaul=null"]),
    "iov under Starlink (joined)": ("remote/remote-hier-fedavg.yaml", []),
    "leo (users)": ("leo/starlink-hier-fedavg.yaml", []),
}


def measure(path: str, extra: list[str], minutes: float) -> dict:
    spec = load_scenario(ROOT / "scenarios" / path, overrides=[
        FAKE, f"stop.max_sim_time={minutes} min", "stop.target_accuracy=null",
        "algorithm.rounds=100000", *extra])
    simulation, world_s, _, run_s, events, raw_s = timed_run(spec)
    summary = simulation.summary()
    return {"world build s": world_s, "run s": run_s, "rounds": summary["rounds"],
            "transfers delivered": summary["transfers_delivered"], "events": events,
            "events /s": events / run_s, "raw SimPy events /s": events / raw_s,
            "vs raw SimPy": raw_s / run_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    rows = {}
    for label, (path, extra) in WORLDS.items():
        rows[label] = row = measure(path, extra, args.minutes)
        print(f"{label}: world {row['world build s']:.1f} s, run {row['run s']:.1f} s for "
              f"{args.minutes:g} simulated min ({row['rounds']} rounds, "
              f"{row['transfers delivered']} transfers), {row['events']:,} events, "
              f"{row['events /s']:,.0f} per s (raw SimPy {row['raw SimPy events /s']:,.0f}: "
              f"{row['vs raw SimPy']:.3f})")
    # each world against raw SimPy measured right after it: load from other processes cancels
    ratio = (rows["iov under Starlink (joined)"]["vs raw SimPy"]
             / rows["iov (fibre)"]["vs raw SimPy"])
    print(f"joined_vs_iov_events_per_s: {ratio:.3f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        columns = ["world", "simulated min", *next(iter(rows.values()))]
        write(args.json, {"joined_vs_iov_events_per_s": ratio},
              columns, [[label, args.minutes, *row.values()] for label, row in rows.items()])


if __name__ == "__main__":
    main()
