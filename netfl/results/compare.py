"""The comparison's numbers: groups, tables of means with 95% intervals, paired differences
against a baseline group, seed bands and time breakdowns.

Pure functions on a :class:`~netfl.results.collect.Collection`; writing the files is
:mod:`netfl.results.report`'s job.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd

from netfl.errors import NetflError
from netfl.results.collect import SEED, Collection, RunRecord
from netfl.results.intervals import (
    Interval,
    format_interval,
    paired_difference,
    t_interval,
    t_quantile,
)
from netfl.sim.clock import format_bytes, format_duration

METRICS = ("final_accuracy", "best_accuracy", "time_to_target_s", "bytes_to_target",
           "bits_to_target", "rounds_to_target", "local_steps_to_target", "sim_time_s", "rounds",
           "bytes_total", "handovers",
           "handovers_failed", "transfers_failed", "uploads_lost", "dropouts",
           # the world's own counts (road and satellite worlds), where summary.json has them
           "vehicle_handovers", "downloads_lost", "coverage_cuts", "satellite_handovers")
TO_TARGET = ("time_to_target_s", "bytes_to_target", "bits_to_target", "rounds_to_target",
             "local_steps_to_target")
CATEGORIES = ("compute", "client-edge", "edge-edge", "edge-cloud", "client-cloud",
              "other transfers", "failed transfers", "cancelled transfers", "waiting")
LOST_TIME = (("failed_transfer_time_s_by_tag", "failed transfers"),
             ("cancelled_transfer_time_s_by_tag", "cancelled transfers"))
_TIERS = re.compile(r"(client|edge|cloud)->(client|edge|cloud)")


# ------------------------------------------------------------------------------- tables


def _show(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def group_columns(collection: Collection) -> list[str]:
    """``world`` (where the runs come from more than one: scenario name and world kind), then
    ``algorithm`` and the parameters that differ between runs of one world."""
    columns = ["algorithm", *collection.param_keys]
    if len({r.world for r in collection.runs}) > 1:
        columns.insert(0, "world")
    return columns


def _group_key(run: RunRecord, columns: list[str], written: bool = False) -> tuple:
    """The run's group: its resolved values, or (``written``) a sweep's values as written
    (``2 Mbps``, not 2e+06) where it swept that very key."""
    values = {"world": run.world, "algorithm": run.summary.get("algorithm")}
    if written:  # a swept whole section (a mapping) shows as the fields inside it instead
        values.update({c: run.written[c] for c in columns if c in run.written
                       and c not in values and not isinstance(run.written[c], dict)})
    return tuple(_show(values[c] if c in values else run.params.get(c)) for c in columns)


def groups(collection: Collection) -> dict[tuple, list[RunRecord]]:
    """The runs of each group (world, algorithm and parameters), groups in the order first
    seen, those of one world together (worlds in the order first seen)."""
    columns = group_columns(collection)
    worlds = list(dict.fromkeys(r.world for r in collection.runs))
    resolved: dict[tuple, list[RunRecord]] = {}
    for run in sorted(collection.runs, key=lambda r: worlds.index(r.world)):
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
                    f"group {label(key, columns, runs)!r} holds seed {seed} twice: {by_seed[seed]} "
                    f"and {run.path}; their scenarios agree, so one is probably a copy of the "
                    f"other (report them separately, or remove one)")
            by_seed[seed] = run.path
    return grouped


def label(key: tuple, columns: list[str], runs: list[RunRecord] | None = None) -> str:
    """A group's name in tables and legends: the sweep case's ``label:`` where its runs have
    one (prefixed by the world where there are several), else its algorithm (and world), then
    short name=value pairs of its parameters."""
    named = dict(zip(columns, key, strict=True))
    labels = {r.label for r in runs or []}
    if len(labels) == 1 and None not in labels:
        world = named.get("world")
        return f"{world} {labels.pop()}" if world else labels.pop()
    head = " ".join(v for c, v in named.items() if c in ("world", "algorithm") and v)
    rest = ", ".join(f"{c.rsplit('.', 1)[-1]}={v}" for c, v in named.items()
                     if c not in ("world", "algorithm") and v != "")
    return f"{head} ({rest})" if rest else head


def _number(value: object) -> float:
    if value is None or isinstance(value, bool | str | dict | list):
        return math.nan
    return float(value)


def comparison_table(collection: Collection) -> pd.DataFrame:
    """One row per group: its name (``group``; ``label``: its sweep label or ''), parameters,
    run count, runs expected (runs_expected: the runs plus the unfinished sweep runs of the
    same points), seeds, and for each metric the mean, sample std, the half-width of the 95%
    Student t interval of the mean (``_ci95``, NaN for one run) and the count of runs that have
    it (``_n``; a target not reached counts as missing)."""
    columns = group_columns(collection)
    rows = []
    for key, runs in groups(collection).items():
        row: dict = {"group": label(key, columns, runs),
                     "label": runs[0].label if len({r.label for r in runs}) == 1 else None}
        row.update(zip(columns, key, strict=True))
        row["label"] = row["label"] or ""
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
            interval = t_interval(present)
            row[f"{metric}_mean"] = interval.mean
            row[f"{metric}_std"] = present.std(ddof=1) if len(present) > 1 else math.nan
            row[f"{metric}_ci95"] = interval.half
            row[f"{metric}_n"] = interval.n
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(row: pd.Series, metric: str, fmt) -> str:
    """``mean ± half-width`` of the 95% interval; ``(n=k)`` where fewer runs than the group's
    have the metric (to-target cells say ``(k/n)`` instead); one run of several: ``mean (n=1,
    no interval)``; a group of one run: the mean alone (its runs cell says so)."""
    interval = Interval(row[f"{metric}_mean"], row[f"{metric}_ci95"], int(row[f"{metric}_n"]))
    if row["runs"] == 1:  # the runs cell says there is no interval, once for the row
        interval = Interval(interval.mean, 0.0, interval.n)
    return format_interval(interval, fmt, show_n=interval.n != row["runs"]
                           and math.isfinite(interval.half) and metric not in TO_TARGET)


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


MARKDOWN_COLUMNS = (("final accuracy", "final_accuracy", lambda v: f"{v:.3f}"),
                    ("time to target", "time_to_target_s", format_duration),
                    ("bytes to target", "bytes_to_target", format_bytes),
                    ("simulated time", "sim_time_s", format_duration),
                    ("hand-overs", "handovers", _count),
                    ("failed hand-overs", "handovers_failed", _count),
                    ("failed transfers", "transfers_failed", _count),
                    ("vehicle hand-overs", "vehicle_handovers", _count),
                    ("satellite hand-overs", "satellite_handovers", _count),
                    ("downloads lost", "downloads_lost", _count),
                    ("uploads lost", "uploads_lost", _count))
WORLD_COUNTS = ("vehicle_handovers", "satellite_handovers", "downloads_lost", "uploads_lost")


def _shown_metrics(table: pd.DataFrame, compact: bool) -> list[tuple]:
    """The columns of a table: every metric of MARKDOWN_COLUMNS but the world's own counts
    where no run has one above 0; compact, no count column that is zero throughout."""
    return [m for m in MARKDOWN_COLUMNS
            if (m[1] not in WORLD_COUNTS or table[f"{m[1]}_mean"].fillna(0).abs().sum() > 0)
            and (not compact or m[1] in TO_TARGET or m[1] in ("final_accuracy", "sim_time_s")
                 or table[f"{m[1]}_mean"].fillna(0).abs().sum() > 0)]


def table_cells(table: pd.DataFrame, columns: list[str], compact: bool = False
                ) -> tuple[list[str], list[list[str]]]:
    """The comparison as text: a header and one row of formatted cells per group, each metric
    as mean ± the half-width of its 95% interval. Compact (for a terminal): one ``group``
    column (the group's name), and no count column that is zero throughout. Not compact: the
    group's columns, headed by its name where a sweep case gave one (``label:``)."""
    metrics = _shown_metrics(table, compact)
    named = not compact and "label" in table and (table["label"].fillna("") != "").any()
    names = ["group"] if compact or named else []
    head = [*names, *([] if compact else columns), "runs",
            *(title for title, _, _ in metrics)]
    rows = []
    for _, row in table.iterrows():
        key = tuple(row[c] for c in columns)
        cells = [row["group"] if "group" in row else label(key, columns)] if names else []
        cells += [] if compact else [str(row[c]) for c in columns]
        cells.append((str(row["runs"]) if row["runs"] == row.get("runs_expected", row["runs"])
                      else f"{row['runs']} of {row['runs_expected']}")
                     + (" (no interval)" if row["runs"] == 1 else ""))
        for _title, metric, fmt in metrics:
            cell = _cell(row, metric, fmt)
            if metric in TO_TARGET:
                if pd.isna(row["target_accuracy"]) and row[f"{metric}_n"] == 0:
                    cell = "no target"
                elif row[f"{metric}_n"] == 1 and row["runs"] > 1:  # (k/n) says n
                    cell = f"{fmt(row[f'{metric}_mean'])} (1/{row['runs']}, no interval)"
                else:
                    cell = (f"{cell} ({row[f'{metric}_n']}/{row['runs']})"
                            if row[f"{metric}_n"] else f"not reached (0/{row['runs']})")
            cells.append(cell)
        rows.append(cells)
    return head, rows


# ------------------------------------------------------------------------------- paired


def _baselines(named: dict[tuple, str], worlds: dict[tuple, str], baseline: str | None,
               algorithms: dict[tuple, str]) -> dict[str, tuple]:
    """The baseline group of each world: its first group, or the one named ``baseline`` (its
    name, its name less the world, or its algorithm: the first such group)."""
    chosen: dict[str, tuple] = {}
    for world in dict.fromkeys(worlds.values()):
        keys = [k for k in named if worlds[k] == world]
        exact = [k for k in keys if baseline in (named[k], named[k].removeprefix(f"{world} "))]
        by_kind = [k for k in keys if algorithms[k] == baseline]
        if baseline is None or exact or by_kind:
            chosen[world] = (keys if baseline is None else exact or by_kind)[0]
    if baseline is not None and not chosen:
        raise NetflError(f"--baseline {baseline!r}: no such group; the groups are "
                         + ", ".join(repr(n) for n in named.values()))
    return chosen


def paired_table(collection: Collection, baseline: str | None = None) -> pd.DataFrame:
    """For each group but its world's baseline, and each metric: the mean of (group - baseline)
    over the seeds both have (every algorithm at one seed sees the same world and partition),
    the half-width of its paired-t 95% interval (``ci95``, NaN under two pairs), ``n`` pairs,
    ``low`` and ``high``. Worlds without a group matching ``baseline`` are left out.

    Raises:
        NetflError: ``baseline`` names no group of any world.
    """
    columns = group_columns(collection)
    grouped = groups(collection)
    named = {k: label(k, columns, runs) for k, runs in grouped.items()}
    worlds = {k: runs[0].world for k, runs in grouped.items()}
    algorithms = {k: str(runs[0].summary.get("algorithm")) for k, runs in grouped.items()}
    chosen = _baselines(named, worlds, baseline, algorithms)
    rows = []
    for key, runs in grouped.items():
        base = chosen.get(worlds[key])
        if base is None or base == key:
            continue
        for metric in METRICS:
            by_seed = [{r.summary.get(SEED): _number(r.summary.get(metric)) for r in group}
                       for group in (runs, grouped[base])]
            diff = paired_difference(*by_seed)
            rows.append({"group": named[key], "baseline": named[base], "metric": metric,
                         "mean": diff.mean, "ci95": diff.half, "n": diff.n,
                         "low": diff.low, "high": diff.high})
    return pd.DataFrame(rows, columns=["group", "baseline", "metric", "mean", "ci95", "n",
                                       "low", "high"])


def paired_cells(paired: pd.DataFrame, table: pd.DataFrame, bold: bool = False
                 ) -> tuple[list[str], list[list[str]]]:
    """The paired differences as text: one row per group, a column per metric shown in the
    terminal table (``table``: comparison_table's), each ``+mean ± half (n=pairs)``; ``bold``
    marks (Markdown) an interval that excludes 0."""
    metrics = [m for m in _shown_metrics(table, compact=True) if m[1] in set(paired["metric"])]
    head = ["group", "baseline", *(f"Δ {title}" for title, _, _ in metrics)]
    rows = []
    for (group, base), frame in paired.groupby(["group", "baseline"], sort=False):
        by_metric = frame.set_index("metric")
        cells = [group, base]
        for _title, metric, fmt in metrics:
            item = by_metric.loc[metric]
            diff = Interval(item["mean"], item["ci95"], int(item["n"]))
            text = format_interval(diff, fmt, sign=True, show_n=math.isfinite(diff.half))
            cells.append(f"**{text}**" if bold and diff.excludes_zero else text)
        rows.append(cells)
    return head, rows


def markdown_table(table: pd.DataFrame, columns: list[str]) -> str:
    head, rows = table_cells(table, columns)
    return _markdown_rows(head, rows)


def _markdown_rows(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- curves


def band(frames: list[pd.DataFrame], x: str) -> pd.DataFrame:
    """Accuracy of several seeds on one x grid (the union of their evaluation points).

    Each run's accuracy is a step function of x (its last evaluation at or before x); after
    its last evaluation it holds its final accuracy (the model it ended with). Returns x, mean,
    std (ddof=1, NaN for one run), ci95 (the half-width of the mean's 95% Student t interval,
    NaN for one run) and n (runs evaluated by then).
    """
    frames = [f[[x, "accuracy"]].dropna().sort_values(x, kind="stable") for f in frames]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=[x, "mean", "std", "ci95", "n"])
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
    quantile = {k: t_quantile(k - 1) for k in set(n.tolist()) if k > 1}
    ci95 = np.array([quantile[k] * s / np.sqrt(k) if k > 1 else np.nan
                     for k, s in zip(n.tolist(), std, strict=True)])
    return pd.DataFrame({x: grid, "mean": mean, "std": std, "ci95": ci95, "n": n})


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
    failed transfers, cancelled transfers: the time of attempts that failed or were cancelled.
    waiting: client-seconds present (clients x simulated time; on a road world, vehicle-seconds
    in coverage) less client training and client transfers (delivered, failed, cancelled),
    floored at 0.
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
    for key, category in LOST_TIME:
        for tag, seconds in (summary.get(key) or {}).items():
            out[category] += seconds
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
        rows[label(key, columns, runs)] = parts.mean()
    table = pd.DataFrame(rows).T
    return table[[c for c in CATEGORIES if c in table and table[c].abs().sum() > 0]]
