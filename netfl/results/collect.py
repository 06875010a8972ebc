"""Finding the runs a report compares, and what tells their groups apart.

``collect(paths)`` walks run folders, sweep folders and folders holding them; a group's
parameters are the fields of the runs' resolved scenarios (scenario.yaml) that differ between
them (see :mod:`netfl.results.report`). Damaged input is a NetflError naming the file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from netfl.errors import NetflError
from netfl.results.store import SUMMARY, is_complete

SEED = "seed"
NOT_PARAMETERS = ("seed", "name", "output.", "algorithm.kind")  # kind: the algorithm column


def plural(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``, ``0 runs``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass
class RunRecord:
    """One complete run: its folder, summary and comparison parameters (seed aside)."""

    path: Path
    summary: dict
    params: dict = field(default_factory=dict)
    point: str | None = None  # a sweep run's sweep and parameters less seed (see _point)
    written: dict = field(default_factory=dict)  # a sweep run's parameters as written
    label: str | None = None  # a sweep case's label: the group's name
    world: str = ""  # which world the run ran in (see _world); its groups are compared apart
    _metrics: pd.DataFrame | None = None

    @property
    def metrics(self) -> pd.DataFrame:
        if self._metrics is None:
            path = self.path / "metrics.csv"
            try:
                self._metrics = pd.read_csv(path)
            except FileNotFoundError:
                raise NetflError(f"{path}: missing; the run's folder holds summary.json but "
                                 f"not its metrics (copied in part?)") from None
            except (OSError, ValueError) as exc:  # pandas' parser errors are ValueErrors
                raise NetflError(f"{path}: cannot be read as CSV: {exc}") from None
        return self._metrics

    def curve(self, x: str) -> pd.DataFrame:
        """metrics.csv's x and accuracy columns (NetflError naming the file if it lacks one)."""
        missing = [c for c in (x, "accuracy") if c not in self.metrics]
        if missing:
            raise NetflError(f"{self.path / 'metrics.csv'}: no column {', '.join(missing)}")
        return self.metrics


@dataclass
class Collection:
    """Every run found under the report's inputs, and the sweep runs that did not finish."""

    runs: list[RunRecord]
    param_keys: list[str]
    unfinished: list[dict]
    sweeps: list[Path]
    duplicates: int = 0  # sweep runs found in more than one sweep, counted once

    @property
    def expected(self) -> int:
        """Runs the inputs ask for: the complete ones and the sweep runs that did not finish."""
        return len(self.runs) + len(self.unfinished)

    @property
    def incomplete(self) -> str:
        """``INCOMPLETE: n of N runs finished`` where sweep runs did not finish, else ''."""
        if not self.unfinished:
            return ""
        return (f"INCOMPLETE: {len(self.runs)} of {plural(self.expected, 'run')} "
                f"finished")


# ------------------------------------------------------------------------------- finding


def _find(path: Path, runs: list[Path], sweeps: list[Path]) -> None:
    if (path / "sweep.json").is_file():
        sweeps.append(path)
    elif (path / SUMMARY).is_file():  # read later: a damaged one is an error naming it
        runs.append(path)
    else:
        for child in sorted(path.iterdir()):
            if child.is_dir() and not child.name.startswith("."):
                _find(child, runs, sweeps)


def collect(paths: list[str | Path]) -> Collection:
    """Find the runs of ``paths``: run folders, sweep folders, or folders holding them."""
    loose: list[Path] = []
    sweeps: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            raise NetflError(f"{path}: a file, not a folder (give the run folder or sweep "
                             f"folder that holds it)")
        if not path.is_dir():
            raise NetflError(f"{path}: no such folder (give a run folder, a sweep folder, or "
                             f"a folder that holds them)")
        found_runs, found_sweeps = [], []
        _find(path, found_runs, found_sweeps)
        if not found_runs and not found_sweeps:
            raise NetflError(f"{path}: no run results (summary.json) or sweep (sweep.json) in "
                             f"it or below it")
        loose += found_runs
        sweeps += found_sweeps
    runs: list[RunRecord] = []
    unfinished: list[dict] = []
    seen: set[Path] = set()
    ids: set[str] = set()
    duplicates = 0
    for sweep in dict.fromkeys(sweeps):
        definition = _sweep_definition(sweep / "sweep.json")
        status = _index_status(sweep)
        for point in definition.get("points", []):
            if point["run_id"] in ids:  # the same run (same resolved scenario) in two sweeps
                duplicates += 1
                continue
            ids.add(point["run_id"])
            run_dir = sweep / point["path"]
            if is_complete(run_dir):
                seen.add(run_dir.resolve())
                label = point.get("label")
                runs.append(RunRecord(run_dir, _summary(run_dir),
                                      point=_point(sweep, point["params"]),
                                      written=point["params"],
                                      label=label if isinstance(label, str) else None))
            else:
                row = status.get(point["run_id"], {})
                unfinished.append({"run_id": point["run_id"], "sweep": str(sweep),
                                   "status": row.get("status") or "pending",
                                   "error": row.get("error") or "",
                                   "log": str(sweep / "logs" / f"{point['run_id']}.log"),
                                   "params": point["params"],
                                   "point": _point(sweep, point["params"])})
    loose = [p for p in dict.fromkeys(loose) if p.resolve() not in seen]
    runs += [RunRecord(path, _summary(path)) for path in loose]
    if not runs:
        raise NetflError(f"no complete run in {', '.join(map(str, paths))}"
                         + (f" ({len(unfinished)} sweep runs did not finish)"
                            if unfinished else ""))
    flats = [_flatten(_scenario(run.path)) for run in runs]
    _name_worlds(runs, flats)
    keys: list[str] = []  # what differs within a world, not between worlds
    for world in dict.fromkeys(run.world for run in runs):
        mine = [i for i, run in enumerate(runs) if run.world == world]
        keys += _varying([flats[i] for i in mine],
                         [runs[i].summary.get("algorithm") for i in mine])
    keys = list(dict.fromkeys(keys))
    for run, flat in zip(runs, flats, strict=True):
        run.params = {k: flat.get(k) for k in keys}
    return Collection(runs, keys, unfinished, sweeps, duplicates)


