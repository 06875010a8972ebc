"""Cross-validation of netfl's network against ns-3: the same topology and the same transfers in
both, a row per case and one summary line.

    python benchmarks/validate_ns3.py               # netfl against the committed reference
                                                    # (or against ns-3 live where it is installed)
    python benchmarks/validate_ns3.py --reference   # always the committed reference
    python benchmarks/validate_ns3.py --regenerate  # run ns-3, rewrite ns3_reference.json
    python benchmarks/validate_ns3.py --cases chain4-low,isl-1MB   # a subset (names or prefixes)
    python benchmarks/validate_ns3.py --transport fluid             # another netfl transport
    python benchmarks/validate_ns3.py --plot docs/models/img/network-vs-ns3.png  # the figure
    python benchmarks/validate_ns3.py --json benchmarks/results/validate_ns3.json  # for report.py

ns-3 needs the optional extra: ``pip install -e '.[ns3]'`` (ns3==3.44.post0, cppyy bindings).
The cases are in ``ns3_cases.py`` and the ns-3 side in ``ns3_side.py`` beside this file.

Each case is a pure description (:class:`Case`): nodes joined by links (rate, delay), and flows
(src, dst, bytes, start time, or "after" another flow has completed, as a client uploads once it
has the model). The two sides:

* **ns-3** (3.44): every link a point-to-point link (full duplex, the rate each way; the default
  queues: a 100-packet DropTail device queue under ns-3's default root queue disc, FqCoDel,
  which ``Ipv4AddressHelper::Assign`` installs: per-flow queues, CoDel drops), global
  (hop-count) routing, every flow a TCP BulkSend -> PacketSink with MSS 1448 (``SegmentSize``),
  256 MiB send and receive buffers and otherwise ns-3's defaults (Cubic, initial window 10,
  delayed ACKs of 2, SACK, timestamps, window scaling). A flow's completion time is when its sink
  has received its last byte (a trace callback on the sink's ``Rx``, compiled with cppyy).
  Each case runs in its own subprocess (teardown can abort), which prints its result as JSON
  before ``Simulator.Destroy()``. A radio cell is an 802.11p ad hoc cell instead, each device at a
  constant PHY rate (``ns3_side._ns3_wifi_cell``), with ns-3 run ``seed``; or an LTE cell (one
  eNB, PF scheduler, the EPC and a remote host: ``ns3_side._ns3_lte_cell``).
* **netfl**: the same graph as a :class:`~netfl.world.base.World` (links carry their own
  ``rate_bps`` and ``delay_s``) under netfl's own :class:`~netfl.network.transfer.Network`, the
  same transfers through ``network.send``; a flow completes when its process does. A radio
  cell's access links share one 802.11p medium (``netfl.network.cell``) or one LTE carrier
  (``netfl.network.lte``), as the iov world's.

**The error of a case** is the relative error of the *last flow's completion time* (the time from
0, when the case starts, to the moment its last flow completes: a round's duration, what FL cares
about): ``(netfl - ns3) / ns3``. The row also shows the mean over flows of the absolute error of
each flow's completion time (its end minus its start), which also sees unfairness between flows.
The last line is ``netfl_vs_ns3: median X%, worst Y%``: the median of the cases' absolute errors
and the error (signed) of the case whose absolute error is largest, over the comparable
point-to-point cases (goal: 3% and 10%). The radio cells (802.11p and LTE) have their own
line before it, ``netfl_vs_ns3 radio cells: ...`` (goal: 10% and 25%), after one per medium
(``netfl_vs_ns3 802.11p cells`` and ``netfl_vs_ns3 LTE cells``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REFERENCE = Path(__file__).with_name("ns3_reference.json")
REGENERATE = "python benchmarks/validate_ns3.py --regenerate"
NS3_VERSION = "3.44.post0"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the harness's sibling modules
from ns3_cases import Case, FlowDesc, cases, select  # noqa: E402
from ns3_side import MSS, TCP_BUFFER, ns3_available, ns3_case  # noqa: E402

# --------------------------------------------------------------------------------- netfl


def run_netfl(case: Case, transport: str = "tcp") -> dict:
    """The case on netfl's network with ``transport`` (tcp, fluid, store-and-forward); returns
    {"starts": [...], "ends": [...]} in seconds."""
    import networkx as nx
    import simpy

    from netfl.network.helper import build_network
    from netfl.scenario.sections import Links
    from netfl.sim.clock import RandomStreams
    from netfl.sim.trace import TraceBus
    from netfl.world.base import CLIENT, CLOUD, EDGE, World

    graph = nx.Graph()
    tiers = {node: case.tiers.get(node, EDGE) for node in case.nodes()}
    for node, tier in tiers.items():
        graph.add_node(node, tier=tier)
    client_edge = {}
    for link in case.links:
        pair = {tiers[link.a], tiers[link.b]}
        link_class = ("access" if CLIENT in pair else "core" if CLOUD in pair else "backhaul")
        graph.add_edge(link.a, link.b, link_class=link_class, rate_bps=link.rate_bps,
                       delay_s=link.delay_s)
        for end, other in ((link.a, link.b), (link.b, link.a)):
            if tiers[end] == CLIENT:
                client_edge[end] = other
    clients = [n for n, t in tiers.items() if t == CLIENT]
    servers = [n for n, t in tiers.items() if t == EDGE]
    cloud = next((n for n, t in tiers.items() if t == CLOUD), None)
    world = World(graph, clients, servers, cloud, client_edge)
    links = {"transport": {"kind": transport}}
    env, trace = simpy.Environment(), TraceBus()
    spec = Links(**links)
    network = build_network(env, world, spec, RandomStreams(0), trace)
    if case.medium == "wifi-80211p":  # one 802.11p cell, as the iov world makes it
        _make_cell(network, case, spec)
    elif case.medium == "lte":
        _make_lte_cell(network, case)

    starts, ends = [math.nan] * len(case.flows), [math.nan] * len(case.flows)
    finished = {i: env.event() for i in range(len(case.flows))}

    def flow_process(i: int, flow: FlowDesc):
        if flow.after is not None:
            yield finished[flow.after]
        yield env.timeout(flow.start_s)
        starts[i] = env.now
        yield network.send(flow.src, flow.dst, flow.nbytes)
        ends[i] = env.now
        finished[i].succeed()

    for i, flow in enumerate(case.flows):
        env.process(flow_process(i, flow))
    env.run()
    return {"starts": starts, "ends": ends}


def _make_cell(network, case: Case, spec) -> None:
    """Put every access link of ``case`` into one 802.11p cell (DCF defaults), each vehicle
    at its link's PHY rate up and the RSU's rate down; frames filled as ``spec.transport``'s."""
    from netfl.network.access import framing_of
    from netfl.network.cell import DcfParameters, Dot11Cell
    from netfl.network.link import Link

    cell = Dot11Cell(network.fabric, "rsu", framing_of(spec.transport), DcfParameters())
    for link in case.links:
        old = network.link(link.a, link.b)
        network.add_link(Link(link.a, link.b, "access", 0.0,
                              *cell.link(link.a, link.b, link.rate_bps, case.cell_rate_bps),
                              old.loss))


