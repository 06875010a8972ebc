"""What the portable float kernels cost: short scenarios trained with torch's own kernels for this
CPU (``NETFL_FLOAT_KERNELS=native``) and with the ones every x86-64 machine shares
(``portable``: ATen at AVX2, MKL's COMPATIBLE branch, oneDNN off), each in a fresh process,
alternating, the best of ``--repeats`` each. Prints the training host seconds of both and their
ratio per scenario, and checks that the simulated side (rounds.csv: times, bytes, who took part)
is the same under both. Last line: ``portable_vs_native: X``, the largest ratio.

    python benchmarks/bench_float_kernels.py [--repeats 2] [--json PATH]
                                             [--scenarios fedchs/short-fed-chs.yaml ...]

Default scenarios: the Fed-CHS MLP (200/200, Fashion-MNIST), HFL-PWP's CNN and Group-FEL's
model (what the reproduction page's runs train).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from netfl.float_kernels import fresh_environment

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("fedchs/short-fed-chs.yaml", "hfl_pwp/short-hfl-pwp.yaml",
           "group_fel/short-group-fel.yaml")


def run_once(scenario: str, kernels: str) -> tuple[float, bytes, str]:
    """Training host seconds, rounds.csv's bytes and the kernels the summary names."""
    env = fresh_environment(kernels)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "netfl", "run", str(ROOT / "scenarios" / scenario),
                        "--out", out, "--run-id", "bench", "--set", "output.plots=false", "-q"],
                       env=env, check=True, capture_output=True)
        folder = next(Path(out).glob("*/bench"))
        summary = json.loads((folder / "summary.json").read_text())
        return (summary["host_time_s_by_part"]["training_s"], (folder / "rounds.csv").read_bytes(),
                summary["host_float_kernels"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--scenarios", nargs="+", default=list(DEFAULT))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for scenario in args.scenarios:
        best: dict[str, float] = {}
        rounds: dict[str, bytes] = {}
        names: dict[str, str] = {}
        for _ in range(args.repeats):
            for kernels in ("native", "portable"):
                seconds, rounds[kernels], names[kernels] = run_once(scenario, kernels)
                best[kernels] = min(best.get(kernels, seconds), seconds)
        if rounds["native"] != rounds["portable"]:
            sys.exit(f"{scenario}: rounds.csv differs between the kernels (it must not)")
        row = {"scenario": scenario, "native": names["native"], "portable": names["portable"],
               "native_training_s": round(best["native"], 2),
               "portable_training_s": round(best["portable"], 2),
               "ratio": round(best["portable"] / best["native"], 3)}
        rows.append(row)
        print(f"{scenario}: {row['native']} {row['native_training_s']} s, {row['portable']} "
              f"{row['portable_training_s']} s, portable/native {row['ratio']}")
    worst = max(rows, key=lambda row: row["ratio"])
    print(f"portable_vs_native: {worst['ratio']}")
    if args.json:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from record import write  # benchmarks/record.py, beside this script

        columns = list(rows[0])
        write(args.json, {"portable_vs_native": worst["ratio"]}, columns,
              [[row[c] for c in columns] for row in rows])


if __name__ == "__main__":
    main()
