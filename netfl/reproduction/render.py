"""Tables, verdicts, figures and the network's share of each round, as markdown, from results.

Each study renders to one markdown block: the paper's setting line, one table (rows: arm x grid
point; columns: each metric as mean ± 95% interval over the seeds, the paper's value where the
plan gives it), each arm's median round with its critical path's largest parts and its busiest
channel (why a round took as long as it did), and figures (accuracy against simulated time or
bits with seed bands, per grid point; crossover plots of a metric against a swept key).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from netfl.reproduction.causes import arm_rounds, arm_traffic
from netfl.reproduction.cells import StudyResults
from netfl.reproduction.execute import ACCURACY_METRICS, slug
from netfl.reproduction.plan import Figure, Finding, Study
from netfl.reproduction.verdicts import (
    NOT_JUDGED,
    NOT_RUN,
    UNJUDGED,
    Censored,
    Verdict,
    across,
    comparable,
    less,
    lowest,
    within,
)
from netfl.results.bands import plot_bands
from netfl.results.compare import band
from netfl.results.intervals import Interval, format_interval, t_interval
from netfl.results.plots import wrap_title
from netfl.sim.clock import format_bits, format_bytes, format_duration, parse_quantity

TO_TARGET = ("bits_to_target", "bytes_to_target", "time_to_target_s", "rounds_to_target",
             "local_steps_to_target", "cost_to_target", "wire_bytes_to_target",
             "hop_bits_to_target")


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or float(value).is_integer() else f"{value:.1f}"


FORMATS = {"bits_to_target": ("bits to target", format_bits),
           "hop_bits_to_target": ("bits x hops to target", format_bits),
           "bytes_to_target": ("bytes to target", format_bytes),
           "wire_bytes_to_target": ("wire bytes to target", format_bytes),
           "time_to_target_s": ("time to target", format_duration),
           "sim_time_s": ("simulated time", format_duration),
           "rounds_to_target": ("rounds to target", _count),
           "rounds": ("rounds", _count),
           "local_steps_to_target": ("local steps to target", _count),
           "cost_to_target": ("eq. (5) cost to target", lambda v: f"{v:,.0f} s"),
           "final_accuracy": ("final accuracy", lambda v: f"{v:.4f}"),
           "best_accuracy": ("best accuracy", lambda v: f"{v:.4f}")}


def metric_cell(values: dict[int, float | Censored | None], metric: str) -> str:
    """Mean ± 95% interval over the seeds (one value: the value alone, which the table's
    caption explains once, not in every cell). For a to-target metric some of whose runs did not
    reach the target no mean can be formed: the cell shows a lower bound, the mean with those runs
    at what they had spent when they stopped ("≥ x"), and how many reached it; 'not reached'
    where none did."""
    _label, fmt = FORMATS[metric]
    reached = [v for v in values.values() if v is not None and not isinstance(v, Censored)]
    if not values:
        return "not run"
    if not reached:
        return f"not reached (0/{len(values)})" if metric in TO_TARGET else "-"
    if len(reached) < len(values):
        bounds = [v.at_least if isinstance(v, Censored) else v for v in values.values()]
        known = [b for b in bounds if b is not None]
        share = f"{len(reached)}/{len(values)} reached"
        if len(known) < len(bounds):  # what an unreached run had spent is not known
            return share
        return f"≥ {fmt(sum(known) / len(known))} ({share})"
    return fmt(reached[0]) if len(reached) == 1 else format_interval(t_interval(reached), fmt)


def _paper_cell(study: Study, arm: str, point: str) -> str:
    if study.paper is None:
        return ""
    value = study.paper.values.get(arm, {}).get(point)
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    _label, fmt = FORMATS.get(study.paper.metric, ("", lambda v: f"{v:g}"))
    return f"{value:g} {study.paper.unit}".strip() if study.paper.unit else fmt(value)


def study_table(results: StudyResults) -> str:
    """The study's table: arm x point rows, metric columns (and the paper's column)."""
    study = results.study
    keys = (["setting"] if study.points else []) + list(study.grid)
    head = ["arm", *keys, "runs", *[FORMATS[m][0] for m in study.metrics]]
    if study.paper is not None:
        head.append(f"paper: {FORMATS[study.paper.metric][0]}"
                    + (f" ({study.paper.unit})" if study.paper.unit else ""))
    rows = []
    metrics = {m: results.judged_values(m) for m in study.metrics}
    for arm in results.arms:
        by_point = results.runs.get(arm, {})
        points = list(dict.fromkeys([*results.planned.get(arm, []), *by_point])) or [""]
        for point in points:
            runs = by_point.get(point, [])
            cells = [arm, *(point.split(", ") if keys and point else [""] * len(keys)),
                     str(len(runs))]
            for metric in study.metrics:
                cells.append(metric_cell(metrics[metric].get(arm, {}).get(point, {}), metric))
            if study.paper is not None:
                cells.append(_paper_cell(study, arm, point))
            rows.append(cells)
    return markdown_rows(head, rows)


def markdown_rows(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in rows]
    return "\n".join(lines)


def round_table(results: StudyResults) -> str:
    """Per arm, and per setting where the study has several (a setting's rounds can differ by
    orders of magnitude: a rate sweep), over its runs: the median round's duration, its
    critical path's two largest parts (and, on a road under a constellation, its transfers'
    time by hop), and the busiest channel with its utilisation, from summary.json."""
    settings = len(results.points) > 1
    rows, hops = [], []
    for arm in results.arms:
        for point in results.points if settings else [None]:
            rounds = arm_rounds(results, arm, point)
            if rounds is None:
                continue
            rows.append([arm, *([point] if settings else []), format_duration(rounds.median_s),
                         rounds.parts_text() or "-", rounds.channel])
            hops.append(rounds.hops_text() or "-")
    if not rows:
        return ""
    by_hop = any(text != "-" for text in hops)  # a satellite backhaul: where the time went
    if by_hop:
        rows = [[*row[:-1], hop, row[-1]] for row, hop in zip(rows, hops, strict=True)]
    return markdown_rows(["arm", *(["setting"] if settings else []), "median round",
                          "its largest parts (p50)",
                          *(["its transfers by hop (p50)"] if by_hop else []),
                          "busiest channel (utilisation)"], rows)


TIME_METRICS = ("time_to_target_s", "sim_time_s")
BITS_METRICS = ("bits_to_target", "bytes_to_target")


def finding_verdict(finding: Finding, results: StudyResults) -> Verdict:
    """The finding's rule applied to the study's per-seed results; the reason adds, for a claim
    about time, each compared arm's rounds (how many, how long, the critical path's largest
    parts), and for a claim about bits, its rounds and bits per round with the traffic that
    carried most of them, over all its runs."""
    verdict = _rule_verdict(finding, results)
    metric = finding.rule.metric
    if metric not in TIME_METRICS + BITS_METRICS or verdict.verdict in UNJUDGED:
        return verdict
    others = [a for a in finding.compared(list(results.arms)) if a != finding.rule.arm]
    arms = [finding.rule.arm] + ([finding.rule.than] if finding.rule.than else others)
    if metric in TIME_METRICS:
        why = [f"{arm}: {rounds.text()}" for arm in arms
               if (rounds := arm_rounds(results, arm)) is not None]
    else:
        why = [f"{arm}: {traffic}" for arm in arms
               if (traffic := arm_traffic(results, arm)) is not None]
    if not why:
        return verdict
    pooled = (f"medians over the runs of all {len(results.points)} settings: "
              if len(results.points) > 1 else "")
    return Verdict(verdict.verdict, verdict.reason, verdict.comparisons,
                   why=pooled + "; ".join(why))


def _rule_verdict(finding: Finding, results: StudyResults) -> Verdict:
    rule = finding.rule
    arms = finding.compared(list(results.arms))
    waiting = [f"{arm} {results.done(arm)} of {results.expected.get(arm, 0)}" for arm in arms
               if arm is not None and results.done(arm) < results.expected.get(arm, 0)]
    if waiting:  # judged only on every run the plan asks for
        return Verdict(NOT_RUN, f"runs done: {', '.join(waiting)}")
    unrun = [arm for arm in arms if arm in results.study.reading_arms()
             and not results.runs.get(arm)]
    if unrun:  # a reading's arms not run here (--quick): not judged on the others alone
        return Verdict(NOT_RUN, f"not run here: {', '.join(unrun)}")
    stopped = [arm for arm in arms if rule.metric in ACCURACY_METRICS and any(
        run.row.get("stop_reason") == "target_accuracy"
        for runs in results.runs.get(arm, {}).values() for run in runs)]
    if stopped:  # each ended at about the target: nothing to tell the arms apart by
        return Verdict(NOT_JUDGED, f"{', '.join(stopped)} stopped at the target, so "
                                   f"{rule.metric} is the target's")
    if finding.target is None:
        values = results.judged_values(rule.metric)
    else:
        values = results.values_at_accuracy(rule.metric, finding.target)
        if values is None:
            return Verdict(NOT_JUDGED, f"at {finding.target:g}: some run did not evaluate "
                                       "every update (eval_every: 1 is needed)")
    values = {arm: by_point for arm, by_point in values.items() if by_point and arm in arms}
    if rule.kind == "lowest":
        return lowest(values, rule.arm, rule.higher_is_better)
    if rule.kind == "comparable":
        return comparable(values, rule.arm, rule.tolerance, rule.higher_is_better)
    if rule.kind == "across":
        return across(values, rule.arm, rule.settings, rule.higher_is_better)
    if rule.kind == "within":
        return within(values, rule.arm, rule.than, rule.tolerance)
    return less(values, rule.arm, rule.than, rule.higher_is_better,
                rule.at_least if rule.kind == "ratio" else None)


def claim_text(finding: Finding) -> str:
    """A finding's claim, with the reading it is judged under where there is one."""
    reading = f" — *reading: {finding.reading}*" if finding.reading else ""
    target = f" — *at test accuracy {finding.target:g}*" if finding.target is not None else ""
    return finding.claim + reading + target


