"""Digests of runs' results, the guard that a change meant to change no result (a faster event
loop, a closed form for a cohort) changes none: each scenario's summary.json less its host
times, and its metrics, rounds, links and participation tables, hashed and compared with the
digests committed in ``tests/data/result_digests.json``.

Two sets, both in that file:

* ``latency``: every scenario of ``scenarios/`` (short, paper and the rest) with the fake model
  at the size of the Fed-CHS paper's MLP (FAKE_PARAMS, FAKE_FLOPS; a Fashion-MNIST MLP
  scenario's transfers and jobs keep their sizes) and simulated time cut at
  ``LATENCY_SIM_TIME``: the network, the devices and the algorithms' events, in seconds (the
  default test command);
* ``trained``: every ``short-*.yaml`` and the quickstart as written, real training included
  (minutes; under the ``long`` marker), each in a fresh interpreter with
  ``NETFL_FLOAT_KERNELS=portable``: torch's float kernels pinned to AVX2, so that the digests
  hold on every x86-64 machine (each machine's own kernels sum floats in their own order, and
  the trained numbers differ in the last bits; netfl.float_kernels says more).

Regenerate after a change that is meant to change results (and say so in the commit):

    python -m tests.result_digests [--set latency|trained|all] [--only chfl/short-cfl.yaml ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIGESTS = ROOT / "tests" / "data" / "result_digests.json"
TABLES = ("metrics.csv", "rounds.csv", "links.csv", "participation.csv")
# host-dependent or version fields of summary.json: everything else is a result
HOST_FIELDS = ("host_time_s", "host_time_s_by_part", "netfl_version", "host_float_kernels")
LATENCY_SIM_TIME = "20 min"
FAKE_PARAMS, FAKE_FLOPS = 199_210, 397_600  # the 784-200-200-10 MLP
# scenarios that are not runs on their own (sweep grids, reproduction plans)
NOT_SCENARIOS = ("sweeps", "reproduction")


def scenario_files() -> list[Path]:
    """Every runnable scenario file under scenarios/, in a stable order."""
    return sorted(p for p in (ROOT / "scenarios").rglob("*.yaml")
                  if not set(p.relative_to(ROOT / "scenarios").parts[:-1]) & set(NOT_SCENARIOS))


def trained_files() -> list[Path]:
    return [p for p in scenario_files() if p.name.startswith("short-")] + [
        ROOT / "scenarios" / "quickstart.yaml"]


def run_digest(path: Path, overrides: list[str]) -> dict[str, str]:
    """Run ``path`` with ``overrides`` into a temporary folder; the digest of each result file."""
    from netfl.runner import run_scenario

    with tempfile.TemporaryDirectory() as out:
        result = run_scenario(path, overrides=["output.plots=false", *overrides], out_dir=out,
                              run_id="digest")
        folder = Path(result.path)
        summary = json.loads((folder / "summary.json").read_text())
        for field in HOST_FIELDS:
            summary.pop(field, None)
        digests = {"summary.json": _sha(json.dumps(summary, sort_keys=True).encode())}
        for name in TABLES:
            if (folder / name).is_file():
                digests[name] = _sha((folder / name).read_bytes())
        return digests


# The child interpreter of a digest run searches the same Fashion-MNIST folders as the test that
# started it: tests/conftest.py points an unmarked test's search at a folder that does not exist,
# and a child that searched the real ones would hide a missing mark on machines with the data.
DATA_FOLDERS_ENV = "NETFL_TESTS_FASHION_MNIST_FOLDERS"


def _data_folders_env() -> dict[str, str]:
    from netfl.learn import datasets

    return {DATA_FOLDERS_ENV: json.dumps([str(datasets.DEBIAN_FASHION_MNIST),
                                          str(datasets.DEFAULT_CACHE_DIR)])}


def _search_the_parents_data_folders() -> None:
    if DATA_FOLDERS_ENV in os.environ:
        from netfl.learn import datasets

        debian, cache = json.loads(os.environ[DATA_FOLDERS_ENV])
        datasets.DEBIAN_FASHION_MNIST, datasets.DEFAULT_CACHE_DIR = Path(debian), Path(cache)


def _digest_in_child(flag: str, path: Path, env: dict[str, str], why: str) -> dict[str, str]:
    """``python -m tests.result_digests FLAG path`` in a fresh interpreter with ``env`` (plus
    the data folders this process searches); its digests, or a RuntimeError with its stderr."""
    done = subprocess.run([sys.executable, "-m", "tests.result_digests", flag, key(path)],
                          cwd=ROOT, env={**env, **_data_folders_env()}, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{key(path)}: the digest run{why} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def run_trained_digest(path: Path) -> dict[str, str]:
    """:func:`run_digest` of ``path`` as written, in a fresh interpreter whose torch trains with
    the portable kernels (they are chosen once per process, before torch's first operation)."""
    from netfl.float_kernels import fresh_environment

    return _digest_in_child("--digest", path, fresh_environment("portable"), "")


def run_latency_digest_under(path: Path, env: dict[str, str]) -> dict[str, str]:
    """:func:`run_digest` of ``path``'s latency run in a fresh interpreter whose environment
    adds ``env`` (such as ``OPENBLAS_CORETYPE``, which BLAS reads once, when it loads)."""
    return _digest_in_child("--latency-digest", path, {**os.environ, **env}, f" under {env}")


def latency_overrides() -> list[str]:
    """The fake model in place of the scenario's, the size of the Fed-CHS paper's MLP (every
    transfer and job of a Fashion-MNIST MLP scenario keeps its size), and the run cut at
    LATENCY_SIM_TIME of simulated time."""
    return [f"model={{kind: fake, params: {FAKE_PARAMS}, flops_per_sample: {FAKE_FLOPS}}}",
            f"stop.max_sim_time={LATENCY_SIM_TIME}"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def key(path: Path) -> str:
    return str(path.relative_to(ROOT / "scenarios"))


def compute(which: str, only: list[str] | None = None) -> dict[str, dict[str, str]]:
    """The digests of the set ``which``; of its scenarios named in ``only`` (keys such as
    ``chfl/short-cfl.yaml``) where given."""
    from rich.progress import track

    files = scenario_files() if which == "latency" else trained_files()
    if only:
        files = [f for f in files if key(f) in only]
    out = {}
    for path in track(files, description=f"{which} digests"):
        out[key(path)] = (run_digest(path, latency_overrides()) if which == "latency"
                          else run_trained_digest(path))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("latency", "trained", "all"), default="all")
    parser.add_argument("--only", nargs="+", metavar="SCENARIO",
                        help="regenerate only these (e.g. chfl/short-cfl.yaml), keep the rest")
    parser.add_argument("--digest", metavar="SCENARIO",
                        help="print one scenario's trained digests as JSON (run_trained_digest)")
    parser.add_argument("--latency-digest", metavar="SCENARIO",
                        help="print one scenario's latency digests as JSON")
    args = parser.parse_args()
    _search_the_parents_data_folders()
    if args.digest:
        print(json.dumps(run_digest(ROOT / "scenarios" / args.digest, [])))
        return
    if args.latency_digest:
        print(json.dumps(run_digest(ROOT / "scenarios" / args.latency_digest,
                                    latency_overrides())))
        return
    stored = json.loads(DIGESTS.read_text()) if DIGESTS.is_file() else {}
    for which in (("latency", "trained") if args.set == "all" else (args.set,)):
        if args.only:
            stored.setdefault(which, {}).update(compute(which, args.only))
        else:
            stored[which] = compute(which)
    DIGESTS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS}")


if __name__ == "__main__":
    main()
