"""Write one benchmark's results as JSON, with the machine, date and commit they were measured at.

Every ``benchmarks/bench_*.py`` takes ``--json PATH`` and calls :func:`write` once at its end;
``benchmarks/report.py`` turns the files under ``benchmarks/results/`` into docs/benchmarks.md.

A file holds::

    {"benchmark": "bench_network",              # the script's name
     "command": "python benchmarks/bench_network.py --transfers 20000",
     "date": "2026-11-26T12:00:00Z",           # UTC, when the benchmark finished
     "commit": "65496b9" (+ "+changes" when the work tree differed from it),
     "machine": {"cpu": ..., "cores": ..., "memory_gb": ..., "python": ..., "torch": ...},
     "headline": {"network_vs_raw_simpy": 1.234},   # the script's last line(s), as numbers
     "columns": [...], "rows": [[...], ...]}        # the table it printed, if any
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from netfl.float_kernels import cpu_model

ROOT = Path(__file__).resolve().parents[1]


def memory_gb() -> float | None:
    """Physical memory in GB (10^9 bytes), or None where the system does not say."""
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1)
    except (ValueError, OSError, AttributeError):
        return None


def version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    """What the numbers depend on: CPU, the cores this process may use, memory, versions."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu_model(), "cores": usable, "memory_gb": memory_gb(),
            "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "torch": version("torch"),
            "numpy": version("numpy"), "simpy": version("simpy"), "netfl": version("netfl")}


def commit() -> str | None:
    """The repository's commit, with ``+changes`` when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def write(path: str | Path, headline: dict, columns: list[str] | None = None,
          rows: list[list] | None = None) -> Path:
    """Write the running script's results to ``path`` (folders made as needed) and return it.

    ``headline``: the numbers of the script's last lines, by the names they print;
    ``columns``/``rows``: the table it printed (plain numbers, not formatted strings).
    """
    script = Path(sys.argv[0])
    record = {
        "benchmark": script.stem,
        "command": " ".join(["python", f"benchmarks/{script.name}", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit(),
        "machine": machine(),
        "headline": headline,
        "columns": columns or [],
        "rows": rows or [],
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path
