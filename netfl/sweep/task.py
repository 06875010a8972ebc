"""One sweep run, as executed by a worker (a local process or a Dask worker).

``run_point(task)`` is idempotent: where the run's directory is already complete (an earlier
attempt finished it, then its worker died before reporting back) it returns that result instead
of running again, and where two attempts race, the second result is discarded, so every point
ends with exactly one result directory. It never raises for a failing simulation: the failure
comes back as an :class:`Outcome` with its one-line error, and the traceback is in the run's log.

Each attempt appends to ``logs/<run_id>.log``: a header (how many times the run has started,
host, pid, time), whatever the run printed to Python's stdout and stderr (warnings included),
and the traceback or the time it took.

Test hook: where the environment variable ``NETFL_SWEEP_DIE_ONCE`` of the process that starts a
sweep names a file, the sweep hands that path to its runs, and the first run that removes the
file kills its own worker process (``os._exit``) as a crash would. The sweep tests use it to
check that a dead worker's runs are retried; nothing else sets it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from netfl.scenario import Scenario

DIE_ONCE_ENV = "NETFL_SWEEP_DIE_ONCE"
DONE, FAILED, LOST, PENDING = "done", "failed", "lost", "pending"

_started_queue = None  # set in local worker processes: run starts are reported through it


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run: the validated scenario and where to write."""

    run_id: str
    scenario: Scenario
    runs_dir: str  # the run lands in runs_dir/<scenario name>/<run_id>
    log_path: str
    attempt: int = 1  # counted by the local executor, which retries runs of dead workers
    die_once: str | None = None  # the test hook's marker file (see the module docstring)

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.scenario.name / self.run_id


@dataclass
class Outcome:
    """How one run ended: ``done`` (summary set), ``failed`` (error set) or ``lost``."""

    run_id: str
    status: str
    summary: dict | None = None
    error: str | None = None


def read_summary(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "summary.json").read_text(encoding="utf-8"))


def init_local_worker(queue, sweep_pid: int | None = None) -> None:
    """Initializer of local worker processes: report run starts on ``queue``, and die with the
    sweep: a daemon thread exits the process (``os._exit``) once the sweep's process
    (``sweep_pid``) is gone or this process's parent changes (its fork server ended), so a
    sweep killed in any way leaves no worker writing on."""
    global _started_queue
    _started_queue = queue
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.25)
            if os.getppid() != parent or (sweep_pid is not None and not _alive(sweep_pid)):
                os._exit(1)

    threading.Thread(target=watch, name="netfl-watch-sweep", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process now holds the pid
        return False
    return True


def run_point(task: RunTask) -> Outcome:
    """Run one point (see the module docstring). Called in the worker."""
    from netfl.results.store import is_damaged, read_complete_summary, set_aside

    worker = f"{socket.gethostname()}:{os.getpid()}"
    if _started_queue is not None:
        _report_start(task.run_id)
    _die_once_hook(task.die_once)
    done = read_complete_summary(task.run_dir)  # read once: the check is the summary
    if done is not None:
        return Outcome(task.run_id, DONE, done)
    if is_damaged(task.run_dir):  # a summary cut short (a full disk, a copy interrupted)
        set_aside(Path(task.run_dir))
    log = Path(task.log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    header = f"=== {task.run_id}: start "
    starts = 1 + (log.read_text(encoding="utf-8", errors="replace").count(header)
                  if log.exists() else 0)
    with open(log, "a", encoding="utf-8") as stream, _capture_output(stream):
        stream.write(f"{header}#{starts} on {worker}, "
                     f"{datetime.now():%Y-%m-%d %H:%M:%S} ===\n")
        stream.flush()
        started = time.perf_counter()
        try:
            _single_threaded_torch(task.scenario)
            from netfl.runner import run_scenario

            result = run_scenario(task.scenario, out_dir=task.runs_dir, run_id=task.run_id,
                                  tidy=False)  # the sweep tidied its folders once at start
        except Exception as exc:  # a failing run is reported, never raised: the sweep goes on
            traceback.print_exc(file=stream)
            stream.write(f"=== failed after {time.perf_counter() - started:.1f} s ===\n")
            return Outcome(task.run_id, FAILED, error=_one_line(exc))
        if Path(result.path) != task.run_dir:  # a duplicate attempt finished first: keep one
            shutil.rmtree(result.path, ignore_errors=True)
        stream.write(f"=== done in {time.perf_counter() - started:.1f} s: {task.run_dir} ===\n")
    # the summary as stored (JSON types, NaN as null): the same whether run now or found done
    return Outcome(task.run_id, DONE, read_summary(task.run_dir))


def _report_start(run_id: str) -> None:
    """Tell the local executor this process started ``run_id``. SIGTERM (how a broken pool
    stops its other workers) waits until the message is whole: a process killed halfway would
    leave the queue's lock held and a partial message that blocks its reader."""
    block = hasattr(signal, "pthread_sigmask")
    if block:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        _started_queue.put((run_id, os.getpid()))
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _one_line(exc: BaseException) -> str:
    """The error in one line: a NetflError's message (with its first problem where it lists
    several), or the exception's type and first line."""
    from netfl.errors import NetflError

    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:
        first = f"{first} {lines[1]}" + (" ..." if len(lines) > 2 else "")
    return first if isinstance(exc, NetflError) and first else f"{type(exc).__name__}: {first}"


def _die_once_hook(marker: str | None) -> None:
    if not marker:
        return
    try:
        os.unlink(marker)  # only one worker can remove it
    except FileNotFoundError:
        return
    os._exit(70)


def _single_threaded_torch(scenario: Scenario) -> None:
    """One intra-op thread per run: results then cannot depend on how many cores a worker has
    (torch's reductions may split differently by thread count), and N workers use N cores."""
    if scenario.model.kind == "fake" and "torch" not in sys.modules:
        return
    import torch

    torch.set_num_threads(1)


class _ThreadTee:
    """Stands in for sys.stdout / sys.stderr: what a thread writes goes to that thread's log
    where one is set, else to the original stream. Dask workers run several tasks in
    threads of one process; each task's output still lands in its own log."""

    def __init__(self, original):
        self.original = original
        self.local = threading.local()

    def write(self, text: str) -> int:
        target = getattr(self.local, "stream", None)
        return (target or self.original).write(text)

    def flush(self) -> None:
        target = getattr(self.local, "stream", None)
        (target or self.original).flush()

    def __getattr__(self, name):
        return getattr(self.original, name)


_tee_lock = threading.Lock()


@contextmanager
def _capture_output(stream):
    with _tee_lock:
        tees = []
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            if not isinstance(current, _ThreadTee):
                current = _ThreadTee(current)
                setattr(sys, name, current)
            tees.append(current)
    for tee in tees:
        tee.local.stream = stream
    try:
        yield
    finally:
        for tee in tees:
            tee.local.stream = None
