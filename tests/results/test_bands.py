"""Accuracy bands of several groups: a log axis where curves end orders of magnitude apart, a
marker where a curve has few points, and a zoomed panel where the curves end too close together
to tell apart (the drawn artists' data, not pixels)."""

import numpy as np
import pandas as pd

from netfl.results.bands import ZOOM_FROM, bands_figure, spans_orders, zoom_window


def _curve(x_end: float) -> pd.DataFrame:
    return pd.DataFrame({"bytes_total": [0.0, x_end / 2, x_end], "mean": [0.1, 0.6, 0.8],
                         "ci95": [np.nan, 0.05, 0.05]})


def test_curves_ending_orders_of_magnitude_apart_get_a_log_axis_without_the_zero_start():
    # WRWGD ends below 1 Gbit where Fed-CHS runs on to 10 Tbit: on a linear axis every curve
    # but the longest sat in its first pixels
    apart = {"Fed-CHS": _curve(1.25e12), "WRWGD": _curve(8.6e7)}
    assert spans_orders(apart, "bytes_total")
    ax = bands_figure(apart, "bytes_total", "t", 0.8).axes[0]
    assert ax.get_xscale() == "log"
    assert "log scale" in ax.get_xlabel()
    assert all(min(line.get_xdata()) > 0 for line in ax.lines[:2])


def test_curves_ending_close_together_keep_a_linear_axis():
    close = {"Fed-CHS": _curve(4e10), "FedAvg": _curve(1e10)}
    assert not spans_orders(close, "bytes_total")
    assert not spans_orders({"one": _curve(1e12)}, "bytes_total")
    ax = bands_figure(close, "bytes_total", "t").axes[0]
    assert ax.get_xscale() == "linear"
    assert min(ax.lines[0].get_xdata()) == 0.0


def test_a_curve_evaluated_once_after_its_start_is_still_drawn():
    # Hier-Local-QSGD stops at the target at its first evaluation after round 0: on a log
    # axis (no x = 0) that leaves one point, which a step line alone does not show
    once = pd.DataFrame({"bytes_total": [0.0, 1.3e10], "mean": [0.11, 0.80],
                         "ci95": [np.nan, np.nan]})
    ax = bands_figure({"long": _curve(1.25e12), "once": once}, "bytes_total", "t").axes[0]
    drawn = ax.lines[1]
    assert len(drawn.get_xdata()) == 1 and drawn.get_xdata()[0] > 0
    assert drawn.get_marker() == "o"


def _ending_at(final: float, x_end: float = 30_000.0) -> pd.DataFrame:
    """A curve from 0.1 up to 0.8 at a tenth of the way, then on to ``final``."""
    return pd.DataFrame({"cost_total": [0.0, x_end / 10, x_end / 2, x_end],
                         "mean": [0.1, 0.8, (0.8 + final) / 2, final],
                         "ci95": [np.nan, 0.002, 0.002, 0.002]})


def test_curves_ending_within_a_point_get_a_zoomed_panel_on_their_last_part():
    # Group-FEL's seven algorithms ended within 4 points of 0.86 on an axis from 0.1 to 0.9:
    # on one panel they were a single thick line
    close = {"A": _ending_at(0.86), "B": _ending_at(0.87), "C": _ending_at(0.84)}
    start, low, high = zoom_window(close, "cost_total")
    assert start == ZOOM_FROM * 30_000.0
    assert 0.79 < low < 0.8 and 0.87 < high < 0.88  # the step in effect at the start counts
    fig = bands_figure(close, "cost_total", "t")
    full, zoomed = fig.axes
    assert full.get_ylim()[0] < 0.15 and zoomed.get_ylim() == (low, high)
    assert zoomed.get_xlim()[0] == start  # client-seconds on both axes here
    assert [line.get_label() for line in zoomed.lines[:3]] == ["A", "B", "C"]
    assert zoomed.get_legend() is not None and full.get_legend() is None


def test_curves_apart_or_alone_get_no_zoom():
    apart = {"A": _ending_at(0.86), "B": _ending_at(0.3)}
    assert zoom_window(apart, "cost_total") is None
    assert zoom_window({"A": _ending_at(0.86)}, "cost_total") is None
    assert len(bands_figure(apart, "cost_total", "t").axes) == 1
