"""Which float kernels torch trains with: each machine's fastest (``native``, the default), or one
instruction set for every x86-64 machine (``portable``), chosen by the environment variable
``NETFL_FLOAT_KERNELS``.

Why: torch picks its kernels by the CPU (ATen's AVX-512 or AVX2 loops, MKL's and oneDNN's code
paths, the latter blocked by the CPU's cache sizes), and they sum floats in different orders. The
same scenario and seed give trained weights that differ in the last bits after the first step
and drift from there (measured: 0.005 of HFL-PWP's CNN accuracy after its short run), and the
simulated times with them wherever a trained number decides something (the round a target is
reached). ``portable`` takes the parts
that can be pinned: ATen's loops at AVX2 (``ATEN_CPU_CAPABILITY``; the same instructions on every
x86-64 CPU of the last decade), MKL on its COMPATIBLE branch (``MKL_CBWR``: the one branch its
conditional numerical reproducibility offers on Intel and compatible CPUs alike; its AVX2
branch is Intel's only), and oneDNN off (convolutions go through ATen and MKL). It costs speed
(benchmarks/bench_float_kernels.py measures how much), so it is a choice, not the default.

The variables must be in place before torch runs its first operation, so :func:`choose` runs when
``netfl`` is imported (before anything of netfl imports torch); a value the user set already
wins. This module imports nothing heavy.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from netfl.errors import NetflError

VARIABLE = "NETFL_FLOAT_KERNELS"
CHOICES = ("native", "portable")
PORTABLE_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE",
                "ONEDNN_MAX_CPU_ISA": "AVX2"}
X86_64 = ("x86_64", "amd64")


def on_x86_64(machine: str | None = None) -> bool:
    """Whether ``machine`` (this one where None) is x86-64, where the portable kernels exist."""
    return (machine or platform.machine()).lower() in X86_64


def fresh_environment(kernels: str | None, environ=os.environ) -> dict[str, str]:
    """``environ`` for a new process that chooses its kernels afresh: the portable kernels'
    variables removed, ``NETFL_FLOAT_KERNELS`` set to ``kernels`` (removed where None)."""
    env = {k: v for k, v in environ.items() if k not in PORTABLE_ENV and k != VARIABLE}
    return env | ({VARIABLE: kernels} if kernels is not None else {})


def requested(environ=os.environ) -> str:
    """``native`` or ``portable`` as ``NETFL_FLOAT_KERNELS`` asks (unset: native); any other value
    is a :class:`NetflError` naming the variable and the value."""
    value = environ.get(VARIABLE, "native").strip().lower() or "native"
    if value not in CHOICES:
        raise NetflError(f"environment variable {VARIABLE}={environ.get(VARIABLE)!r}: choose "
                         f"{' or '.join(CHOICES)}")
    return value


def choose(environ=os.environ, machine: str | None = None) -> None:
    """Put the portable kernels' variables into ``environ`` where ``portable`` is asked for on an
    x86-64 machine (those the user set already are kept). A bad value is left for
    :func:`settle` to report when a run starts: an import should not fail on it."""
    try:
        wanted = requested(environ)
    except NetflError:
        return
    if wanted == "portable" and on_x86_64(machine):
        for name, value in PORTABLE_ENV.items():
            environ.setdefault(name, value)


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU's model name (Linux's ``/proc/cpuinfo``; else what ``platform`` knows; else
    "unknown CPU"), as a run's summary and a benchmark's record name the machine. Native kernels
    differ by vendor and model, not only by instruction set: MKL takes other code paths on AMD
    than on Intel at the same AVX-512."""
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def settle(environ=os.environ, machine: str | None = None) -> str:
    """Put the part of the choice that is no environment variable in place (``portable`` turns
    torch's oneDNN off for this process) and say what this process trains with, for a run's
    summary: ``native (AVX512, AMD EPYC)``, ``portable (AVX2)`` (native names the CPU: a
    record is reproduced bit for bit on its kind of CPU). Raises :class:`NetflError` on a bad
    ``NETFL_FLOAT_KERNELS``, and where ``portable`` was asked for but torch had already chosen
    other kernels (torch ran before ``netfl`` was imported, and the variables were not set by
    hand)."""
    import torch

    wanted = requested(environ)
    capability = torch.backends.cpu.get_cpu_capability()
    if wanted == "native":
        return f"native ({capability}, {cpu_model()})"
    if not on_x86_64(machine):  # nothing pinned: say so rather than claim it
        return f"native ({capability}, {cpu_model()}; portable is for x86-64 only)"
    if capability not in ("AVX2", "DEFAULT"):
        pinned = " ".join(f"{k}={v}" for k, v in PORTABLE_ENV.items())
        raise NetflError(f"{VARIABLE}=portable, but torch already trains with {capability} "
                         f"kernels: import netfl before torch runs anything, or set {pinned} "
                         f"before starting Python")
    torch.backends.mkldnn.enabled = False
    return f"portable ({capability})"
