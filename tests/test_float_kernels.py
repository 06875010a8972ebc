"""NETFL_FLOAT_KERNELS: the choice read and checked, the portable kernels' variables put in place
before torch runs (in a fresh interpreter, as a user's process would start), oneDNN turned off
for a portable run, and a late choice refused rather than recorded as portable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from netfl import float_kernels
from netfl.errors import NetflError
from netfl.float_kernels import PORTABLE_ENV, VARIABLE, choose, fresh_environment, requested


def _has_avx2() -> bool:
    if not float_kernels.on_x86_64():
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return " avx2" in info.read()
    except OSError:
        return False


needs_avx2 = pytest.mark.skipif(not _has_avx2(), reason="portable kernels are AVX2 on x86-64")


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=fresh_environment(None) | env,
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("value", "expected"), [
    (None, "native"), ("native", "native"), ("portable", "portable"), (" Portable ", "portable"),
    ("", "native")])
def test_the_choice_is_read_from_the_environment(value, expected):
    assert requested({} if value is None else {VARIABLE: value}) == expected


def test_a_bad_choice_names_the_variable_and_the_value():
    with pytest.raises(NetflError, match=r"NETFL_FLOAT_KERNELS='fastest': choose native or "
                                         r"portable"):
        requested({VARIABLE: "fastest"})


def test_portable_sets_the_three_libraries_variables_on_x86_64_only():
    environ = {VARIABLE: "portable"}
    choose(environ, machine="x86_64")
    assert environ == {VARIABLE: "portable"} | PORTABLE_ENV
    for machine in ("aarch64", "arm64"):
        environ = {VARIABLE: "portable"}
        choose(environ, machine=machine)
        assert environ == {VARIABLE: "portable"}


def test_native_and_bad_choices_leave_the_environment_and_a_users_value_wins():
    for value in ("native", "fastest"):
        environ = {VARIABLE: value}
        choose(environ, machine="x86_64")
        assert environ == {VARIABLE: value}
    environ = {VARIABLE: "portable", "MKL_CBWR": "COMPATIBLE"}
    choose(environ, machine="x86_64")
    assert environ["MKL_CBWR"] == "COMPATIBLE" and environ["ATEN_CPU_CAPABILITY"] == "avx2"


def test_portable_elsewhere_than_x86_64_is_reported_as_native():
    described = float_kernels.settle({VARIABLE: "portable"}, machine="aarch64")
    assert described.startswith("native (") and "portable is for x86-64 only" in described


@needs_avx2
def test_importing_netfl_pins_torch_to_avx2_before_torch_runs_and_a_run_turns_onednn_off():
    done = _python("import netfl, torch; torch.ones(3).sum(); "
                   "from netfl.float_kernels import settle; d = settle(); "
                   "print(torch.backends.cpu.get_cpu_capability(), d, "
                   "torch.backends.mkldnn.enabled)",
                   NETFL_FLOAT_KERNELS="portable")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["AVX2", "portable", "(AVX2)", "False"]  # oneDNN off


@needs_avx2
def test_portable_asked_after_torch_chose_other_kernels_is_refused():
    native = _python("import torch; print(torch.backends.cpu.get_cpu_capability())")
    if native.stdout.strip() == "AVX2":
        pytest.skip("this CPU's own kernels are AVX2: nothing to refuse")
    done = _python("import os, torch; torch.ones(3).sum(); "
                   "os.environ['NETFL_FLOAT_KERNELS'] = 'portable'; "
                   "import netfl; from netfl.float_kernels import settle; settle()")
    assert done.returncode != 0
    assert "NETFL_FLOAT_KERNELS=portable, but torch already trains with" in done.stderr


def test_native_names_the_cpu_model(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                       "model name\t: AMD EPYC  9R14 96-Core Processor\n")
    assert float_kernels.cpu_model(cpuinfo) == "AMD EPYC 9R14 96-Core Processor"
    assert float_kernels.cpu_model(tmp_path / "absent") != ""  # platform's name, or "unknown CPU"
    described = float_kernels.settle({VARIABLE: "native"})
    assert described.startswith("native (") and float_kernels.cpu_model() in described