def _make_lte_cell(network, case: Case) -> None:
    """Put every access link of ``case`` into one LTE cell as ns-3's (ns3_side._ns3_lte_cell):
    50 RB, 23 dBm both ways, noise figures 5 dB (eNB) and 9 dB (UE), open-loop power control
    at P0 -80 dBm and alpha 1, free-space loss at 1930 MHz up and 2120 MHz down."""
    from netfl.network.link import Link
    from netfl.network.lte import LteCell
    from netfl.network.propagation import free_space_path_loss_db

    cell = LteCell(network.fabric, "e0", blocks=50, vehicle_power_dbm=23.0,
                   rsu_power_dbm=23.0, rsu_noise_figure_db=5.0, vehicle_noise_figure_db=9.0)
    for link in case.links:
        if case.tiers.get(link.a) != "client":
            continue
        old = network.link(link.a, link.b)
        d = case.distances_m[int(link.a[1:])]
        network.add_link(Link(link.a, link.b, "access", link.delay_s,
                              *cell.link(link.a, link.b, free_space_path_loss_db(d, 1930e6),
                                         free_space_path_loss_db(d, 2120e6)), old.loss))


# --------------------------------------------------------------------------------- ns-3


def _ns3_child(name: str) -> None:
    case = next(c for c in cases() if c.name == name)
    result = ns3_case(case)
    result["fingerprint"] = case.fingerprint()
    print("NS3RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    from ns import ns  # noqa: PLC0415

    ns.Simulator.Destroy()


def run_ns3_subprocess(case: Case, timeout_s: float = 900.0) -> dict:
    """The case in ns-3 in a fresh (niced) subprocess; its JSON result line."""
    command = ["nice", "-n", "10", sys.executable, str(Path(__file__).resolve()),
               "--ns3-case", case.name]
    began = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                          cwd=Path(__file__).resolve().parent.parent)
    for line in proc.stdout.splitlines():
        if line.startswith("NS3RESULT "):
            result = json.loads(line[len("NS3RESULT "):])
            result["process_s"] = round(time.perf_counter() - began, 2)
            return result
    raise RuntimeError(f"ns-3 case {case.name} gave no result (rc {proc.returncode}):\n"
                       f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


# --------------------------------------------------------------------------------- compare


def load_reference(path: Path = REFERENCE) -> dict:
    return json.loads(path.read_text())


def compare(case: Case, ns3: dict, netfl: dict) -> dict:
    """Errors of netfl against ns-3 for one case (see the module docstring)."""
    last_ns3, last_netfl = max(ns3["ends"]), max(netfl["ends"])
    flow_errors = []
    for s3, e3, s, e in zip(ns3["starts"], ns3["ends"], netfl["starts"], netfl["ends"],
                            strict=True):
        flow_errors.append(abs((e - s) - (e3 - s3)) / (e3 - s3))
    return {"name": case.name, "group": case.group, "comparable": case.comparable,
            "radio": case.radio, "medium": case.medium, "flows": len(case.flows),
            "what": case.what,
            "ns3_s": last_ns3, "netfl_s": last_netfl,
            "error": (last_netfl - last_ns3) / last_ns3,
            "mean_flow_error": statistics.fmean(flow_errors), "note": case.note}


GOAL_MEDIAN, GOAL_WORST = 0.03, 0.10  # point-to-point: median |error| <= 3%, worst <= 10%
RADIO_GOAL_MEDIAN, RADIO_GOAL_WORST = 0.10, 0.25  # 802.11p and LTE cells


def goals(radio: bool) -> tuple[float, float]:
    return (RADIO_GOAL_MEDIAN, RADIO_GOAL_WORST) if radio else (GOAL_MEDIAN, GOAL_WORST)


def outside_goal(rows: list[dict]) -> list[dict]:
    """The comparable cases whose |error| is above their kind's worst-case goal."""
    return [r for r in rows if r["comparable"] and abs(r["error"]) > goals(r["radio"])[1]]


MEDIUM_LABELS = {"wifi-80211p": "802.11p cells", "lte": "LTE cells"}


def summary_line(rows: list[dict], radio: bool = False, medium: str | None = None) -> str:
    """``netfl_vs_ns3[ radio cells| <medium>]: median X%, worst Y%`` over the comparable
    cases of that kind (``medium``: of that radio medium only)."""
    errors = [r["error"] for r in rows if r["comparable"] and r["radio"] == radio
              and medium in (None, r["medium"])]
    median = statistics.median(abs(e) for e in errors)
    worst = max(errors, key=abs)
    label = ("netfl_vs_ns3 " + MEDIUM_LABELS[medium] if medium else
             "netfl_vs_ns3 radio cells" if radio else "netfl_vs_ns3")
    return f"{label}: median {100 * median:.1f}%, worst {100 * worst:+.1f}%"


def format_rows(rows: list[dict], markdown: bool = False) -> list[str]:
    if markdown:
        lines = ["| case | what | ns-3 TCP (s) | netfl (s) | error | mean flow error |",
                 "|---|---|---:|---:|---:|---:|"]
        for r in rows:
            mark = "" if r["comparable"] else " (not comparable)"
            lines.append(f"| {r['name']}{mark} | {r['what']} | {r['ns3_s']:.4g} | "
                         f"{r['netfl_s']:.4g} | {100 * r['error']:+.1f}% | "
                         f"{100 * r['mean_flow_error']:.1f}% |")
        return lines
    lines = [f"{'case':<22} {'flows':>5} {'ns-3 s':>10} {'netfl s':>10} {'error':>8} "
             f"{'flow err':>9}"]
    for r in rows:
        mark = "  (not comparable)" if not r["comparable"] else ""
        lines.append(f"{r['name']:<22} {r['flows']:>5} {r['ns3_s']:>10.4g} {r['netfl_s']:>10.4g} "
                     f"{100 * r['error']:>+7.1f}% {100 * r['mean_flow_error']:>8.1f}%{mark}")
    return lines


def regenerate(selected: list[Case], jobs: int, path: Path = REFERENCE) -> dict:
    """Run ns-3 on ``selected`` (``jobs`` at a time) and merge the results into ``path``."""

    reference = load_reference(path) if path.exists() else {}
    reference.update({
        "regenerate": REGENERATE, "ns3": NS3_VERSION,
        "settings": {"tcp": "ns-3 defaults (Cubic, IW10, delayed ACK 2, SACK)",
                     "segment_size": MSS, "snd_rcv_buffer_bytes": TCP_BUFFER,
                     "queues": "p2p DropTail 100p under FqCoDel (ns-3 default root queue disc)",
                     "routing": "Ipv4GlobalRouting", "completion": "sink received last byte"},
    })
    results = reference.setdefault("cases", {})

    def save():
        reference["cases"] = {c.name: results[c.name] for c in cases() if c.name in results}
        path.write_text(json.dumps(reference, indent=1) + "\n")

    for name, result in run_ns3_cases(selected, jobs):
        if result is not None:
            results[name] = result
            save()  # after every case: a long regeneration cut short keeps what it made
    save()
    return reference


def run_ns3_cases(selected: list[Case], jobs: int):
    """Yield (name, ns-3 result or None where it failed) for each case, ``jobs`` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    def one(case: Case):
        try:
            result = run_ns3_subprocess(case)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"  ns-3 {case.name}: FAILED: {exc}", flush=True)
            return case.name, None
        print(f"  ns-3 {case.name}: last flow {max(result['ends']):.4f} s "
              f"({result['process_s']:.1f} s host)", flush=True)
        return case.name, result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(one, selected)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regenerate", action="store_true",
                        help="run ns-3 and rewrite benchmarks/ns3_reference.json")
    parser.add_argument("--reference", action="store_true",
                        help="compare with the committed reference even where ns-3 is installed")
    parser.add_argument("--cases", help="comma-separated case names or prefixes")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="ns-3 subprocesses at a time (niced)")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--transport", default="tcp",
                        choices=["tcp", "fluid", "store-and-forward"],
                        help="netfl's transport (links.transport.kind)")
    parser.add_argument("--plot", type=Path,
                        help="draw netfl (every transport) against ns-3 per case into this PNG")
    parser.add_argument("--json", metavar="PATH", help="also write the rows to this JSON file")
    parser.add_argument("--ns3-case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ns3_case:
        _ns3_child(args.ns3_case)
        return []
    selected = select(args.cases)
    if args.regenerate:
        if not ns3_available():
            raise SystemExit("ns-3 is not installed: pip install -e '.[ns3]'")
        reference = regenerate(selected, args.jobs)
    elif args.reference or not ns3_available():
        reference = load_reference()
        print(f"ns-3 reference: {REFERENCE.name} (ns-3 {reference['ns3']}; "
              f"regenerate: {reference['regenerate']})")
    else:
        print("ns-3: running each case live (use --reference for the committed numbers)")
        reference = {"cases": {name: result for name, result in run_ns3_cases(selected, args.jobs)
                               if result is not None}}
    rows = []
    for case in selected:
        ns3 = reference["cases"].get(case.name)
        if ns3 is None:
            print(f"{case.name}: no ns-3 reference; run {REGENERATE} --cases {case.name}")
            continue
        if ns3.get("fingerprint") not in (None, case.fingerprint()):
            print(f"{case.name}: the reference was made for another version of this case; "
                  f"run {REGENERATE} --cases {case.name}")
            continue
        rows.append(compare(case, ns3, run_netfl(case, args.transport)))
    if args.plot:
        from ns3_plot import plot_validation  # noqa: PLC0415 (matplotlib only here)

        by_transport = {args.transport: rows}
        if all(r["radio"] for r in rows):  # a dedicated channel per vehicle beside the cell
            by_transport["dedicated"] = [
                compare(c, reference["cases"][c.name], run_netfl(replace(c, medium="p2p")))
                for c in _cases_of(selected, rows)]
        for other in ("tcp", "fluid", "store-and-forward"):
            if other not in by_transport:
                by_transport[other] = [compare(c, reference["cases"][r["name"]],
                                               run_netfl(c, other))
                                       for c, r in zip(_cases_of(selected, rows), rows,
                                                       strict=True)]
        plot_validation(by_transport, args.plot)
        print(f"figure: {args.plot}")
    for line in format_rows(rows, args.markdown):
        print(line)
    for radio in (True, False):  # the point-to-point line last
        kind = [r for r in rows if r["radio"] == radio and r["comparable"]]
        if kind:
            median, worst = goals(radio)
            outside = outside_goal(kind)
            print(f"goal (median <= {median:.0%}, worst <= {worst:.0%}): outside it: "
                  + (", ".join(f"{r['name']} ({100 * r['error']:+.1f}%)" for r in outside)
                     or "none"))
            media = sorted({r["medium"] for r in kind})
            for medium in media if radio and len(media) > 1 else ():
                print(summary_line(rows, radio, medium))
            print(summary_line(rows, radio))
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        columns = ["name", "medium", "flows", "ns3_s", "netfl_s", "error", "comparable"]
        write(args.json, {"transport": args.transport, "reference": reference.get("ns3")},
              columns, [[r[c] for c in columns] for r in rows])
    return rows


def _cases_of(selected: list[Case], rows: list[dict]) -> list[Case]:
    by_name = {c.name: c for c in selected}
    return [by_name[r["name"]] for r in rows]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
