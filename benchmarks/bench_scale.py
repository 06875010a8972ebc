"""Scale: latency-only runs (the fake model) of hierarchical FedAvg and Fed-CHS on the edge world at
1k, 10k, 100k and 1M clients; host time and peak memory per size, and their log-log slopes
(issue 17, item 1).

Each size runs in a fresh process (peak RSS is the process's), with a time and memory limit: a
size over either is reported as such, and larger sizes of that algorithm are skipped.

    python benchmarks/bench_scale.py [--sizes 1000,10000,100000,1000000] [--rounds 10]
                                     [--limit-s 600] [--limit-gb 8]
                                     [--algorithms hier-fedavg,fed-chs]

The world: ``clients`` clients under clients / 100 edge servers (at least 2; a ring of them for
Fed-CHS), 10 Mbit/s access,
the default backhaul and core; the data: synthetic, i.i.d., one client's samples at most 40; the
model: fake, 100k parameters. Hierarchical FedAvg: ``rounds`` cloud rounds of 2 edge rounds of
1 local step; Fed-CHS: ``rounds`` x 10 rounds of K = 2 interactions. Prints a row per size and
algorithm and, last, ``scale_slope: time X, memory Y`` (the worse algorithm's least-squares
slopes over the sizes that finished; goal <= 1.1 each).
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
    args = parser.parse_args()
    if args.child:
        clients, algorithm, rounds = args.child.split(",")
        child(int(clients), algorithm, int(rounds))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    algorithms = args.algorithms.split(",")
    unknown = sorted(set(algorithms) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithms {unknown}; known: {', '.join(ALGORITHMS)}")
    print(f"{'algorithm':<12} {'clients':>9} {'build s':>8} {'total s':>8} {'peak GB':>8} status")
    slopes = []
    for algorithm in algorithms:
        finished = []
        for clients in sizes:
            row = measure(clients, algorithm, args.rounds, args.limit_s, args.limit_gb)
            if row["status"] != "ok":
                print(f"{algorithm:<12} {clients:>9} {'-':>8} {'-':>8} {'-':>8} {row['status']}")
                break  # a larger size would fail too
            print(f"{algorithm:<12} {clients:>9} {row['build_s']:>8.1f} {row['total_s']:>8.1f} "
                  f"{row['peak_gb']:>8.2f} ok", flush=True)
            finished.append((clients, row))
        if len(finished) >= 2:
            slopes.append((slope([c for c, _ in finished], [r["total_s"] for _, r in finished]),
                           slope([c for c, _ in finished], [r["peak_gb"] for _, r in finished])))
    if slopes:
        time_slope, memory_slope = max(s[0] for s in slopes), max(s[1] for s in slopes)
        print(f"scale_slope: time {time_slope:.2f}, memory {memory_slope:.2f}")


if __name__ == "__main__":
    main()
