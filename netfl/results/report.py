"""Comparison reports over runs and sweeps (``netfl report DIR...``).

Runs are grouped by algorithm and parameters; the seeds of a group are summarized as mean and
sample standard deviation (ddof=1; none for a single run). A group's parameters are the fields of
the runs' resolved scenarios (scenario.yaml) that differ between them, seed, name and output
aside, sweep runs and other runs alike (so a sweep's fixed ``--set`` counts as much as its grid).
A field that only some runs have (the parameters of another algorithm) is a parameter where it
differs between runs of the same algorithm. The scenario name is a column where the runs have
more than one. A group that holds the same seed twice is refused: its runs differ in something
the scenarios do not show, or one run was copied.

Time to target and bytes to target are averaged over the runs that reached the target, and the
table says how many did. The time breakdown sums per-node times, which overlap in simulated
time: see docs/sweeps.md for what each bar means.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from netfl.errors import NetflError
from netfl.results.store import SUMMARY, is_complete
from netfl.sim.clock import format_bytes, format_duration

SEED = "seed"
NOT_PARAMETERS = ("seed", "name", "output.", "algorithm.kind")  # kind: the algorithm column
METRICS = ("final_accuracy", "best_accuracy", "time_to_target_s", "bytes_to_target",
           "rounds_to_target", "sim_time_s", "rounds", "bytes_total", "handovers",
           "handovers_failed", "transfers_failed", "uploads_lost", "dropouts")
TO_TARGET = ("time_to_target_s", "bytes_to_target", "rounds_to_target")
CATEGORIES = ("compute", "client-edge", "edge-edge", "edge-cloud", "client-cloud",
              "other transfers", "waiting")
_TIERS = re.compile(r"(client|edge|cloud)->(client|edge|cloud)")
REPORT_MARK = "comparison.md"


@dataclass
class RunRecord:
    """One complete run: its folder, summary and comparison parameters (seed aside)."""

    path: Path
    summary: dict
    params: dict = field(default_factory=dict)
    point: str | None = None  # a sweep run's sweep and parameters less seed (see _point)
    written: dict = field(default_factory=dict)  # a sweep run's parameters as written
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
    elif is_complete(path):
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
                runs.append(RunRecord(run_dir, _summary(run_dir),
                                      point=_point(sweep, point["params"]),
                                      written=point["params"]))
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
    keys = _varying(flats, [run.summary.get("algorithm") for run in runs])
    for run, flat in zip(runs, flats, strict=True):
        run.params = {k: flat.get(k) for k in keys}
    return Collection(runs, keys, unfinished, sweeps, duplicates)


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


# ------------------------------------------------------------------------------- tables


def plural(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``, ``0 runs``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _show(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def group_columns(collection: Collection) -> list[str]:
    columns = ["algorithm", *collection.param_keys]
    if len({r.summary.get("name") for r in collection.runs}) > 1:
        columns.insert(0, "scenario")
    return columns


def _group_key(run: RunRecord, columns: list[str], written: bool = False) -> tuple:
    """The run's group: its resolved values, or (``written``) a sweep's values as written
    (``2 Mbps``, not 2e+06) where it swept that very key."""
    values = {"scenario": run.summary.get("name"), "algorithm": run.summary.get("algorithm")}
    if written:
        values.update({c: run.written[c] for c in columns if c in run.written})
    return tuple(_show(values[c] if c in values else run.params.get(c)) for c in columns)


def groups(collection: Collection) -> dict[tuple, list[RunRecord]]:
    """The runs of each group (algorithm and parameters), groups in the order first seen."""
    columns = group_columns(collection)
    resolved: dict[tuple, list[RunRecord]] = {}
    for run in collection.runs:
        resolved.setdefault(_group_key(run, columns), []).append(run)
    grouped: dict[tuple, list[RunRecord]] = {}
    for key, runs in resolved.items():  # shown as written where that names groups apart
        shown = _group_key(runs[0], columns, written=True)
        grouped[key if shown in grouped or shown in resolved and shown != key else shown] = runs
    for key, runs in grouped.items():
        by_seed: dict = {}
        for run in runs:
            seed = run.summary.get(SEED)
            if seed in by_seed:
                raise NetflError(
                    f"group {label(key, columns)!r} holds seed {seed} twice: {by_seed[seed]} "
                    f"and {run.path}; their scenarios agree, so one is probably a copy of the "
                    f"other (report them separately, or remove one)")
            by_seed[seed] = run.path
    return grouped


def label(key: tuple, columns: list[str]) -> str:
    """A group's legend label: its algorithm (and scenario), then short name=value pairs."""
    named = dict(zip(columns, key, strict=True))
    head = " ".join(v for c, v in named.items() if c in ("scenario", "algorithm") and v)
    rest = ", ".join(f"{c.rsplit('.', 1)[-1]}={v}" for c, v in named.items()
                     if c not in ("scenario", "algorithm") and v != "")
    return f"{head} ({rest})" if rest else head


