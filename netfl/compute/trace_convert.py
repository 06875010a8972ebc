"""Device traces from elsewhere, in netfl's format (netfl.compute.device_trace): a sample
population netfl makes, and FedScale's device-capacity and client-behaviour traces converted.

FedScale (Lai et al., "FedScale: Benchmarking Model and System Performance of Federated
Learning at Scale", ICML 2022) ships two pickled dictionaries under
``benchmark/dataset/data/device_info/`` of its repository:

* ``client_device_capacity``: client id -> ``{'computation': ms per sample (inference),
  'communication': kbit/s}`` (AI Benchmark and MobiPerf);
* ``client_behave_trace``: client id -> ``{'active': [s], 'inactive': [s], 'finish_time': s,
  ...}``, each ``active[i]`` to ``inactive[i]`` an interval the device was online (charging),
  from a week-long study of 136k users of an input-method app; FedScale repeats the trace every
  ``finish_time`` seconds.

FedScale charges training 3x the inference latency per sample; netfl charges FLOPs, so a device's
FLOP/s is ``reference_train_flops / (3 x computation / 1000)``: the training FLOPs per sample of
the model the latency was measured on, which the trace does not record (give it; FedScale's
README names no model). The traces have no power figures. Pickles can run code when loaded:
these are read with an unpickler that builds only dicts, lists, numbers and strings.
"""

from __future__ import annotations

import io
import math
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

SAFE_BUILTINS = {"dict", "list", "tuple", "int", "float", "str", "bool", "set", "frozenset"}


class _DataOnly(pickle.Unpickler):
    """An unpickler that refuses every class but plain data (no code runs)."""

    def find_class(self, module: str, name: str):
        if module == "builtins" and name in SAFE_BUILTINS:
            return getattr(__import__("builtins"), name)
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data: refused")


def load_data_pickle(path: Path) -> object:
    """A pickle of plain data (dicts, lists, numbers, strings), nothing else."""
    return _DataOnly(io.BytesIO(Path(path).read_bytes())).load()


def convert_fedscale(capacity: dict, behaviour: dict | None, reference_train_flops: float,
                     horizon_s: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(devices, availability) tables from FedScale's two dictionaries. Availability intervals
    repeat every ``finish_time`` up to ``horizon_s`` (default: one ``finish_time``); behaviour
    entries are matched to capacity entries by client id where both have it, else in order."""
    if reference_train_flops <= 0:
        raise ValueError("reference_train_flops must be > 0")
    rows = []
    for client, entry in capacity.items():
        latency_ms = float(entry["computation"])
        if not (math.isfinite(latency_ms) and latency_ms > 0):
            continue  # no usable speed: left out (counted by the caller)
        rows.append({"device": f"fedscale-{client}",
                     "flops": reference_train_flops / (3.0 * latency_ms / 1000.0),
                     "kbps": float(entry.get("communication", math.nan))})
    devices = pd.DataFrame(rows, columns=["device", "flops", "kbps"])
    spans = []
    if behaviour:
        keys = list(behaviour)
        for i, device in enumerate(devices["device"]):
            client = device.removeprefix("fedscale-")
            entry = behaviour.get(_key_like(client, keys)) or behaviour[keys[i % len(keys)]]
            period = float(entry.get("finish_time") or 0.0)
            end = horizon_s or period
            repeats = max(1, math.ceil(end / period)) if period > 0 else 1
            for k in range(repeats):
                for start, stop in zip(entry["active"], entry["inactive"], strict=False):
                    a, b = float(start) + k * period, min(float(stop) + k * period, end)
                    if b > a >= 0:
                        spans.append({"device": device, "start_s": a, "end_s": b})
    availability = pd.DataFrame(spans, columns=["device", "start_s", "end_s"])
    return devices, _merge_overlaps(availability)


def _key_like(client: str, keys: list) -> object:
    for key in (client, int(client) if client.lstrip("-").isdigit() else None):
        if key in keys:
            return key
    return None


def _merge_overlaps(table: pd.DataFrame) -> pd.DataFrame:
    """Intervals of each device sorted and merged where they touch or overlap."""
    out = []
    for device, group in table.groupby("device", sort=False):
        current = None
        for a, b in sorted(zip(group["start_s"], group["end_s"], strict=True)):
            if current and a <= current[1]:
                current[1] = max(current[1], b)
            else:
                if current:
                    out.append((device, *current))
                current = [a, b]
        if current:
            out.append((device, *current))
    return pd.DataFrame(out, columns=["device", "start_s", "end_s"])


def sample_trace(n_devices: int, seed: int, horizon_s: float = 7200.0,
                 median_flops: float = 10e9, sigma: float = 0.6, mean_up_s: float = 1800.0,
                 mean_down_s: float = 600.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A made-up population for tests and examples: FLOP/s lognormal around ``median_flops``
    (sigma ``sigma``), power 2-5 W active and 0.3-0.8 W idle (phone-class, assumed), and
    availability alternating exponential on and off periods (means ``mean_up_s``,
    ``mean_down_s``) over ``horizon_s``, each device starting up or down at random."""
    rng = np.random.default_rng(seed)
    flops = median_flops * np.exp(rng.normal(0.0, sigma, n_devices))
    devices = pd.DataFrame({"device": [f"d{i:04d}" for i in range(n_devices)],
                            "flops": np.round(flops, -6),
                            "active_w": np.round(rng.uniform(2.0, 5.0, n_devices), 2),
                            "idle_w": np.round(rng.uniform(0.3, 0.8, n_devices), 2)})
    spans = []
    for device in devices["device"]:
        t, up = 0.0, bool(rng.random() < mean_up_s / (mean_up_s + mean_down_s))
        while t < horizon_s:
            length = rng.exponential(mean_up_s if up else mean_down_s)
            if up:
                spans.append({"device": device, "start_s": round(t, 1),
                              "end_s": round(min(t + length, horizon_s), 1)})
            t += length
            up = not up
    availability = pd.DataFrame(spans, columns=["device", "start_s", "end_s"])
    availability = availability[availability["end_s"] > availability["start_s"]]
    return devices, availability.reset_index(drop=True)
