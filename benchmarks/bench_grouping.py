"""Grouping time against the number of clients (the Group-FEL paper's Fig. 5), in one process.

One edge server's clients with Dirichlet(0.1) label counts over 10 labels and 20-200 samples
each; RG, CDG, KLDG and CoV-Grouping (MinGS 5, MaxCoV 0.5) group them. Each cell is the best of
``--repeats`` runs; the average group CoV is printed beside it (lower is more balanced). RG is the
baseline every ratio is taken against: the paper has RG near zero cost and CoVG cheaper than KLDG.

    python benchmarks/bench_grouping.py [--clients 100 200 500 1000] [--repeats 3] [--json PATH]

Last line: ``covg_vs_kldg: X``, KLDG's time over CoVG's at the largest client count (above 1
means CoV-Grouping is the faster of the two, as the paper's Fig. 5 reports).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from netfl.algorithms.grouping import (
    cdg_grouping,
    cov_grouping,
    grouping_stats,
    kld_grouping,
    random_grouping,
)

METHODS = {
    "RG": lambda counts, rng: random_grouping(len(counts), 5, rng),
    "CDG": lambda counts, rng: cdg_grouping(counts, 5, rng),
    "KLDG": lambda counts, rng: kld_grouping(counts, 5, rng),
    "CoVG": lambda counts, rng: cov_grouping(counts, 5, 0.5, rng),
}


def label_counts(n_clients: int, seed: int = 0, alpha: float = 0.1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sizes = np.clip(np.round(rng.normal(110, 45, n_clients)), 20, 200).astype(int)
    shares = rng.dirichlet([alpha] * 10, size=n_clients)
    return np.stack([rng.multinomial(n, p) for n, p in zip(sizes, shares, strict=True)])


def best_time(method, counts, repeats: int) -> tuple[float, list]:
    best, groups = float("inf"), None
    for r in range(repeats):
        started = time.perf_counter()
        groups = method(counts, np.random.default_rng(r))
        best = min(best, time.perf_counter() - started)
    return best, groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 200, 500, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    for method in METHODS.values():  # imports and first-call set-up out of the timings
        method(label_counts(20), np.random.default_rng(0))
    print(f"{'clients':>8} " + " ".join(f"{name + ' s (avgCoV)':>20}" for name in METHODS))
    seconds, rows = {}, []
    for n in args.clients:
        counts = label_counts(n)
        cells = []
        for name, method in METHODS.items():
            elapsed, groups = best_time(method, counts, args.repeats)
            seconds[name, n] = elapsed
            cells.append(f"{elapsed:10.4f} ({grouping_stats(counts, groups).avg_cov:.3f})")
            rows.append([n, name, elapsed, grouping_stats(counts, groups).avg_cov])
        print(f"{n:>8} " + " ".join(f"{c:>20}" for c in cells))
    largest = max(args.clients)
    print(f"covg_vs_kldg: {seconds['KLDG', largest] / seconds['CoVG', largest]:.2f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"covg_vs_kldg": seconds["KLDG", largest] / seconds["CoVG", largest]},
              ["clients", "method", "seconds", "avgCoV"], rows)


if __name__ == "__main__":
    main()
