"""Sweeps: grid expansion and validation, executors that agree, resume, failures, dead workers."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from netfl.errors import NetflError, ScenarioError
from netfl.results.store import HOST
from netfl.runner import run_scenario
from netfl.sweep import DaskExecutor, LocalExecutor, load_sweep, read_index, run_sweep
from netfl.sweep.executors import _stop_stragglers
from netfl.sweep.parse import split_values
from netfl.sweep.runner import _lock
from netfl.sweep.task import DIE_ONCE_ENV
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[1]


def write_scenario(directory: Path, sweep: dict | None = None, **changes) -> Path:
    """TINY as a YAML file, with ``changes`` to its sections and an optional sweep: section."""
    data = copy.deepcopy(TINY)
    for key, value in changes.items():
        data[key] = value
    if sweep is not None:
        data["sweep"] = sweep
    path = directory / "tiny.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def comparable(summary: dict) -> dict:
    """A summary less what may differ between identical runs (host time)."""
    return {k: v for k, v in summary.items() if not k.startswith("host_time_s")}


def run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in (out / "runs").glob("*/*") if not p.name.startswith("."))


# ----------------------------------------------------------------------------- the grid


def test_split_values_keeps_brackets_braces_and_quotes_whole():
    assert split_values("1,2, 3") == ["1", "2", "3"]
    assert split_values("[64, 64],[32]") == ["[64, 64]", "[32]"]
    assert split_values("{kind: retransmit, probability: 0.05},'a,b'") == [
        "{kind: retransmit, probability: 0.05}", "'a,b'"]


def test_grid_expands_cases_by_grid_by_seeds_in_order(tmp_path):
    path = write_scenario(tmp_path, sweep={
        "cases": [{"algorithm.kind": "fedavg"},
                  {"algorithm.kind": "hier-fedavg", "algorithm.edge_rounds": 2}],
        "grid": {"links.access.rate": ["10 Mbps", "20 Mbps"]}})
    sweep = load_sweep(path, grid=["algorithm.local_steps=1,2,3"], seeds=2)
    assert len(sweep.points) == 2 * 2 * 3 * 2
    first, last = sweep.points[0].params, sweep.points[-1].params
    assert first == {"algorithm.kind": "fedavg", "links.access.rate": "10 Mbps",
                     "algorithm.local_steps": 1, "seed": 1}
    assert last == {"algorithm.kind": "hier-fedavg", "algorithm.edge_rounds": 2,
                    "links.access.rate": "20 Mbps", "algorithm.local_steps": 3, "seed": 2}
    # seeds vary fastest, then the last grid key; --seeds N starts at the file's seed (1)
    assert [p.params["seed"] for p in sweep.points[:4]] == [1, 2, 1, 2]
    assert [p.params["algorithm.local_steps"] for p in sweep.points[:4]] == [1, 1, 2, 2]
    # each point's scenario carries its values
    point = sweep.points[-1]
    assert point.scenario.algorithm.kind == "hier-fedavg"
    assert point.scenario.algorithm.edge_rounds == 2
    assert point.scenario.links.access.rate == 20e6
    assert point.scenario.seed == 2
    assert len({p.run_id for p in sweep.points}) == len(sweep.points)
    assert sweep.param_keys == ["algorithm.kind", "algorithm.edge_rounds",
                                "links.access.rate", "algorithm.local_steps", "seed"]


def test_command_line_grid_and_seeds_replace_the_files(tmp_path):
    path = write_scenario(tmp_path, sweep={"seeds": [5, 9],
                                           "grid": {"algorithm.local_steps": [1, 2]}})
    sweep = load_sweep(path)
    assert [(p.params["algorithm.local_steps"], p.params["seed"]) for p in sweep.points] == [
        (1, 5), (1, 9), (2, 5), (2, 9)]
    sweep = load_sweep(path, grid=["algorithm.local_steps=4"], seeds=1)
    assert [p.params for p in sweep.points] == [{"algorithm.local_steps": 4, "seed": 1}]


def test_no_grid_is_one_run_of_the_scenario(tmp_path):
    sweep = load_sweep(write_scenario(tmp_path), overrides=["seed=3"])
    assert [p.params for p in sweep.points] == [{"seed": 3}]


def test_run_ids_are_stable_and_change_with_the_resolved_scenario(tmp_path):
    path = write_scenario(tmp_path)
    ids = [p.run_id for p in load_sweep(path, grid=["algorithm.local_steps=1,2"]).points]
    assert ids == [p.run_id for p in load_sweep(path, grid=["algorithm.local_steps=1,2"]).points]
    assert ids[0].startswith("local_steps-1_s1-")
    # the same points in another interpreter with another hash seed
    code = ("from netfl.sweep import load_sweep; import sys; "
            "print(' '.join(p.run_id for p in load_sweep(sys.argv[1], "
            "grid=['algorithm.local_steps=1,2']).points))")
    other = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                           text=True, check=True, cwd=ROOT,
                           env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert other.stdout.split() == ids
    # editing a value of the file changes every id: old results are not reused
    changed = write_scenario(tmp_path, links={**TINY["links"],
                                              "core": {"rate": "50 Mbps", "delay": "20 ms"}})
    assert not set(ids) & {p.run_id for p in
                           load_sweep(changed, grid=["algorithm.local_steps=1,2"]).points}


def test_every_bad_point_is_reported_at_once_with_where_it_came_from(tmp_path):
    path = write_scenario(tmp_path, sweep={"grid": {"algorithm.lr": [0.1, -1]}})
    with pytest.raises(ScenarioError) as caught:
        load_sweep(path, grid=["algorithm.local_stepz=1,2", "algorithm.batch_size=8,0"])
    text = str(caught.value)
    lines = path.read_text().splitlines()
    lr_line = next(i for i, line in enumerate(lines, 1) if "algorithm.lr" in line)
    assert f"{path}:{lr_line}: algorithm.lr = -1" in text
    assert "--grid: algorithm.local_stepz" in text and "did you mean 'local_steps'" in text
    assert "--grid: algorithm.batch_size = 0" in text
    assert len(caught.value.problems) == 3  # each problem once, however many points share it


def test_bad_sweep_sections_and_arguments_are_clear_errors(tmp_path):
    cases = [
        ({"grid": {"algorithm.lr": 0.1}}, [], None, "sweep.grid.algorithm.lr = 0.1: a "
                                                    "non-empty list"),
        ({"sed": 3}, [], None, "sweep.sed = 3: unknown key; allowed keys: seeds, cases, grid"),
        ({"seeds": 0}, [], None, "sweep.seeds = 0: a count of seeds"),
        (None, ["seed=1,2"], 2, "swept by the grid and by seeds"),
        (None, ["algorithm.lr"], None, "a grid is KEY=V1,V2"),
        (None, ["algorithm.lr=0.1,,0.2"], None, "empty value"),
        ({"cases": [{"algorithm.lr": 0.1}]}, ["algorithm.lr=0.2"], None,
         "set by both sweep.cases and the grid"),
        (None, ["algorithm.local_steps=1,1"], None, "two points run the same scenario"),
    ]
    for section, grid, seeds, expected in cases:
        path = write_scenario(tmp_path, sweep=section)
        with pytest.raises(ScenarioError) as caught:
            load_sweep(path, grid=grid, seeds=seeds)
        assert expected in str(caught.value), (section, grid, str(caught.value))


# ----------------------------------------------------------------------------- running


def test_local_and_dask_runs_give_identical_results(tmp_path):
    path = write_scenario(tmp_path, sweep={
        "cases": [{"algorithm.kind": "fedavg", "algorithm.clients_per_round": 3},
                  {"algorithm.kind": "hier-fedavg"},
                  # asynchronous: arrivals at one instant taken in their events' order
                  {"algorithm.kind": "fedbuff", "algorithm.concurrency": 3,
                   "algorithm.buffer_size": 2}],
        "seeds": 2})
    sweep = load_sweep(path)
    local = run_sweep(sweep, tmp_path / "local", LocalExecutor(workers=2))
    dask = run_sweep(sweep, tmp_path / "dask", DaskExecutor(workers=2))
    assert local.counts["done"] == dask.counts["done"] == 6
    for point in sweep.points:
        rel = Path("runs") / point.scenario.name / point.run_id
        a = json.loads((tmp_path / "local" / rel / "summary.json").read_text())
        b = json.loads((tmp_path / "dask" / rel / "summary.json").read_text())
        assert comparable(a) == comparable(b)
        assert ((tmp_path / "local" / rel / "metrics.csv").read_bytes()
                == (tmp_path / "dask" / rel / "metrics.csv").read_bytes())
    # and both equal the same point run in this process
    point = sweep.points[0]
    direct = run_scenario(point.scenario, write=False).summary
    stored = json.loads((tmp_path / "dask" / "runs" / point.scenario.name / point.run_id /
                         "summary.json").read_text())
    assert comparable(json.loads(json.dumps(direct))) == comparable(stored)
    # the seeds differ from each other (the sweep did not run one seed twice)
    finals = {r["final_accuracy"] for r in local.rows}
    assert len(finals) == 6
    index = read_index(tmp_path / "dask")
    assert list(index["status"]) == ["done"] * 6
    assert list(index["run_id"]) == [p.run_id for p in sweep.points]


def test_index_lists_every_run_with_parameters_and_summary(tmp_path):
    path = write_scenario(tmp_path)
    sweep = load_sweep(path, grid=["algorithm.local_steps=1,2"], seeds=2)
    result = run_sweep(sweep, tmp_path / "out", LocalExecutor(workers=2))
    parquet = pd.read_parquet(tmp_path / "out" / "index.parquet")
    csv = pd.read_csv(tmp_path / "out" / "index.csv")
    assert len(parquet) == len(csv) == 4
    assert list(parquet["algorithm.local_steps"]) == [1, 1, 2, 2]
    assert list(parquet["seed"]) == [1, 2, 1, 2]
    assert (parquet["status"] == "done").all()
    for row, stored in zip(result.rows, parquet.to_dict("records"), strict=True):
        summary = json.loads((tmp_path / "out" / row["path"] / "summary.json").read_text())
        assert stored["final_accuracy"] == summary["final_accuracy"]
        assert stored["bytes_by_tag.client->edge"] == summary["bytes_by_tag"]["client->edge"]
    assert list(csv["final_accuracy"]) == pytest.approx(list(parquet["final_accuracy"]))
    definition = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert definition["params"] == ["algorithm.local_steps", "seed"]
    assert [p["run_id"] for p in definition["points"]] == [p.run_id for p in sweep.points]
    assert not list((tmp_path / "out").glob(".index*"))  # no temporary file left behind


def test_seed_ranks_count_each_points_seeds_in_order(tmp_path):
    from netfl.sweep.runner import seed_ranks

    sweep = load_sweep(write_scenario(tmp_path), grid=["algorithm.local_steps=1,2"], seeds=3)
    assert [p.params["seed"] for p in sweep.points] == [1, 2, 3, 1, 2, 3]
    assert seed_ranks(sweep.points) == [0, 1, 2, 0, 1, 2]


def test_runs_go_seed_by_seed_across_the_sweeps_of_a_batch(tmp_path):
    """Every point's first seed starts before any point's second, across all the sweeps run
    together, so a batch stopped part-way leaves every point at one seed."""
    from netfl.sweep.runner import Observer, run_sweeps

    first = load_sweep(write_scenario(tmp_path), grid=["algorithm.local_steps=1,2"], seeds=2)
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    second = load_sweep(write_scenario(other_dir), grid=["algorithm.local_steps=3"], seeds=2)
    seeds = {p.run_id: p.params["seed"] for p in (*first.points, *second.points)}
    started: list[str] = []

    class Order(Observer):
        def run_started(self, run_id: str) -> None:
            started.append(run_id)

    run_sweeps([(first, tmp_path / "a"), (second, tmp_path / "b")], LocalExecutor(workers=1),
               Order())
    assert [seeds[r] for r in started] == [1, 1, 1, 2, 2, 2]


def test_a_failing_run_is_reported_and_the_others_finish(tmp_path):
    # 1 kB of client memory passes the schema but cannot hold the model: that run fails
    path = write_scenario(tmp_path)
    sweep = load_sweep(path, grid=["devices.clients.memory=1 kB,4 GB", "algorithm.rounds=2,3"])
    result = run_sweep(sweep, tmp_path / "out", LocalExecutor(workers=2))
    status = {tuple(r[k] for k in ("devices.clients.memory", "algorithm.rounds")): r["status"]
              for r in result.rows}
    assert status == {("1 kB", 2): "failed", ("1 kB", 3): "failed",
                      ("4 GB", 2): "done", ("4 GB", 3): "done"}
    assert len(run_dirs(tmp_path / "out")) == 2
    for row in result.failed:
        assert "devices.clients.memory" in row["error"]
        log = (tmp_path / "out" / row["log"]).read_text()
        assert "Traceback" in log and "ScenarioError" in log
    index = read_index(tmp_path / "out")
    assert sorted(index["status"]) == ["done", "done", "failed", "failed"]


def test_a_dead_worker_has_its_run_retried_and_nothing_is_double_counted(tmp_path,
                                                                         monkeypatch):
    marker = tmp_path / "die-once"
    marker.touch()
    monkeypatch.setenv(DIE_ONCE_ENV, str(marker))
    sweep = load_sweep(write_scenario(tmp_path), grid=["algorithm.local_steps=1,2,3"], seeds=2)
    result = run_sweep(sweep, tmp_path / "out", LocalExecutor(workers=2, retries=1))
    assert not marker.exists()  # a worker did die
    assert result.counts["done"] == 6 and not result.failed
    assert [d.name for d in run_dirs(tmp_path / "out")] == sorted(p.run_id
                                                                  for p in sweep.points)
    logs = [(tmp_path / "out" / r["log"]).read_text() for r in result.rows]
    assert sum("worker process died during attempt 1; retrying" in log for log in logs) >= 1
    index = read_index(tmp_path / "out")
    assert len(index) == 6 and index["run_id"].is_unique


def test_a_broken_pools_late_worker_is_stopped():
    """CPython can start a worker while a pool breaks (submit races terminate_broken) and then
    wait for it forever on shutdown; the executor stops such stragglers itself."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    pool.submit(time.sleep, 0).result(timeout=60)  # one idle worker, as the late one was
    (worker,) = pool._processes.values()
    _stop_stragglers(pool)
    worker.join(timeout=10)
    assert not worker.is_alive()
    pool.shutdown(wait=True)


