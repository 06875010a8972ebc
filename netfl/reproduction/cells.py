"""A study's results as cells: per arm and grid point, each seed's summary.

``collect(runs)`` reads the arms' sweep indexes (runs not done are left out) into
``StudyResults``: ``values(metric)[arm][point] = {seed: value}``, where a run that never reached
its target has ``None`` for the "to target" metrics. A grid point's name is its values joined by
', ' in grid order ('' for a study without a grid), as the plan's paper values are keyed.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from netfl.reproduction.execute import ArmRun, study_rows
from netfl.reproduction.plan import AT_ACCURACY, Study
from netfl.reproduction.verdicts import Censored, Seeds

SEED = "seed"


def point_name(values: list[object]) -> str:
    """A grid point's name: its values in grid order, joined by ', '."""
    return ", ".join(_show(v) for v in values)


def _show(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass
class Run:
    """One done run: its seed, index row and folder."""

    seed: int
    row: dict
    folder: Path

    @functools.cached_property
    def summary(self) -> dict:
        """The run's whole summary.json (the index holds only its scalars), read once."""
        return json.loads((self.folder / "summary.json").read_text())


@dataclass
class StudyResults:
    study: Study
    arms: list[str]
    points: list[str]
    runs: dict[str, dict[str, list[Run]]] = field(default_factory=dict)  # arm -> point -> runs
    folders: dict[str, Path] = field(default_factory=dict)  # arm -> its sweep folder
    planned: dict[str, list[str]] = field(default_factory=dict)  # arm -> its named points
    expected: dict[str, int] = field(default_factory=dict)  # arm -> runs its plan asks for

    def values(self, metric: str) -> dict[str, dict[str, dict[int, float | None]]]:
        """``metric`` per arm, point and seed; None where the run has no value (a target it
        did not reach)."""
        return {arm: {point: {run.seed: metric_value(run.row, metric) for run in runs}
                      for point, runs in by_point.items()}
                for arm, by_point in self.runs.items()}

    def judged_values(self, metric: str) -> dict[str, dict[str, Seeds]]:
        """As ``values``, but a run that never reached its target is ``Censored`` at what it had
        spent of ``metric`` when it stopped: what verdicts and table cells judge."""
        return {arm: {point: {run.seed: judged_value(run.row, metric) for run in runs}
                      for point, runs in by_point.items()}
                for arm, by_point in self.runs.items()}

    def values_at_accuracy(self, metric: str, accuracy: float
                           ) -> dict[str, dict[str, Seeds]] | None:
        """``metric`` (one of AT_ACCURACY's) when each run's test accuracy first reached
        ``accuracy``, read from its metrics.csv; ``Censored`` at the last row's value where it
        never did. None where some run's metrics.csv skips updates (eval_every above 1), so the
        first row at or above ``accuracy`` would not be its crossing."""
        out: dict[str, dict[str, Seeds]] = {}
        for arm, by_point in self.runs.items():
            for point, runs in by_point.items():
                for run in runs:
                    value = _at_accuracy(run.folder / "metrics.csv", metric, accuracy)
                    if value is _SKIPS:
                        return None
                    out.setdefault(arm, {}).setdefault(point, {})[run.seed] = value
        return out

    def row_sizes(self) -> list[int]:
        """The number of done runs in each arm-and-point row of the study's table."""
        return [len(r) for by_point in self.runs.values() for r in by_point.values()]

    def count(self) -> int:
        return sum(self.row_sizes())

    def done(self, arm: str) -> int:
        """How many of ``arm``'s runs are done."""
        return len(self.arm_runs(arm))

    def arm_runs(self, arm: str) -> list[Run]:
        """Every done run of ``arm``, over all its points."""
        return [run for runs in self.runs.get(arm, {}).values() for run in runs]


# metrics a run's index row holds under another name and unit: name -> (column, factor)
DERIVED = {"hop_bits_to_target": ("bytes_hop_weighted_to_target", 8.0)}

# a to-target metric -> what a run had spent of it when it stopped (column, factor): the lower
# bound of a run that never reached its target
SPENT_AT_STOP = {"bits_to_target": ("bytes_total", 8.0),
                 "bytes_to_target": ("bytes_total", 1.0),
                 "hop_bits_to_target": ("bytes_hop_weighted", 8.0),
                 "wire_bytes_to_target": ("wire_bytes_total", 1.0),
                 "time_to_target_s": ("sim_time_s", 1.0),
                 "rounds_to_target": ("rounds", 1.0),
                 "local_steps_to_target": ("local_steps", 1.0),
                 "cost_to_target": ("cost_total", 1.0)}


def metric_value(row: dict, metric: str) -> float | None:
    """``metric`` from a run's index row (``DERIVED`` ones from their column); None where the
    run has no value."""
    column, factor = DERIVED.get(metric, (metric, 1.0))
    value = _number(row.get(column))
    return None if value is None else value * factor


def judged_value(row: dict, metric: str) -> float | Censored | None:
    """``metric_value``, or for a to-target metric the run did not reach, ``Censored`` at what it
    had spent when it stopped (None for any other metric without a value)."""
    value = metric_value(row, metric)
    if value is not None or metric not in SPENT_AT_STOP:
        return value
    column, factor = SPENT_AT_STOP[metric]
    spent = _number(row.get(column))
    return Censored(None if spent is None else spent * factor)


_SKIPS = object()  # a metrics.csv that skips updates


def _at_accuracy(path: Path, metric: str, accuracy: float) -> float | Censored | object:
    column, factor = AT_ACCURACY[metric]
    frame = pd.read_csv(path)
    rounds = frame["round"].to_numpy()
    if len(rounds) and (rounds != np.arange(rounds[0], rounds[0] + len(rounds))).any():
        return _SKIPS
    reached = frame[frame["accuracy"] >= accuracy]
    if reached.empty:
        return Censored(float(frame[column].iloc[-1]) * factor)
    return float(reached[column].iloc[0]) * factor


def _number(value: object) -> float | None:
    if value is None or isinstance(value, str):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def collect(study: Study, arm_runs: list[ArmRun]) -> StudyResults:
    """The done runs of ``study``'s arms (those of ``arm_runs`` that belong to it)."""
    mine = [r for r in arm_runs if r.study.id == study.id]
    points: list[str] = []
    arms = list(dict.fromkeys(r.arm.label for r in mine))
    results = StudyResults(study, arms, points)
    for run in mine:
        keys = list(run.grid)
        by_point = results.runs.setdefault(run.arm.label, {})
        for row in study_rows(run):
            if row.get("status") != "done":
                continue
            named = [run.point] if run.point else []
            point = point_name([*named, *(row.get(k) for k in keys)])
            if point not in points:
                points.append(point)
            by_point.setdefault(point, []).append(
                Run(int(row[SEED]), row, run.folder / str(row["path"])))
        results.folders.setdefault(run.arm.label, run.folder)
        results.expected[run.arm.label] = (results.expected.get(run.arm.label, 0) + run.seeds
                                           * math.prod(len(v) for v in run.grid.values()))
        if not run.grid:  # a named point (or none): its row shows before it has run
            results.planned.setdefault(run.arm.label, []).append(run.point)
    return results
