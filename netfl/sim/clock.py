"""Units and random streams: the two things every stage of a simulation shares.

Units. Scenario files write quantities with units ("10 Mbps", "20 ms", "1.5 MB", "40 dBm"); this
module turns them into floats in one base unit per dimension:

========== ============ =========================================================
dimension  base unit    accepted units
========== ============ =========================================================
time       seconds      ns us ms s sec seconds min minutes h hr hours d day days
rate       bit/s        bps kbps Mbps Gbps Tbps bit/s kbit/s Mbit/s Gbit/s B/s kB/s MB/s GB/s
size       bytes        bit kbit Mbit Gbit B kB MB GB TB KiB MiB GiB
frequency  Hz           Hz kHz MHz GHz
power      dBm          dBm dBW mW W
gain       dB           dB dBi
distance   metres       mm m km
speed      m/s          m/s km/h kmh mph
flops      FLOP/s       FLOPS FLOP/s kFLOPS MFLOPS GFLOPS TFLOPS (and the FLOP/s spellings)
watts      W            mW W kW (electrical power, linear: "power" is the radio's, in dBm)
energy     J            J kJ MJ Wh kWh
========== ============ =========================================================

A bare number (``0.02`` or ``"0.02"``) is taken in the base unit. Decimal prefixes are powers of
1000 (1 MB = 1e6 bytes), binary ones powers of 1024 (1 MiB = 2**20 bytes).

Random streams. One root seed gives independent, named child streams (world, network, devices,
data, training, sampling), so adding a random draw in one stage never shifts another's draws.
"""

from __future__ import annotations

import math
import re
import zlib

import numpy as np

_K, _M, _G, _T = 1e3, 1e6, 1e9, 1e12

_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "seconds": 1.0,
         "min": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hours": 3600.0,
         "d": 86400.0, "day": 86400.0, "days": 86400.0}
_RATE = {"bps": 1.0, "kbps": _K, "Mbps": _M, "Gbps": _G, "Tbps": _T,
         "bit/s": 1.0, "kbit/s": _K, "Mbit/s": _M, "Gbit/s": _G,
         "B/s": 8.0, "kB/s": 8 * _K, "MB/s": 8 * _M, "GB/s": 8 * _G}
_SIZE = {"bit": 1 / 8, "kbit": _K / 8, "Mbit": _M / 8, "Gbit": _G / 8,
         "B": 1.0, "kB": _K, "KB": _K, "MB": _M, "GB": _G, "TB": _T,
         "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30}
_FREQUENCY = {"Hz": 1.0, "kHz": _K, "MHz": _M, "GHz": _G}
_DISTANCE = {"mm": 1e-3, "m": 1.0, "km": 1e3}
_SPEED = {"m/s": 1.0, "km/h": 1 / 3.6, "kmh": 1 / 3.6, "mph": 0.44704}
_WATTS = {"mW": 1e-3, "W": 1.0, "kW": _K}
_ENERGY = {"J": 1.0, "kJ": _K, "MJ": _M, "Wh": 3600.0, "kWh": 3.6e6}
_FLOPS = {}
for _prefix, _scale in {"": 1.0, "k": _K, "M": _M, "G": _G, "T": _T}.items():
    _FLOPS[f"{_prefix}FLOPS"] = _scale
    _FLOPS[f"{_prefix}FLOP/s"] = _scale

# Logarithmic dimensions convert with functions, not factors.
_POWER = {"dBm": lambda x: x, "dBW": lambda x: x + 30.0,
          "mW": lambda x: 10 * math.log10(x), "W": lambda x: 10 * math.log10(x) + 30.0}
_GAIN = {"dB": lambda x: x, "dBi": lambda x: x}

DIMENSIONS: dict[str, dict] = {
    "time": _TIME, "rate": _RATE, "size": _SIZE, "frequency": _FREQUENCY, "power": _POWER,
    "gain": _GAIN, "distance": _DISTANCE, "speed": _SPEED, "flops": _FLOPS,
    "watts": _WATTS, "energy": _ENERGY,
}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d][^\s]*)?\s*$")


def parse_quantity(value: object, dimension: str) -> float:
    """Return ``value`` in the base unit of ``dimension`` (see the module table).

    Raises ValueError with a message naming the accepted units when the unit is unknown or the
    text is not a number followed by a unit.
    """
    units = DIMENSIONS[dimension]
    if isinstance(value, bool):
        raise ValueError(f"expected a {dimension} such as {_example(dimension)}, not a boolean")
    if isinstance(value, int | float):
        return _finite(float(value), dimension)
    if not isinstance(value, str):
        raise ValueError(f"expected a {dimension} such as {_example(dimension)}")
    match = _QUANTITY.match(value)
    if not match:
        raise ValueError(
            f"expected a number and a unit, such as {_example(dimension)}; "
            f"{dimension} units: {', '.join(units)}"
        )
    number, unit = float(match.group(1)), match.group(2)
    if unit is None:
        return _finite(number, dimension)
    if unit not in units:
        raise ValueError(f"unknown {dimension} unit {unit!r}; use one of: {', '.join(units)}")
    convert = units[unit]
    if callable(convert):
        if dimension == "power" and unit in ("mW", "W") and number <= 0:
            raise ValueError(f"power in {unit} must be positive to convert to dBm")
        return _finite(float(convert(number)), dimension)
    return _finite(number * convert, dimension)


