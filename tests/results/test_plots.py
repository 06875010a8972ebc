"""Plots: step curves between evaluations, every vehicle or a stated sample, the model's holder
without hand-overs, one colour per category (the drawn artists' data, not pixels)."""

import numpy as np
import pandas as pd
from matplotlib.colors import to_hex

from netfl.results import plots
from netfl.results.palette import CATEGORY_COLOURS, colour
from netfl.results.plots import (
    accuracy_figure,
    contact_chart_figure,
    plot_comparison,
    plot_run,
    space_time_figure,
    time_breakdown_figure,
)
from netfl.results.timeline_plot import MIN_SLICE_FRACTION, timeline_figure

METRICS = pd.DataFrame({"sim_time_s": [0.0, 10.0, 600.0], "bytes_total": [0.0, 1e6, 4e6],
                        "accuracy": [0.1, 0.5, 0.8]})


def test_accuracy_is_a_step_curve_held_between_evaluations():
    ax = accuracy_figure(METRICS, "sim_time_s", "t", 0.75).axes[0]
    curve = ax.lines[0]
    assert curve.get_drawstyle() == "steps-post"  # no straight ramp from 10 s to 600 s
    assert list(curve.get_xdata()) == [0.0, 10.0 / 60, 10.0]  # minutes
    assert list(curve.get_ydata()) == [0.1, 0.5, 0.8]
    bytes_ax = accuracy_figure(METRICS, "bytes_total", "t").axes[0]
    assert bytes_ax.lines[0].get_drawstyle() == "steps-post"


def test_plot_run_writes_each_figure(tmp_path):
    paths = plot_run(METRICS, tmp_path, "t", 0.75)
    assert [p.name for p in paths] == ["accuracy_vs_time.png", "accuracy_vs_bytes.png"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_comparison_plot_has_one_step_curve_per_run(tmp_path, monkeypatch):
    runs = {name: pd.DataFrame({"cost_total": [0.0, 10.0, 20.0], "accuracy": [0.1, 0.5, acc]})
            for name, acc in (("a", 0.7), ("b", 0.8))}
    figures = []
    original = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path, **k: figures.append(fig) or original(
        fig, path, **k))
    path = plot_comparison(runs, "cost_total", tmp_path / "c.png", "t")
    assert path.exists() and path.stat().st_size > 1000
    lines = figures[0].axes[0].lines
    assert [line.get_label() for line in lines] == ["a", "b"]
    assert {line.get_drawstyle() for line in lines} == {"steps-post"}


def _segments(n: int) -> list:
    return [((float(t), 0.0), (float(t) + 30.0, 1000.0)) for t in range(n)]


def test_space_time_draws_every_vehicle_and_says_so():
    ax = space_time_figure(_segments(1276), [0.0, 1000.0], 300.0, [], 1400.0, "t").axes[0]
    assert len(ax.collections[-1].get_segments()) == 1276
    assert any(t.get_text() == "all 1,276 vehicles shown" for t in ax.texts)


def test_space_time_states_its_sample_spread_over_the_whole_run():
    n = plots.MAX_VEHICLES_DRAWN * 3
    ax = space_time_figure(_segments(n)[::-1], [0.0], 300.0, [], float(n), "t").axes[0]
    drawn = ax.collections[-1].get_segments()
    assert len(drawn) == plots.MAX_VEHICLES_DRAWN
    starts = sorted(seg[0][0] for seg in drawn)
    assert starts[0] == 0.0 and starts[-1] == n - 1  # not only the first vehicles
    assert any(t.get_text().startswith(f"{plots.MAX_VEHICLES_DRAWN:,} of {n:,} vehicles shown")
               for t in ax.texts)


def test_the_contact_chart_draws_the_holder_without_a_hand_over():
    spans = {"s1": [(0.0, 500.0)], "s2": [(100.0, 800.0)]}
    ax = contact_chart_figure(spans, [], 600.0, "t", start_holder="s2").axes[0]
    (line,) = ax.lines
    assert list(line.get_xdata()) == [0.0, 600.0] and list(line.get_ydata()) == [1, 1]
    assert line.get_label() == "model holder (no hand-over)"
    assert to_hex(line.get_color()) == to_hex(colour("model"))
    moved = contact_chart_figure(spans, [(0.0, "s1"), (300.0, "s2")], 600.0, "t").axes[0]
    assert list(moved.lines[0].get_ydata()) == [0, 1, 1]


