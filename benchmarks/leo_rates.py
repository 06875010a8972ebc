"""Per-user download, upload and RTT on Starlink's shell 1 over a day, against measured percentiles.

Users spread within ``--radius`` km of central Maine, the 25 deg mask, the default link budget,
beams (docs/models/leo.md) and association (longest rest of the window), +Grid ISLs and
gateways (below). Every ``--step`` seconds of a day, each user in view is a speed-test user:
alone among the study's users in its beam, with the beam's background users, served by its
primary satellite at the slant range of that moment. Its download and upload are its beam's
rates shared with the background; its idle RTT is twice the one-way propagation delay to the
cloud over the links netfl's network would route (user - satellite, then ISLs and a feeder link
to a gateway, shortest by delay over the links up then, plus the gateways' terrestrial delay).
The same world is read four ways: netfl's defaults (9 background users at every hour), the
hourly load measured by WetLinks (``background_by_hour: wetlinks``), that with the 15-second
reconfiguration of the association, and that with cells that differ in subscribers
(``background_spread``: a lognormal factor per ground cell, its sigma fitted here to Ookla's
download p10 and p90; the upload and the RTT are not fitted). Prints p10 / p50 / p90 of each
beside Ookla's Speedtest results for Starlink users in Maine (1 Oct - 15 Dec 2024) and writes
their CDFs.

    python benchmarks/leo_rates.py [--users 100] [--hours 24] [--step 60] [--plot PNG]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import networkx as nx
import numpy as np
import simpy

from netfl.network.beam import BeamPlan, local_hour, lognormal_cell_load
from netfl.network.radio import AccessRadio
from netfl.scenario.leo import LeoWorld
from netfl.sim.clock import RandomStreams
from netfl.world.leo import build_leo_world
from netfl.world.orbits import SPEED_OF_LIGHT_KM_S

# Ookla, "Above Maine, Starlink Twinkles" (18 Dec 2024): Starlink Speedtest users in Maine,
# 1 Oct - 15 Dec 2024, 10th percentile / median / 90th percentile; latency is the idle
# multi-server latency (its slower, median and faster columns read as p90 / p50 / p10).
MEASURED = {"download Mbit/s": (22.81, 116.77, 250.96),
            "upload Mbit/s": (6.79, 18.17, 27.17),
            "idle RTT ms": (37.0, 47.0, 72.0)}
MAINE = (45.25, -69.0)
# Gateways: netfl's placement for the study, not SpaceX's list (which this project could not
# verify): two sites in New England, 40 deg mask, 10 ms to the test server beyond each.
GATEWAYS = [(46.9, -67.9), (42.6, -71.6)]
# Each reading: the world's extra fields and the cells' load spread (sigma, 0: none).
READINGS = {
    "netfl defaults": ({}, 0.0),
    "+ hourly load (WetLinks)": (
        {"beams": {"kind": "shared", "background_by_hour": "wetlinks"}}, 0.0),
    "+ hourly load, 15-s reconfiguration": (
        {"beams": {"kind": "shared", "background_by_hour": "wetlinks"},
         "association": {"reconfiguration": {"period": 15, "phase": 12}}}, 0.0),
    "+ cells' load spread (fitted)": (
        {"beams": {"kind": "shared", "background_by_hour": "wetlinks"},
         "association": {"reconfiguration": {"period": 15, "phase": 12}}}, None),
}
SPREADS = np.round(np.arange(0.0, 2.01, 0.05), 2)


def fit_spread(raw: dict[str, np.ndarray]) -> float:
    """The cells' load spread (sigma, on a 0.05 grid) whose download p10 and p90 are nearest
    Ookla's in log terms: the one number fitted to the spread (download only)."""
    target = np.log([MEASURED["download Mbit/s"][0], MEASURED["download Mbit/s"][2]])

    def error(sigma: float) -> float:
        got = np.percentile(speed_test(raw, sigma)["download Mbit/s"], [10, 90])
        return float(np.sum((np.log(got) - target) ** 2))

    return float(min(SPREADS, key=error))


def world_spec(users: int, radius_km: float, hours: float, extra: dict) -> LeoWorld:
    return LeoWorld.model_validate({
        "kind": "leo", "constellation": {"kind": "preset", "preset": "starlink-shell1"},
        "users": {"region": {"count": users, "lat_deg": MAINE[0], "lon_deg": MAINE[1],
                             "radius_km": radius_km}},
        "min_elevation_deg": 25, "horizon": hours * 3600.0, "gsl": {"kind": "link-budget"},
        "isl": {"kind": "grid"},
        "ground_stations": {"positions": GATEWAYS, "min_elevation_deg": 40,
                            "terrestrial_delay": 0.010},
        **extra})


class LinkState:
    """ISLs and feeder links up or down as the world replays them."""

    def __init__(self, world):
        self.down: set[frozenset] = set()
        world.subscribe_links(self._changed)

    def _changed(self, u: str, v: str, up: bool) -> None:
        (self.down.discard if up else self.down.add)(frozenset((u, v)))


def delays_to_cloud_s(world, links: LinkState, t: float) -> dict[str, float]:
    """One-way propagation delay (s) from each satellite to the cloud over the links up at
    ``t``, by the shortest path (the rule netfl's routing uses)."""
    pairs = [(u, v) for u, v in world.graph.edges()
             if world.tier(u) != "client" and world.tier(v) != "client"
             and frozenset((u, v)) not in links.down]
    delays = world.link_delays_s(pairs, t)
    graph = nx.Graph()
    graph.add_weighted_edges_from((u, v, d) for (u, v), d in zip(pairs, delays, strict=True))
    if world.cloud not in graph:
        return {}
    return nx.single_source_dijkstra_path_length(graph, world.cloud)