def _name_worlds(runs: list[RunRecord], flats: list[dict]) -> None:
    """Set each run's world: its scenario's name, and its world's kind where two worlds share
    a name (an IoV and a LEO run of scenarios both called ``x``: ``x (iov)``, ``x (leo)``)."""
    pairs = [(str(run.summary.get("name")), flat.get("world.kind")) for run, flat in
             zip(runs, flats, strict=True)]
    kinds: dict[str, set] = {}
    for name, kind in pairs:
        kinds.setdefault(name, set()).add(kind)
    for run, (name, kind) in zip(runs, pairs, strict=True):
        run.world = f"{name} ({kind})" if len(kinds[name]) > 1 else name


def _point(sweep: Path, params: dict) -> str:
    """Which runs of a sweep are seeds of one another: the same sweep and parameters."""
    return json.dumps([str(sweep.resolve()), {k: v for k, v in params.items() if k != SEED}],
                      sort_keys=True, default=str)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise NetflError(f"{path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise NetflError(f"{path}: not valid JSON ({exc})") from None


def _sweep_definition(path: Path) -> dict:
    """sweep.json, checked for what the report reads: points with run_id, params and path."""
    definition = _read_json(path)
    points = definition.get("points") if isinstance(definition, dict) else None
    if not isinstance(points, list):
        raise NetflError(f"{path}: not a netfl sweep file (no list of points); was it written "
                         f"by netfl sweep?")
    for i, point in enumerate(points):
        wanted = {"run_id": str, "params": dict, "path": str}
        wrong = [k for k, kind in wanted.items()
                 if not isinstance(point, dict) or not isinstance(point.get(k), kind)]
        if wrong:
            raise NetflError(f"{path}: points[{i}] lacks {', '.join(wrong)} (each point needs "
                             f"run_id and path as text and params as a mapping)")
    return definition


def _summary(run_dir: Path) -> dict:
    summary = _read_json(run_dir / SUMMARY)
    if not isinstance(summary, dict):
        raise NetflError(f"{run_dir / SUMMARY}: not a run summary (a JSON object)")
    return summary


def _scenario(run_dir: Path) -> dict:
    path = run_dir / "scenario.yaml"
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise NetflError(f"{path}: cannot be read as YAML: {exc}") from None
    if not isinstance(data, dict | None):
        raise NetflError(f"{path}: not a scenario (a YAML mapping)")
    return data or {}


def _index_status(sweep: Path) -> dict[str, dict]:
    """run_id -> status and error, from a sweep's index (written by netfl.sweep)."""
    try:
        if (sweep / "index.parquet").is_file():
            index = pd.read_parquet(sweep / "index.parquet")
        else:
            index = pd.read_csv(sweep / "index.csv")
    except (OSError, ValueError):
        return {}
    columns = [c for c in ("run_id", "status", "error") if c in index]
    return {row["run_id"]: {k: (None if isinstance(v, float) and math.isnan(v) else v)
                            for k, v in row.items()}
            for row in index[columns].to_dict("records")}


def _flatten(data: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _varying(flats: list[dict], algorithms: list) -> list[str]:
    """Dotted fields whose values differ between the runs (flattened scenarios), in the order
    first seen. A field missing from some runs counts where it differs between runs of the
    same algorithm (``algorithms``, one per run); algorithm.kind counts only where the
    algorithm column does not already say it."""
    missing = object()
    order = list(dict.fromkeys(k for f in flats for k in f))
    kinds = [f.get("algorithm.kind", missing) for f in flats]
    keys = []
    for key in order:
        if any(key == p or (p.endswith(".") and key.startswith(p)) for p in NOT_PARAMETERS):
            if key != "algorithm.kind" or all(
                    k == a for k, a in zip(kinds, algorithms, strict=True)):
                continue
        values = [json.dumps(f[key], sort_keys=True, default=str) if key in f else None
                  for f in flats]
        if all(key in f for f in flats):
            differs = len(set(values)) > 1
        else:
            by_algorithm: dict = {}
            for algorithm, value in zip(algorithms, values, strict=True):
                by_algorithm.setdefault(str(algorithm), set()).add(value)
            differs = any(len(v) > 1 for v in by_algorithm.values())
        if differs:
            keys.append(key)
    return keys
