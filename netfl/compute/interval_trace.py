"""Per-client interval files (outages, charging periods): a CSV with a ``client`` column (its
index) and a start and an end column, read into sorted, checked intervals per client."""

from __future__ import annotations

import math
from pathlib import Path

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.sim.csvfile import csv_rows
from netfl.sim.onoff import check_intervals


def read_client_intervals(path: Path, n_clients: int, field: str, start: str, end: str
                          ) -> dict[int, list[tuple[float, float]]]:
    """``{client index: sorted disjoint [(start, end), ...]}``; every problem names ``field``,
    the file and its row."""

    def fail(message: str):
        raise ScenarioError([ScenarioProblem(field, message, has_value=False, source=str(path))])

    intervals: dict[int, list[tuple[float, float]]] = {}
    for row_number, row in csv_rows(path, {"client", start, end}, fail):
        try:
            client, begins, ends = int(row["client"]), float(row[start]), float(row[end])
        except (TypeError, ValueError):
            fail(f"row {row_number}: expected integer client and numeric {start}, {end}: {row}")
        if not 0 <= client < n_clients:
            fail(f"row {row_number}: client {client} is not in 0..{n_clients - 1}")
        if not (math.isfinite(begins) and math.isfinite(ends)):
            fail(f"row {row_number}: {start} and {end} must be finite numbers: {row}")
        intervals.setdefault(client, []).append((begins, ends))
    checked = {}
    for client, spans in intervals.items():
        try:
            checked[client] = check_intervals(spans)
        except ValueError as exc:
            fail(f"client {client}: {exc}")
    return checked
