"""Running a sweep into its folder, resuming where an earlier one stopped.

A sweep folder holds::

    sweep.json                      the sweep: scenario file, set/cases/grid/seeds, its points
    index.parquet, index.csv        one row per point: run_id, status, parameters, error, path,
                                    log, and the run's summary (scalars; small dicts flattened)
    runs/<name>/<run_id>/           each run's own results folder (as `netfl run` writes it)
    logs/<run_id>.log               each run's output, and its traceback where it failed

Runs whose folder is complete (holds summary.json) are not run again: rerunning the same command
resumes a killed sweep, retries its failed runs, and adds points a grown grid asks for. The
index and sweep.json are written to a temporary file and renamed over the old one, so a reader
never sees half of either; the index is rewritten as runs finish (at most once a second) and at
the end. Temporary run folders that processes of a killed sweep left behind are removed when the
next sweep starts. One sweep at a time may write a folder (an OS lock, released when its process
ends).

Workers get the folder's absolute path, and a run reported done counts only where its
summary.json is there as seen from the process that runs the sweep: a cluster whose workers do
not share the folder at the same path gets failed runs that say so, not an index of ghosts.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd

from netfl.errors import NetflError
from netfl.results.store import (
    check_writable,
    copy_run,
    is_complete,
    remove_stale_temporaries,
)
from netfl.sim.signals import signals_interrupt
from netfl.sweep.grid import SEED, Point, Sweep
from netfl.sweep.task import (
    DIE_ONCE_ENV,
    DONE,
    FAILED,
    LOST,
    PENDING,
    Outcome,
    RunTask,
    read_summary,
)

SWEEP_FILE, INDEX = "sweep.json", "index"
FIXED_COLUMNS = ("run_id", "status")
TAIL_COLUMNS = ("error", "path", "log")
MAX_FLAT_ENTRIES = 32  # summary dicts up to this size are flattened into index columns
NOT_FLATTENED = ("bytes_by_link",)  # one column per link would only grow with the world
INDEX_EVERY_S = 1.0


@dataclass
class SweepResult:
    """The sweep's folder and its index rows, in point order."""

    out_dir: Path
    rows: list[dict]
    reused: int = 0
    executor: str = ""
    elapsed_s: float = 0.0
    counts: dict = field(default_factory=dict)

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.rows if r["status"] in (FAILED, LOST)]

    @property
    def diverged(self) -> list[dict]:
        """Done runs whose model stopped being finite (stop_reason 'diverged')."""
        return [r for r in self.rows if r.get("stop_reason") == "diverged"]


class Observer:
    """What a sweep tells its progress display; every method is optional to override."""

    def begin(self, total: int, reused: int, executor) -> None: ...
    def run_started(self, run_id: str) -> None: ...
    def run_finished(self, outcome: Outcome, row: dict) -> None: ...
    def end(self, result: SweepResult) -> None: ...


def run_dir(out_dir: Path, point: Point) -> Path:
    """``runs/<name>/<run_id>``, or where that does not exist, a complete run folder of the same
    name whose id ends in the same hash: the point's run made under an earlier slug (a sweep
    made before its ids were readable, or before its case got a label), which resumes."""
    path = Path(out_dir) / "runs" / point.scenario.name / point.run_id
    if path.exists():
        return path
    earlier = _by_hash(path.parent).get(point.run_id.rsplit("-", 1)[-1])
    if earlier and is_complete(path.parent / earlier):
        return path.parent / earlier
    return path


def _by_hash(folder: Path) -> dict[str, str]:
    """Run folder names in ``folder`` by the hash that ends them (hidden ones left out),
    cached until the folder changes."""
    try:
        changed = folder.stat().st_mtime_ns
    except OSError:
        return {}
    cached = _NAMES.get(str(folder))
    if cached is None or cached[0] != changed:
        names = {}
        for entry in os.scandir(folder):
            if entry.is_dir() and not entry.name.startswith("."):
                names[entry.name.rsplit("-", 1)[-1]] = entry.name
        cached = _NAMES[str(folder)] = (changed, names)
    return cached[1]


_NAMES: dict[str, tuple[int, dict[str, str]]] = {}


def log_path(out_dir: Path, run_id: str) -> Path:
    return Path(out_dir) / "logs" / f"{run_id}.log"


def run_sweep(sweep: Sweep, out_dir: str | Path, executor=None,
              observer: Observer | None = None) -> SweepResult:
    """Run every point of ``sweep`` not yet complete in ``out_dir``; return the index rows.

    Args:
        executor: a LocalExecutor (default) or DaskExecutor.
        observer: told of progress (see :class:`Observer`).
    """
    return run_sweeps([(sweep, out_dir)], executor, observer)[0]


