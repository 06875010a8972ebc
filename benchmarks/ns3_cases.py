"""The ns-3 cross-validation cases (benchmarks/validate_ns3.py): pure descriptions of a
topology (nodes joined by links with a rate and a delay) and its flows, with their fingerprints.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

KB, MB = 1e3, 1e6
Mbps, Gbps, ms = 1e6, 1e9, 1e-3


@dataclass(frozen=True)
class LinkDesc:
    """An undirected link: ``rate_bps`` each way, one-way propagation ``delay_s``."""

    a: str
    b: str
    rate_bps: float
    delay_s: float


@dataclass(frozen=True)
class FlowDesc:
    """``nbytes`` from ``src`` to ``dst``, starting at ``start_s``; or, with ``after`` (a flow
    index), ``start_s`` after that flow has completed."""

    src: str
    dst: str
    nbytes: float
    start_s: float = 0.0
    after: int | None = None


@dataclass(frozen=True)
class Case:
    """A topology and its flows. ``tiers`` names the client and cloud nodes (the rest are edge
    servers); ``medium`` "wifi-80211p" makes the links a single 802.11p cell in ns-3 (``cell_rate``
    its PHY rate) and a shared access cell in netfl."""

    name: str
    group: str
    links: tuple[LinkDesc, ...]
    flows: tuple[FlowDesc, ...]
    tiers: dict[str, str] = field(default_factory=dict)
    comparable: bool = True
    note: str = ""
    medium: str = "p2p"
    cell_rate_bps: float = 0.0
    what: str = ""  # one line for the table
    distances_m: tuple[float, ...] = ()  # a radio cell's vehicles from the RSU (ns-3 side)
    seed: int = 1  # ns-3's RngRun

    @property
    def radio(self) -> bool:
        return self.medium != "p2p"

    def fingerprint(self) -> str:
        """A short hash of what the case simulates (not its name or note)."""
        body = {"links": [asdict(x) for x in self.links], "flows": [asdict(f) for f in self.flows],
                "tiers": self.tiers, "medium": self.medium, "cell": self.cell_rate_bps}
        if self.radio:
            body.update(distances=list(self.distances_m), seed=self.seed)
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]

    def nodes(self) -> list[str]:
        seen: dict[str, None] = {}
        for link in self.links:
            seen.setdefault(link.a)
            seen.setdefault(link.b)
        return list(seen)


def _rate(bps: float) -> str:
    return f"{bps / 1e9:g} Gbps" if bps >= 1e9 else f"{bps / 1e6:g} Mbps"


def _size(nbytes: float) -> str:
    return f"{nbytes / 1e6:g} MB" if nbytes >= 1e6 else f"{nbytes / 1e3:g} KB"


def chain(name: str, group: str, hops: int, rate: float, delay: float, nbytes: float,
          note: str = "") -> Case:
    links = tuple(LinkDesc(f"n{k}", f"n{k + 1}", rate, delay) for k in range(hops))
    what = f"{_size(nbytes)} over {hops} x {_rate(rate)}, {delay * 1e3:g} ms"
    return Case(name, group, links, (FlowDesc("n0", f"n{hops}", nbytes),), note=note, what=what)


def dumbbell(name: str, group: str, flows: int, rate: float, delay: float, nbytes: float,
             access_delays: list[float] | None = None, starts: list[float] | None = None,
             access_rate: float = 1 * Gbps, note: str = "",
             sizes: list[float] | None = None) -> Case:
    """``flows`` senders s_i, each on its own fast access link to r0, share r0 - r1 (``rate``,
    ``delay``) towards one receiver d behind r1."""
    access_delays = access_delays or [1 * ms] * flows
    starts = starts or [0.0] * flows
    links = [LinkDesc(f"s{i}", "r0", access_rate, access_delays[i]) for i in range(flows)]
    links += [LinkDesc("r0", "r1", rate, delay), LinkDesc("r1", "d", access_rate, 1 * ms)]
    sizes = sizes or [nbytes] * flows
    what = (f"{flows} x {_size(nbytes)}" if len(set(sizes)) == 1 else
            " + ".join(_size(x) for x in sizes)) + f" share {_rate(rate)}, {delay * 1e3:g} ms"
    if len(set(access_delays)) > 1:
        what += f"; access delays {'/'.join(f'{d * 1e3:g}' for d in access_delays)} ms"
    if any(starts):
        what += f"; starts {'/'.join(f'{t:g}' for t in starts)} s"
    return Case(name, group, tuple(links),
                tuple(FlowDesc(f"s{i}", "d", sizes[i], starts[i]) for i in range(flows)), note=note,
                what=what)


def parking_lot(name: str, hops: int, rate: float, delay: float, nbytes: float,
                cross_start: float = 0.0, note: str = "") -> Case:
    """A chain r0 .. r{hops} of ``rate`` links; one long flow over all of it and one cross flow
    per link (x_k -> y_k over link k only), each side node on a fast 1 ms link."""
    links = [LinkDesc(f"r{k}", f"r{k + 1}", rate, delay) for k in range(hops)]
    links += [LinkDesc("src", "r0", 1 * Gbps, 1 * ms),
              LinkDesc(f"r{hops}", "dst", 1 * Gbps, 1 * ms)]
    flows = [FlowDesc("src", "dst", nbytes)]
    for k in range(hops):
        links += [LinkDesc(f"x{k}", f"r{k}", 1 * Gbps, 1 * ms),
                  LinkDesc(f"r{k + 1}", f"y{k}", 1 * Gbps, 1 * ms)]
        flows.append(FlowDesc(f"x{k}", f"y{k}", nbytes, cross_start * (k + 1)))
    what = (f"{_size(nbytes)} over {hops} x {_rate(rate)}, {delay * 1e3:g} ms + a cross flow "
            f"per link" + (f" every {cross_start:g} s" if cross_start else ""))
    return Case(name, "parking-lot", tuple(links), tuple(flows), note=note, what=what)


def fl_round(n: int, model_bytes: float = 2 * MB) -> Case:
    """One synchronous FL round: the cloud sends the model to n clients (down through core and
    edge), each client sends its update back as soon as it has the model (up). Clients on 20 Mbps
    / 5 ms access links, spread over min(n, 5) edge servers on 100 Mbps / 20 ms core links (so
    the core is the bottleneck from 5 clients per edge server on: n = 30 and 100)."""
    edges = min(n, 5)
    links, tiers = [], {"cloud": "cloud"}
    for j in range(edges):
        links.append(LinkDesc(f"e{j}", "cloud", 100 * Mbps, 20 * ms))
    for i in range(n):
        links.append(LinkDesc(f"c{i}", f"e{i % edges}", 20 * Mbps, 5 * ms))
        tiers[f"c{i}"] = "client"
    down = [FlowDesc("cloud", f"c{i}", model_bytes) for i in range(n)]
    up = [FlowDesc(f"c{i}", "cloud", model_bytes, 0.0, after=i) for i in range(n)]
    return Case(f"fl-round-{n}", "fl-round", tuple(links), tuple(down + up), tiers,
                what=f"{_size(model_bytes)} down and up, n = {n} clients (20 Mbps access), "
                     f"{edges} edge servers (100 Mbps core)")


def iov_cell(name: str, vehicles: int, nbytes: float, rates: list[float] | None = None,
             seed: int = 1, rsu_rate: float = 6 * Mbps) -> Case:
    """``vehicles`` parked 30-400 m from one RSU (spread evenly, the nearest first) upload
    ``nbytes`` each at once over one 802.11p cell (ns-3: ad hoc DCF, a constant PHY rate per
    device: ``rates[i]`` for vehicle i, ``rsu_rate`` for the RSU's acknowledgements)."""
    rates = rates or [6 * Mbps] * vehicles
    links = tuple(LinkDesc(f"c{i}", "e0", rates[i], 0.0) for i in range(vehicles))
    tiers = {f"c{i}": "client" for i in range(vehicles)}
    spread = [30.0 + 370.0 * i / max(vehicles - 1, 1) for i in range(vehicles)]
    rate_text = (f"{rates[0] / 1e6:g} Mbps" if len(set(rates)) == 1 else
                 "/".join(f"{r / 1e6:g}" for r in rates) + " Mbps")
    return Case(name, "radio-cell", links,
                tuple(FlowDesc(f"c{i}", "e0", nbytes) for i in range(vehicles)), tiers,
                medium="wifi-80211p", cell_rate_bps=rsu_rate, distances_m=tuple(spread),
                seed=seed,
                what=f"{vehicles} x {_size(nbytes)} up an 802.11p cell at {rate_text}"
                     + (f", ns-3 run {seed}" if seed != 1 else ""))


def radio_cells() -> list[Case]:
    """The 802.11p cells: N = 1..30, 10 KB..10 MB, equal and unequal PHY rates,
    several ns-3 runs."""
    mixed6 = [27 * Mbps, 24 * Mbps, 18 * Mbps, 12 * Mbps, 6 * Mbps, 3 * Mbps]
    return [
        *[iov_cell(f"cell-{n}x800KB", n, 800 * KB) for n in (1, 2, 5, 10, 15, 30)],
        iov_cell("cell-5x800KB-run2", 5, 800 * KB, seed=2),
        iov_cell("cell-5x800KB-run3", 5, 800 * KB, seed=3),
        *[iov_cell(f"cell-30x800KB-run{k}", 30, 800 * KB, seed=k) for k in (2, 3, 4)],
        iov_cell("cell-15x800KB-run2", 15, 800 * KB, seed=2),
        iov_cell("cell-5x10KB", 5, 10 * KB),
        iov_cell("cell-5x100KB", 5, 100 * KB),
        iov_cell("cell-2x10MB", 2, 10 * MB),
        iov_cell("cell-5x800KB-27M", 5, 800 * KB, [27 * Mbps] * 5, rsu_rate=27 * Mbps),
        iov_cell("cell-10x800KB-12M", 10, 800 * KB, [12 * Mbps] * 10, rsu_rate=12 * Mbps),
        iov_cell("cell-2-anomaly", 2, 2 * MB, [27 * Mbps, 6 * Mbps]),
        iov_cell("cell-6-mixed", 6, 800 * KB, mixed6),
        iov_cell("cell-12-mixed", 12, 800 * KB, mixed6 * 2),
    ]


LTE_ACCESS_DELAY_S = 8 * ms  # one way, UE to the PGW: ns-3 1 UE, 10 KB and 100 KB: 8.9, 7.3 ms


def lte_cell(name: str, distances: list[float], nbytes: float, seed: int = 1) -> Case:
    """UE i at ``distances[i]`` from one LTE eNB (50 RB, 1930 MHz up) uploads ``nbytes`` at
    once to a remote host (``cloud``: 10 Gbps, 1 ms behind the EPC). The UE's rate is netfl's
    LTE cell model's (``netfl.network.lte``) at its distance; the access link's one-way delay,
    ``LTE_ACCESS_DELAY_S``, is the LTE user plane's latency (uplink scheduling and HARQ
    timing), set once from ns-3's 10 KB upload of one UE and not fitted per case."""
    n = len(distances)
    links = tuple(LinkDesc(f"c{i}", "e0", 0.0, LTE_ACCESS_DELAY_S) for i in range(n)) + (
        LinkDesc("e0", "cloud", 10 * Gbps, 1 * ms),)
    tiers = {f"c{i}": "client" for i in range(n)} | {"cloud": "cloud"}
    near, far = min(distances), max(distances)
    where = f"{near / 1e3:g} km" if near == far else f"{near / 1e3:g}-{far / 1e3:g} km"
    return Case(name, "lte-cell", links,
                tuple(FlowDesc(f"c{i}", "cloud", nbytes) for i in range(n)), tiers,
                medium="lte", distances_m=tuple(distances), seed=seed,
                what=f"{n} x {_size(nbytes)} up an LTE cell (PF, 50 RB), UEs at {where}"
                     + (f", ns-3 run {seed}" if seed != 1 else ""))


def lte_cells() -> list[Case]:
    """The LTE uplink cells: N = 1..30, near (top MCS) and spread over 0.1-6 km
    (MCS from the SNR: power-limited UEs), 10 KB..10 MB. One ns-3 run each: without fading
    ns-3's LTE cell is deterministic (runs 2 of lte-30x800KB and lte-10x800KB-spread gave the
    same times to the nanosecond)."""
    def spread(n: int, near: float = 100.0, far: float = 6000.0) -> list[float]:
        return [near + (far - near) * i / max(n - 1, 1) for i in range(n)]

    return [
        *[lte_cell(f"lte-{n}x800KB", [100.0 + 10 * i for i in range(n)], 800 * KB)
          for n in (1, 2, 5, 10, 15, 30)],
        *[lte_cell(f"lte-1x2MB-{d / 1e3:g}km", [d], 2 * MB) for d in (1e3, 2e3, 3e3, 6e3)],
        lte_cell("lte-5x800KB-spread", spread(5), 800 * KB),
        lte_cell("lte-10x800KB-spread", spread(10), 800 * KB),
        lte_cell("lte-30x800KB-spread", spread(30), 800 * KB),
        lte_cell("lte-5x10KB", [100.0 + 10 * i for i in range(5)], 10 * KB),
        lte_cell("lte-5x100KB", [100.0 + 10 * i for i in range(5)], 100 * KB),
        lte_cell("lte-2x10MB", [100.0, 3000.0], 10 * MB),
    ]


def cases() -> list[Case]:
    out = [
        # chains, low bandwidth-delay product (BDP <= a few segments .. tens)
        chain("chain1-low", "chain", 1, 10 * Mbps, 1 * ms, 1 * MB),
        chain("chain2-low", "chain", 2, 10 * Mbps, 1 * ms, 1 * MB),
        chain("chain4-low", "chain", 4, 100 * Mbps, 1 * ms, 10 * MB),
        chain("chain8-low", "chain", 8, 100 * Mbps, 1 * ms, 10 * MB),
        # chains, high BDP (RTT 40-100 ms at 1 Gbps: 5-12 MB in flight)
        chain("chain1-high", "chain", 1, 1 * Gbps, 50 * ms, 10 * MB),
        chain("chain2-high", "chain", 2, 1 * Gbps, 25 * ms, 10 * MB),
        chain("chain4-high", "chain", 4, 1 * Gbps, 10 * ms, 30 * MB),
        chain("chain8-high", "chain", 8, 1 * Gbps, 5 * ms, 10 * MB),
        chain("geo-1MB", "chain", 1, 50 * Mbps, 270 * ms, 1 * MB, "a GEO satellite hop"),
        # sizes over 2 hops of 100 Mbps, 5 ms
        *[chain(f"size-{label}", "size", 2, 100 * Mbps, 5 * ms, size)
          for label, size in (("10KB", 10 * KB), ("100KB", 100 * KB), ("1MB", 1 * MB),
                              ("10MB", 10 * MB), ("100MB", 100 * MB))],
        # one bottleneck shared by n flows
        dumbbell("share-2", "bottleneck", 2, 20 * Mbps, 5 * ms, 1 * MB),
        dumbbell("share-10", "bottleneck", 10, 20 * Mbps, 5 * ms, 1 * MB),
        dumbbell("share-30", "bottleneck", 30, 100 * Mbps, 5 * ms, 1 * MB),
        dumbbell("share-100", "bottleneck", 100, 100 * Mbps, 5 * ms, 1 * MB),
        dumbbell("share-4-big", "bottleneck", 4, 100 * Mbps, 10 * ms, 25 * MB),
        # parking lot: a long flow against one cross flow per link
        parking_lot("parking-2", 2, 50 * Mbps, 2 * ms, 5 * MB),
        parking_lot("parking-4", 4, 50 * Mbps, 2 * ms, 5 * MB),
        parking_lot("parking-3-staggered", 3, 50 * Mbps, 2 * ms, 5 * MB, cross_start=0.2),
        # unequal RTTs over one 20 Mbps bottleneck
        dumbbell("rtt-1-20ms", "unequal-rtt", 2, 20 * Mbps, 2 * ms, 5 * MB,
                 access_delays=[1 * ms, 20 * ms]),
        dumbbell("rtt-1-50ms", "unequal-rtt", 2, 20 * Mbps, 2 * ms, 5 * MB,
                 access_delays=[1 * ms, 50 * ms]),
        dumbbell("rtt-mixed-4", "unequal-rtt", 4, 50 * Mbps, 2 * ms, 5 * MB,
                 access_delays=[1 * ms, 5 * ms, 20 * ms, 40 * ms]),
        # staggered starts
        dumbbell("stagger-2", "staggered", 2, 20 * Mbps, 5 * ms, 5 * MB, starts=[0.0, 1.0]),
        dumbbell("stagger-5", "staggered", 5, 20 * Mbps, 5 * ms, 2 * MB,
                 starts=[0.0, 0.3, 0.6, 0.9, 1.2]),
        # FL rounds through edge and core
        *[fl_round(n) for n in (1, 2, 10, 30, 100)],
        # an ISL route: 4 hops of 10 Gbps, 10 ms
        chain("isl-1MB", "isl", 4, 10 * Gbps, 10 * ms, 1 * MB),
        chain("isl-10MB", "isl", 4, 10 * Gbps, 10 * ms, 10 * MB),
        chain("isl-30MB", "isl", 4, 10 * Gbps, 10 * ms, 30 * MB),
        # slow start against other flows on high bandwidth-delay paths
        dumbbell("ramp-late-short", "ramp-contention", 2, 1 * Gbps, 20 * ms, 30 * MB,
                 starts=[0.0, 0.3], sizes=[30 * MB, 1 * MB]),
        dumbbell("ramp-together-high", "ramp-contention", 2, 1 * Gbps, 25 * ms, 10 * MB),
        dumbbell("ramp-staggered-small", "ramp-contention", 10, 100 * Mbps, 20 * ms, 200 * KB,
                 starts=[0.05 * i for i in range(10)]),
        dumbbell("ramp-many-high", "ramp-contention", 8, 1 * Gbps, 20 * ms, 5 * MB),
        # IoV radio cells: 802.11p
        *radio_cells(),
        # IoV radio cells: LTE uplink
        *lte_cells(),
    ]
    names = [c.name for c in out]
    assert len(names) == len(set(names)), "case names must be unique"
    return out


def select(names: str | None) -> list[Case]:
    all_cases = cases()
    if not names:
        return all_cases
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    exact = {c.name for c in all_cases} & set(wanted)  # an exact name is not also a prefix
    chosen = [c for c in all_cases if c.name in exact or any(
        c.name.startswith(w) for w in wanted if w not in exact)]
    if not chosen:
        known = ", ".join(c.name for c in all_cases)
        raise SystemExit(f"no case matches {names!r}; cases: {known}")
    return chosen
