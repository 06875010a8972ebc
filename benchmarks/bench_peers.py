"""Training throughput against the tools a researcher would pick instead.

One FedAvg workload (benchmarks/peers/workload.py: Fashion-MNIST, 100 clients, Dirichlet(0.6),
the 784-200-200-10 MLP, SGD lr 0.05, batch 32, 5 local steps, the test set evaluated every
round; W1 samples 10 clients per round, W2 takes all 100) on netfl (its network simulation on),
a plain per-client PyTorch loop, pfl-research and Flower's Ray simulation engine, each in a
fresh process, on the same data and partition (netfl's, written once to a .npz).

    pip install -e '.[peers]'          # flwr[simulation]==1.40.0, pfl==0.6.0
    python benchmarks/bench_peers.py [--rounds-w1 40] [--rounds-w2 12] [--repeats 2]
                                     [--tools netfl,loop,pfl,flower] [--threads 2]
                                     [--peers-python PATH] [--plot peers.png] [--json PATH]

Flower pins older typer and rich than netfl's own; ``--peers-python`` runs pfl and Flower with
another environment's interpreter (one with numpy, torch and the peer) and keeps netfl's clean.

Per tool and workload: the whole process's wall time, the steady-state host seconds per round
(median over rounds after the first two, each including one test-set evaluation; the best of
``--repeats`` processes) and the final accuracy. Last line: ``netfl_vs_best_peer: X``, the
fastest other tool's steady-state seconds per round over netfl's, the worse of W1 and W2
(goal >= 2). A tool that is not installed is reported and left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent / "peers"
sys.path.insert(0, str(HERE))
import workload  # noqa: E402

RUNNERS = {"netfl": "run_netfl.py", "loop": "run_loop.py", "pfl": "run_pfl.py",
           "flower": "run_flower.py"}
WARMUP_ROUNDS = 2


def run_tool(tool: str, python: str, data: Path, name: str, rounds: int,
             threads: int) -> dict:
    """One fresh process of ``tool`` on workload ``name``: its JSON line and wall time, or a
    status saying why there is none."""
    command = [python, str(HERE / RUNNERS[tool]), "--data", str(data), "--workload", name,
               "--rounds", str(rounds), "--threads", str(threads)]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        missing = "ModuleNotFoundError" in done.stderr or "ImportError" in done.stderr
        return {"status": f"not installed ({tail[:90]})" if missing else f"failed: {tail[:90]}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    ends = result["round_end_s"]
    if len(ends) != rounds:
        return {"status": f"failed: {len(ends)} round times for {rounds} rounds"}
    steps = [b - a for a, b in zip(ends, ends[1:], strict=False)][WARMUP_ROUNDS - 1:]
    return {"status": "ok", "wall_s": wall, "round_s": statistics.median(steps),
            "accuracy": result["accuracy"][-1], "curve": result["accuracy"],
            "config": result["config"], "version": result["version"]}


def best_of(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["status"] == "ok"]
    return min(ok, key=lambda r: r["round_s"]) if ok else runs[-1]


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 3.8), squeeze=False)
    for ax, (name, by_tool) in zip(axes[0], results.items(), strict=True):
        for tool, r in by_tool.items():
            if r["status"] == "ok":
                ax.plot(range(1, len(r["curve"]) + 1), r["curve"],
                        label=f"{tool} ({r['round_s'] * 1000:.0f} ms/round)")
        ax.set(title=f"{name}: {workload.WORKLOADS[name]} of {workload.CLIENTS} clients "
                     f"per round", xlabel="round", ylabel="test accuracy")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds-w1", type=int, default=40)
    parser.add_argument("--rounds-w2", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tools", default=",".join(RUNNERS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peers-python", default=sys.executable)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    tools = args.tools.split(",")
    unknown = sorted(set(tools) - set(RUNNERS))
    if unknown or min(args.rounds_w1, args.rounds_w2) <= WARMUP_ROUNDS + 1:
        parser.error(f"unknown tools {unknown}" if unknown else
                     f"each workload needs more than {WARMUP_ROUNDS + 1} rounds")
    rounds = {"W1": args.rounds_w1, "W2": args.rounds_w2}
    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        data = workload.export(Path(scratch) / "workload.npz")
        for name, count in rounds.items():
            results[name] = {}
            for tool in tools:
                python = sys.executable if tool in ("netfl", "loop") else args.peers_python
                runs = [run_tool(tool, python, data, name, count, args.threads)
                        for _ in range(args.repeats)]
                results[name][tool] = r = best_of(runs)
                if r["status"] == "ok":
                    each = ", ".join(f"{x['round_s'] * 1000:.1f}" for x in runs
                                     if x["status"] == "ok")
                    print(f"{name} {tool:7s} {r['round_s'] * 1000:7.1f} ms/round "
                          f"(all {args.repeats}: "
                          f"{each}), "
                          f"process {r['wall_s']:5.1f} s, accuracy {r['accuracy']:.4f} after "
                          f"{count} rounds  [{r['version']}; {r['config']}]", flush=True)
                else:
                    print(f"{name} {tool:7s} {r['status']}", flush=True)
    if args.plot:
        plot(results, args.plot)
        print(f"plot: {args.plot}")
    ratios = []
    for name, by_tool in results.items():
        netfl = by_tool.get("netfl", {})
        peers = [r["round_s"] for tool, r in by_tool.items()
                 if tool != "netfl" and r["status"] == "ok"]
        if netfl.get("status") == "ok" and peers:
            ratios.append(min(peers) / netfl["round_s"])
            print(f"{name}: fastest other tool / netfl = {ratios[-1]:.2f}")
    print(f"netfl_vs_best_peer: {min(ratios):.2f}" if ratios else
          "netfl_vs_best_peer: n/a (netfl or every peer failed)")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"netfl_vs_best_peer": min(ratios) if ratios else None},
              ["workload", "tool", "ms per round", "process s", "accuracy", "version", "status"],
              [[name, tool, r.get("round_s", 0) * 1e3 if r["status"] == "ok" else None,
                r.get("wall_s"), r.get("accuracy"), r.get("version"), r["status"]]
               for name, by_tool in results.items() for tool, r in by_tool.items()])


if __name__ == "__main__":
    main()
