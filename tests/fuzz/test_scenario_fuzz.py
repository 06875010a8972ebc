"""Scenario fuzzing: valid scenarios mutated the way careless or hostile input looks (wrong
types, NaN and infinity, huge and negative sizes, unicode, path-like strings, duplicated and
unknown keys), run through the command line in process. Whatever the input:

* the exit status is 0, 1 or 2 (130 only where the fuzzer itself interrupted a run that was
  still going after its time budget: a long run is legitimate, a traceback is not);
* no traceback reaches the user;
* nothing is written outside the output folder;
* a results folder that looks complete (summary.json) exists only for a run that completed.

CI runs a bounded number of examples; ``NETFL_FUZZ_EXAMPLES=2000 pytest tests/fuzz`` runs a
longer campaign locally.
"""

from __future__ import annotations

import copy
import json
import os
import signal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from netfl.cli import app
from tests.conftest import TINY

EXAMPLES = int(os.environ.get("NETFL_FUZZ_EXAMPLES", "40"))
# CI replays the same examples every time; a local campaign (NETFL_FUZZ_EXAMPLES set)
# explores new ones on each run
EXPLORE = "NETFL_FUZZ_EXAMPLES" in os.environ
RUN_BUDGET_S = 4.0  # a run still going after this is interrupted (and must write nothing)
ROOT = Path(__file__).resolve().parents[2]

FAST = {"model": {"kind": "fake", "params": 5000},
        "data": {"dataset": "synthetic", "synthetic": {"max_samples": 40},
                 "partition": {"kind": "dirichlet", "alpha": 0.6}}}


def _short(path: str, **algorithm) -> dict:
    """A scenario of the repository with the fake model, generated data and a few rounds."""
    scenario = yaml.safe_load((ROOT / "scenarios" / path).read_text())
    scenario["algorithm"].update(algorithm)
    return {**scenario, **FAST, "output": {"plots": False}}


BASES = {
    "tiny": TINY,
    "quickstart": _short("quickstart.yaml", rounds=3),
    "iov": _short("iov/short.yaml", rounds=4, eval_every=2),
    "leo": _short("leo/short.yaml", rounds=4, eval_every=2),
}

PLAUSIBLE = st.sampled_from([0, 1, 2, 3, 7, 50, 1000, 0.5, 1e-9, 1e6, "1 ms", "0 s", "1 Gbps",
                             "1 kB", "fluid", "tcp", "star", "ring", "random", "iid"])
NASTY = st.one_of(
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -1, 0, -1e-9, 1e12, 10**30,
                     2**63, True, False, None, "", " ", "1e400 Mbps", "-5 ms", "NaN s",
                     "../../../escape", "/etc/passwd", "C:\\\\x", "~/x", "a/b", "x" * 300,
                     "naïve ☃ 名前", "\u202e", "\x00", [], {}, [1, [2, [3]]], {"kind": "?"}]),
    st.integers(-10**6, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)


def leaf_paths(node, prefix=()):
    """Every key path of a nested dict/list scenario (sections and leaves)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from leaf_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield (*prefix, i)
            yield from leaf_paths(value, (*prefix, i))


def set_path(node, path, value, delete=False):
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value


@st.composite
def mutated_scenario_text(draw):
    """YAML text of a base scenario with one to three mutations."""
    scenario = copy.deepcopy(BASES[draw(st.sampled_from(sorted(BASES)))])
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        paths = list(leaf_paths(scenario))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "unknown"]))
        try:
            if action == "delete":
                set_path(scenario, path, None, delete=True)
            elif action == "unknown":
                parent = path[:-1]
                target = scenario
                for key in parent:
                    target = target[key]
                if isinstance(target, dict):
                    target[draw(st.sampled_from(["bogus", "Rounds", "seed ", "ünknown"]))] = 1
            else:
                values = draw(st.sampled_from([PLAUSIBLE, PLAUSIBLE, NASTY]))
                set_path(scenario, path, draw(values))
        except (KeyError, IndexError, TypeError):
            pass
    text = yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True)
    if draw(st.sampled_from([False] * 9 + [True])) and "\nseed:" in text:
        text += "seed: 3\n"  # a key written twice
    return text


def _interrupt(_signum, frame):
    """What Ctrl-C does (the CLI must say so and write nothing). Not from inside a garbage
    collector callback or a finalizer, where Python would swallow it and the run go on: the
    timer repeats and tries again; once raised, it is disarmed."""
    while frame is not None:
        if frame.f_code.co_name in ("gc_callback", "__del__"):
            return
        frame = frame.f_back
    signal.setitimer(signal.ITIMER_REAL, 0)
    raise KeyboardInterrupt


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")} if folder.exists() else set()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not EXPLORE,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=mutated_scenario_text())
def test_any_mutated_scenario_ends_cleanly(tmp_path_factory, text):
    work = tmp_path_factory.mktemp("fuzz")
    scenario, out = work / "scenario.yaml", work / "out"
    scenario.write_text(text, encoding="utf-8")
    before_cwd = files_under(Path.cwd() / "results")
    cache = work / "cache"  # netfl's one documented place outside: $NETFL_CACHE_DIR
    os.environ["NETFL_CACHE_DIR"] = str(cache)
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, RUN_BUDGET_S, 0.25)  # repeats until it lands
    try:
        result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(out), "-q"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.environ.pop("NETFL_CACHE_DIR", None)
    output = result.output
    assert result.exit_code in (0, 1, 2, 130), (result.exit_code, output, text)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception), text)
    assert "Traceback" not in output, (output, text)
    # nothing outside the output folder (the scenario file aside)
    assert files_under(work) - files_under(out) - files_under(cache) - {out, scenario, cache} \
        == set(), text
    assert files_under(Path.cwd() / "results") == before_cwd, text
    summaries = list(out.rglob("summary.json"))
    if result.exit_code == 0:
        assert len(summaries) == 1, (output, text)
    elif result.exit_code == 1 and summaries:
        assert json.loads(summaries[0].read_text())["stop_reason"] == "diverged", text
    else:
        assert summaries == [], (result.exit_code, output, text)


@pytest.mark.parametrize("base", sorted(BASES))
def test_the_unmutated_bases_run(tmp_path, base):
    """The fuzzer's starting points are valid: a failure above is the mutation's."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(BASES[base]))
    result = CliRunner().invoke(app, ["run", str(scenario), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 0, result.output
