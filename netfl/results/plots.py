"""Plots of one run and of reports. The only module that imports matplotlib (its Agg canvas:
no screen). Every figure is a Figure outside pyplot, so threads may draw at once; the
``*_figure`` functions return it (the tests read its artists), the ``plot_*`` ones write it.

Accuracy is drawn as a step curve: between two evaluations the model held is the one last
evaluated, never a straight ramp. A category has one colour in every figure
(netfl.results.palette).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from netfl.results.palette import colour
from netfl.sim.clock import BIT_UNITS

TITLE_WIDTH = 72  # characters per title line: a 6.4-inch figure at the default font size


def wrap_title(title: str, width: int = TITLE_WIDTH) -> str:
    """``title`` broken into lines of at most ``width`` characters, so that a long study title
    is not cut off at the figure's edges."""
    return textwrap.fill(title, width)


def _figure(**kwargs):
    """A Figure outside pyplot (no global state: safe where several threads plot at once, as
    in a Dask worker with several threads), rendered by the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path, **kwargs) -> Path:
    fig.savefig(path, **kwargs)
    return Path(path)


def _time_axis(seconds: pd.Series) -> tuple[pd.Series, str]:
    span = float(seconds.max()) if len(seconds) else 0.0
    if span >= 3 * 3600:
        return seconds / 3600.0, "simulated time (h)"
    if span >= 3 * 60:
        return seconds / 60.0, "simulated time (min)"
    return seconds, "simulated time (s)"


def _bytes_axis(nbytes: pd.Series) -> tuple[pd.Series, str]:
    span = float(nbytes.max()) if len(nbytes) else 0.0
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if span >= scale:
            return nbytes / scale, f"bytes delivered ({unit})"
    return nbytes, "bytes delivered (B)"


def _bits_axis(nbits: pd.Series) -> tuple[pd.Series, str]:
    span = float(nbits.max()) if len(nbits) else 0.0
    for unit, scale in BIT_UNITS:
        if span >= scale:
            return nbits / scale, f"bits delivered ({unit})"
    return nbits, "bits delivered"


def _cost_axis(cost_s: pd.Series) -> tuple[pd.Series, str]:
    return cost_s, "learning cost, eq. (5) (client-seconds)"


def _energy_axis(joules: pd.Series) -> tuple[pd.Series, str]:
    span = float(joules.max()) if len(joules) else 0.0
    for scale, unit in ((3.6e6, "kWh"), (3600.0, "Wh"), (1.0, "J")):
        if span >= 3 * scale or scale == 1.0:
            return joules / scale, f"energy ({unit})"
    return joules, "energy (J)"


def plot_run(metrics: pd.DataFrame, out_dir: Path, title: str,
             target_accuracy: float | None = None) -> list[Path]:
    """Write accuracy_vs_time.png and accuracy_vs_bytes.png, accuracy_vs_cost.png where the
    algorithm charges eq. (5)'s cost, and accuracy_vs_energy.png where the run counts energy;
    return their paths."""
    names = [("sim_time_s", "accuracy_vs_time.png"), ("bytes_total", "accuracy_vs_bytes.png")]
    if "cost_total" in metrics and metrics["cost_total"].notna().any():
        names.append(("cost_total", "accuracy_vs_cost.png"))
    if "energy_j" in metrics:
        names.append(("energy_j", "accuracy_vs_energy.png"))
    return [_save(accuracy_figure(metrics, x_name, title, target_accuracy),
                  Path(out_dir) / filename) for x_name, filename in names]


def accuracy_figure(metrics: pd.DataFrame, x_name: str, title: str,
                    target_accuracy: float | None = None):
    """One run's accuracy against ``x_name`` (``sim_time_s``, ``bytes_total``, ``cost_total``):
    a step curve (the model last evaluated is held until the next evaluation), a marker at
    each evaluation."""
    fig = _figure(figsize=(6.4, 4.0), dpi=110)
    ax = fig.subplots()
    x, label = AXES[x_name](metrics[x_name])
    ax.step(x, metrics["accuracy"], where="post", marker="o", markersize=3, linewidth=1.5)
    if target_accuracy is not None:
        ax.axhline(target_accuracy, color="grey", linestyle="--", linewidth=1,
                   label=f"target {target_accuracy:g}")
        ax.legend(loc="lower right")
    _label(fig, ax, label, title)
    return fig


def _label(fig, ax, x_label: str, title: str) -> None:
    """Label an accuracy figure and lay it out."""
    ax.set_xlabel(x_label)
    ax.set_ylabel("test accuracy")
    ax.set_title(wrap_title(title))
    ax.grid(alpha=0.3)
    fig.tight_layout()


AXES = {"sim_time_s": _time_axis, "bytes_total": _bytes_axis, "bits_total": _bits_axis,
        "cost_total": _cost_axis, "energy_j": _energy_axis}


def plot_comparison(runs: dict[str, pd.DataFrame], x_name: str, path: Path,
                    title: str) -> Path:
    """One accuracy step curve per run (label -> its metrics table) against ``x_name``
    (``sim_time_s``, ``bytes_total`` or ``cost_total``), on one figure written to ``path``."""
    fig = _figure(figsize=(6.4, 4.0), dpi=110)
    ax = fig.subplots()
    label = x_name
    for name, metrics in runs.items():
        x, label = AXES[x_name](metrics[x_name])
        ax.step(x, metrics["accuracy"], where="post", linewidth=1.5, label=name)
    ax.legend(loc="lower right", fontsize=8)
    _label(fig, ax, label, title)
    return _save(fig, path)


def plot_partition(table: pd.DataFrame, out_dir: Path, title: str) -> Path:
    """partition.png: each client's label shares (left, clients grouped by edge server) and each
    edge server's (right), as heat maps; marginal bars show sample counts."""
    labels = [c for c in table.columns if c.startswith("label_")]
    per_client = table[labels].to_numpy(dtype=float)
    per_edge = table.groupby("edge_server", sort=False)[labels].sum()
    shares = per_client / per_client.sum(axis=1, keepdims=True).clip(min=1)
    edge_shares = per_edge.to_numpy() / per_edge.to_numpy().sum(axis=1, keepdims=True).clip(min=1)
    fig = _figure(figsize=(10, 4.2), dpi=110)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]})
    image = left.imshow(shares.T, aspect="auto", cmap="viridis", vmin=0, vmax=1,
                        interpolation="nearest")
    boundaries = table["edge_server"].ne(table["edge_server"].shift()).to_numpy().nonzero()[0]
    for b in boundaries[1:]:
        left.axvline(b - 0.5, color="white", linewidth=0.8)
    from matplotlib.ticker import MaxNLocator

    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel(f"client ({len(table)}; white lines separate edge servers)")
    left.set_ylabel("label")
    left.set_title("label share per client")
    right.imshow(edge_shares.T, aspect="auto", cmap="viridis", vmin=0, vmax=1,
                 interpolation="nearest")
    right.set_xticks(range(len(per_edge)), per_edge.index, rotation=90, fontsize=7)
    right.set_yticks([])
    right.set_title("per edge server")
    fig.colorbar(image, ax=[left, right], shrink=0.8, label="share of the node's samples")
    fig.suptitle(title)
    return _save(fig, Path(out_dir) / "partition.png")


MAX_VEHICLES_DRAWN = 5000  # past this, a stated sample spread over the vehicles' entry times


def plot_space_time(segments: list[tuple[tuple[float, float], tuple[float, float]]],
                    rsu_x: list[float], coverage_m: float, model_track: list[tuple[float, float]],
                    t_end_s: float, path: Path, title: str) -> Path:
    """space_time.png (``space_time_figure``), written to ``path``."""
    return _save(space_time_figure(segments, rsu_x, coverage_m, model_track, t_end_s, title),
                 path)


def space_time_figure(segments: list[tuple[tuple[float, float], tuple[float, float]]],
                      rsu_x: list[float], coverage_m: float,
                      model_track: list[tuple[float, float]], t_end_s: float, title: str):
    """Vehicles' x position against simulated time (thin lines, one straight segment per
    vehicle: ((t0, x0), (t1, x1)) in s and m), each RSU's position and coverage band, and the
    model's position (the RSU holding it) as a thick step line. Every vehicle is drawn, or past
    ``MAX_VEHICLES_DRAWN`` an even sample over their entry times; the figure says which."""
    from matplotlib.collections import LineCollection

    fig = _figure(figsize=(9, 5), dpi=110)
    ax = fig.subplots()
    for x in sorted(set(rsu_x)):  # on a lattice several RSUs share an x
        ax.axhspan(x - coverage_m, x + coverage_m, color="tab:blue", alpha=0.06, linewidth=0)
        ax.axhline(x, color="tab:blue", linewidth=0.6, linestyle=":")
    total = len(segments)
    drawn = sorted(segments, key=lambda seg: seg[0][0])
    if total > MAX_VEHICLES_DRAWN:
        drawn = [drawn[i] for i in np.linspace(0, total - 1, MAX_VEHICLES_DRAWN).astype(int)]
    ax.add_collection(LineCollection(drawn, colors="0.45", linewidths=0.5,
                                     alpha=min(0.7, max(0.1, 300 / max(len(drawn), 1))),
                                     label="vehicles"))
    shown = (f"all {total:,} vehicles shown" if len(drawn) == total else
             f"{len(drawn):,} of {total:,} vehicles shown (evenly over their entry times)")
    ax.text(0.01, 0.99, shown, transform=ax.transAxes, va="top", fontsize=8,
            bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0})
    if model_track:
        times = [t for t, _ in model_track] + [t_end_s]
        xs = [x for _, x in model_track] + [model_track[-1][1]]
        ax.step(times, xs, where="post", color=colour("model"), linewidth=2.2,
                label="model (at RSU)")
    ax.plot([], [], color="tab:blue", linestyle=":", label="RSU (band: coverage)")
    ax.set_xlim(0, max(t_end_s, 1e-9))
    ax.set_ylim(min(rsu_x) - coverage_m, max(rsu_x) + coverage_m)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("x position (m)")
    ax.set_title(wrap_title(title))
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_time_breakdown(table: pd.DataFrame, path: Path, title: str) -> Path:
    """``time_breakdown_figure``, written to ``path``."""
    return _save(time_breakdown_figure(table, title), path, bbox_inches="tight")