def test_the_contact_chart_shades_each_satellites_eclipses():
    spans = {"s1": [(0.0, 500.0)], "s2": [(100.0, 800.0)]}
    ax = contact_chart_figure(spans, [], 600.0, "t", start_holder="s2",
                              eclipses={"s1": [(50.0, 250.0)], "s2": [(400.0, 900.0)]}).axes[0]
    shadows = [c for c in ax.collections if c.get_label() == "in the Earth's shadow"]
    assert len(shadows) == 1  # one legend entry for all rows
    bands = [c for c in ax.collections if to_hex(c.get_facecolor()[0]) == to_hex("0.55")]
    assert len(bands) == 2
    assert "in the Earth's shadow" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_one_colour_per_category_in_the_breakdown_and_the_timeline():
    table = pd.DataFrame({"compute": [10.0], "client-edge": [5.0], "waiting": [3.0],
                          "failed transfers": [1.0]}, index=["a"])
    ax = time_breakdown_figure(table, "t").axes[0]
    drawn = {container.get_label(): to_hex(container.patches[0].get_facecolor())
             for container in ax.containers}
    assert drawn == {name: colour(name) for name in table.columns}
    assert drawn["compute"] == CATEGORY_COLOURS["compute"]
    assert drawn["failed transfers"] == CATEGORY_COLOURS["failed"]
    rows = {"e0": [(0.0, 1.0, "compute"), (1.0, 5.0, "transfer"), (6.0, 2.0, "failed")]}
    gantt = timeline_figure(rows, [], "t").axes[0]
    for bars in gantt.collections:
        assert to_hex(bars.get_facecolor()[0]) == colour(bars.get_label())
    # the figures agree: compute is one colour in both
    assert colour("compute") == drawn["compute"]
    assert len(set(CATEGORY_COLOURS[c] for c in ("compute", "waiting", "failed", "upload",
                                                 "download", "hand-over"))) == 6
    assert colour("something new") == colour("Something New")  # stable for unknown names


def test_the_timeline_keeps_short_compute_visible_and_shows_failures():
    rows = {"cloud": [(0.0, 0.0, "compute")],
            "c0": [(0.0, 0.004, "compute"), (0.004, 3600.0, "transfer"),
                   (10.0, 20.0, "failed"), (40.0, 1.0, "cancelled")]}
    ax = timeline_figure(rows, [100.0], "t").axes[0]
    bars = {c.get_label(): c for c in ax.collections}
    assert set(bars) == {"compute", "transfer", "failed", "cancelled"}
    min_width = MIN_SLICE_FRACTION * 3600.004
    for path in bars["compute"].get_paths():  # each slice at least the minimum width
        xs = path.vertices[:, 0]
        assert np.ptp(xs) >= min_width * 0.999
    assert ax.collections[-1].get_label() == "compute"  # drawn over the transfers
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["transfer", "failed transfer", "cancelled transfer", "compute", "round"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cloud", "c0"]


def test_a_road_run_without_hand_overs_draws_its_holder_and_every_vehicle(tmp_path,
                                                                          monkeypatch):
    """Fed-CHS on a road of one RSU never hands over: the model line still shows where it
    was, and every vehicle is drawn (not the first 400)."""
    import copy

    from netfl.scenario import load_scenario
    from netfl.simulation import Simulation
    from tests.conftest import TINY
    from tests.world.test_iov import iov_scenario

    scenario = iov_scenario(copy.deepcopy(TINY))
    scenario["algorithm"]["rounds"] = 2
    scenario["world"]["rsus"] = {"spacing": "5 km", "coverage": "2 km"}
    simulation = Simulation(load_scenario(scenario))
    simulation.run()
    assert simulation.recorder.model_path == []
    drawn = {}
    monkeypatch.setattr(plots, "plot_space_time", lambda segments, rsu_x, coverage, model, *a:
                        drawn.update(segments=segments, model=model))
    simulation.plot_world(tmp_path)
    assert drawn["model"] == [(0.0, simulation.world.rsu_xy["e0"][0])]
    from netfl.world.iov import space_time_segments

    every = space_time_segments(simulation.world, simulation.env.now, max_vehicles=10**9)
    assert drawn["segments"] == every and len(every) > 0


def test_a_long_title_is_wrapped_not_cut_off_at_the_figure_edge():
    title = ("IoV (a 4 x 4 km road grid, 300 vehicles, 16 RSUs): Fed-CHS against FedAvg and "
             "hierarchical FedAvg per medium (802.11p broadcast)")
    shown = accuracy_figure(METRICS, "sim_time_s", title).axes[0].get_title()
    assert "\n" in shown
    assert shown.replace("\n", " ") == title
    assert max(len(line) for line in shown.splitlines()) <= plots.TITLE_WIDTH
