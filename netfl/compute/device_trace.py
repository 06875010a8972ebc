"""Device traces: a population of measured devices, each client drawn one by seed
(docs/models/compute.md, "Device traces").

A trace is two files:

* devices (CSV or Parquet), one row per device: ``device`` (a name), ``flops`` (effective
  training FLOP/s, so that the charged time follows the model's counted FLOPs), and optionally
  ``active_w`` and ``idle_w`` (its power, W);
* availability (optional, CSV or Parquet), one row per interval a device is available:
  ``device``, ``start_s``, ``end_s`` (seconds from the run's start); outside its intervals a
  device is down. A device with no row is always available.

Clients draw devices with the stream ``device-trace``: without replacement where the population
is at least as large as the clients (every client a different device), with replacement
otherwise (or where asked). The same scenario and seed give every client the same device on
every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.sim.onoff import check_intervals

DEVICE_COLUMNS = ("device", "flops")
AVAILABILITY_COLUMNS = ("device", "start_s", "end_s")


@dataclass(frozen=True)
class DeviceTrace:
    """The population: per device its FLOP/s, power (NaN where not given) and availability."""

    devices: pd.DataFrame  # device, flops, active_w, idle_w
    available: dict[str, list[tuple[float, float]]]  # device -> sorted [start, end) intervals


def _fail(field: str, path: Path, message: str) -> ScenarioError:
    return ScenarioError([ScenarioProblem(field, message, has_value=False, source=str(path))])


def _read_table(path: Path, field: str, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        table = (pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq")
                 else pd.read_csv(path))
    except Exception as exc:  # noqa: BLE001 (any reader error is the file's problem)
        raise _fail(field, path, f"cannot be read as a table: {exc}") from None
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise _fail(field, path, f"has no column {', '.join(missing)} (it has "
                                 f"{', '.join(map(str, table.columns))})")
    return table


def read_device_trace(path: Path, availability: Path | None,
                      field: str = "devices.clients.trace") -> DeviceTrace:
    """Read and check a trace; every problem names the file, the row and the field."""
    table = _read_table(path, f"{field}.path", DEVICE_COLUMNS)
    if table.empty:
        raise _fail(f"{field}.path", path, "holds no device")
    table = table.copy()
    table["device"] = table["device"].astype(str)
    if table["device"].duplicated().any():
        twice = table["device"][table["device"].duplicated()].iloc[0]
        raise _fail(f"{field}.path", path, f"device {twice!r} appears twice")
    for column in ("flops", "active_w", "idle_w"):
        if column not in table:
            table[column] = math.nan
            continue
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() if column == "flops" else (values.notna() & ~np.isfinite(values))
        bad |= values < 0
        if column == "flops":
            bad |= values <= 0
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise _fail(f"{field}.path", path, f"row {row + 2}: {column} = "
                        f"{str(table[column].iloc[row])!r} is not a positive finite number")
        table[column] = values.astype(float)
    intervals: dict[str, list[tuple[float, float]]] = {}
    if availability is not None:
        rows = _read_table(availability, f"{field}.availability", AVAILABILITY_COLUMNS)
        known = set(table["device"])
        grouped: dict[str, list[tuple[float, float]]] = {}
        for i, row in enumerate(rows.itertuples(index=False)):
            device = str(row.device)
            if device not in known:
                raise _fail(f"{field}.availability", availability,
                            f"row {i + 2}: device {device!r} is not in {path.name}")
            try:
                start, end = float(row.start_s), float(row.end_s)
            except (TypeError, ValueError):
                start = end = math.nan
            if not (math.isfinite(start) and math.isfinite(end)):
                raise _fail(f"{field}.availability", availability,
                            f"row {i + 2}: start_s and end_s must be finite numbers")
            grouped.setdefault(device, []).append((start, end))
        for device, spans in grouped.items():
            try:
                intervals[device] = check_intervals(spans)
            except ValueError as exc:
                raise _fail(f"{field}.availability", availability,
                            f"device {device!r}: {exc}") from None
    return DeviceTrace(table[["device", "flops", "active_w", "idle_w"]].reset_index(drop=True),
                       intervals)


def assign_devices(n_clients: int, n_devices: int, rng: np.random.Generator,
                   with_replacement: bool = False) -> np.ndarray:
    """Each client's device row: a permutation's first n where there are enough devices and
    replacement is not asked for, independent uniform draws otherwise."""
    if not with_replacement and n_devices >= n_clients:
        return rng.permutation(n_devices)[:n_clients]
    return rng.integers(0, n_devices, size=n_clients)


def outages_from_availability(available: list[tuple[float, float]]
                              ) -> list[tuple[float, float]]:
    """Down intervals of a device available only in ``available`` (sorted, disjoint): before
    the first, between each two, and after the last (to infinity)."""
    down, last = [], 0.0
    for start, end in available:
        if start > last:
            down.append((last, start))
        last = max(last, end)
    down.append((last, math.inf))
    return down
