"""Where sweep runs execute: local worker processes (the default) or a Dask cluster.

Both take the same :class:`~netfl.sweep.task.RunTask` list and call ``run_point`` on each, so a
run's results do not depend on the executor or on the number of workers. An executor calls
``on_start(run_id)`` when it knows a run has started and ``on_done(outcome)`` once per task, in
the calling thread. ``open()`` starts what the executor needs ahead (a Dask connection or
LocalCluster), ``close()`` stops it.

Dead workers. Locally, a worker process that dies (killed, out of memory, a crash in native
code) breaks the whole process pool. The run of the process that died (known from the pid each
worker reports as it starts a run, and from the exit codes: the pool stops the other workers
with SIGTERM) is retried in a fresh pool at most ``retries`` more times, unless its folder is
complete (it finished and only its answer was lost: it counts done). The runs the pool stopped,
and those that had not started, are resubmitted without counting an attempt. On Dask the
scheduler reschedules the tasks of a dead worker itself
(``distributed.scheduler.allowed-failures``, set to ``retries`` on a LocalCluster); a task that
outlives that limit ends as ``lost``. A run is never double-counted: ``run_point`` keeps one
result directory per run, and each task reports exactly once.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace

from netfl.errors import NetflError
from netfl.results.store import read_complete_summary
from netfl.sim.cores import available_cores
from netfl.sweep.task import (
    DONE,
    FAILED,
    LOST,
    Outcome,
    RunTask,
    init_local_worker,
    run_point,
)

OnStart = Callable[[str], None]
OnDone = Callable[[Outcome], None]


def _append_log(task: RunTask, text: str) -> None:
    try:
        with open(task.log_path, "a", encoding="utf-8") as stream:
            stream.write(text + "\n")
    except OSError:
        pass


class LocalExecutor:
    """Runs on ``workers`` local processes (default: one per available core).

    Processes come from a fork server that has imported netfl once, so each worker starts in
    milliseconds with a clean interpreter (no state from the parent, no inherited threads).
    """

    def __init__(self, workers: int | None = None, retries: int = 2):
        if workers is not None and workers < 1:
            raise NetflError(f"--workers must be 1 or more; got {workers}")
        if retries < 0:
            raise NetflError(f"--retries must be 0 or more; got {retries}")
        self.workers = workers or available_cores()
        self.retries = retries

    def describe(self) -> str:
        return f"{self.workers} local worker process{'es' if self.workers != 1 else ''}"

    def open(self) -> None:
        """Nothing to start ahead: each run's pool is made in run()."""

    def close(self) -> None:
        """Nothing to stop: run() shuts its pools down."""

    def slots(self) -> int:
        return self.workers

    @staticmethod
    def _context():
        if "forkserver" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["netfl.sweep.task", "netfl.simulation", "sklearn.datasets"])
            return ctx
        return multiprocessing.get_context("spawn")

    def run(self, tasks: list[RunTask], on_start: OnStart, on_done: OnDone) -> None:
        ctx = self._context()
        pending = {t.run_id: t for t in tasks}
        idle_breaks = 0
        while pending:
            # writes go straight to the pipe: a dying worker's start message is not lost in a
            # buffer; one queue per pool: a broken pool's queue is not reused
            started_queue = ctx.SimpleQueue()
            started: dict[str, int] = {}  # run id -> pid of the worker that started it
            dead: set[int] = set()
            broken = self._run_pool(ctx, started_queue, pending, started, dead, on_start,
                                    on_done)
            if not broken:
                continue
            suspects = [rid for rid in pending if started.get(rid) in dead]
            if not suspects and not dead:  # who died is unknown: every run in progress
                suspects = [rid for rid in pending if rid in started]
            idle_breaks = 0 if suspects else idle_breaks + 1
            for rid in suspects:
                task = pending[rid]
                summary = read_complete_summary(task.run_dir)
                if summary is not None:  # it finished; only its answer died
                    del pending[rid]
                    on_done(Outcome(rid, DONE, summary))
                elif task.attempt > self.retries:
                    del pending[rid]
                    _append_log(task, f"=== worker process died during attempt {task.attempt}; "
                                      f"no retries left ===")
                    times = "once" if task.attempt == 1 else f"{task.attempt} times"
                    on_done(Outcome(rid, LOST, error=f"its worker process died {times}"))
                else:
                    _append_log(task, f"=== worker process died during attempt {task.attempt}; "
                                      f"retrying ===")
                    pending[rid] = replace(task, attempt=task.attempt + 1)
            if idle_breaks > self.retries:
                for rid in list(pending):
                    on_done(Outcome(rid, LOST, error="worker processes die before starting "
                                                     "any run"))
                pending.clear()

    def _run_pool(self, ctx, started_queue, pending: dict[str, RunTask], started: dict[str, int],
                  dead: set[int], on_start: OnStart, on_done: OnDone) -> bool:
        """Run every pending task in one pool; return True where the pool broke, with the pids
        of the workers that died by themselves (not stopped by the pool) in ``dead``."""
        processes: dict = {}

        def drain() -> None:
            processes.update(getattr(pool, "_processes", None) or {})
            while not started_queue.empty():
                rid, pid = started_queue.get()
                if rid in pending:
                    if rid not in started:
                        on_start(rid)
                    started[rid] = pid

        pool = ProcessPoolExecutor(min(self.workers, len(pending)), mp_context=ctx,
                                   initializer=init_local_worker,
                                   initargs=(started_queue, os.getpid()))
        broken = False
        try:
            futures = {}
            for rid, task in pending.items():
                try:
                    futures[pool.submit(run_point, task)] = rid
                except BrokenProcessPool:  # a worker died while the runs were handed out
                    broken = True
                    break
            waiting = set(futures)
            while waiting:
                done, waiting = wait(waiting, timeout=0.2, return_when=FIRST_COMPLETED)
                drain()
                for future in done:
                    rid = futures[future]
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    except Exception as exc:  # e.g. a task that cannot be pickled
                        outcome = Outcome(rid, FAILED, error=f"{type(exc).__name__}: {exc}")
                    del pending[rid]
                    on_done(outcome)
            drain()
        except BaseException:
            _terminate(pool)
            raise
        finally:
            if broken:
                _stop_stragglers(pool)
            pool.shutdown(wait=True, cancel_futures=True)
        if broken:  # the pool stops the other workers with SIGTERM once one has died
            dead.update(pid for pid, process in processes.items()
                        if process.exitcode not in (None, 0, -signal.SIGTERM))
        return broken