def _finite(number: float, dimension: str) -> float:
    """``number``, unless the text overflowed a float (``1e400 Mbps``) or was not a number."""
    if not math.isfinite(number):
        raise ValueError(f"not a finite {dimension}: a float holds about 1.8e308 at most")
    return number


def _example(dimension: str) -> str:
    return {"time": '"20 ms"', "rate": '"10 Mbps"', "size": '"1.5 MB"', "frequency": '"2.4 GHz"',
            "power": '"40 dBm"', "gain": '"3 dBi"', "distance": '"300 m"', "speed": '"38 km/h"',
            "flops": '"10 GFLOPS"'}[dimension]


def format_duration(seconds: float) -> str:
    """Human-readable simulated duration: '850 ms', '12.3 s', '4 min 05 s', '2 h 03 min',
    '41.2 days', '3.2e+05 years' (never hundreds of digits); 'never' for infinity, '?' for
    NaN."""
    if math.isnan(seconds):
        return "?"
    if math.isinf(seconds):
        return "never" if seconds > 0 else "-inf"
    if seconds >= 100 * 3600:
        days = seconds / 86400
        return f"{days:.1f} days" if days < 1000 else f"{days / 365.25:.3g} years"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        minutes, secs = divmod(int(round(seconds)), 60)
        return f"{minutes} min {secs:02d} s"
    hours, rest = divmod(int(round(seconds)), 3600)
    return f"{hours} h {rest // 60:02d} min"


BIT_UNITS = (("Tbit", _T), ("Gbit", _G), ("Mbit", _M), ("kbit", _K))  # largest first


def format_bits(nbits: float) -> str:
    """Human-readable decimal bits: '950 bit', '6.37 Mbit', '2.56 Gbit', '10.2 Tbit'."""
    for unit, scale in BIT_UNITS:
        if nbits >= scale:
            return f"{nbits / scale:.3g} {unit}"
    return f"{nbits:.0f} bit"


def format_bytes(nbytes: float) -> str:
    """Human-readable decimal size: '950 B', '12.4 kB', '3.10 MB', '1.25 GB'."""
    for unit, scale in (("GB", _G), ("MB", _M), ("kB", _K)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def format_share(share: float) -> str:
    """A share in [0, 1] as a whole percentage; '<1%' for one above zero that rounds to 0
    (a channel busy for 0.4% of a run was still used: '0%' would say it was idle)."""
    text = f"{100 * share:.0f}"
    return "<1%" if share > 0 and text == "0" else f"{text}%"


STREAM_NAMES = ("world", "network", "devices", "data", "training", "sampling")


_PLACEHOLDER_SEQUENCE = np.random.SeedSequence(0)  # derive_compact's generators share it


class RandomStreams:
    """Named, independent random streams derived from one root seed.

    ``streams.get("network")`` always returns the same ``numpy.random.Generator`` for a name;
    ``streams.derive("training", client, round)`` returns a fresh generator keyed by the name and
    integers, independent of how many draws other streams have made. Names are hashed with
    CRC-32, so the mapping is the same on every machine and Python version.
    """

    def __init__(self, seed: int):
        self.seed = int(seed)
        self._cache: dict[str, np.random.Generator] = {}

    def _sequence(self, name: str, keys: tuple[int, ...]) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=(zlib.crc32(name.encode()), *keys))

    def get(self, name: str) -> np.random.Generator:
        """The shared generator of stream ``name`` (created on first use)."""
        if name not in self._cache:
            self._cache[name] = np.random.default_rng(self._sequence(name, ()))
        return self._cache[name]

    def derive(self, name: str, *keys: int) -> np.random.Generator:
        """A fresh generator for ``name`` and integer ``keys``; same inputs, same draws."""
        return np.random.default_rng(self._sequence(name, tuple(int(k) for k in keys)))

    def derive_compact(self, name: str, *keys: int) -> np.random.Generator:
        """``derive``'s generator, the same draws, without its own seed sequence kept alive
        (about 470 bytes less each: for the one generator a million clients each hold). Its
        ``bit_generator.seed_seq`` is a shared placeholder: do not spawn from it."""
        full = np.random.PCG64(self._sequence(name, tuple(int(k) for k in keys)))
        light = np.random.PCG64(_PLACEHOLDER_SEQUENCE)
        light.state = full.state
        return np.random.Generator(light)

    def seed_for(self, name: str, *keys: int) -> int:
        """A 63-bit integer seed (for torch and other libraries) derived like :meth:`derive`."""
        state = self._sequence(name, tuple(int(k) for k in keys)).generate_state(2, np.uint32)
        return int((int(state[0]) << 31) ^ int(state[1]))