def test_a_run_whose_worker_dies_past_its_retries_is_lost_and_rerun_later(tmp_path,
                                                                          monkeypatch):
    marker = tmp_path / "die-once"
    marker.touch()
    monkeypatch.setenv(DIE_ONCE_ENV, str(marker))
    sweep = load_sweep(write_scenario(tmp_path), grid=["algorithm.local_steps=1,2,3"])
    out = tmp_path / "out"
    result = run_sweep(sweep, out, LocalExecutor(workers=1, retries=0))
    assert result.counts == {"done": 2, "failed": 0, "lost": 1, "pending": 0}
    lost = result.failed[0]
    assert lost["status"] == "lost" and "worker process died once" in lost["error"]
    assert "no retries left" in (out / lost["log"]).read_text()
    assert len(run_dirs(out)) == 2
    again = run_sweep(sweep, out, LocalExecutor(workers=1, retries=0))
    assert again.reused == 2 and again.counts["done"] == 3


def test_resume_after_killing_a_sweep_midway(tmp_path):
    path = write_scenario(tmp_path, algorithm={**TINY["algorithm"], "rounds": 300})
    out = tmp_path / "out"
    command = [sys.executable, "-m", "netfl", "sweep", str(path), "--out", str(out),
               "--seeds", "6", "--workers", "1", "--quiet"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while len(list(out.glob("runs/*/*/summary.json"))) < 2:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, with no clean-up
    finally:
        proc.wait()
    finished = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("runs/*/*/summary.json")}
    assert 2 <= len(finished) < 6

    sweep = load_sweep(path, seeds=6)
    result = run_sweep(sweep, out, LocalExecutor(workers=2))
    assert result.reused == len(finished)
    assert result.counts["done"] == 6
    after = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("runs/*/*/summary.json")}
    assert {k: after[k] for k in finished} == finished  # finished runs were not redone
    assert sorted(after) == sorted(p.run_id for p in sweep.points)  # one folder per run
    for run_id in finished:
        assert (out / "logs" / f"{run_id}.log").read_text().count(": start #") == 1
    assert list(read_index(out)["status"]) == ["done"] * 6


