"""Network layer throughput against raw SimPy, measured in one process, on three workloads.

netfl's transfers do more than a raw SimPy transfer (routing, max-min fair shares over the whole
path, TCP's set-up and slow-start rounds, trace records), so the ratio says what that costs.
Baseline: the "resource-based transfer" of DESIGN.md's performance notes: a process that takes
a Resource for size / rate seconds per hop.

* ``edge``: 200 clients under 10 edge servers, transfers between a client and the cloud (2 hops),
  mostly overlapping;
* ``multi-hop``: 20 edge servers on a ring (1 Gbps, 2 ms), half the transfers between random
  pairs of them (up to 10 backhaul hops, as Fed-CHS hands its model on), half from a client to
  its edge server;
* ``many-flows``: 100 clients in one shared radio cell, uploading in bursts of 100 at once.

    python benchmarks/bench_network.py [--transfers 20000] [--json PATH]

Prints transfers/s per workload for the ``tcp`` and ``fluid`` transports and raw SimPy, the
fabric's solver passes per transfer and flow classes solved per pass, the SimPy events each
path schedules per transfer, and the **event bound**: raw SimPy's events per transfer over
tcp's, the tcp ratio netfl would reach if each of its events cost what a raw SimPy event costs
(the modelled events themselves, TCP's set-up, slow-start rounds and a flow's tail, are the
floor no cheaper event handling removes). Last ``network_vs_raw_simpy: X``: the smallest tcp
ratio over the workloads.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.network.helper import build_network
from netfl.network.transfer import Network
from netfl.scenario.sections import EdgeWorld, Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import TraceBus
from netfl.world.edge import build_edge_world

ACCESS_RATE, BACKHAUL_RATE, CORE_RATE = 10e6, 1e9, 1e9
ACCESS_DELAY, BACKHAUL_DELAY, CORE_DELAY = 0.005, 0.002, 0.02


@dataclass(frozen=True)
class Workload:
    name: str
    world: dict
    links: dict
    jobs: list  # (start_s, src, dst, nbytes)


def edge_workload(n: int, seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    clients = 200
    starts = np.sort(rng.uniform(0, n / 500.0, n))
    jobs = []
    for start, client, nbytes, up in zip(starts, rng.integers(clients, size=n),
                                         rng.integers(1e4, 1e6, size=n), rng.random(n) < 0.5,
                                         strict=True):
        ends = (f"c{client}", "cloud") if up else ("cloud", f"c{client}")
        jobs.append((start, *ends, int(nbytes)))
    return Workload("edge", {"clients": clients, "edge_servers": 10}, {}, jobs)


def multi_hop_workload(n: int, seed: int = 1) -> Workload:
    """Models handed between edge servers on a ring (as Fed-CHS does, over up to 10 backhaul
    hops), and each edge server's clients uploading to it."""
    rng = np.random.default_rng(seed)
    clients, servers = 200, 20
    starts = np.sort(rng.uniform(0, n / 500.0, n))
    jobs = []
    for start, a, b, c, size, relay in zip(
            starts, rng.integers(servers, size=n), rng.integers(1, servers, size=n),
            rng.integers(clients, size=n), rng.integers(1e4, 1e6, size=n), rng.random(n) < 0.5,
            strict=True):
        if relay:
            jobs.append((start, f"e{a}", f"e{(a + b) % servers}", int(size)))
        else:
            jobs.append((start, f"c{c}", f"e{c * servers // clients}", int(size)))
    return Workload("multi-hop", {"clients": clients, "edge_servers": servers,
                                  "topology": {"kind": "ring"}, "cloud": "none"}, {}, jobs)


