"""Device profiles and their presets (sources and assumptions in docs/models/compute.md).

``flops`` is the *effective* training throughput (FLOP/s actually achieved by small-batch
PyTorch-style training), not the datasheet peak. Each preset derives it from a published peak or
measured figure and an efficiency factor; both are listed here so a user can see, and override,
what netfl assumes.
"""

from __future__ import annotations

from dataclasses import dataclass

from netfl.scenario.sections import DeviceSpec

_GB = 1e9


@dataclass(frozen=True)
class DeviceProfile:
    """name; flops: effective FLOP/s; memory_bytes; basis: where the number comes from."""

    name: str
    flops: float
    memory_bytes: float
    basis: str = ""


def _preset(name: str, reference_flops: float, efficiency: float, memory_gb: float,
            basis: str) -> DeviceProfile:
    return DeviceProfile(name, reference_flops * efficiency, memory_gb * _GB,
                         f"{basis}; effective = {reference_flops / 1e9:g} GFLOP/s x {efficiency:g}")


PRESETS: dict[str, DeviceProfile] = {p.name: p for p in (
    _preset("phone", 40e9, 0.25, 6,
            "mid-range smartphone CPU: 40 GFLOP/s FP32 SGEMM-class throughput assumed "
            "(no single source; measure your target device and set flops)"),
    _preset("raspberry-pi-4", 13.5e9, 0.3, 4,
            "Raspberry Pi 4B, 4x Cortex-A72 1.5 GHz: 13.5 GFLOP/s measured HPL "
            "(G. Halfacree, 2019)"),
    _preset("jetson-nano", 236e9, 0.2, 4,
            "NVIDIA Jetson Nano: 128 Maxwell cores, 472 GFLOP/s FP16 peak = 236 FP32 "
            "(NVIDIA datasheet)"),
    _preset("jetson-xavier-nx", 845e9, 0.25, 8,
            "NVIDIA Jetson Xavier NX: 384 Volta cores @1.1 GHz, 845 GFLOP/s FP32 peak "
            "(NVIDIA datasheet)"),
    _preset("edge-server-cpu", 1.0e12, 0.2, 64,
            "2-socket x86 edge server, 32 cores AVX2 ~1 TFLOP/s FP32 peak"),
    _preset("server-gpu", 15.7e12, 0.35, 32,
            "NVIDIA V100 SXM2: 15.7 TFLOP/s FP32 peak (NVIDIA datasheet)"),
)}


def resolve_profile(spec: DeviceSpec) -> DeviceProfile:
    """The profile a scenario's device section describes: its preset, with overrides applied."""
    if spec.preset is not None:
        base = PRESETS[spec.preset]
    else:
        base = DeviceProfile("custom", spec.flops, float("inf"), "given in the scenario")
    return DeviceProfile(
        base.name,
        spec.flops if spec.flops is not None else base.flops,
        spec.memory if spec.memory is not None else base.memory_bytes,
        base.basis if spec.flops is None else "flops given in the scenario",
    )
