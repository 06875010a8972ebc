"""IoV world speed: an hour of a 10 km highway, latency only (the fake trainer), measured in one
process against raw SimPy.

The scenario: 2,000 vehicles per hour each way at 110 +- 5.8 km/h, RSUs every 800 m with 500 m
coverage, the SNR (WINNER+ B1, correlated shadowing, updated every 100 ms / 5 m while a vehicle
transfers) choosing the PHY rate on each RSU's shared 802.11p medium (``--medium dedicated``:
a channel per vehicle at 0.6 of Shannon's rate, netfl's earlier IoV model), Fed-CHS with
K = 5 exchanges of a 100k-parameter model per round with every vehicle in range, for one
simulated hour. Baseline: raw SimPy processing the same number of events as bare timeouts
(the ceiling of any SimPy model).

    python benchmarks/bench_iov.py [--minutes 60] [--clients 1000] [--medium 802.11p] [--json PATH]

Prints the world's build time, the run's events per second and its ratio to raw SimPy; the last
line is ``host_s_per_sim_hour: X`` (world build plus run, per simulated hour; the data set's
generation, which is the learning side's, is reported apart).
"""

from __future__ import annotations

import argparse
import time

import simpy

from netfl.scenario import load_scenario
from netfl.sim.clock import RandomStreams
from netfl.simulation import Simulation
from netfl.world import build_world


def scenario(minutes: float, clients: int, medium: str = "802.11p") -> dict:
    return {
        "name": "bench-iov", "seed": 1,
        "world": {"kind": "iov", "road": {"kind": "highway", "length": "10 km", "lanes": 2},
                  "rsus": {"spacing": "800 m", "coverage": "500 m"},
                  "traffic": {"arrivals_per_hour": 2000, "duration": f"{minutes} min"},
                  "max_clients": clients, "radio": {"kind": "shannon"},
                  "medium": {"kind": medium}},
        "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                 "partition": {"kind": "natural"}},
        "model": {"kind": "fake", "params": 100_000},
        "algorithm": {"kind": "fed-chs", "rounds": 1_000_000, "interactions": 5,
                      "lr": 0.05, "batch_size": 32, "eval_every": 1000},
        "stop": {"max_sim_time": f"{minutes} min"},
    }


def raw_simpy_seconds(events: int) -> float:
    """Host seconds for raw SimPy to process ``events`` timeouts (one process each 1000)."""
    env = simpy.Environment()

    def ticker(n):
        for _ in range(n):
            yield env.timeout(1.0)

    for _ in range(events // 1000):
        env.process(ticker(1000))
    began = time.perf_counter()
    env.run()
    return time.perf_counter() - began


def timed_run(spec):
    """Run ``spec`` once: (the simulation, its world's build s, the rest of its set-up s (the
    data set and the trainer, the learning side's), its run s, its SimPy events, raw SimPy's
    seconds for as many events right after)."""
    began = time.perf_counter()
    build_world(spec.world, RandomStreams(spec.seed).get("world"))
    world_s = time.perf_counter() - began
    began = time.perf_counter()
    simulation = Simulation(spec)  # the world again, then the data set and the fake trainer
    setup_s = time.perf_counter() - began - world_s
    began = time.perf_counter()
    simulation.run()
    run_s = time.perf_counter() - began
    events = next(simulation.env._eid)  # SimPy numbers every scheduled event
    return simulation, world_s, setup_s, run_s, events, raw_simpy_seconds(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--medium", choices=["802.11p", "dedicated"], default="802.11p")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()

    spec = load_scenario(scenario(args.minutes, args.clients, args.medium))
    simulation, world_s, setup_s, run_s, events, raw_s = timed_run(spec)
    summary = simulation.summary()
    hours = args.minutes / 60.0

    print(f"world build: {world_s:.2f} s ({summary['vehicles']} vehicles seen, "
          f"{len(simulation.world.visits)} visits, {summary['vehicle_handovers']} hand-overs)")
    print(f"data set and trainer (the learning side, not counted): {max(setup_s, 0.0):.2f} s")
    print(f"run: {run_s:.2f} s for {args.minutes:g} simulated minutes, {summary['rounds']} "
          f"Fed-CHS rounds, {summary['transfers_delivered']} transfers delivered, "
          f"{summary['uploads_lost']} uploads lost to leaving coverage")
    print(f"events: {events}, {events / run_s:,.0f} per second; raw SimPy "
          f"{events / raw_s:,.0f} per second")
    print(f"netfl_vs_raw_simpy: {raw_s / run_s:.3f}")
    print(f"host_s_per_sim_hour: {(world_s + run_s) / hours:.1f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"netfl_vs_raw_simpy": raw_s / run_s,
                          "host_s_per_sim_hour": (world_s + run_s) / hours},
              ["medium", "simulated min", "world build s", "run s", "rounds",
               "transfers delivered", "uploads lost", "events", "events /s",
               "raw SimPy events /s"],
              [[args.medium, args.minutes, world_s, run_s, summary["rounds"],
                summary["transfers_delivered"], summary["uploads_lost"], events,
                events / run_s, events / raw_s]])


if __name__ == "__main__":
    main()
