"""Accuracy curves of several groups of runs on one figure: each group's mean over its seeds as a
step curve, with a band of the mean's 95% interval; a logarithmic x axis where the curves end
orders of magnitude apart; and, beside it, the curves' last part zoomed in where they end too
close together to tell apart on the full panel (say seven algorithms within two points).

The figures are drawn on netfl.results.plots' pyplot-free canvas.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from netfl.results.plots import AXES, _figure, _save, wrap_title

SPARSE_POINTS = 12  # curves with at most this many evaluations get a marker at each
LOG_X_SPREAD = 20.0  # curves ending this many times apart share no readable linear axis
ZOOM_FROM = 0.2  # the zoomed panel starts at this fraction of the shortest curve's end
ZOOM_BELOW = 0.25  # ...and is drawn where the curves there span less than this share of the
#                    full panel's height (on the full panel they would sit in a few pixels)
ZOOM_MARGIN = 0.1  # the zoomed panel's y range, padded by this share of itself on each side


def _common_axis(x_name: str, xs: list[pd.Series]) -> tuple[float, str]:
    """One scale and label for every curve of a figure (the largest value picks the unit)."""
    joined = pd.concat([x for x in xs if len(x)]) if any(len(x) for x in xs) else pd.Series(
        [0.0])
    peak = float(joined.max())
    scaled, label = AXES[x_name](pd.Series([peak]))
    return (float(scaled.iloc[0]) / peak if peak else 1.0), label


def spans_orders(curves: dict[str, pd.DataFrame], x_name: str) -> bool:
    """True where the groups' curves end at ``x_name`` values more than ``LOG_X_SPREAD`` times
    apart (say 0.7 Gbit against 10 Tbit), so that a linear axis would squash all but the
    longest into its first pixels."""
    ends = [float(c[x_name].max()) for c in curves.values() if len(c)]
    ends = [e for e in ends if e > 0]
    return len(ends) > 1 and max(ends) > LOG_X_SPREAD * min(ends)


def _spread(curve: pd.DataFrame) -> pd.Series:
    """The half-width of a curve's band (its ci95, else its std; 0 where it has none)."""
    spread = curve["ci95"] if "ci95" in curve else curve["std"] if "std" in curve else None
    return pd.Series(0.0, index=curve.index) if spread is None else spread.fillna(0.0)


def zoom_window(curves: dict[str, pd.DataFrame], x_name: str
                ) -> tuple[float, float, float] | None:
    """Where to zoom in on the curves' last part: (x from, accuracy low, accuracy high).

    The window starts at ``ZOOM_FROM`` of the shortest curve's end (in ``x_name``'s own unit)
    and spans every curve's mean and band from there on (each curve's value in effect at the
    start included: it is a step curve), padded by ``ZOOM_MARGIN``. None where a zoom shows
    nothing the full panel does not: fewer than two curves, or curves that span at least
    ``ZOOM_BELOW`` of the full panel's height there."""
    drawn = [c for c in curves.values() if len(c) > 1]
    ends = [float(c[x_name].max()) for c in drawn]
    if len(drawn) < 2 or min(ends) <= 0:
        return None
    start = ZOOM_FROM * min(ends)
    low, high, full_low, full_high = [], [], [], []
    for curve in drawn:
        spread = _spread(curve)
        full_low.append(float((curve["mean"] - spread).clip(lower=0).min()))
        full_high.append(float((curve["mean"] + spread).clip(upper=1).max()))
        x = curve[x_name]
        held = x[x <= start]
        first = held.index[-1] if len(held) else x.index[0]
        tail = curve.loc[(x >= start) | (curve.index == first)]
        low.append(float((tail["mean"] - spread[tail.index]).clip(lower=0).min()))
        high.append(float((tail["mean"] + spread[tail.index]).clip(upper=1).max()))
    span, full = max(high) - min(low), max(full_high) - min(full_low)
    if full <= 0 or span >= ZOOM_BELOW * full:
        return None
    margin = ZOOM_MARGIN * span if span > 0 else 0.005
    return start, max(0.0, min(low) - margin), min(1.0, max(high) + margin)


def plot_bands(curves: dict[str, pd.DataFrame], x_name: str, path: Path, title: str,
               target_accuracy: float | None = None) -> Path:
    """``bands_figure``, written to ``path``."""
    return _save(bands_figure(curves, x_name, title, target_accuracy), path,
                 bbox_inches="tight")


def bands_figure(curves: dict[str, pd.DataFrame], x_name: str, title: str,
                 target_accuracy: float | None = None):
    """One line per group (label -> table of ``x_name``, mean, ci95 or std) with a band of the
    mean's 95% interval (± std for a table without ci95) where the group has several seeds.
    The x axis is logarithmic where the curves end orders of magnitude apart
    (``spans_orders``); x = 0, the start, is then left out. Where ``zoom_window`` finds the
    curves' last part too flat to read, a second panel (``axes[1]``) shows it zoomed in."""
    log_x = spans_orders(curves, x_name)
    if log_x:
        curves = {name: c[c[x_name] > 0] for name, c in curves.items()}
    zoom = zoom_window(curves, x_name)
    fig = _figure(figsize=(12.0, 4.4) if zoom else (7.2, 4.4), dpi=110)
    axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.0, 0.8]}) if zoom else [
        fig.subplots()]
    factor, label = _common_axis(x_name, [c[x_name] for c in curves.values()])
    for ax in axes:
        _draw_bands(ax, curves, x_name, factor, target_accuracy)
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(label + (", log scale" if log_x else ""))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy")
    axes[0].set_title(wrap_title(title, 60 if zoom else 72))
    if zoom:
        start, low, high = zoom
        axes[1].set_xlim(left=start * factor)
        axes[1].set_ylim(low, high)
        axes[1].set_title("the same, zoomed in on the last part")
    legend_on = axes[-1] if zoom or len(curves) > 4 else axes[0]
    if zoom or len(curves) > 4:  # beside the axes, not over the curves
        legend_on.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                         frameon=False)
    else:
        legend_on.legend(loc="lower right", fontsize=8)
    return fig


def _draw_bands(ax, curves: dict[str, pd.DataFrame], x_name: str, factor: float,
                target_accuracy: float | None) -> None:
    for name, curve in curves.items():
        if not len(curve):
            continue
        x = curve[x_name] * factor
        sparse = len(curve) <= SPARSE_POINTS  # a run evaluated a few times: mark them
        (line,) = ax.step(x, curve["mean"], where="post", linewidth=1.6, label=name,
                          marker="o" if sparse else None, markersize=4)
        spread = curve["ci95"] if "ci95" in curve else curve["std"]
        if spread.notna().any():
            low = (curve["mean"] - spread).clip(lower=0)
            high = (curve["mean"] + spread).clip(upper=1)
            ax.fill_between(x, low, high, step="post", color=line.get_color(), alpha=0.18,
                            linewidth=0)
    if target_accuracy is not None:
        ax.axhline(target_accuracy, color="grey", linestyle="--", linewidth=1,
                   label=f"target {target_accuracy:g}")
