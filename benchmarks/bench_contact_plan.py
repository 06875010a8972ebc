"""Contact-plan speed: Starlink shell 1 (1,584 satellites) x 100 ground users x 1 day at 10 s
steps, refined to 0.1 s, measured in one process against a naive baseline.

Baseline: the same elevation test written pair by pair in numpy (every satellite against every
site at every step, no candidate filter, no matrix products), timed on a slice of the day and
scaled up; it is what a straightforward implementation costs.

    python benchmarks/bench_contact_plan.py [--hours 24] [--users 100] [--json PATH]

Prints pairs (satellite x site x step) per second for both, and the ratio; the last line is
``contact_plan_s: X`` (the plan's host seconds, no cache).
"""

from __future__ import annotations

import argparse
import math
import resource
import time

import numpy as np

from netfl.world.contact_plan import contact_windows
from netfl.world.orbits import (
    PRESETS,
    positions_ecef,
    scatter_sites,
    site_ecef,
    site_up,
    walker_satrecs,
)

START = "2026-01-01T00:00:00+00:00"


def naive_seconds(sites: np.ndarray, steps: int, mask_deg: float) -> float:
    """Host seconds of the pair-by-pair elevation test over ``steps`` steps."""
    from datetime import datetime

    sats = walker_satrecs(PRESETS["starlink-shell1"], datetime.fromisoformat(START))
    pos = positions_ecef(sats, datetime.fromisoformat(START), np.arange(steps) * 10.0)
    site_pos = site_ecef(sites[:, 0], sites[:, 1], 0.0)
    up = site_up(sites[:, 0], sites[:, 1])
    began = time.perf_counter()
    for u in range(len(sites)):
        d = pos - site_pos[u]  # (S, T, 3)
        elevation = np.degrees(np.arcsin((d @ up[u]) / np.linalg.norm(d, axis=-1)))
        np.nonzero(np.diff((elevation >= mask_deg).astype(np.int8), axis=1))
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    sites = scatter_sites(args.users, 39.9, 116.4, 500.0, np.random.default_rng(0))
    duration = args.hours * 3600.0
    steps = math.ceil(duration / 10.0) + 1
    pairs = 1584 * args.users * steps

    began = time.perf_counter()
    windows = contact_windows("starlink-shell1", [(a, b, 0.0) for a, b in sites], START,
                              duration, 25.0, step_s=10.0, tolerance_s=0.1, cache_dir=False)
    plan_s = time.perf_counter() - began
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    sample = min(steps, 360)  # one hour of steps, scaled to the whole span
    naive_s = naive_seconds(sites, sample, 25.0) * steps / sample

    passes = (windows["set_s"] - windows["rise_s"]).to_numpy()
    print(f"{len(windows)} windows over {args.hours:g} h for {args.users} users; pass length "
          f"median {np.median(passes):.0f} s, max {passes.max():.0f} s; peak memory "
          f"{peak_mb:.0f} MB")
    print(f"contact plan: {plan_s:.1f} s, {pairs / plan_s:,.0f} pairs per second")
    print(f"naive pair-by-pair test (no refinement): {naive_s:.1f} s, "
          f"{pairs / naive_s:,.0f} pairs per second")
    print(f"plan_vs_naive: {naive_s / plan_s:.2f}")
    print(f"contact_plan_s: {plan_s:.1f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"plan_vs_naive": naive_s / plan_s, "contact_plan_s": plan_s},
              ["hours", "users", "windows", "pass median s", "pass max s", "peak MB",
               "plan s", "plan pairs /s", "naive s", "naive pairs /s"],
              [[args.hours, args.users, len(windows), float(np.median(passes)),
                float(passes.max()), peak_mb, plan_s, pairs / plan_s, naive_s,
                pairs / naive_s]])


if __name__ == "__main__":
    main()
