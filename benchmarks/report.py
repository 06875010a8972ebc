"""Render docs/benchmarks.md from the JSON results under benchmarks/results/.

    python benchmarks/report.py            # docs/benchmarks.md from the committed JSON files
    python benchmarks/report.py --run      # rerun the cheap benchmarks first (a few minutes)
    python benchmarks/report.py --check    # exit 1 if docs/benchmarks.md is not what they render

Each ``benchmarks/results/<script>.json`` is what ``python benchmarks/<script>.py --json PATH``
wrote (benchmarks/record.py: the machine, date and commit with the numbers); ``--run`` reruns the
scripts in :data:`CHEAP` that way. ``benchmarks/results/recorded.json`` holds measurements taken
before the scripts wrote JSON, each with the date and commit it was measured at; they are shown
as recorded, never as fresh. The page depends only on the files, so rendering twice gives the
same page.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

# script -> (title, what it measures and against what); the order of the page
BENCHMARKS = {
    "validate_ns3": (
        "Network against ns-3",
        "The same transfers through netfl's network and ns-3's TCP (committed ns-3 reference "
        "numbers): relative error of the last flow's completion time per case, summarised per "
        "medium. The cases and the method: docs/models/network.md."),
    "bench_network": (
        "Network throughput against raw SimPy",
        "Transfers per second through netfl's network (tcp and fluid transports) on three "
        "workloads, against raw SimPy resource-based transfers in the same process. "
        "A ratio is netfl's transfers per second over raw SimPy's (below 1: netfl is slower, "
        "since it routes, shares and runs TCP); the headline is the smallest tcp ratio."),
    "bench_grouping": (
        "Group formation (Group-FEL Fig. 5)",
        "Seconds to form groups with RG, CDG, KLDG and CoV-Grouping, and the groups' average "
        "coefficient of variation, from 100 to 1,000 clients."),
    "bench_contact_plan": (
        "LEO contact plan",
        "The contact plan of Starlink shell 1 for 100 ground users over a day at 10 s steps "
        "(refined to 0.1 s), against a pair-by-pair test sampled over one hour and scaled."),
    "bench_iov": (
        "IoV event throughput",
        "An hour of a 10 km highway with Fed-CHS, latency only: host seconds per simulated "
        "hour and events per second, against raw SimPy doing the same number of events."),
    "bench_worlds": (
        "Mobile worlds' event throughput",
        "Twenty simulated minutes of hierarchical FedAvg, latency only, on a 60 km road with "
        "fibre, the same road whose 20 RSUs reach the cloud through Starlink (a road under a "
        "constellation), and 100 users under Starlink: events per host second, against raw "
        "SimPy doing the same number of events right after each. The headline is the joined "
        "world's ratio to raw SimPy over the fibre road's."),
    "bench_trainer": (
        "Trainer against a per-client loop",
        "Samples per second of netfl's trainer against a per-client deep-copy loop and a "
        "fused-batch ceiling, per model and mode, and a whole round against a careful loop."),
    "bench_float_kernels": (
        "Portable float kernels",
        "Training host seconds of short scenarios with torch's own kernels for the CPU "
        "(NETFL_FLOAT_KERNELS=native) against the portable ones (ATen at AVX2, MKL's COMPATIBLE "
        "branch, oneDNN off: the same trained bits on every x86-64 machine), each in a fresh "
        "process, alternating; rounds.csv checked equal. The headline is the largest ratio."),
    "bench_target_detection": (
        "Target screening",
        "Host time of a short Fed-CHS run that checks the target on every update (screened, "
        "and on the full test set) against one that only evaluates every eval_every rounds."),
    "bench_floors": (
        "Floors under the papers' runs",
        "Each paper scenario run in netfl beside its floor, measured in the same process: plain "
        "torch doing the run's training passes (a per-client loop with one model object), "
        "evaluations and QSGD draws, and plain SimPy processing as many events. Host / floor "
        "is the run's host time over that sum (under 1 where netfl's batched trainer beats "
        "the plain loop); the FLOP bound is the run's counted training FLOPs at the machine's "
        "sgemm peak; the event-loop share is netfl's event loop over the host time."),
    "bench_scale": (
        "Scale, latency only",
        "Latency-only hierarchical FedAvg and Fed-CHS (fake model, 10 cloud rounds) at growing "
        "client counts: host time and peak memory, simulated event by event and with "
        "links.closed_form (each client's transfers and computation in closed form: rows "
        "'closed-form'), and hierarchical FedAvg's rounds in plain SimPy (nothing but their "
        "events, the floor under any simulator on SimPy). The headline's "
        "closed_form_vs_per_event figure is the largest relative difference between the two "
        "paths' summaries at the sizes both ran."),
    "bench_energy": (
        "Energy accounting",
        "CPU seconds of scenarios/fedchs/short-fedavg.yaml with an energy: section (idle power, "
        "client and edge radios on) against the same run without, best of the repeats, "
        "alternating; every other result the same (the goal: a ratio of at most 1.05)."),
    "bench_peers": (
        "Training throughput against peers",
        "One FedAvg workload (Fashion-MNIST, 100 clients, the 784-200-200-10 MLP, 5 local "
        "steps, the test set every round) on netfl with its network, a plain per-client "
        "PyTorch loop, pfl and Flower, each in a fresh process: steady-state ms per round."),
}

# what --run reruns: each well under two minutes on two cores
CHEAP = {
    "validate_ns3": ["--reference"],
    "bench_grouping": [],
    "bench_network": ["--transfers", "5000"],
}


def number(value) -> str:
    """A table cell: integers with thousands separators, floats to about 3 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (abs(value) >= 1000 and value == int(value)):
        return f"{int(value):,}"
    if value == 0 or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}"