def many_flows_workload(n: int, seed: int = 2) -> Workload:
    rng = np.random.default_rng(seed)
    clients = 100
    jobs = []
    for burst in range(max(n // clients, 1)):
        start = burst * 10.0  # each burst ends well within 10 s (100 x 50 KB over 10 Mbps)
        for client in range(clients):
            jobs.append((start + rng.uniform(0, 0.01), f"c{client}", "e0",
                         int(rng.integers(1e4, 1e5))))
    return Workload("many-flows", {"clients": clients, "edge_servers": 1},
                    {"access": {"rate": ACCESS_RATE, "delay": ACCESS_DELAY, "shared": True}}, jobs)


def run_netfl(work: Workload, transport: str) -> tuple[float, Network]:
    env, streams, trace = simpy.Environment(), RandomStreams(0), TraceBus()
    world = build_edge_world(EdgeWorld(kind="edge", **work.world), streams.get("world"))
    links = {"access": {"rate": ACCESS_RATE, "delay": ACCESS_DELAY},
             "backhaul": {"rate": BACKHAUL_RATE, "delay": BACKHAUL_DELAY},
             "core": {"rate": CORE_RATE, "delay": CORE_DELAY},
             **work.links, "transport": {"kind": transport}}
    network = build_network(env, world, Links(**links), streams, trace)

    def job(start, src, dst, nbytes):
        yield env.timeout(start)
        yield network.send(src, dst, nbytes)

    for spec in work.jobs:
        env.process(job(*spec))
    began = time.perf_counter()
    env.run()
    return time.perf_counter() - began, network


def events_of(env: simpy.Environment) -> int:
    """The events ``env`` has scheduled so far (SimPy numbers each one)."""
    return next(env._eid)


def run_raw_simpy(work: Workload, routes: dict) -> float:
    """Each transfer takes a Resource per hop of its route for size / rate + delay seconds."""
    env = simpy.Environment()
    resources: dict = {}

    def hop(key, seconds):
        resource = resources.setdefault(key, simpy.Resource(env))
        with resource.request() as slot:
            yield slot
            yield env.timeout(seconds)

    def job(start, src, dst, nbytes):
        yield env.timeout(start)
        for u, v, rate, delay in routes[(src, dst)]:
            yield from hop((u, v), nbytes * 8 / rate + delay)

    for spec in work.jobs:
        env.process(job(*spec))
    began = time.perf_counter()
    env.run()
    return time.perf_counter() - began, events_of(env)


def routes_of(work: Workload, network: Network) -> dict:
    """The hops (u, v, rate, delay) netfl routes each job over, for the raw baseline."""
    routes = {}
    for _, src, dst, _ in work.jobs:
        if (src, dst) not in routes:
            path = network.route(src, dst)
            hops = []
            for u, v in zip(path, path[1:], strict=False):
                link = network.link(u, v)
                key = link.channel(u, v).name  # a shared cell is one resource
                hops.append((key, "", link.channel(u, v).capacity_bps, link.delay_s))
            routes[(src, dst)] = hops
    return routes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transfers", type=int, default=20_000)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    workloads = [edge_workload(args.transfers), multi_hop_workload(args.transfers),
                 many_flows_workload(args.transfers)]
    run_netfl(edge_workload(500), "tcp")  # warm up imports and caches
    ratios, rows = [], []
    print(f"{'workload':<11} {'transfers':>9} {'raw SimPy/s':>12} {'tcp/s':>10} {'fluid/s':>10} "
          f"{'tcp ratio':>9} {'fluid ratio':>11} {'tcp passes/transfer':>19} "
          f"{'classes solved/pass':>20} {'raw events/transfer':>20} "
          f"{'tcp events/transfer':>20} {'event bound':>11}")
    for work in workloads:
        n = len(work.jobs)
        tcp_s, network = run_netfl(work, "tcp")
        tcp_events = events_of(network.env)
        fluid_s, _ = run_netfl(work, "fluid")
        raw_s, raw_events = run_raw_simpy(work, routes_of(work, network))
        fabric = network.fabric
        passes = fabric.recomputations
        ratios.append(raw_s / tcp_s)
        print(f"{work.name:<11} {n:>9} {n / raw_s:>12,.0f} {n / tcp_s:>10,.0f} "
              f"{n / fluid_s:>10,.0f} {raw_s / tcp_s:>9.3f} {raw_s / fluid_s:>11.3f} "
              f"{passes / n:>19.2f} {fabric.classes_solved / max(passes, 1):>20.1f} "
              f"{raw_events / n:>20.2f} {tcp_events / n:>20.2f} "
              f"{raw_events / tcp_events:>11.3f}")
        rows.append([work.name, n, n / raw_s, n / tcp_s, n / fluid_s, raw_s / tcp_s,
                     raw_s / fluid_s, passes / n, fabric.classes_solved / max(passes, 1),
                     raw_events / n, tcp_events / n, raw_events / tcp_events])
    print(f"network_vs_raw_simpy: {min(ratios):.3f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"network_vs_raw_simpy": min(ratios)},
              ["workload", "transfers", "raw SimPy /s", "tcp /s", "fluid /s", "tcp ratio",
               "fluid ratio", "tcp passes / transfer", "classes solved / pass",
               "raw events / transfer", "tcp events / transfer", "event bound"], rows)


if __name__ == "__main__":
    main()