def verdict_rows(findings: list[tuple[Finding, Verdict]]) -> str:
    rows = [[claim_text(f) + (f" ({f.source})" if f.source else ""), f"**{v.verdict}**",
             v.explained + (f". {f.why}" if f.why and v.verdict not in UNJUDGED else "")]
            for f, v in findings]
    return markdown_rows(["finding", "verdict", "reason (measured)"], rows)


# ------------------------------------------------------------------------------- figures


def _curves(results: StudyResults, arm: str, point: str, x: str) -> pd.DataFrame:
    frames = []
    for run in results.runs.get(arm, {}).get(point, []):
        metrics = run.folder / "metrics.csv"
        if not metrics.is_file():
            continue
        frame = pd.read_csv(metrics)
        frame["bits_total"] = frame["bytes_total"] * 8.0
        if "cost_total" in frame and frame["cost_total"].notna().any():  # spent from round 1
            frame.loc[frame["round"] == 0, "cost_total"] = 0.0
        frames.append(frame)
    return band(frames, x)


# a curve figure's kind -> (the metrics column on its x axis, its caption's words)
CURVE_AXES = {"time": ("sim_time_s", "simulated time"), "bits": ("bits_total", "bits"),
              "cost": ("cost_total", "learning cost")}


def study_figures(results: StudyResults, folder: Path, prefix: str) -> list[tuple[str, Path]]:
    """Every figure the study asks for, written to ``folder``; (caption, path) each."""
    study = results.study
    written = []
    folder.mkdir(parents=True, exist_ok=True)
    target = _target(results)
    for spec in study.figure_specs():
        if spec.kind == "crossover":
            path = folder / f"{prefix}-crossover-{slug(spec.metric)}.png"
            if crossover_figure(results, spec, path):
                written.append((f"{FORMATS[spec.metric][0]} against {spec.x}", path))
            continue
        x, against = CURVE_AXES[spec.kind]
        for point in results.points:
            curves = {arm: curve for arm in results.arms
                      if results.runs.get(arm, {}).get(point)
                      and len(curve := _curves(results, arm, point, x))}
            if not curves:  # not run yet, or (cost) no run has a cost model
                continue
            name = f"{prefix}-{spec.kind}" + (f"-{slug(point)}" if point else "") + ".png"
            title = f"{study.title}" + (f" ({point})" if point else "")
            plot_bands(curves, x, folder / name, title, target)
            written.append((f"accuracy against {against}" + (f", {point}" if point else ""),
                            folder / name))
    return written


