"""Fault injection: signals during a run and during its write, a failing disk, debris of killed
runs (sweeps: tests/test_sweep.py; a full disk: tests/results/test_store.py). What each fault
may leave is documented in docs/reliability.md."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import netfl
from netfl.cli import app
from netfl.results import store

ROOT = Path(__file__).resolve().parents[1]


def endless(tiny) -> dict:
    tiny["algorithm"]["rounds"] = 10**8  # fake model: runs until stopped
    return tiny


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_a_run_ends_it_cleanly_with_nothing_written(tiny, tmp_path, sig):
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(endless(tiny)))
    out = tmp_path / "out"
    # SIGINT as a terminal gives it: a test run started in the background (``cmd &``, nohup)
    # hands its children SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-m", "netfl", "run", str(scenario), "--out",
                             str(out), "-q"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (out / "tiny").is_dir():  # made when the output is checked, just before the run
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # into the run itself: a signal while the data set's libraries still import (sklearn's C
    # extensions) surfaces as their ImportError, not as an interrupt, on a busy machine
    time.sleep(2.0)
    # as a user would: again if the first landed where Python swallows it (a finalizer or a
    # garbage-collector callback, which the run's generators can be in)
    for _ in range(10):
        proc.send_signal(sig)
        try:
            _, stderr = proc.communicate(timeout=5)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        proc.kill()
        _, stderr = proc.communicate()
        pytest.fail(f"the run did not stop on ten signals; its stderr:\n{stderr[-3000:]}")
    # After an interrupt Python may end the process by SIGINT itself (where one landed in a
    # finalizer first), so that a calling shell sees an interrupt: status 130 there either way
    assert proc.returncode in (130, -signal.SIGINT), stderr
    assert "interrupted: no results were written" in stderr and "Traceback" not in stderr
    left = sorted(str(p) for p in out.rglob("*")) if out.exists() else []
    assert not out.exists(), left  # the folders the run made are taken back


def test_an_interrupt_while_writing_leaves_nothing_behind(tiny, tmp_path, monkeypatch):
    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        netfl.run(tiny, out_dir=tmp_path / "out", run_id="r")
    assert not (tmp_path / "out").exists()


def test_a_run_killed_while_writing_leaves_debris_the_next_run_clears(tiny, tmp_path):
    """SIGKILL cannot be caught: the hidden temporary folder stays, never mistaken for a
    result, and the next run in that folder removes it."""
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(tiny))
    out = tmp_path / "out"
    # a child that stops itself inside write_run, after the first file, and is then killed
    code = ("import os, signal, sys, pandas as pd, netfl\n"
            "real = pd.DataFrame.to_parquet\n"
            "def stop(*a, **k):\n"
            "    real(*a, **k); os.kill(os.getpid(), signal.SIGKILL)\n"
            "pd.DataFrame.to_parquet = stop\n"
            f"netfl.run({str(scenario)!r}, out_dir={str(out)!r}, run_id='r')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL
    [debris] = (out / "tiny").iterdir()
    assert debris.name.startswith(".r.tmp-") and not store.is_complete(debris)
    netfl.run(tiny, out_dir=out, run_id="r")
    assert sorted(p.name for p in (out / "tiny").iterdir()) == ["r"]
    assert os.path.isfile(out / "tiny" / "r" / "summary.json")


def test_an_interrupt_inside_a_c_extensions_import_is_still_an_interrupt(tiny, tmp_path,
                                                                         monkeypatch):
    """A signal while sklearn's C extensions initialise surfaces as their ImportError
    ("initialization failed"), caused by the KeyboardInterrupt: the run ends as interrupted."""
    import netfl.runner

    def interrupted_import(*_args, **_kwargs):
        try:
            raise KeyboardInterrupt("signal SIGHUP")
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    monkeypatch.setattr(netfl.runner, "run_scenario", interrupted_import)
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(tiny))
    result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 130 and "interrupted: no results were written" in result.output