def test_one_sweep_at_a_time_per_folder(tmp_path):
    sweep = load_sweep(write_scenario(tmp_path))
    (tmp_path / "out" / "logs").mkdir(parents=True)
    with _lock(tmp_path / "out"), pytest.raises(NetflError, match="another netfl sweep"):
        run_sweep(sweep, tmp_path / "out", LocalExecutor(workers=1))


def test_executor_arguments_are_checked():
    with pytest.raises(NetflError, match="--workers must be 1 or more"):
        LocalExecutor(workers=0)
    with pytest.raises(NetflError, match="with --address the cluster's own workers"):
        DaskExecutor(address="tcp://127.0.0.1:1", workers=2)


class _ElsewhereExecutor:
    """Stands in for a remote cluster whose workers write to their own disks: every run
    reports done, and nothing appears in the sweep folder here."""

    def __init__(self):
        self.tasks = []

    def describe(self) -> str:
        return "elsewhere"

    def open(self) -> None: ...
    def close(self) -> None: ...

    def run(self, tasks, on_start, on_done) -> None:
        from netfl.sweep.task import DONE, Outcome

        self.tasks += tasks
        for task in tasks:
            on_done(Outcome(task.run_id, DONE, {"final_accuracy": 0.5}))


def test_runs_get_absolute_folders_and_a_done_run_missing_here_is_failed(tmp_path,
                                                                        monkeypatch):
    sweep = load_sweep(write_scenario(tmp_path), grid=["algorithm.local_steps=1,2"])
    monkeypatch.chdir(tmp_path)
    executor = _ElsewhereExecutor()
    result = run_sweep(sweep, Path("out"), executor)
    assert all(Path(t.runs_dir).is_absolute() and Path(t.log_path).is_absolute()
               for t in executor.tasks)
    assert result.counts["failed"] == 2
    assert all("shared at the same path" in r["error"] for r in result.rows)
    assert set(read_index(tmp_path / "out")["status"]) == {"failed"}