def _stop_stragglers(pool: ProcessPoolExecutor) -> None:
    """Terminate the live workers of a broken pool. CPython (3.11-3.13) marks a pool broken
    without the lock ``submit`` holds, so a submit racing the breakage can start a worker after
    the pool terminated the others; the pool then waits for it forever on shutdown (seen here:
    the dead-worker test hung in ``join_executor_internals`` with one idle worker alive)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's workers now (Ctrl-C): no run should go on writing after the sweep ends."""
    if hasattr(pool, "terminate_workers"):  # Python 3.14+
        pool.terminate_workers()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:  # gone before the index is written: nothing lands after it
        process.join(timeout=5)


class DaskExecutor:
    """Runs on a Dask cluster: the scheduler at ``address``, a given ``client``, or a
    LocalCluster of ``workers`` single-threaded processes started (and stopped) here."""

    def __init__(self, address: str | None = None, workers: int | None = None,
                 retries: int = 2, client=None):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise NetflError("--executor dask needs dask's distributed package: "
                             "pip install 'dask[distributed]'") from exc
        if workers is not None and workers < 1:
            raise NetflError(f"--workers must be 1 or more; got {workers}")
        if address is not None and workers is not None:
            raise NetflError("--workers sizes a LocalCluster; with --address the cluster's "
                             "own workers run the sweep")
        self.address, self.workers, self.retries = address, workers, retries
        self._client = client
        self._connection = None  # (client, LocalCluster or None, whether we close them)
        self._slots = 0
        self.dashboard: str | None = None

    def describe(self) -> str:
        if self._client is not None and self.address is None:
            return "a Dask cluster (given client)"
        if self.address:
            return f"the Dask cluster at {self.address}"
        return f"a Dask LocalCluster of {self.workers or available_cores()} workers"

    def slots(self) -> int:
        return self._slots

    def _connect(self):
        import dask
        from distributed import Client, LocalCluster

        if self._client is not None:
            return self._client, None, False
        if self.address:
            try:
                return Client(self.address, timeout="20s"), None, True
            except (OSError, TimeoutError) as exc:
                raise NetflError(f"cannot reach the Dask scheduler at {self.address}: "
                                 f"{exc}") from exc
        try:
            import bokeh  # noqa: F401

            dashboard = ":0"
        except ImportError:
            dashboard = None
        with dask.config.set({"distributed.scheduler.allowed-failures": self.retries}):
            cluster = LocalCluster(n_workers=self.workers or available_cores(),
                                   threads_per_worker=1, processes=True,
                                   dashboard_address=dashboard, silence_logs=logging.ERROR)
        return Client(cluster), cluster, True

    def open(self) -> None:
        """Connect to the scheduler (or start the LocalCluster)."""
        if self._connection is None:
            self._connection = self._connect()
            client, cluster, _owned = self._connection
            self.dashboard = getattr(client, "dashboard_link", None) if cluster else None
            self._slots = max(1, sum(client.nthreads().values()))

    def close(self) -> None:
        """Disconnect, and stop the LocalCluster this executor started."""
        if self._connection is None:
            return
        client, cluster, owned = self._connection
        self._connection = None
        if owned:
            client.close()
            if cluster is not None:
                cluster.close()

    def run(self, tasks: list[RunTask], on_start: OnStart, on_done: OnDone) -> None:
        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        self.open()
        client = self._connection[0]
        token = uuid.uuid4().hex[:8]
        futures = {client.submit(run_point, task, key=f"netfl-{task.run_id}-{token}",
                                 pure=False, retries=self.retries): task
                   for task in tasks}
        for future in as_completed(list(futures)):
            task = futures[future]
            try:
                outcome = future.result()
            except KilledWorker:
                _append_log(task, "=== its Dask workers died too often; given up ===")
                outcome = Outcome(task.run_id, LOST, error="its Dask workers died too "
                                                           "often (KilledWorker)")
            except Exception as exc:
                outcome = Outcome(task.run_id, FAILED, error=f"{type(exc).__name__}: {exc}")
            on_done(outcome)
            self._slots = max(1, sum(client.nthreads().values()))
