"""Scale: latency-only runs (the fake model) of hierarchical FedAvg and Fed-CHS on the edge world at
1k, 10k, 100k and 1M clients; host time and peak memory per size, and their log-log slopes.

Each size runs in a fresh process (peak RSS is the process's), with a time and memory limit: a
size over either is reported as such, and larger sizes of that algorithm are skipped.

    python benchmarks/bench_scale.py [--sizes 1000,10000,100000,1000000] [--rounds 10]
                                     [--limit-s 600] [--limit-gb 8]
                                     [--algorithms hier-fedavg,fed-chs] [--json PATH]

The world: ``clients`` clients under clients / 100 edge servers (at least 2; a ring of them for
Fed-CHS), 10 Mbit/s access,
the default backhaul and core; the data: synthetic, i.i.d., one client's samples at most 40; the
model: fake, 100k parameters. Hierarchical FedAvg: ``rounds`` cloud rounds of 2 edge rounds of
1 local step; Fed-CHS: ``rounds`` x 10 rounds of K = 2 interactions. Prints a row per size and
algorithm and, last, ``scale_slope: time X, memory Y`` (the worse algorithm's least-squares
slopes over the sizes that finished; goal <= 1.1 each).

Floor: for hierarchical FedAvg, each size also runs ``raw-simpy``: the same rounds in plain
SimPy with nothing but their events (per client and edge round a download and an upload, each
holding the client's link as a Resource for size / rate + delay seconds, and a compute timeout
between; per edge round the edge server waiting for all its clients, per cloud round the edge
servers exchanging with the cloud over their own core Resource), under the cyclic collector's
settings a netfl run uses. No routing, fair sharing, TCP, devices or records: what SimPy alone
costs for the rounds' events, the floor under any netfl built on it. Its rows are printed as an
algorithm of their own, with netfl's time over it, and ``raw_simpy_slope: time X``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

ALGORITHMS = ("hier-fedavg", "fed-chs")


def scenario(clients: int, algorithm: str, rounds: int) -> dict:
    algo = ({"kind": "hier-fedavg", "rounds": rounds, "edge_rounds": 2, "local_steps": 1,
             "lr": 0.05, "batch_size": 32, "eval_every": 1000}
            if algorithm == "hier-fedavg" else
            {"kind": "fed-chs", "rounds": 10 * rounds, "interactions": 2, "lr": 0.05,
             "batch_size": 32, "eval_every": 1000})
    return {"name": f"scale-{algorithm}-{clients}", "seed": 1,
            "world": {"kind": "edge", "clients": clients,
                      "edge_servers": max(clients // 100, 2),
                      **({"topology": {"kind": "ring"}} if algorithm == "fed-chs" else {})},
            "links": {"access": {"rate": "10 Mbps", "delay": "5 ms"}},
            "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                     "partition": {"kind": "iid"}},
            "model": {"kind": "fake", "params": 100_000},
            "algorithm": algo, "output": {"plots": False}}


def child(clients: int, algorithm: str, rounds: int) -> None:
    """Run one size in this process and print its figures as JSON."""
    from netfl.scenario import load_scenario
    from netfl.simulation import Simulation

    began = time.perf_counter()
    simulation = Simulation(load_scenario(scenario(clients, algorithm, rounds)))
    built = time.perf_counter() - began
    simulation.run()
    total = time.perf_counter() - began
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux
    print(json.dumps({"build_s": built, "total_s": total, "peak_gb": peak_gb,
                      "rounds": simulation.summary()["rounds"]}))


RAW = "raw-simpy"
PAYLOAD_BITS = 100_000 * 4 * 8.0  # the fake model's 100k float32 parameters
ACCESS_BPS, ACCESS_DELAY_S = 10e6, 0.005
CORE_BPS, CORE_DELAY_S = 1e9, 0.02  # the defaults of links.core
COMPUTE_S = 0.5


def raw_simpy_floor(clients: int, rounds: int) -> None:
    """Hierarchical FedAvg's events in plain SimPy (module docstring), in this process; prints
    its figures as ``child`` does."""
    import simpy

    from netfl.simulation import collector_for_a_run

    began = time.perf_counter()
    env = simpy.Environment()
    servers = max(clients // 100, 2)
    access = [simpy.Resource(env) for _ in range(clients)]
    core = [simpy.Resource(env) for _ in range(servers)]

    def hop(link, seconds):
        with link.request() as slot:
            yield slot
            yield env.timeout(seconds)

    def client_round(client):
        yield from hop(access[client], PAYLOAD_BITS / ACCESS_BPS + ACCESS_DELAY_S)
        yield env.timeout(COMPUTE_S * (1 + (client % 10) / 100))  # not all in lock step
        yield from hop(access[client], PAYLOAD_BITS / ACCESS_BPS + ACCESS_DELAY_S)

    def edge_server(server):
        members = range(server, clients, servers)
        for _ in range(rounds):
            yield from hop(core[server], PAYLOAD_BITS / CORE_BPS + CORE_DELAY_S)
            for _ in range(2):  # edge rounds per cloud round, as scenario() has it
                yield env.all_of([env.process(client_round(c)) for c in members])
            yield from hop(core[server], PAYLOAD_BITS / CORE_BPS + CORE_DELAY_S)

    done = env.all_of([env.process(edge_server(s)) for s in range(servers)])
    built = time.perf_counter() - began
    with collector_for_a_run():
        env.run(until=done)
    total = time.perf_counter() - began
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(json.dumps({"build_s": built, "total_s": total, "peak_gb": peak_gb,
                      "rounds": rounds}))


def measure(clients: int, algorithm: str, rounds: int, limit_s: float, limit_gb: float) -> dict:
    def limit_memory():
        cap = int(limit_gb * 1e9)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", f"{clients},{algorithm},{rounds}"],
            capture_output=True, text=True, timeout=limit_s, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return {"status": f"over {limit_s:g} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"status": "over the memory limit" if "MemoryError" in done.stderr
                or done.returncode < 0 else f"failed: {tail[:80]}"}
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1])}


def slope(sizes: list[int], values: list[float]) -> float:
    """Least-squares slope of log(value) on log(size)."""
    xs, ys = [math.log(s) for s in sizes], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
            / sum((x - mx) ** 2 for x in xs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--limit-s", type=float, default=600.0)
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    if args.child:
        clients, algorithm, rounds = args.child.split(",")
        if algorithm == RAW:
            raw_simpy_floor(int(clients), int(rounds))
        else:
            child(int(clients), algorithm, int(rounds))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    algorithms = args.algorithms.split(",")
    unknown = sorted(set(algorithms) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithms {unknown}; known: {', '.join(ALGORITHMS)}")
    print(f"{'algorithm':<12} {'clients':>9} {'build s':>8} {'total s':>8} {'peak GB':>8} status")
    finished: dict[str, list[tuple[int, dict]]] = {}
    rows: list[list] = []
    for algorithm in algorithms + ([RAW] if "hier-fedavg" in algorithms else []):
        finished[algorithm] = []
        for clients in sizes:
            row = measure(clients, algorithm, args.rounds, args.limit_s, args.limit_gb)
            if row["status"] != "ok":
                print(f"{algorithm:<12} {clients:>9} {'-':>8} {'-':>8} {'-':>8} {row['status']}")
                rows.append([algorithm, clients, None, None, None, row["status"]])
                break  # a larger size would fail too
            print(f"{algorithm:<12} {clients:>9} {row['build_s']:>8.1f} {row['total_s']:>8.1f} "
                  f"{row['peak_gb']:>8.2f} ok", flush=True)
            rows.append([algorithm, clients, row["build_s"], row["total_s"], row["peak_gb"], "ok"])
            finished[algorithm].append((clients, row))
    slopes = {name: (slope([c for c, _ in rows], [r["total_s"] for _, r in rows]),
                     slope([c for c, _ in rows], [r["peak_gb"] for _, r in rows]))
              for name, rows in finished.items() if len(rows) >= 2}
    headline: dict[str, float] = {}
    raw = dict(finished.pop(RAW, []))
    if raw:
        ratios = ", ".join(f"{c:,}: {r['total_s'] / raw[c]['total_s']:.1f}x"
                           for c, r in finished.get("hier-fedavg", []) if c in raw)
        print(f"hier-fedavg over raw SimPy's floor: {ratios}")
    if RAW in slopes:
        headline["raw_simpy_slope_time"] = slopes[RAW][0]
        print(f"raw_simpy_slope: time {slopes.pop(RAW)[0]:.2f}")
    if slopes:
        time_slope = max(s[0] for s in slopes.values())
        memory_slope = max(s[1] for s in slopes.values())
        print(f"scale_slope: time {time_slope:.2f}, memory {memory_slope:.2f}")
        headline.update(scale_slope_time=time_slope, scale_slope_memory=memory_slope)
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, headline,
              ["algorithm", "clients", "build s", "total s", "peak GB", "status"], rows)


if __name__ == "__main__":
    main()