def _target(results: StudyResults) -> float | None:
    for by_point in results.runs.values():
        for runs in by_point.values():
            for run in runs:
                target = run.row.get("target_accuracy")
                if target is not None and not (isinstance(target, float) and math.isnan(target)):
                    return float(target)
    return None


def crossover_figure(results: StudyResults, spec: Figure, path: Path) -> bool:
    """``spec.metric`` (mean and 95% interval over seeds) against the grid key ``spec.x``, one
    line per arm; runs that did not reach the target are left out of a point (the plot marks
    points where no run reached it). False where there is nothing to plot."""
    from netfl.results.plots import _figure

    keys = (["setting"] if results.study.points else []) + list(results.study.grid)
    if spec.x not in keys:
        return False
    index = keys.index(spec.x)
    values = results.values(spec.metric)
    fig = _figure(figsize=(7.0, 4.2), dpi=110)
    ax = fig.subplots()
    plotted = False
    curves: dict[str, dict[float, float]] = {}
    for arm in results.arms:
        xs, means, halves, missing = [], [], [], []
        for point, seeds in values.get(arm, {}).items():
            x = _as_number(point.split(", ")[index])
            interval: Interval = t_interval([v for v in seeds.values() if v is not None])
            if interval.n == 0:
                missing.append(x)
                continue
            xs.append(x)
            means.append(interval.mean)
            halves.append(0.0 if math.isnan(interval.half) else interval.half)
        if not xs and not missing:
            continue
        order = sorted(range(len(xs)), key=lambda i: xs[i])
        curves[arm] = {xs[i]: means[i] for i in order}
        line = ax.errorbar([xs[i] for i in order], [means[i] for i in order],
                           yerr=[halves[i] for i in order], marker="o", capsize=3, label=arm)
        if missing:
            top = max(means) if means else 1.0
            ax.scatter(missing, [top * 1.05] * len(missing), marker="x",
                       color=line[0].get_color())
        plotted = True
    if not plotted:
        return False
    all_means = [m for curve in curves.values() for m in curve.values()]
    log_y = bool(all_means) and min(all_means) > 0 and max(all_means) / min(all_means) > 30
    pair = list(curves.values())[:2]
    for x in crossovers(*pair, log_x=spec.log_x, log_y=log_y) if len(pair) == 2 else []:
        ax.axvline(x, color="grey", linestyle="--", linewidth=1)
        where = f"{format_bits(x)}/s" if spec.x.endswith("rate") else f"{x:.3g}"  # a rate in bit/s
        ax.annotate(f"crossover\n~{where}", (x, 0.97), xycoords=("data", "axes fraction"),
                    ha="center", va="top", fontsize=8, color="grey")
    if spec.log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")  # times that span orders of magnitude
    ax.set_xlabel(spec.x + (" (bit/s)" if spec.x.endswith("rate") else ""))
    ax.set_ylabel(FORMATS[spec.metric][0] + (" (s)" if spec.metric.endswith("_s") else ""))
    ax.set_title(wrap_title(f"{results.study.title}: {FORMATS[spec.metric][0]} (x: not reached)",
                            width=90), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, bbox_inches="tight")
    return True


