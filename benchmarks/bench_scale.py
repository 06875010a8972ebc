"""Scale: latency-only runs (the fake model) of hierarchical FedAvg and Fed-CHS on the edge world at
1k, 10k, 100k and 1M clients; host time and peak memory per size, and their log-log slopes.

Each size runs in a fresh process (peak RSS is the process's), with a time and memory limit: a
size over either is reported as such, and larger sizes of that algorithm are skipped.

    python benchmarks/bench_scale.py [--sizes 1000,10000,100000,1000000] [--rounds 10]
                                     [--limit-s 600] [--limit-gb 8]
                                     [--algorithms hier-fedavg,fed-chs]
                                     [--paths per-event,closed-form] [--compare] [--json PATH]

``--paths``: simulate every exchange event by event (``per-event``, the default), or with
``links.closed_form: true`` (``closed-form``: the clients' transfers and computations advanced
in closed form, docs/models/network.md), or both, each size and algorithm in its own process.
``--per-event-max N`` runs the per-event path (and the floor) only up to N clients.
``--compare`` (with both paths) checks that they agree: for each size and algorithm that
finished on both, the largest relative difference over the summary's times, bytes, counts and
critical-path statistics, printed as ``closed_form_vs_per_event: max relative difference X``.

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


PATHS = ("per-event", "closed-form")


def scenario(clients: int, algorithm: str, rounds: int, closed_form: bool = False) -> dict:
    algo = ({"kind": "hier-fedavg", "rounds": rounds, "edge_rounds": 2, "local_steps": 1,
             "lr": 0.05, "batch_size": 32, "eval_every": 1000}
            if algorithm == "hier-fedavg" else
            {"kind": "fed-chs", "rounds": 10 * rounds, "interactions": 2, "lr": 0.05,
             "batch_size": 32, "eval_every": 1000})
    return {"name": f"scale-{algorithm}-{clients}", "seed": 1,
            "world": {"kind": "edge", "clients": clients,
                      "edge_servers": max(clients // 100, 2),
                      **({"topology": {"kind": "ring"}} if algorithm == "fed-chs" else {})},
            "links": {"access": {"rate": "10 Mbps", "delay": "5 ms"},
                      "closed_form": closed_form},
            "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                     "partition": {"kind": "iid"}},
            "model": {"kind": "fake", "params": 100_000},
            "algorithm": algo, "output": {"plots": False}}


def child(clients: int, algorithm: str, rounds: int, closed_form: bool = False) -> None:
    """Run one size in this process and print its figures as JSON."""
    from netfl.scenario import load_scenario
    from netfl.simulation import Simulation

    began = time.perf_counter()
    simulation = Simulation(load_scenario(scenario(clients, algorithm, rounds, closed_form)))
    built = time.perf_counter() - began
    simulation.run()
    total = time.perf_counter() - began
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux
    summary = simulation.summary()
    print(json.dumps({"build_s": built, "total_s": total, "peak_gb": peak_gb,
                      "rounds": summary["rounds"],
                      "closed_form_exchanges": summary.get("exchanges_in_closed_form"),
                      "fingerprint": fingerprint(summary)}))


def fingerprint(summary: dict) -> dict[str, float]:
    """The summary's times, bytes, counts and critical-path statistics, flattened (the
    per-link bytes as their sum and count)."""
    out = {"bytes_by_link_sum": math.fsum(summary["bytes_by_link"].values()),
           "links_used": len(summary["bytes_by_link"])}
    for key in ("sim_time_s", "rounds", "local_steps", "bytes_total", "wire_bytes_total",
                "bytes_hop_weighted", "transfers_delivered", "final_accuracy"):
        out[key] = summary[key]
    for key in ("transfer_time_s_by_tag", "compute_time_s_by_tier",
                "aggregation_time_s_by_tier", "bytes_by_tag"):
        out |= {f"{key}.{k}": v for k, v in summary[key].items()}
    for part, figures in summary.get("round_critical_path", {}).items():
        out |= {f"round_critical_path.{part}.{k}": v for k, v in figures.items()}
    return out


def relative_difference(a: dict[str, float], b: dict[str, float]) -> tuple[float, str]:
    """The largest relative difference between two fingerprints, and where (a key missing
    from one counts as infinite)."""
    worst, where = 0.0, ""
    for key in a.keys() | b.keys():
        if key not in a or key not in b:
            return math.inf, key
        x, y = float(a[key]), float(b[key])
        difference = abs(x - y) / max(abs(x), abs(y), 1e-12) if x != y else 0.0
        if difference > worst:
            worst, where = difference, key
    return worst, where


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


def measure(clients: int, algorithm: str, rounds: int, limit_s: float, limit_gb: float,
            path: str = "per-event") -> dict:
    def limit_memory():
        cap = int(limit_gb * 1e9)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", f"{clients},{algorithm},{rounds},{path}"],
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
    parser.add_argument("--paths", default="per-event",
                        help="per-event, closed-form or both (comma-separated)")
    parser.add_argument("--compare", action="store_true",
                        help="check the two paths' results against each other")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the plain-SimPy floor")
    parser.add_argument("--per-event-max", type=int, default=None, metavar="CLIENTS",
                        help="run the per-event path and the floor only up to this size")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    if args.child:
        clients, algorithm, rounds, path = args.child.split(",")
        if algorithm == RAW:
            raw_simpy_floor(int(clients), int(rounds))
        else:
            child(int(clients), algorithm, int(rounds), path == "closed-form")
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    algorithms, paths = args.algorithms.split(","), args.paths.split(",")
    unknown = sorted(set(algorithms) - set(ALGORITHMS)) + sorted(set(paths) - set(PATHS))
    if unknown:
        parser.error(f"unknown algorithms or paths {unknown}; known: {', '.join(ALGORITHMS)}; "
                     f"{', '.join(PATHS)}")
    if args.compare and len(set(paths)) < 2:
        parser.error("--compare needs both paths: --paths per-event,closed-form")
    runs = [(algorithm if path == "per-event" else f"{algorithm} closed-form", algorithm, path)
            for algorithm in algorithms for path in paths]
    if "hier-fedavg" in algorithms and not args.no_floor:
        runs.append((RAW, RAW, "per-event"))
    print(f"{'algorithm':<24} {'clients':>9} {'build s':>8} {'total s':>8} {'peak GB':>8} status")
    finished: dict[str, list[tuple[int, dict]]] = {}
    rows: list[list] = []
    for label, algorithm, path in runs:
        finished[label] = []
        for clients in sizes:
            if path == "per-event" and args.per_event_max is not None and (
                    clients > args.per_event_max):
                break
            row = measure(clients, algorithm, args.rounds, args.limit_s, args.limit_gb, path)
            if row["status"] != "ok":
                print(f"{label:<24} {clients:>9} {'-':>8} {'-':>8} {'-':>8} {row['status']}")
                rows.append([label, clients, None, None, None, row["status"]])
                break  # a larger size would fail too
            print(f"{label:<24} {clients:>9} {row['build_s']:>8.1f} {row['total_s']:>8.1f} "
                  f"{row['peak_gb']:>8.2f} ok", flush=True)
            rows.append([label, clients, row["build_s"], row["total_s"], row["peak_gb"], "ok"])
            finished[label].append((clients, row))
    headline: dict[str, float] = {}
    if args.compare:
        worst = 0.0
        for algorithm in algorithms:
            closed = dict(finished.get(f"{algorithm} closed-form", []))
            for clients, row in finished.get(algorithm, []):
                if clients in closed:
                    difference, where = relative_difference(row["fingerprint"],
                                                            closed[clients]["fingerprint"])
                    print(f"{algorithm} at {clients:,} clients: closed form against per event, "
                          f"max relative difference {difference:.2g} ({where or '-'})")
                    worst = max(worst, difference)
        print(f"closed_form_vs_per_event: max relative difference {worst:.2g}")
        headline["closed_form_vs_per_event_max_relative_difference"] = worst
    slopes = {name: (slope([c for c, _ in rows], [r["total_s"] for _, r in rows]),
                     slope([c for c, _ in rows], [r["peak_gb"] for _, r in rows]))
              for name, rows in finished.items() if len(rows) >= 2}
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