def verbatim(value) -> str:
    """A recorded cell as it was recorded: floats keep their digits, integers get separators."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "-" if value is None else str(value)


def table(columns: list[str], rows: list[list], cell=number) -> list[str]:
    right = [all(isinstance(r[i], int | float) or r[i] is None for r in rows)
             for i in range(len(columns))]
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def machine_line(machine: dict) -> str:
    parts = [machine.get("cpu"), f"{machine.get('cores')} cores",
             f"{number(machine.get('memory_gb'))} GB", machine.get("os"),
             f"Python {machine.get('python')}", f"torch {machine.get('torch')}"]
    return ", ".join(p for p in parts if p)


def ns3_summary(record: dict) -> tuple[list[str], list[list]]:
    """validate_ns3's rows, per medium: cases, median |error| and worst error (comparable)."""
    columns = record["columns"]
    rows = [dict(zip(columns, row, strict=True)) for row in record["rows"]]
    out = []
    for medium in sorted({r["medium"] for r in rows}):
        errors = sorted(100 * r["error"] for r in rows if r["medium"] == medium
                        and r["comparable"])
        if errors:
            middle = sorted(abs(e) for e in errors)
            median = (middle[(len(middle) - 1) // 2] + middle[len(middle) // 2]) / 2
            out.append([medium, sum(r["medium"] == medium for r in rows), len(errors),
                        round(median, 1), round(max(errors, key=abs), 1)])
    return ["medium", "cases", "comparable", "median abs. error %", "worst error %"], out


def measured_section(record: dict) -> list[str]:
    title, what = BENCHMARKS.get(record["benchmark"], (record["benchmark"], ""))
    if record["benchmark"] == "validate_ns3":
        columns, rows = ns3_summary(record)
    else:
        columns, rows = record["columns"], record["rows"]
    headline = ", ".join(f"`{k}: {number(v)}`" for k, v in record["headline"].items())
    lines = [f"## {title}", "", what, "",
             f"`{record['command']}` — {record['date']}, commit {record['commit']}, "
             f"{machine_line(record['machine'])}.", ""]
    if headline:
        lines += [f"Headline: {headline}.", ""]
    if rows:
        lines += [*table(columns, rows), ""]
    return lines


def recorded_section(recorded: list[dict]) -> list[str]:
    lines = ["## Recorded measurements", "",
             "Measured before the benchmark scripts wrote JSON, and not rerun since: each table "
             "says when, at which commit and how. They are a record, not a claim about the code "
             "as it is now; rerun the command to measure it.", ""]
    for entry in recorded:
        lines += [f"### {entry['title']}", "",
                  f"Recorded: {entry['measured']}, commit {entry['commit']}; "
                  f"{entry['machine']}. Command: `{entry['command']}`.", ""]
        if entry.get("note"):
            lines += [entry["note"], ""]
        lines += [*table(entry["columns"], entry["rows"], verbatim), ""]
    return lines


def render(results: Path = RESULTS) -> str:
    """The page for the JSON files in ``results`` (measured ones in BENCHMARKS' order)."""
    measured = {p.stem: json.loads(p.read_text(encoding="utf-8"))
                for p in sorted(results.glob("*.json")) if p.stem != "recorded"}
    order = [n for n in BENCHMARKS if n in measured] + sorted(set(measured) - set(BENCHMARKS))
    machines = sorted({machine_line(measured[n]["machine"]) for n in order})
    dates = sorted(measured[n]["date"] for n in order)
    lines = ["# Benchmarks", "",
             "<!-- generated by `python benchmarks/report.py` from benchmarks/results/*.json; "
             "edit those or the script, not this page -->", ""]
    if order:
        lines += [f"Measured {dates[0][:10]}" + (f" to {dates[-1][:10]}" if dates[-1][:10]
                                                  != dates[0][:10] else "")
                  + " on " + "; ".join(machines) + ".", ""]
    lines += ["Performance is measured as ratios against a baseline run in the same process "
              "(raw SimPy, a plain PyTorch loop, a peer tool) or against a floor (plain torch or "
              "plain SimPy doing only the unavoidable work), so a ratio says what netfl's "
              "modelling costs more than how fast one machine is. Each script prints its table "
              "and a last line with its headline; `--json PATH` writes them for this page, with "
              "the machine, the date and the commit (`+changes`: the work tree had uncommitted "
              "changes). "
              "`python benchmarks/report.py --run` reruns the cheap ones ("
              + ", ".join(f"`{n}`" for n in CHEAP) + ") and renders this page; the others "
              "take minutes to hours on two cores and are run by hand:", ""]
    lines += [f"* `python benchmarks/{name}.py`: {title}." for name, (title, _) in
              BENCHMARKS.items()]
    lines.append("")
    for name in order:
        lines += measured_section(measured[name])
    recorded = results / "recorded.json"
    if recorded.exists():
        lines += recorded_section(json.loads(recorded.read_text(encoding="utf-8")))
    return "\n".join(lines).rstrip() + "\n"


def run_cheap(results: Path = RESULTS) -> None:
    for name, args in CHEAP.items():
        command = [sys.executable, f"benchmarks/{name}.py", *args,
                   "--json", str(results.relative_to(ROOT) / f"{name}.json")]
        print("+", " ".join(command[1:]), flush=True)
        subprocess.run(command, cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="rerun the cheap benchmarks first")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/benchmarks.md differs from what the JSON renders")
    args = parser.parse_args()
    if args.run:
        run_cheap()
    page = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != page:
            sys.exit(f"{PAGE} is not what benchmarks/results/ renders: "
                     "run python benchmarks/report.py")
        return
    PAGE.write_text(page, encoding="utf-8")
    print(PAGE)


if __name__ == "__main__":
    main()
