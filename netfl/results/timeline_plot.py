"""The simulated timeline as a Gantt chart (timeline.png): one row per node, a slice per
transfer or computation in its category's colour, the rounds as dotted lines."""

from __future__ import annotations

from pathlib import Path

from netfl.results.palette import colour
from netfl.results.plots import _figure, _save

TIMELINE_CATEGORIES = ("transfer", "failed", "cancelled", "compute")  # drawn in this order
MIN_SLICE_FRACTION = 0.003  # the narrowest slice drawn, as a share of the time axis


def plot_timeline(rows: dict[str, list[tuple[float, float, str]]], marks: list[float],
                  path: Path, title: str, note: str = "") -> Path:
    """timeline.png (``timeline_figure``), written to ``path``."""
    return _save(timeline_figure(rows, marks, title, note), path, bbox_inches="tight")


def timeline_figure(rows: dict[str, list[tuple[float, float, str]]], marks: list[float],
                    title: str, note: str = ""):
    """A Gantt chart: one row per node (``rows``: (start s, duration s, category) spans, the
    categories of ``TIMELINE_CATEGORIES``), each category in its colour (netfl.results.palette),
    with vertical lines at ``marks`` (rounds). A slice narrower than ``MIN_SLICE_FRACTION`` of
    the time axis is drawn that wide (a 4 ms training in an hour's run stays visible), and
    computing is drawn last, over the transfers it overlaps."""
    height = 1.4 + 0.28 * max(1, len(rows))
    fig = _figure(figsize=(10.0, height), dpi=110)
    ax = fig.subplots()
    names = list(rows)
    ends = [start + duration for spans in rows.values() for start, duration, _ in spans]
    begins = [start for spans in rows.values() for start, _, _ in spans]
    width = MIN_SLICE_FRACTION * ((max(ends) - min(begins)) if ends else 0.0) or 1e-9
    present = {c for spans in rows.values() for _, _, c in spans}
    for category in TIMELINE_CATEGORIES:
        for y, name in enumerate(names):
            bars = [(start, max(duration, width)) for start, duration, c in rows[name]
                    if c == category]
            if bars:
                ax.broken_barh(bars, (y - 0.35, 0.7), color=colour(category), alpha=0.8,
                               linewidth=0, label=category)
    for t in marks:
        ax.axvline(t, color=colour("round"), linewidth=0.6, linestyle=":")
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=9)
    handles = [ax.plot([], [], color=colour(c), linewidth=6, alpha=0.8,
                       label=f"{c} transfer" if c in ("failed", "cancelled") else c)[0]
               for c in TIMELINE_CATEGORIES if c in present or c in ("compute", "transfer")]
    handles += ax.plot([], [], color=colour("round"), linestyle=":", label="round")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig
