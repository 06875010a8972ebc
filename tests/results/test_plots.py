"""Plots: the comparison figure draws one curve per run."""

import pandas as pd

from netfl.results.plots import plot_comparison


def test_comparison_plot_has_one_line_per_run(tmp_path, monkeypatch):
    runs = {name: pd.DataFrame({"cost_total": [0.0, 10.0, 20.0], "accuracy": [0.1, 0.5, acc]})
            for name, acc in (("a", 0.7), ("b", 0.8))}
    drawn = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.plot
    monkeypatch.setattr(matplotlib.axes.Axes, "plot",
                        lambda self, *a, **k: drawn.append(k.get("label")) or original(self, *a,
                                                                                       **k))
    path = plot_comparison(runs, "cost_total", tmp_path / "c.png", "t")
    assert path.exists() and path.stat().st_size > 1000
    assert drawn == ["a", "b"]