def run_sweeps(jobs: list[tuple[Sweep, str | Path]], executor=None,
               observer: Observer | None = None) -> list[SweepResult]:
    """Run several sweeps, each into its own folder, on one executor at once, so that no worker
    idles at the end of one sweep while another has runs left. Each folder is written exactly
    as ``run_sweep`` writes it. Sweeps whose run ids clash run one after the other (the executor
    knows a run by its id), and a run an earlier one has done is copied, not run again
    (``copy_run``). The observer hears of every run of every sweep: ``begin`` once with
    the total, ``end`` with each sweep's result in turn."""
    from netfl.sweep.executors import LocalExecutor

    executor = executor or LocalExecutor()
    observer = observer or Observer()
    batches: list[list[tuple[Sweep, Path]]] = []
    for sweep, out_dir in jobs:  # workers (Dask ones too) may run in another folder
        ids = {p.run_id for p in sweep.points}
        batch = next((b for b in batches if not ids & {p.run_id for s, _ in b
                                                        for p in s.points}), None)
        if batch is None:
            batches.append(batch := [])
        batch.append((sweep, Path(out_dir).absolute()))
    results: dict[int, SweepResult] = {}
    done: dict[str, Path] = {}  # run id -> a complete folder of it in an earlier batch
    for batch in batches:
        for (sweep, _out_dir), result in zip(batch, _run_batch(batch, executor, observer, done),
                                            strict=True):
            results[next(i for i, (s, _d) in enumerate(jobs) if s is sweep)] = result
            done.update({row["run_id"]: result.out_dir / row["path"] for row in result.rows
                         if row["status"] == DONE and row["run_id"] not in done})
    return [results[i] for i in range(len(jobs))]


def seed_ranks(points: list[Point]) -> list[int]:
    """Each point's rank among the points that differ from it only in ``seed`` (0 for the
    first of them, 1 for the next...), in the sweep's order."""
    seen: dict[str, int] = {}
    ranks = []
    for point in points:
        key = repr([(k, v) for k, v in point.params.items() if k != SEED])
        ranks.append(seen.get(key, 0))
        seen[key] = ranks[-1] + 1
    return ranks


def _run_batch(batch: list[tuple[Sweep, Path]], executor, observer: Observer,
               done_elsewhere: dict[str, Path] | None = None) -> list[SweepResult]:
    for _sweep, out_dir in batch:
        check_writable(out_dir / "logs")
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        for _sweep, out_dir in batch:
            stack.enter_context(_lock(out_dir))
        rows: list[dict[str, dict]] = []
        owner: dict[str, tuple[int, Point]] = {}  # run id -> (its sweep, its point)
        tasks = []
        die_once = os.environ.get(DIE_ONCE_ENV) or None
        for index, (sweep, out_dir) in enumerate(batch):
            _remove_leftovers(out_dir)
            _write_json(out_dir / SWEEP_FILE, _sweep_json(sweep, out_dir, executor))
            mine: dict[str, dict] = {}
            for point, rank in zip(sweep.points, seed_ranks(sweep.points), strict=True):
                owner[point.run_id] = (index, point)
                path = run_dir(out_dir, point)
                source = (done_elsewhere or {}).get(point.run_id)
                if not is_complete(path) and source is not None and is_complete(source):
                    copy_run(source, path)
                    log_path(out_dir, point.run_id).write_text(
                        f"=== {path.name}: copied from {source} (the same run id: the same "
                        "scenario), not run again ===\n", encoding="utf-8")
                if is_complete(path):
                    mine[point.run_id] = index_row(point, out_dir, DONE, read_summary(path))
                    continue
                mine[point.run_id] = index_row(point, out_dir, PENDING)
                tasks.append((rank, RunTask(point.run_id, point.scenario, str(out_dir / "runs"),
                                            str(log_path(out_dir, point.run_id)),
                                            die_once=die_once)))
            rows.append(mine)
            write_index(out_dir, list(mine.values()))
        # seed by seed across the whole batch (a stable sort): every point's first seed runs
        # before any point's second, so a batch stopped part-way leaves every point at one
        # seed, not some points at all of theirs and others at none
        tasks = [task for _rank, task in sorted(tasks, key=lambda pair: pair[0])]
        total = sum(len(s.points) for s, _d in batch)
        reused = [len(s.points) - sum(t.run_id in r for t in tasks) for (s, _d), r
                  in zip(batch, rows, strict=True)]
        last_write = [time.monotonic()] * len(batch)

        def on_done(outcome: Outcome) -> None:
            index, point = owner[outcome.run_id]
            out_dir = batch[index][1]
            if outcome.status == DONE and not is_complete(run_dir(out_dir, point)):
                outcome = Outcome(outcome.run_id, FAILED, error=(
                    f"its worker reported it done, but {run_dir(out_dir, point)} holds no "
                    f"summary.json here: is the folder on a filesystem shared at the same path "
                    f"by every worker?"))
            row = index_row(point, out_dir, outcome.status, outcome.summary, outcome.error)
            rows[index][outcome.run_id] = row
            observer.run_finished(outcome, row)
            if time.monotonic() - last_write[index] >= INDEX_EVERY_S:
                write_index(out_dir, list(rows[index].values()))
                last_write[index] = time.monotonic()

        try:
            if tasks:
                executor.open()
            observer.begin(total, sum(reused), executor)
            if tasks:
                with signals_interrupt():
                    executor.run(tasks, observer.run_started, on_done)
        finally:
            executor.close()
            for index, (sweep, out_dir) in enumerate(batch):
                for point in sweep.points:  # finished, though its result never came back
                    path = run_dir(out_dir, point)
                    if rows[index][point.run_id]["status"] != DONE and is_complete(path):
                        rows[index][point.run_id] = index_row(point, out_dir, DONE,
                                                              read_summary(path))
                write_index(out_dir, list(rows[index].values()))
    elapsed = time.perf_counter() - started
    results = []
    for index, (sweep, out_dir) in enumerate(batch):
        ordered = [rows[index][p.run_id] for p in sweep.points]
        counts = {s: sum(r["status"] == s for r in ordered)
                  for s in (DONE, FAILED, LOST, PENDING)}
        result = SweepResult(out_dir, ordered, reused[index], executor.describe(), elapsed,
                             counts)
        observer.end(result)
        results.append(result)
    return results


# ------------------------------------------------------------------------------- index


def flatten_summary(summary: dict) -> dict:
    """Scalars as they are; dicts of scalars (up to MAX_FLAT_ENTRIES) as ``key.sub``; the rest
    (per-link bytes, per-RSU load, lists) is left to each run's summary.json."""
    flat = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            if key not in NOT_FLATTENED and len(value) <= MAX_FLAT_ENTRIES and all(
                    not isinstance(v, dict | list) for v in value.values()):
                flat.update({f"{key}.{k}": v for k, v in value.items()})
        elif not isinstance(value, list):
            flat[key] = value
    return flat


def index_row(point: Point, out_dir: Path, status: str, summary: dict | None = None,
              error: str | None = None) -> dict:
    row = {"run_id": point.run_id, "status": status, **point.params, "error": error,
           "path": str(run_dir(out_dir, point).relative_to(out_dir)),
           "log": str(log_path(out_dir, point.run_id).relative_to(out_dir))}
    for key, value in flatten_summary(summary or {}).items():
        row.setdefault(key, value)
    return row


def _column(values: pd.Series) -> pd.Series:
    """One type per column, as Parquet wants: numbers stay numbers; mixed columns become text
    (dicts and lists as JSON)."""
    present = values.dropna()
    if present.empty or all(isinstance(v, str) for v in present):
        return values
    if all(isinstance(v, bool) for v in present):
        return values
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pd.to_numeric(values)
    return values.map(lambda v: v if v is None or isinstance(v, str) or v != v
                      else json.dumps(v, sort_keys=True))


def write_index(out_dir: Path, rows: list[dict]) -> None:
    """index.parquet and index.csv, each written whole and renamed into place."""
    table = pd.DataFrame(rows)
    for column in table.columns:
        if table[column].dtype == object:
            table[column] = _column(table[column])
    for suffix, write in ((".parquet", lambda t, p: t.to_parquet(p, index=False)),
                          (".csv", lambda t, p: t.to_csv(p, index=False))):
        final = Path(out_dir) / f"{INDEX}{suffix}"
        tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
        write(table, tmp)
        os.replace(tmp, final)


def read_index(out_dir: str | Path) -> pd.DataFrame:
    """A sweep folder's index (Parquet, or the CSV where Parquet is missing)."""
    out_dir = Path(out_dir)
    parquet = out_dir / f"{INDEX}.parquet"
    if parquet.is_file():
        return pd.read_parquet(parquet)
    csv = out_dir / f"{INDEX}.csv"
    if csv.is_file():
        return pd.read_csv(csv)
    raise NetflError(f"{out_dir}: no {INDEX}.parquet or {INDEX}.csv: not a sweep folder")


# ------------------------------------------------------------------------------- files


def _sweep_json(sweep: Sweep, out_dir: Path, executor) -> dict:
    from netfl._version import __version__

    return {
        **sweep.definition(),
        "points": [{"run_id": p.run_id, "params": p.params,
                    "path": str(run_dir(out_dir, p).relative_to(out_dir)),
                    **({"label": p.label} if p.label else {})}
                   for p in sweep.points],
        "executor": executor.describe(),
        "started": f"{datetime.now():%Y-%m-%dT%H:%M:%S}",
        "netfl_version": __version__,
    }


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _remove_leftovers(out_dir: Path) -> None:
    """Remove the temporary run folders (``runs/<name>/.<run_id>.tmp-<host>-<pid>``) that
    processes of this host of an earlier, killed sweep left behind (other hosts' are theirs)."""
    for parent in Path(out_dir).glob("runs/*"):
        if parent.is_dir():
            remove_stale_temporaries(parent)


class _lock:
    """An exclusive OS lock on ``<out_dir>/.sweep.lock`` (where the OS has flock)."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / ".sweep.lock"
        self.handle = None

    def __enter__(self) -> _lock:
        try:
            import fcntl
        except ImportError:  # not on a POSIX system: no lock
            return self
        self.handle = open(self.path, "a+")  # noqa: SIM115 (held until __exit__)
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.handle.close()
            raise NetflError(f"{self.path.parent}: another netfl sweep is writing this folder; "
                             f"wait for it to end, or choose another --out") from None
        return self

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            self.handle.close()


__all__ = ["Observer", "SweepResult", "read_index", "run_sweep", "run_sweeps", "write_index"]