def _number(value: object) -> float:
    if value is None or isinstance(value, bool | str | dict | list):
        return math.nan
    return float(value)


def comparison_table(collection: Collection) -> pd.DataFrame:
    """One row per group: its parameters, run count, runs expected (runs_expected: the runs
    plus the unfinished sweep runs of the same points), seeds, and for each metric the mean,
    sample std and count of runs that have it (a target not reached counts as missing)."""
    columns = group_columns(collection)
    rows = []
    for key, runs in groups(collection).items():
        row: dict = dict(zip(columns, key, strict=True))
        row["runs"] = len(runs)
        points = {r.point for r in runs if r.point is not None}
        row["runs_expected"] = len(runs) + sum(u["point"] in points
                                               for u in collection.unfinished)
        row["seeds"] = " ".join(str(r.summary.get(SEED)) for r in runs)
        targets = {r.summary.get("target_accuracy") for r in runs}
        row["target_accuracy"] = targets.pop() if len(targets) == 1 else math.nan
        for metric in METRICS:
            values = np.array([_number(r.summary.get(metric)) for r in runs])
            present = values[~np.isnan(values)]
            row[f"{metric}_mean"] = present.mean() if len(present) else math.nan
            row[f"{metric}_std"] = present.std(ddof=1) if len(present) > 1 else math.nan
            row[f"{metric}_n"] = len(present)
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(row: pd.Series, metric: str, fmt) -> str:
    mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
    if np.isnan(mean):
        return "-"
    if np.isnan(std) or std == 0:
        return fmt(mean)
    shown = fmt(std)
    if shown == fmt(0.0):  # a spread too small for the format: say it, do not print 0
        shown = f"{std:.1e}"
    return f"{fmt(mean)} ± {shown}"


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


MARKDOWN_COLUMNS = (("final accuracy", "final_accuracy", lambda v: f"{v:.3f}"),
                    ("time to target", "time_to_target_s", format_duration),
                    ("bytes to target", "bytes_to_target", format_bytes),
                    ("simulated time", "sim_time_s", format_duration),
                    ("hand-overs", "handovers", _count),
                    ("failed hand-overs", "handovers_failed", _count),
                    ("failed transfers", "transfers_failed", _count))


def table_cells(table: pd.DataFrame, columns: list[str], compact: bool = False
                ) -> tuple[list[str], list[list[str]]]:
    """The comparison as text: a header and one row of formatted cells per group. Compact (for
    a terminal): one ``group`` label column, and no count column that is zero throughout."""
    metrics = [m for m in MARKDOWN_COLUMNS if not compact or m[1] in TO_TARGET
               or m[1] in ("final_accuracy", "sim_time_s")
               or table[f"{m[1]}_mean"].fillna(0).abs().sum() > 0]
    head = [*(["group"] if compact else columns), "runs", *(title for title, _, _ in metrics)]
    rows = []
    for _, row in table.iterrows():
        key = tuple(row[c] for c in columns)
        cells = [label(key, columns)] if compact else [str(row[c]) for c in columns]
        cells.append(str(row["runs"]) if row["runs"] == row.get("runs_expected", row["runs"])
                     else f"{row['runs']} of {row['runs_expected']}")
        for _title, metric, fmt in metrics:
            cell = _cell(row, metric, fmt)
            if metric in TO_TARGET:
                if pd.isna(row["target_accuracy"]) and row[f"{metric}_n"] == 0:
                    cell = "no target"
                else:
                    cell = (f"{cell} ({row[f'{metric}_n']}/{row['runs']})"
                            if row[f"{metric}_n"] else f"not reached (0/{row['runs']})")
            cells.append(cell)
        rows.append(cells)
    return head, rows


def markdown_table(table: pd.DataFrame, columns: list[str]) -> str:
    head, rows = table_cells(table, columns)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- curves