def crossovers(first: dict[float, float], second: dict[float, float],
               log_x: bool = True, log_y: bool = False) -> list[float]:
    """The x values where two curves (x -> mean) cross: between two neighbouring x that both
    have, where their difference changes sign, by linear interpolation on the axes as drawn
    (log x, and log y: the difference of logarithms, where the axes are logarithmic). Pure."""
    shared = sorted(set(first) & set(second))
    out = []

    def gap(x: float) -> float:
        if log_y:
            return math.log(first[x]) - math.log(second[x])
        return first[x] - second[x]

    for a, b in zip(shared, shared[1:], strict=False):
        da, db = gap(a), gap(b)
        if da == 0:
            out.append(a)
        elif da * db < 0:
            share = da / (da - db)
            if log_x and a > 0 and b > 0:
                out.append(math.exp(math.log(a) + share * (math.log(b) - math.log(a))))
            else:
                out.append(a + share * (b - a))
    if shared and first[shared[-1]] == second[shared[-1]] and shared[-1] not in out:
        out.append(shared[-1])
    return out


def _as_number(text: str) -> float:
    """A grid value as a number: plain, or a quantity with its unit ('10 Mbps' -> 1e7 bit/s)."""
    try:
        return float(text)
    except ValueError:
        for dimension in ("rate", "time", "size", "flops"):
            try:
                return float(parse_quantity(text, dimension))
            except (ValueError, KeyError):
                continue
        raise