def sample(spec: LeoWorld, hours: float, step: float) -> dict[str, np.ndarray]:
    """Every step, each user in view: its beam's download and upload alone (bit/s), the
    beam's background users at that hour, the user's ground cell and its idle RTT (ms; NaN
    where no gateway is reachable)."""
    world = build_leo_world(spec, np.random.default_rng(1))
    radio = AccessRadio(spec.gsl, orbit_radius_m=world.orbit_radius_m)
    plan = BeamPlan(None, spec.beams.diameter, spec.beams.per_satellite)
    by_hour = spec.beams.background_by_hour
    flat = spec.beams.background(spec.gsl.kind)
    start_h = spec.start.hour + spec.start.minute / 60.0
    env = simpy.Environment()
    links = LinkState(world)
    world.start(env, None)
    out = {"down": [], "up": [], "background": [], "cell": [], "rtt": []}
    for t in np.arange(0.0, hours * 3600.0, step):
        env.run(until=float(t) + 1e-9)
        to_cloud = delays_to_cloud_s(world, links, float(t))
        utc_h = (start_h + t / 3600.0) % 24.0
        for client in world.clients:
            sat = world.edge_of(client)
            if sat is None:
                continue
            distance = world.distance_m(client, sat, float(t))
            up, down = radio.rates_bps(distance)
            lat, lon = world.site(client)
            out["down"].append(down)
            out["up"].append(up)
            out["background"].append(flat if by_hour is None
                                     else by_hour[local_hour(utc_h, lon)])
            out["cell"].append(plan.cell(lat, lon))
            one_way = (distance / 1000.0 / SPEED_OF_LIGHT_KM_S + to_cloud[sat]
                       if sat in to_cloud else math.nan)
            out["rtt"].append(2.0 * one_way * 1e3)
    return {name: np.asarray(values) for name, values in out.items()}


def speed_test(raw: dict[str, np.ndarray], spread: float, seed: int = 1
               ) -> dict[str, np.ndarray]:
    """A lone user's download and upload (Mbit/s) with its cell's background users (times
    the cell's lognormal load factor where ``spread`` > 0, as the network draws it), and the
    idle RTT (ms)."""
    factor = np.ones(len(raw["down"]))
    if spread > 0:
        draw = lognormal_cell_load(RandomStreams(seed), spread)
        cells = {tuple(c): draw(tuple(c)) for c in map(tuple, raw["cell"])}
        factor = np.array([cells[tuple(c)] for c in raw["cell"]])
    users = 1.0 + raw["background"] * factor
    rtt = raw["rtt"][np.isfinite(raw["rtt"])]
    return {"download Mbit/s": raw["down"] / users / 1e6,
            "upload Mbit/s": raw["up"] / users / 1e6, "idle RTT ms": rtt}


def plot(results: dict[str, dict[str, np.ndarray]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, metric in zip(axes, MEASURED, strict=True):
        for label, samples in results.items():
            values = np.sort(samples[metric])
            ax.plot(values, np.arange(1, len(values) + 1) / len(values), label=label)
        measured = MEASURED[metric]
        ax.plot(measured, [0.1, 0.5, 0.9], "ko", label="Ookla, Maine (p10, p50, p90)")
        ax.set_xlabel(metric)
        ax.set_xscale("log" if "Mbit" in metric else "linear")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of samples")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Per-user Starlink access: netfl's model against Ookla's Maine percentiles")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--radius", type=float, default=200.0, help="km around central Maine")
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--step", type=float, default=60.0)
    parser.add_argument("--plot", type=Path, default=None, help="write the CDFs to this PNG")
    args = parser.parse_args()
    began = time.perf_counter()
    results, raws = {}, {}
    for label, (extra, spread) in READINGS.items():
        key = repr(extra)
        if key not in raws:
            raws[key] = sample(world_spec(args.users, args.radius, args.hours, extra),
                               args.hours, args.step)
        if spread is None:
            spread = fit_spread(raws[key])
            label = label.replace("fitted", f"sigma {spread:g}, fitted")
        results[label] = speed_test(raws[key], spread)
    count = len(next(iter(results.values()))["download Mbit/s"])
    print(f"{args.users} users within {args.radius:g} km of {MAINE}, {args.hours:g} h, a sample "
          f"every {args.step:g} s ({count} user-samples in view; "
          f"{time.perf_counter() - began:.0f} s)")
    print(f"{'':<52} {'p10':>8} {'p50':>8} {'p90':>8}")
    for metric, measured in MEASURED.items():
        print(metric)
        for label, samples in results.items():
            p10, p50, p90 = np.percentile(samples[metric], [10, 50, 90])
            print(f"  {'netfl, ' + label:<50} {p10:>8.1f} {p50:>8.1f} {p90:>8.1f}")
        print(f"  {'Ookla, Maine, Oct-Dec 2024':<50} " + " ".join(f"{v:>8.1f}" for v in measured))
    if args.plot is not None:
        plot(results, args.plot)
        print(f"wrote {args.plot}")
    if any(not math.isfinite(float(np.median(s[m]))) for s in results.values() for m in MEASURED):
        raise SystemExit("a distribution had no samples")


if __name__ == "__main__":
    main()