def band(frames: list[pd.DataFrame], x: str) -> pd.DataFrame:
    """Accuracy of several seeds on one x grid (the union of their evaluation points).

    Each run's accuracy is a step function of x (its last evaluation at or before x); after
    its last evaluation it holds its final accuracy (the model it ended with). Returns x, mean,
    std (ddof=1, NaN for one run) and n (runs evaluated by then).
    """
    frames = [f[[x, "accuracy"]].dropna().sort_values(x, kind="stable") for f in frames]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=[x, "mean", "std", "n"])
    grid = np.unique(np.concatenate([f[x].to_numpy(dtype=float) for f in frames]))
    values = np.full((len(frames), len(grid)), np.nan)
    for i, frame in enumerate(frames):
        xs, ys = frame[x].to_numpy(dtype=float), frame["accuracy"].to_numpy(dtype=float)
        at = np.searchsorted(xs, grid, side="right") - 1
        values[i] = np.where(at >= 0, ys[np.clip(at, 0, None)], np.nan)
    n = (~np.isnan(values)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(values, axis=0)
        std = (np.nanstd(values, axis=0, ddof=1) if len(frames) > 1
               else np.full(len(grid), np.nan))
    std = np.where(n > 1, std, np.nan)
    return pd.DataFrame({x: grid, "mean": mean, "std": std, "n": n})


def classify_tag(tag: str) -> str:
    """The breakdown category of a transfer tag, by the tiers of its two ends."""
    match = _TIERS.search(tag)
    if not match:
        return "other transfers"
    ends = {match.group(1), match.group(2)}
    return {frozenset({"client", "edge"}): "client-edge", frozenset({"edge"}): "edge-edge",
            frozenset({"edge", "cloud"}): "edge-cloud",
            frozenset({"client", "cloud"}): "client-cloud"}.get(frozenset(ends),
                                                                "other transfers")


def time_breakdown(summary: dict) -> dict[str, float]:
    """Summed simulated node-seconds of one run by category (see docs/sweeps.md).

    compute: training and aggregation on every tier. client-edge, edge-edge, edge-cloud,
    client-cloud, other transfers: durations of delivered transfers, by the tiers of their ends.
    waiting: client-seconds present (clients x simulated time; on a road world, vehicle-seconds
    in coverage) less client training and client transfers, floored at 0.
    """
    compute_by_tier = summary.get("compute_time_s_by_tier") or {}
    out = dict.fromkeys(CATEGORIES, 0.0)
    out["compute"] = (sum(compute_by_tier.values())
                      + sum((summary.get("aggregation_time_s_by_tier") or {}).values()))
    client_transfers = 0.0
    for tag, seconds in (summary.get("transfer_time_s_by_tag") or {}).items():
        out[classify_tag(tag)] += seconds
        match = _TIERS.search(tag)
        if match and "client" in match.groups():
            client_transfers += seconds
    load = summary.get("load_by_rsu")
    if isinstance(load, dict) and load:
        present = sum(v.get("vehicle_seconds", 0.0) for v in load.values())
    else:
        present = (summary.get("clients") or 0) * (summary.get("sim_time_s") or 0.0)
    out["waiting"] = max(0.0, present - compute_by_tier.get("client", 0.0) - client_transfers)
    return out


def breakdown_table(collection: Collection) -> pd.DataFrame:
    """Mean node-seconds per category for each group (rows labelled as in the plots)."""
    columns = group_columns(collection)
    rows = {}
    for key, runs in groups(collection).items():
        parts = pd.DataFrame([time_breakdown(r.summary) for r in runs])
        rows[label(key, columns)] = parts.mean()
    table = pd.DataFrame(rows).T
    return table[[c for c in CATEGORIES if c in table and table[c].abs().sum() > 0]]


# ------------------------------------------------------------------------------- writing


@dataclass
class Report:
    out_dir: Path
    table: pd.DataFrame
    breakdown: pd.DataFrame
    markdown: str
    collection: Collection
    files: list[Path]


def default_out_dir(paths: list[Path]) -> Path:
    """``<sweep>/report`` for one sweep folder; ``report`` here otherwise."""
    if len(paths) == 1 and (Path(paths[0]) / "sweep.json").is_file():
        return Path(paths[0]) / "report"
    return Path("report")


def write_report(paths: list[str | Path], out_dir: str | Path | None = None) -> Report:
    """Compare the runs under ``paths``; write comparison.md/.csv, runs.csv, time_breakdown.csv
    and the plots into ``out_dir``, replacing an earlier report there as a whole."""
    from netfl.results.plots import plot_bands, plot_time_breakdown

    paths = [Path(p) for p in paths]
    collection = collect(paths)
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(paths)
    if out_dir.is_file():
        raise NetflError(f"{out_dir}: a file, not a folder; choose another --out")
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / REPORT_MARK).is_file():
        raise NetflError(f"{out_dir}: exists and is not a netfl report; choose another --out")
    columns = group_columns(collection)
    table = comparison_table(collection)
    breakdown = breakdown_table(collection)
    grouped = groups(collection)
    targets = {r.summary.get("target_accuracy") for r in collection.runs}
    target = targets.pop() if len(targets) == 1 else None
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        table.to_csv(tmp / "comparison.csv", index=False)
        breakdown.rename_axis("group").to_csv(tmp / "time_breakdown.csv")
        _runs_table(collection, columns).to_csv(tmp / "runs.csv", index=False)
        for x, name, what in (("sim_time_s", "accuracy_vs_time.png", "simulated time"),
                              ("bytes_total", "accuracy_vs_bytes.png", "bytes delivered")):
            curves = {label(k, columns): band([r.curve(x) for r in runs], x)
                      for k, runs in grouped.items()}
            plot_bands(curves, x, tmp / name, f"accuracy against {what} (mean ± std over "
                                              f"seeds)", target)
        plot_time_breakdown(breakdown, tmp / "time_breakdown.png",
                            "node-seconds by category, mean per run (summed over nodes "
                            "and transfers, which overlap: not simulated time)")
        markdown = _markdown(collection, table, breakdown, columns)
        (tmp / REPORT_MARK).write_text(markdown, encoding="utf-8")
        _replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    files = sorted(out_dir.iterdir())
    return Report(out_dir, table, breakdown, markdown, collection, files)


