"""Writing a run's results directory, atomically.

``results/<name>/<run-id>/`` holds summary.json, metrics.csv and metrics.parquet, the resolved
scenario (scenario.yaml), partition.csv, events.parquet when tracing is on, and plots.
Everything is written into a hidden temporary sibling (``.<run-id>.tmp-<host>-<pid>``) that is
renamed into place only when complete: a crash or Ctrl-C leaves no directory that looks like a
finished run, and a directory holding summary.json is always complete.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import socket
from datetime import datetime
from pathlib import Path

import pandas as pd

from netfl.errors import NetflError, ScenarioError, ScenarioProblem

SUMMARY = "summary.json"
HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"
INCOMPLETE_SUFFIX = ".incomplete"
# a run id (and a scenario name) is one plain folder name: it can never climb out of its parent
# ('+': a sweep's ids keep the sign of exponents, as in lr-1e+20)
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")


class ResultsNotWritten(NetflError):
    """A run finished but its results folder could not be written; the message says what was
    kept, where, and the run's headline numbers."""


def check_run_id(run_id: str) -> None:
    """Refuse a run id that is not one plain folder name (``..``, ``/``, absolute, hidden,
    empty, over 100 characters or outside ``A-Z a-z 0-9 . _ -``): exit status 2."""
    if not RUN_ID_PATTERN.match(run_id):
        raise ScenarioError([ScenarioProblem(
            "run_id", "a run id is one folder name: up to 100 letters, digits, '.', '_', '+' "
            "or '-', starting with a letter or digit (no '/', no '..')", run_id,
            source="--run-id")])


def check_writable(parent: Path) -> list[Path]:
    """Make ``parent`` and prove a file can be written there, before a run spends its time:
    a results folder under a file, read-only or on a full disk is found now, not after.
    Returns the folders it created, outermost first (``remove_if_empty`` takes them back
    where the run then fails)."""
    parent = Path(parent)
    created = [p for p in (parent, *parent.parents) if not p.exists()][::-1]
    probe = parent / f".netfl-write-probe-{os.getpid()}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"netfl")
        probe.unlink()
    except OSError as exc:
        remove_if_empty(created)
        raise NetflError(f"cannot write results under {parent}: {exc.strerror or exc} "
                         f"({type(exc).__name__}); choose another folder with --out or "
                         f"output.dir") from None
    except BaseException:  # interrupted here (Ctrl-C, kill): take the folders back too
        probe.unlink(missing_ok=True)
        remove_if_empty(created)
        raise
    return created


def remove_if_empty(folders: list[Path]) -> None:
    """Remove those of ``folders`` (outermost first) that are empty, innermost first."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:  # not empty, or gone: leave it
            pass


def temporary_name(name: str) -> str:
    """The hidden name a folder or file is written under before it is renamed to ``name``:
    it names this host and process, so a clean-up never takes another machine's."""
    return f".{name}.tmp-{HOST}-{os.getpid()}"


def remove_stale_temporaries(parent: Path) -> list[Path]:
    """Remove the hidden temporary run folders (``temporary_name``) under ``parent`` that
    processes of this host no longer running left behind (killed while writing); those of
    other hosts (Dask workers on a shared filesystem) are left alone. Returns the removed."""
    removed = []
    for tmp in Path(parent).glob(f".*.tmp-{HOST}-*"):
        pid = tmp.name.rsplit("-", 1)[1]
        if tmp.is_dir() and pid.isdigit() and not process_running(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def process_running(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # not a pid at all
        return False
    return True


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
    """Whether ``run_dir`` holds a finished run: a summary.json that reads as a JSON object (a
    truncated one, from a disk that filled or a copy cut short, is not complete)."""
    return read_complete_summary(run_dir) is not None


def read_complete_summary(run_dir: Path) -> dict | None:
    """The run's summary, or None where summary.json is missing, unreadable or truncated."""
    try:
        summary = json.loads((Path(run_dir) / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def is_damaged(run_dir: Path) -> bool:
    """Whether ``run_dir`` exists without a summary.json that reads as a JSON object: a run
    folder whose summary was cut short. False where the file cannot be read at all (a
    filesystem hiccup is not proof of damage)."""
    path = Path(run_dir) / SUMMARY
    if not Path(run_dir).is_dir():
        return False
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    except ValueError:
        return True
    return not isinstance(summary, dict)


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


# the analysis's tables, also as parquet (types kept, for pandas and pyarrow users)
PARQUET_TOO = ("rounds", "links", "participation")


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
    tmp = parent / temporary_name(run_id)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        metrics.to_csv(tmp / "metrics.csv", index=False)
        metrics.to_parquet(tmp / "metrics.parquet", index=False)
        (tmp / "scenario.yaml").write_text(scenario_yaml, encoding="utf-8")
        if events is not None:
            events.to_parquet(tmp / "events.parquet", index=False)
        for name, table in (tables or {}).items():
            table.to_csv(tmp / f"{name}.csv", index=False)
            if name in PARQUET_TOO:
                table.to_parquet(tmp / f"{name}.parquet", index=False)
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
    except OSError as exc:  # a full disk, a folder made read-only meanwhile: keep what was
        raise ResultsNotWritten(_salvage(tmp, parent, run_id, summary, exc)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def copy_run(source: Path, run_dir: Path) -> None:
    """Copy the complete run folder ``source`` to ``run_dir``, through a temporary sibling so
    that a copy cut short is never taken for a run; an incomplete folder already at
    ``run_dir`` is set aside first. (The same run id is the same scenario, so the copy's
    results are the run's own: a sweep gets a point another sweep has run without running it
    twice.)"""
    tmp = run_dir.parent / temporary_name(run_dir.name)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, tmp)
    if run_dir.exists():
        set_aside(run_dir)
    os.replace(tmp, run_dir)


def set_aside(run_dir: Path) -> Path:
    """Move an incomplete run folder out of the way (to ``<run_id>.incomplete``, -2, ...) so
    the run can be written again under its own name; returns where it went."""
    kept = unique_run_dir(run_dir.parent, run_dir.name + INCOMPLETE_SUFFIX)
    os.rename(run_dir, kept)
    return kept


def _salvage(tmp: Path, parent: Path, run_id: str, summary: dict, exc: OSError) -> str:
    """Keep the files written before ``exc`` in ``<run_id>.incomplete`` (never summary.json:
    nothing there looks like a finished run) and say so, with the run's headline numbers."""
    (tmp / SUMMARY).unlink(missing_ok=True)
    kept = unique_run_dir(parent, run_id + INCOMPLETE_SUFFIX)
    try:
        if not any(tmp.iterdir()):
            raise OSError("nothing was written")
        os.rename(tmp, kept)
        where = f"the files written before it are in {kept} (incomplete: no summary.json)"
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        where = "no file could be kept"
    headline = {k: summary.get(k) for k in ("name", "rounds", "final_accuracy", "sim_time_s",
                                            "time_to_target_s", "bytes_total", "stop_reason")}
    return (f"the run finished but writing its results under {parent} failed: "
            f"{exc.strerror or exc}; {where}. Its headline: {json.dumps(_jsonable(headline))}")
