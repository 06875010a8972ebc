"""Writing a run's results directory, atomically.

``results/<name>/<run-id>/`` holds summary.json, metrics.csv and metrics.parquet, the resolved
scenario (scenario.yaml), partition.csv, events.parquet when tracing is on, and plots.
Everything is written into a hidden temporary sibling (``.<run-id>.tmp-<pid>``) that is
renamed into place only when complete: a crash or Ctrl-C leaves no directory that looks like a
finished run, and a directory holding summary.json is always complete.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from datetime import datetime
from pathlib import Path

import pandas as pd

SUMMARY = "summary.json"


def new_run_id(seed: int) -> str:
    """A readable, sortable run id: ``20261122-153012-s7``."""
    return f"{datetime.now():%Y%m%d-%H%M%S}-s{seed}"


def unique_run_dir(parent: Path, run_id: str) -> Path:
    """``parent/run_id``, or ``parent/run_id-2`` (-3, ...) where that exists already."""
    candidate, n = parent / run_id, 2
    while candidate.exists():
        candidate, n = parent / f"{run_id}-{n}", n + 1
    return candidate


def is_complete(run_dir: Path) -> bool:
    return (Path(run_dir) / SUMMARY).is_file()


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def write_run(parent: Path, run_id: str, summary: dict, metrics: pd.DataFrame,
              scenario_yaml: str, events: pd.DataFrame | None = None, plot=None,
              tables: dict[str, pd.DataFrame] | None = None, on_summary=None) -> Path:
    """Write every file into a temporary directory, then rename it to ``parent/run_id``.

    Where that name is taken (even by a run finishing at the same moment), the next free
    ``run_id-N`` is used; the final path is returned. ``plot(tmp_dir)``, when given, draws the
    plots into the temporary directory; ``tables`` are written as ``<name>.csv``;
    ``on_summary(summary)``, when given, is called just before ``summary.json`` is written.
    """
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".{run_id}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        metrics.to_csv(tmp / "metrics.csv", index=False)
        metrics.to_parquet(tmp / "metrics.parquet", index=False)
        (tmp / "scenario.yaml").write_text(scenario_yaml, encoding="utf-8")
        if events is not None:
            events.to_parquet(tmp / "events.parquet", index=False)
        for name, table in (tables or {}).items():
            table.to_csv(tmp / f"{name}.csv", index=False)
        if plot is not None:
            plot(tmp)
        # summary.json last: its presence marks a complete directory.
        if on_summary is not None:
            on_summary(summary)
        (tmp / SUMMARY).write_text(json.dumps(_jsonable(summary), indent=2) + "\n",
                                   encoding="utf-8")
        while True:
            final = unique_run_dir(parent, run_id)
            try:
                os.rename(tmp, final)
                return final
            except OSError as exc:  # taken between the check and the rename: try the next name
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