def _running(pid: int) -> bool:
    """Whether a process runs (a zombie, waiting to be reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_sweep_stops_its_workers_and_writes_its_index(tmp_path, sig):
    # three short runs, then three that cannot end before the signal: with six short runs the
    # sweep could finish (exit 0) while a loaded machine kept this test from sending it
    path = write_scenario(tmp_path, sweep={"grid": {"algorithm.rounds": [300, 1_000_000]},
                                           "seeds": 3})
    out = tmp_path / "out"
    command = [sys.executable, "-m", "netfl", "sweep", str(path), "--out", str(out),
               "--workers", "2", "--quiet"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while len(list(out.glob("runs/*/*/summary.json"))) < 1 or len(
                list(out.glob("logs/*.log"))) < 3:
            assert proc.poll() is None, "the sweep ended before it could be stopped"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(sig)  # the sweep's own process only, as a service manager would
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    pids = {int(line.split(" on ")[1].split(",")[0].rsplit(":", 1)[1])
            for log in out.glob("logs/*.log") for line in log.read_text().splitlines()
            if ": start #" in line}
    assert pids
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _running(pid)], "workers outlived their sweep"
    index = read_index(out)
    done = {p.parent.name for p in out.glob("runs/*/*/summary.json")}
    assert set(index.loc[index["status"] == "done", "run_id"]) == done
    assert len(index) == 6


def test_only_the_run_of_the_worker_that_died_is_blamed(tmp_path, monkeypatch):
    marker = tmp_path / "die-once"
    marker.touch()
    monkeypatch.setenv(DIE_ONCE_ENV, str(marker))
    sweep = load_sweep(write_scenario(tmp_path, algorithm={**TINY["algorithm"], "rounds": 40}),
                       grid=["algorithm.local_steps=1,2,3,4"])
    result = run_sweep(sweep, tmp_path / "out", LocalExecutor(workers=2, retries=0))
    assert not marker.exists()
    assert result.counts == {"done": 3, "failed": 0, "lost": 1, "pending": 0}


def test_a_run_that_finished_before_its_worker_died_counts_done(tmp_path):
    from netfl.sweep.task import RunTask

    sweep = load_sweep(write_scenario(tmp_path))
    out = tmp_path / "out"
    run_sweep(sweep, out, LocalExecutor(workers=1))
    marker = tmp_path / "die-once"
    marker.touch()
    point = sweep.points[0]
    task = RunTask(point.run_id, point.scenario, str(out / "runs"),
                   str(out / "logs" / f"{point.run_id}.log"), die_once=str(marker))
    outcomes = []
    LocalExecutor(workers=1, retries=0).run([task], lambda rid: None, outcomes.append)
    assert not marker.exists()  # its worker died, after the run's folder was complete
    assert [(o.run_id, o.status) for o in outcomes] == [(point.run_id, "done")]
    assert outcomes[0].summary["final_accuracy"] is not None


def test_run_ids_do_not_depend_on_where_the_checkout_is(tmp_path):
    ids = {}
    for where in ("a", "b/deeper"):
        folder = tmp_path / where
        folder.mkdir(parents=True)
        (folder / "assign.csv").write_text("client,edge_server\n0,0\n1,0\n2,0\n3,1\n4,1\n5,1\n")
        world = {**TINY["world"], "assignment": {"kind": "file", "path": "assign.csv"}}
        path = write_scenario(folder, world=world, data={**TINY["data"], "root": "data"})
        ids[where] = [p.run_id for p in load_sweep(path, grid=["algorithm.rounds=1,2"]).points]
    assert ids["a"] == ids["b/deeper"]
    # the content of a referenced file counts: other clients on other edge servers
    (tmp_path / "a" / "assign.csv").write_text("client,edge_server\n0,0\n1,1\n2,0\n3,1\n4,0\n5,1\n")
    changed = [p.run_id for p in load_sweep(tmp_path / "a" / "tiny.yaml",
                                            grid=["algorithm.rounds=1,2"]).points]
    assert not set(changed) & set(ids["a"])


def test_a_bad_sweep_section_does_not_hide_the_problems_of_the_points(tmp_path):
    path = write_scenario(tmp_path, sweep={"sed": 3, "grid": {"algorithm.lr": [0.1, -1]}})
    with pytest.raises(ScenarioError) as caught:
        load_sweep(path, grid=["algorithm.batch_size=8,0"], overrides=["algorithm.roundz=2"])
    text = str(caught.value)
    assert "sweep.sed = 3: unknown key" in text
    assert "algorithm.lr = -1" in text and "--grid: algorithm.batch_size = 0" in text
    assert text.count("roundz") == 1, text  # the --set problem once, not once per point


def test_resume_removes_temporary_folders_of_dead_processes(tmp_path):
    sweep = load_sweep(write_scenario(tmp_path))
    out = tmp_path / "out"
    parent = out / "runs" / sweep.name
    parent.mkdir(parents=True)
    dead = parent / f".{sweep.points[0].run_id}.tmp-{HOST}-999999999"  # above any pid Linux gives
    alive = parent / f".other.tmp-{HOST}-{os.getpid()}"
    elsewhere = parent / ".third.tmp-another-host-999999999"  # a Dask worker's, elsewhere
    for folder in (dead, alive, elsewhere):
        folder.mkdir()
        (folder / "metrics.csv").write_text("half written")
    run_sweep(sweep, out, LocalExecutor(workers=1))
    assert not dead.exists() and alive.exists() and elsewhere.exists()


def test_a_truncated_summary_is_an_incomplete_run_that_reruns(tmp_path):
    """A finished run whose summary.json was cut short (a full disk, a copy interrupted)
    crashed the resume: it is incomplete, set aside and run again."""
    sweep = load_sweep(write_scenario(tmp_path), seeds=2)
    out = tmp_path / "out"
    run_sweep(sweep, out, LocalExecutor(workers=1))
    broken = out / "runs" / sweep.name / sweep.points[0].run_id
    text = (broken / "summary.json").read_text()
    (broken / "summary.json").write_text(text[: len(text) // 2])
    result = run_sweep(sweep, out, LocalExecutor(workers=1))
    assert result.reused == 1 and result.counts["done"] == 2
    rerun = json.loads((broken / "summary.json").read_text())
    assert rerun["seed"] == sweep.points[0].scenario.seed
    assert (broken.parent / (broken.name + ".incomplete")).is_dir()


def test_a_sweep_of_absurd_size_is_refused_before_expanding(tmp_path):
    """sweep --seeds 100000000 --dry-run expanded a hundred million points."""
    path = write_scenario(tmp_path)
    with pytest.raises(ScenarioError, match="a count of seeds"):
        load_sweep(path, seeds=100_000_000)
    values = ",".join(str(k) for k in range(1, 1001))
    with pytest.raises(ScenarioError, match="200,000 runs"):
        load_sweep(path, grid=[f"algorithm.local_steps={values}"], seeds=200)


def test_a_sweep_with_a_diverged_run_says_so_and_exits_1(tmp_path):
    from typer.testing import CliRunner

    from netfl.cli import app

    path = write_scenario(tmp_path, model={"kind": "mlp", "hidden": [8]},
                          algorithm={**TINY["algorithm"], "rounds": 2})
    result = CliRunner().invoke(app, ["sweep", str(path), "--grid", "algorithm.lr=0.1,1e30",
                                      "--workers", "1", "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 1 and "diverged" in result.output and "1 run(s)" in result.output
    index = read_index(tmp_path / "out")
    assert sorted(index["stop_reason"]) == ["diverged", "rounds"]


def test_fields_added_at_their_defaults_keep_the_run_ids_of_existing_sweeps():
    """output.timeline, stop.tolerate_divergence, data.path, links.closed_form and a fake model's
    train_flops_per_sample came later, and the default of
    stop.target_screen_samples changed (2000 -> None): at their defaults they leave the ids
    (and so the resume of sweeps made before them) as they were."""
    from netfl.scenario import load_scenario
    from netfl.sweep.grid import run_id

    assert run_id({"lr": 0.1}, load_scenario(TINY), base_dir=Path.cwd()) == "lr-0.1-34cc9d97"


# ----------------------------------------------------------------------------- labels and ids


def test_a_case_label_names_its_runs_and_a_whole_section_reads_as_its_kind(tmp_path):
    algorithm = {**TINY["algorithm"], "kind": "fedavg", "batch_size": 32}
    path = write_scenario(tmp_path, sweep={"seeds": 1, "cases": [
        {"label": "flat avg", "algorithm": algorithm},
        {"algorithm": {**algorithm, "kind": "hier-fedavg"}}]})
    sweep = load_sweep(path)
    first, second = sweep.points
    assert first.label == "flat avg" and second.label is None
    assert "label" not in first.params  # not a scenario field: not hashed, not a parameter
    assert first.run_id.startswith("flat-avg_s1-")
    assert second.run_id.startswith("hier-fedavg_s1-")  # not algorithm-batchsize32...
    assert sweep.definition()["cases"][0]["label"] == "flat avg"
    # the label leaves the hash alone: the same point without it keeps its hash
    unlabelled = load_sweep(write_scenario(tmp_path, sweep={"seeds": 1, "cases": [
        {"algorithm": algorithm}]})).points[0]
    assert unlabelled.run_id.rsplit("-", 1)[1] == first.run_id.rsplit("-", 1)[1]


def test_bad_labels_are_reported(tmp_path):
    path = write_scenario(tmp_path, sweep={"cases": [
        {"label": "", "algorithm.rounds": 1}, {"label": "a", "algorithm.rounds": 2},
        {"label": "a", "algorithm.rounds": 3}, {"label": "alone"}]})
    with pytest.raises(ScenarioError) as info:
        load_sweep(path)
    text = str(info.value)
    assert "a case's label is a non-empty text" in text
    assert "given to two cases" in text
    assert "at least one override besides its label" in text


def test_a_run_made_under_an_earlier_slug_is_resumed_by_its_hash(tmp_path):
    """Sweeps made before readable ids (``algorithm-batchsize32evale_s1-<hash>``) resume: the
    hash, not the slug, finds the run."""
    from netfl.sweep.runner import run_dir

    algorithm = {**TINY["algorithm"], "rounds": 1}
    path = write_scenario(tmp_path, sweep={"seeds": 2, "cases": [{"algorithm": algorithm}]})
    sweep = load_sweep(path)
    out = tmp_path / "out"
    first = run_sweep(sweep, out, LocalExecutor(workers=1))
    assert first.counts["done"] == 2
    for point in sweep.points:  # as an older netfl named them
        new = out / "runs" / point.scenario.name / point.run_id
        new.rename(new.with_name(f"algorithm-batchsize16roun_s{point.params['seed']}-"
                                 f"{point.run_id.rsplit('-', 1)[1]}"))
    again = run_sweep(load_sweep(path), out, LocalExecutor(workers=1))
    assert again.counts["done"] == 2 and again.reused == 2
    assert len(run_dirs(out)) == 2  # nothing ran again
    assert all(run_dir(out, p).name.startswith("algorithm-batchsize16roun_")
               for p in sweep.points)
    # a report over the sweep finds the runs where they are
    from netfl.results.report import collect

    assert len(collect([out]).runs) == 2


def test_a_run_two_sweeps_of_one_call_share_is_run_once_and_copied(tmp_path):
    # before: the second sweep ran it again, after every other run of the call, on one worker
    # (Group-FEL's Table 1 cell at alpha = 0.1, MaxCoV = 0.5 is its baselines' Group-FEL run)
    from netfl.sweep.runner import Observer, run_sweeps

    folder = tmp_path / "a"
    folder.mkdir()
    scenario = write_scenario(folder)
    sweep = load_sweep(scenario, ["algorithm.local_steps=1,2"])
    twin = load_sweep(scenario, ["algorithm.local_steps=2,3"])  # local_steps=2: the same id
    started = []

    class Started(Observer):
        def run_started(self, run_id: str) -> None:
            started.append(run_id)

    first, second = run_sweeps([(sweep, tmp_path / "s"), (twin, tmp_path / "t")],
                               LocalExecutor(2), Started())
    shared = sweep.points[1].run_id
    assert twin.points[0].run_id == shared and started.count(shared) == 1
    assert len(started) == 3 and second.reused == 1
    assert list(read_index(tmp_path / "t")["status"]) == ["done", "done"]
    ours, theirs = (read_index(out).set_index("run_id").loc[shared, "path"]
                    for out in (tmp_path / "s", tmp_path / "t"))
    assert ((tmp_path / "t" / theirs / "summary.json").read_text()
            == (tmp_path / "s" / ours / "summary.json").read_text())
    assert "copied from" in (tmp_path / "t" / "logs" / f"{shared}.log").read_text()


def test_several_sweeps_on_one_executor_write_what_each_would_alone(tmp_path):
    """run_sweeps shares one executor between sweeps (no idle worker at one sweep's tail);
    each folder ends as run_sweep writes it; sweeps whose run ids clash run in turn."""
    from netfl.sweep.runner import run_sweeps

    first = tmp_path / "a"
    first.mkdir()
    second = tmp_path / "b"
    second.mkdir()
    sweep_a = load_sweep(write_scenario(first), ["algorithm.local_steps=1,2"])
    sweep_b = load_sweep(write_scenario(second), ["algorithm.rounds=2,3"])
    clash = load_sweep(write_scenario(first), ["algorithm.local_steps=1,2"])  # a's ids again
    together = run_sweeps([(sweep_a, tmp_path / "ta"), (sweep_b, tmp_path / "tb"),
                           (clash, tmp_path / "tc")], LocalExecutor(2))
    assert [len(r.rows) for r in together] == [2, 2, 2]
    run_sweep(sweep_b, tmp_path / "alone", LocalExecutor(1))
    index, reference = read_index(tmp_path / "tb"), read_index(tmp_path / "alone")
    assert list(index["run_id"]) == list(reference["run_id"])
    for run in index["path"]:
        ours = json.loads((tmp_path / "tb" / run / "summary.json").read_text())
        theirs = json.loads((tmp_path / "alone" / run / "summary.json").read_text())
        assert comparable(ours) == comparable(theirs)
    assert list(read_index(tmp_path / "tc")["status"]) == ["done", "done"]
    again = run_sweeps([(sweep_a, tmp_path / "ta"), (sweep_b, tmp_path / "tb")],
                       LocalExecutor(2))
    assert [r.reused for r in again] == [2, 2]


def test_a_set_that_switches_the_algorithms_kind_keeps_the_files_keys_in_a_sweep(tmp_path):
    """A reproduction arm's ``algorithm={kind: fedbuff, ...}`` once failed in the sweep path
    ("unknown key edge_rounds") where ``netfl run --set`` kept the file's shared keys and
    dropped, with a notice, those the new kind does not take."""
    from netfl.scenario.overrides import ScenarioNotice

    path = write_scenario(tmp_path, sweep={"seeds": 1},
                          algorithm={**TINY["algorithm"], "edge_rounds": 3, "local_steps": 4})
    with pytest.warns(ScenarioNotice, match="edge_rounds"):
        sweep = load_sweep(path, overrides=["algorithm={kind: fedbuff, concurrency: 2}"])
    algorithm = sweep.points[0].scenario.algorithm
    assert (algorithm.kind, algorithm.concurrency, algorithm.local_steps) == ("fedbuff", 2, 4)


# ids of runs made before fields were added to the schema: a field added at a default that
# leaves results alone must not move them (netfl/sweep/id_compat.py), or every resumed study
# reruns its runs (a leo study once did, when two LEO fields were added)
PINNED_IDS = {"scenarios/leo/short.yaml": "s1-b5dee0f7", "scenarios/iov/short.yaml": "s1-fa087ccb",
              "scenarios/quickstart.yaml": "s1-9eb85a01"}


@pytest.mark.parametrize("path", sorted(PINNED_IDS))
def test_the_ids_of_existing_runs_stay(path):
    from netfl.scenario import load_scenario
    from netfl.sweep.grid import run_id

    root = Path(__file__).resolve().parents[1]
    scenario = load_scenario(root / path, ["seed=1"])
    assert run_id({"seed": 1}, scenario) == PINNED_IDS[path]
