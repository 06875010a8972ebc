"""Per-user ground-satellite rates over a day on Starlink's shell 1, against public measurements.

100 users within 500 km of Beijing (starlink-*.yaml's region), the 25 deg mask, the default
link budget and beams (docs/models/leo.md) and association (longest rest of the window). Every
minute of a day, each user in view is served by its primary satellite: its beam's rates alone
at the slant range (downlink, uplink), and its share when every user of that beam (same
satellite, same 25 km cell) is active, with the beam's background users (9). Prints
percentiles of each, and the public medians to compare: Ookla Speedtest, US, Q1 2025: 104.71
Mbit/s down, 14.84 up.

    python benchmarks/leo_rates.py [--users 100] [--hours 24] [--step 60]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from netfl.network.beam import BeamPlan
from netfl.network.radio import AccessRadio
from netfl.scenario.leo import LeoWorld
from netfl.world.leo import build_leo_world

PUBLIC_MEDIAN_MBPS = {"down": 104.71, "up": 14.84}  # Ookla, US, Q1 2025


class _Clock:
    def __init__(self):
        self.now = 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--step", type=float, default=60.0)
    args = parser.parse_args()
    began = time.perf_counter()
    spec = LeoWorld.model_validate({
        "kind": "leo", "constellation": {"kind": "preset", "preset": "starlink-shell1"},
        "users": {"region": {"count": args.users, "lat_deg": 39.9, "lon_deg": 116.4,
                             "radius_km": 500}},
        "min_elevation_deg": 25, "horizon": args.hours * 3600.0, "gsl": {"kind": "link-budget"}})
    world = build_leo_world(spec, np.random.default_rng(1))
    radio = AccessRadio(spec.gsl, orbit_radius_m=world.orbit_radius_m)
    plan = BeamPlan(None, spec.beams.diameter, spec.beams.per_satellite)
    background = spec.beams.background(spec.gsl.kind)
    clock = _Clock()
    world._env = clock  # the association policy reads the time from it
    events = sorted([(r, 1, c, s) for r, c, s in zip(world.windows["rise_s"],
                                                     world.windows["site"],
                                                     world.windows["sat"], strict=True)]
                    + [(e, 0, c, s) for e, c, s in zip(world.windows["set_s"],
                                                       world.windows["site"],
                                                       world.windows["sat"], strict=True)])
    samples = {"down": [], "up": [], "down share": [], "up share": []}
    k = 0
    for t in np.arange(0.0, args.hours * 3600.0, args.step):
        while k < len(events) and events[k][0] <= t:
            _, rising, c, s = events[k]
            client, sat = world.clients[int(c)], world.edge_servers[int(s)]
            (world.attach if rising else world.detach)(client, sat)
            k += 1
        clock.now = float(t)
        primary = {c: world.edge_of(c) for c in world.clients}
        beams = Counter((sat, plan.cell(*world.site(c))) for c, sat in primary.items() if sat)
        for client, sat in primary.items():
            if sat is None:
                continue
            up, down = radio.rates_bps(world.distance_m(client, sat, float(t)))
            users = beams[(sat, plan.cell(*world.site(client)))] + background
            samples["down"].append(down)
            samples["up"].append(up)
            samples["down share"].append(down / users)
            samples["up share"].append(up / users)
    print(f"{args.users} users, {args.hours:g} h, a sample every {args.step:g} s "
          f"({len(samples['down'])} user-samples in view; {time.perf_counter() - began:.0f} s)")
    print(f"{'Mbit/s':<28} {'p10':>8} {'p50':>8} {'p90':>8}")
    for name, values in samples.items():
        p10, p50, p90 = np.percentile(np.asarray(values) / 1e6, [10, 50, 90])
        label = ("beam " if "share" not in name else "per user, beam shared: ") + name.split()[0]
        print(f"{label:<28} {p10:>8.1f} {p50:>8.1f} {p90:>8.1f}")
    print(f"public medians per user (Ookla, US, Q1 2025): {PUBLIC_MEDIAN_MBPS['down']} down, "
          f"{PUBLIC_MEDIAN_MBPS['up']} up")


if __name__ == "__main__":
    main()
