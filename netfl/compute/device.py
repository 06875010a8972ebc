"""Device profiles and their presets (sources and assumptions in docs/models/compute.md).

``flops`` is the *effective* training throughput (FLOP/s actually achieved by small-batch
PyTorch-style training), not the datasheet peak. Each preset derives it from a published peak or
measured figure and an efficiency factor; both are listed here so a user can see, and override,
what netfl assumes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from netfl.scenario.sections import DeviceSpec

_GB = 1e9


@dataclass(frozen=True)
class DeviceProfile:
    """name; flops: effective FLOP/s; memory_bytes; basis: where the number comes from;
    active_w, idle_w: electrical power computing and idle (None where netfl knows no figure);
    power_basis: where those come from."""

    name: str
    flops: float
    memory_bytes: float
    basis: str = ""
    active_w: float | None = None
    idle_w: float | None = None
    power_basis: str = ""


def _preset(name: str, reference_flops: float, efficiency: float, memory_gb: float,
            basis: str) -> DeviceProfile:
    return DeviceProfile(name, reference_flops * efficiency, memory_gb * _GB,
                         f"{basis}; effective = {reference_flops / 1e9:g} GFLOP/s x {efficiency:g}")


# Power figures (docs/models/energy.md): a measurement where one was found, else the vendor's
# power-mode budget (an upper bound on the module's draw), else none: a run that counts energy
# on such a device must give devices.<tier>.power.
POWER: dict[str, tuple[float | None, float | None, str]] = {
    "raspberry-pi-4": (7.2, 1.6, "J. Geerling, sbc-reviews: Raspberry Pi 4 model B (2023), at the "
                       "wall: 7.2 W running HPL, 1.6 W idle"),
    "jetson-nano": (10.0, None, "NVIDIA L4T Development Guide, Jetson Nano power modes: the 10 W "
                    "(MaxN) budget, a cap rather than a measurement; idle not known"),
    "jetson-xavier-nx": (15.0, None, "NVIDIA Jetson Xavier NX: the 15 W power-mode budget, a cap "
                         "rather than a measurement; idle not known"),
    "server-gpu": (300.0, None, "NVIDIA Tesla V100 SXM2 datasheet: 300 W TDP (the GPU alone); "
                   "idle not known"),
}

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


PRESETS = {name: replace(profile, active_w=POWER.get(name, (None,) * 3)[0],
                          idle_w=POWER.get(name, (None,) * 3)[1],
                          power_basis=POWER.get(name, (None, None, ""))[2])
           for name, profile in PRESETS.items()}


def resolve_profile(spec: DeviceSpec) -> DeviceProfile:
    """The profile a scenario's device section describes: its preset, with overrides applied."""
    if spec.preset is not None:
        base = PRESETS[spec.preset]
    else:
        base = DeviceProfile("custom", spec.flops, float("inf"), "given in the scenario")
    power = getattr(spec, "power", None)
    return DeviceProfile(
        base.name,
        spec.flops if spec.flops is not None else base.flops,
        spec.memory if spec.memory is not None else base.memory_bytes,
        base.basis if spec.flops is None else "flops given in the scenario",
        power.active if power is not None else base.active_w,
        (power.idle if power.idle is not None else base.idle_w) if power is not None
        else base.idle_w,
        "power given in the scenario" if power is not None else base.power_basis,
    )


def no_power_figure(section: str, preset: str | None, why: str):
    """The problem of a ``devices.<section>`` device without the power figure ``why`` needs
    (energy counting, a battery): it names the field and says what to give."""
    from netfl.errors import ScenarioProblem

    return ScenarioProblem(f"devices.{section}.power", f"{why}, and the {preset or 'custom'} "
                           f"device has no power figure: give its active (and idle) power, "
                           f"e.g. {{active: 6 W, idle: 1 W}}", has_value=False)