def _runs_table(collection: Collection, columns: list[str]) -> pd.DataFrame:
    rows = []
    for run in collection.runs:
        row = dict(zip(columns, _group_key(run, columns, written=True), strict=True))
        row[SEED] = run.summary.get(SEED)
        row.update({m: run.summary.get(m) for m in METRICS})
        row.update({f"time_{k}_s": v for k, v in time_breakdown(run.summary).items()})
        row["path"] = str(run.path)
        rows.append(row)
    return pd.DataFrame(rows)


def _replace(tmp: Path, out_dir: Path) -> None:
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    if out_dir.exists():
        os.rename(out_dir, old)
    os.rename(tmp, out_dir)
    shutil.rmtree(old, ignore_errors=True)


def _markdown(collection: Collection, table: pd.DataFrame, breakdown: pd.DataFrame,
              columns: list[str]) -> str:
    runs = collection.runs
    banner = ([f"**{collection.incomplete}.** The sweep runs listed under [Runs that did not "
               f"finish](#runs-that-did-not-finish) are missing from every number below; "
               f"'k of n' in the runs column counts a group's finished runs of those "
               f"expected.", ""] if collection.incomplete else [])
    lines = [*banner, "# Comparison", "",
             f"{plural(len(runs), 'run')} in {plural(len(table), 'group')}, grouped by "
             f"{', '.join(columns)}. "
             "Each cell is the mean ± sample standard deviation over the group's runs (its "
             "seeds). Time and bytes to target average the runs that reached the target; "
             "(k/n) says how many did."
             + (f" {plural(collection.duplicates, 'run')} found in more than one sweep "
                f"(the same run id: the same resolved scenario) counted once."
                if collection.duplicates else ""), "",
             markdown_table(table, columns), "",
             "![accuracy against simulated time](accuracy_vs_time.png)", "",
             "![accuracy against bytes delivered](accuracy_vs_bytes.png)", "",
             "## Node-seconds by category", "",
             "Mean node-seconds per run, summed over nodes and transfers (they overlap in "
             "time, so a row does not add up to the simulated time). waiting: client-seconds "
             "present but neither training nor transferring. See docs/sweeps.md.", "",
             "| group | " + " | ".join(breakdown.columns) + " |",
             "|---|" + "---|" * len(breakdown.columns)]
    for name, row in breakdown.iterrows():
        lines.append(f"| {name} | " + " | ".join(format_duration(v) for v in row) + " |")
    lines += ["", "![node-seconds by category](time_breakdown.png)", ""]
    if collection.unfinished:
        lines += ["## Runs that did not finish", "",
                  "| run | status | error | log |", "|---|---|---|---|"]
        for item in collection.unfinished:
            lines.append(f"| {item['run_id']} | {item['status']} | "
                         f"{item['error'].replace('|', '/')} | {item['log']} |")
        lines.append("")
    sources = sorted({str(r.path.parent) for r in runs})
    lines += ["## Runs", "", f"From {', '.join(sources)}; every run is listed in runs.csv.", ""]
    return "\n".join(lines)
