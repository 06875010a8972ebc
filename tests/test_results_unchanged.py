"""Results stay as they were: every scenario's latency run (the fake model, the first simulated
minutes) and every short scenario's trained run give the summary and tables whose digests are
committed in tests/data/result_digests.json (tests/result_digests.py says how they are made and
regenerated). A change meant to change no result, a faster event loop or a closed form, must
pass these as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netfl.float_kernels import on_x86_64
from netfl.scenario import load_scenario
from tests.conftest import needs_fashion_mnist
from tests.result_digests import (
    DIGESTS,
    ROOT,
    key,
    latency_overrides,
    run_digest,
    run_latency_digest_under,
    run_trained_digest,
    scenario_files,
    trained_files,
)

STORED = json.loads(DIGESTS.read_text())


def _params(files):
    params = []
    for path in files:
        reads_fashion = load_scenario(path).data.dataset_name == "fashion-mnist"
        params.append(pytest.param(path, id=key(path),
                                   marks=[needs_fashion_mnist] if reads_fashion else []))
    return params


def _mismatch(which: str, path, got: dict) -> str:
    want = STORED[which].get(key(path))
    differ = sorted(name for name in set(got) | set(want or {})
                    if got.get(name) != (want or {}).get(name))
    return (f"{key(path)}: {', '.join(differ)} changed (python -m tests.result_digests --set "
            f"{which} regenerates the digests where a change of results is meant)")


def test_every_scenario_has_a_digest():
    assert sorted(STORED["latency"]) == sorted(key(p) for p in scenario_files())
    assert sorted(STORED["trained"]) == sorted(key(p) for p in trained_files())


@pytest.mark.parametrize("path", _params(scenario_files()))
def test_latency_runs_give_the_results_they_gave(path):
    got = run_digest(path, latency_overrides())
    assert got == STORED["latency"][key(path)], _mismatch("latency", path, got)


def _blas_kernels() -> list[str]:
    """OpenBLAS kernels this CPU can run that fuse and order multiply-adds unlike each other:
    SSE's (Nehalem) everywhere on x86-64, AVX-512's (SkylakeX) where the CPU has it."""
    if not on_x86_64():
        return []
    cpuinfo = Path("/proc/cpuinfo")
    flags = cpuinfo.read_text() if cpuinfo.is_file() else ""
    return ["Nehalem"] + (["SkylakeX"] if " avx512f" in flags else [])


@pytest.mark.skipif(not _blas_kernels(), reason="OpenBLAS's kernels are chosen on x86-64")
@pytest.mark.parametrize("kernel", _blas_kernels())
@pytest.mark.parametrize("path", _params([ROOT / "scenarios" / name for name in (
    "leo/walker-40-5.yaml", "leo/starlink-measured-access.yaml")]))
def test_latency_runs_do_not_depend_on_the_cpus_blas_kernel(path, kernel):
    """The simulated side is the same on every machine: BLAS picks its kernel for the CPU when
    it loads, and a contact plan's or a slant range's matrix products through it gave other
    last bits (and links.csv, rounds.csv) on another CI machine. Forced to each kernel, the
    LEO geometry's runs give the committed digests."""
    got = run_latency_digest_under(path, {"OPENBLAS_CORETYPE": kernel})
    assert got == STORED["latency"][key(path)], _mismatch("latency", path, got)


@pytest.mark.long
@pytest.mark.parametrize("path", _params(trained_files()))
def test_trained_short_runs_give_the_results_they_gave(path):
    got = run_trained_digest(path)
    assert got == STORED["trained"][key(path)], _mismatch("trained", path, got)
