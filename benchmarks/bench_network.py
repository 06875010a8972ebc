"""Network layer throughput against raw SimPy, measured in one process.

netfl's transfers do more than a raw SimPy transfer (routing, processor sharing, per-hop delivery,
trace records), so the ratio says what that costs. Baseline: the "resource-based transfer" of
DESIGN.md's performance notes: a process that takes a Resource for size / rate seconds per hop.

    python benchmarks/bench_network.py [--transfers 20000]

Last line: ``network_vs_raw_simpy: X`` (netfl transfers/s divided by raw SimPy transfers/s).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import simpy

from netfl.network.transfer import Network
from netfl.scenario.sections import EdgeWorld, Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import TraceBus
from netfl.world.edge import build_edge_world

CLIENTS, EDGES, RATE = 200, 10, 10e6


def workload(n: int, seed: int = 0):
    """(start_s, client index, nbytes, upload?) for n transfers, mostly overlapping."""
    rng = np.random.default_rng(seed)
    starts = np.sort(rng.uniform(0, n / 500.0, n))
    return list(zip(starts, rng.integers(CLIENTS, size=n), rng.integers(1e4, 1e6, size=n),
                    rng.random(n) < 0.5, strict=True))


def run_netfl(jobs) -> float:
    env, streams, trace = simpy.Environment(), RandomStreams(0), TraceBus()
    world = build_edge_world(EdgeWorld(kind="edge", clients=CLIENTS, edge_servers=EDGES),
                             streams.get("world"))
    network = Network(env, world, Links(access={"rate": RATE, "delay": 0.005},
                                        core={"rate": 1e9, "delay": 0.02}), streams, trace)

    def job(start, client, nbytes, up):
        yield env.timeout(start)
        src, dst = (f"c{client}", "cloud") if up else ("cloud", f"c{client}")
        yield network.send(src, dst, nbytes)

    for spec in jobs:
        env.process(job(*spec))
    began = time.perf_counter()
    env.run()
    return time.perf_counter() - began


def run_raw_simpy(jobs) -> float:
    env = simpy.Environment()
    access = [simpy.Resource(env) for _ in range(CLIENTS)]
    core = [simpy.Resource(env) for _ in range(EDGES)]

    def hop(resource, seconds):
        with resource.request() as slot:
            yield slot
            yield env.timeout(seconds)

    def job(start, client, nbytes, up):
        yield env.timeout(start)
        first, second = access[client], core[client * EDGES // CLIENTS]
        if not up:
            first, second = second, first
        yield from hop(first, nbytes * 8 / RATE + 0.005)
        yield from hop(second, nbytes * 8 / 1e9 + 0.02)

    for spec in jobs:
        env.process(job(*spec))
    began = time.perf_counter()
    env.run()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transfers", type=int, default=20_000)
    args = parser.parse_args()
    jobs = workload(args.transfers)
    run_netfl(jobs[:500])  # warm up imports and caches
    netfl_s, raw_s = run_netfl(jobs), run_raw_simpy(jobs)
    netfl_rate, raw_rate = len(jobs) / netfl_s, len(jobs) / raw_s
    print(f"transfers: {len(jobs)} (2 hops each, {CLIENTS} clients, {EDGES} edge servers)")
    print(f"netfl network : {netfl_rate:12,.0f} transfers/s ({netfl_s:.2f} s)")
    print(f"raw SimPy     : {raw_rate:12,.0f} transfers/s ({raw_s:.2f} s)")
    print(f"network_vs_raw_simpy: {netfl_rate / raw_rate:.3f}")


if __name__ == "__main__":
    main()