def time_breakdown_figure(table: pd.DataFrame, title: str):
    """Stacked horizontal bars: one per group (the table's index), one segment per column
    (node-seconds by category, each in its category's colour)."""
    height = 1.2 + 0.45 * max(1, len(table))
    fig = _figure(figsize=(8.0, height), dpi=110)
    ax = fig.subplots()
    peak = float(table.sum(axis=1).max()) if len(table) else 0.0
    scale, unit = ((3600.0, "h") if peak >= 3 * 3600 else (60.0, "min") if peak >= 3 * 60
                   else (1.0, "s"))
    left = pd.Series(0.0, index=table.index)
    labels = [str(i) for i in table.index]
    for column in table.columns:
        values = table[column] / scale
        ax.barh(labels, values, left=left, label=column, height=0.6, color=colour(column))
        left = left + values
    ax.invert_yaxis()  # first group on top
    ax.set_xlabel(f"node-time ({unit}), summed over nodes and transfers")
    ax.set_title(wrap_title(title))
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def plot_contact_chart(spans: dict[str, list[tuple[float, float]]],
                       holder: list[tuple[float, str]], t_end_s: float, path: Path,
                       title: str, start_holder: str | None = None,
                       eclipses: dict[str, list[tuple[float, float]]] | None = None,
                       seen_by: str = "a user") -> Path:
    """contact_chart.png (``contact_chart_figure``), written to ``path``."""
    return _save(contact_chart_figure(spans, holder, t_end_s, title, start_holder, eclipses,
                                      seen_by), path)


def contact_rows(spans: dict[str, list[tuple[float, float]]], t_end_s: float) -> list[str]:
    """The chart's satellites: those in view of some user by ``t_end_s``, by first rise."""
    return sorted((s for s in spans if spans[s] and spans[s][0][0] <= t_end_s),
                  key=lambda s: (spans[s][0][0], s))


def contact_chart_figure(spans: dict[str, list[tuple[float, float]]],
                         holder: list[tuple[float, str]], t_end_s: float, title: str,
                         start_holder: str | None = None,
                         eclipses: dict[str, list[tuple[float, float]]] | None = None,
                         seen_by: str = "a user"):
    """One row per satellite (those in view of some user by ``t_end_s``, in order of first
    rise; ``seen_by`` names who sees it: a user, or a ground station where satellites are the
    clients), a bar where it sees at least one user, a grey band where it is in the Earth's
    shadow (``eclipses``, where given), and the satellite holding the model as a thick step
    line across the rows: ``holder`` lists (time s, satellite) from the first holder on; where
    it is empty (no hand-over), ``start_holder``, when given, held the model all run long (a
    flat line on its row)."""
    rows = contact_rows(spans, t_end_s)
    row = {s: k for k, s in enumerate(rows)}
    fig = _figure(figsize=(9, max(3.0, min(12.0, 0.12 * len(rows) + 2))), dpi=110)
    ax = fig.subplots()
    shaded = False
    for s in rows:
        dark = [(a, min(b, t_end_s) - a) for a, b in (eclipses or {}).get(s, []) if a < t_end_s]
        if dark:
            ax.broken_barh(dark, (row[s] - 0.5, 1.0), color="0.55", alpha=0.35, linewidth=0,
                           label=None if shaded else "in the Earth's shadow")
            shaded = True
    for s in rows:
        bars = [(a, min(b, t_end_s) - a) for a, b in spans[s] if a <= t_end_s]
        ax.broken_barh(bars, (row[s] - 0.35, 0.7), color="tab:blue", alpha=0.45, linewidth=0)
    if not holder and start_holder is not None:
        holder = [(0.0, start_holder)]
    track = [(t, row[s]) for t, s in holder if s in row]
    if track:
        times = [t for t, _ in track] + [t_end_s]
        ys = [y for _, y in track] + [track[-1][1]]
        moved = len(track) > 1
        ax.step(times, ys, where="post", color=colour("model"), linewidth=2.0,
                label="model holder" if moved else "model holder (no hand-over)")
    if track or shaded:
        ax.legend(loc="best", fontsize=8)
    ax.set_xlim(0, max(t_end_s, 1e-9))
    ax.set_ylim(-1, max(len(rows), 1))
    ax.set_xlabel("simulated time (s)")
    label = f"satellite ({len(rows)} in view of {seen_by}, by first rise)"
    if fig.get_figheight() < 4.0 and len(label) > 40:  # a short chart: the label on two lines
        label = label.replace(", by", ",\nby")
    ax.set_ylabel(label)
    ax.set_yticks([])
    ax.set_title(wrap_title(title))
    fig.tight_layout()
    return fig
